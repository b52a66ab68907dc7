package impact

import (
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/graph"
)

func reads(t *testing.T, sql, table, column string, sym View, vc *ValueChange) []string {
	t.Helper()
	var out []string
	for _, r := range sqlReads(graph.Asset{Attrs: map[string]string{SQLAttr: sql}}, table, column, sym, vc) {
		out = append(out, r.Sentence)
	}
	return out
}

var (
	nulls = View{Symptom: SymptomNulls, Sees: "NULL"}
	zeros = View{Symptom: SymptomZeros, Sees: "0"}
)

func wantAll(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d sentences, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sentence %d:\n got  %s\n want %s", i, got[i], want[i])
		}
	}
}

func TestNullsThroughAWarehouseModel(t *testing.T) {
	// A PostgreSQL model over a shipments table whose weight column now arrives NULL.
	sql := `select depot_id,
       sum(ifnull(weight_grams, 0)) as shipped_grams,
       count(weight_grams) as weighed_parcels,
       max(weight_grams) * 0.001 as heaviest_kg
from shipments
where weight_grams >= 1
group by depot_id`
	wantAll(t, reads(t, sql, "shipments", "weight_grams", nulls, nil),
		"`IFNULL(weight_grams, 0)` turns the missing value into 0: the number is understated and every not_null test passes; then `SUM(IFNULL(weight_grams, 0))` adds zeros: sums drop toward zero and no null check sees it (into shipped_grams)",
		"`COUNT(weight_grams)` counts only non-null values: counts drop (into weighed_parcels)",
		"`MAX(weight_grams)` ignores nulls: the extreme comes from fewer rows (into heaviest_kg)",
		"`WHERE weight_grams >= 1` filters those rows out (a comparison with NULL is never true)")
}

func TestProto3ZerosMeetAFilterAndAJoin(t *testing.T) {
	// A Flink statement over ad clicks whose cost now arrives as 0 (proto3), not NULL.
	sql := "INSERT INTO `paid-clicks` SELECT c.click_id, c.cost_micros * r.rate AS cost_local, NVL(c.cost_micros, -1) AS raw_cost " +
		"FROM `ad-clicks` c JOIN rates r ON c.cost_micros = r.tier_floor WHERE c.cost_micros > 0"
	wantAll(t, reads(t, sql, "ad-clicks", "cost_micros", zeros, nil),
		"`c.cost_micros * r.rate` is computed from 0 (into cost_local)",
		"`NVL(c.cost_micros, -1)` never fires: the 0 passes through as if it were real (into raw_cost)",
		"`JOIN … ON c.cost_micros = r.tier_floor` joins on 0: those rows match the row keyed 0, or none",
		"`WHERE c.cost_micros > 0` filters every new row out (0 does not pass it)")
}

func TestNewValuesMeetInListsCaseAndNotIn(t *testing.T) {
	sql := `select city,
  case trip_state when 'ENDED' then 'done' when 'CANCELLED' then 'void' end as outcome,
  count(*) as n
from trips
where trip_state in ('ENDED', 'CANCELLED') or trip_state not in ('TEST')
group by city, trip_state`
	vc := &ValueChange{Field: "trip_state", NewValues: []string{"ENDED_BY_DRIVER"}}
	wantAll(t, reads(t, sql, "trips", "trip_state", View{}, vc),
		"`CASE trip_state WHEN 'ENDED' THEN 'done' WHEN 'CANCELLED' THEN 'void' END` has no branch for the new value ENDED_BY_DRIVER and yields NULL (it has no ELSE)",
		"the new value ENDED_BY_DRIVER is filtered out by `WHERE trip_state IN ('ENDED', 'CANCELLED')`: those rows vanish from this reader",
		"the new value ENDED_BY_DRIVER passes `WHERE trip_state NOT IN ('TEST')` and is counted with the others",
		"`GROUP BY trip_state` gets a new group ENDED_BY_DRIVER")
}

func TestStatementFailedLeavesAggregatesStale(t *testing.T) {
	got := reads(t, "select sum(amount) as total from payments", "payments", "amount", View{Symptom: SymptomStatementFailed}, nil)
	wantAll(t, got, "`SUM(amount)` is computed without them: the statement upstream stops, so no new rows arrive and the result goes stale")
}

func FuzzSQLReads(f *testing.F) {
	f.Add("select sum(coalesce(x, 0)) from t where x > 0", "x", "ENDED")
	f.Add("select case x when 'A' then 1 end, zeroifnull(x) from t join u on t.x = u.x group by x", "x", "B")
	f.Add("select nvl(x) , count(x), x between 1 and 2, x in (1, -2) from t", "x", "0")
	f.Fuzz(func(t *testing.T, sql, col, value string) {
		a := graph.Asset{Attrs: map[string]string{SQLAttr: sql}}
		for _, v := range []View{nulls, zeros, {Symptom: SymptomUnderstated}, {Symptom: SymptomStatementFailed}, {Symptom: SymptomDefault, Sees: "the default 7"}} {
			for _, r := range sqlReads(a, "t", col, v, nil) {
				if r.Sentence == "" {
					t.Fatalf("empty sentence for %q", sql)
				}
			}
		}
		for _, r := range sqlReads(a, "t", col, View{}, &ValueChange{Field: col, NewValues: []string{value}}) {
			if r.Sentence == "" {
				t.Fatalf("empty sentence for %q", sql)
			}
		}
	})
}
