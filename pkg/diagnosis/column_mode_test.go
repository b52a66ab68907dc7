package diagnosis

import (
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// A field removed upstream that reads as zeros (proto3) fails the column check on zero rate and
// sum, not the null rate; the removal must explain it with the same evidence as a null spike.
func TestARemovedFieldExplainsAZeroRateFailureLikeANullSpike(t *testing.T) {
	sc := scenarioChange()
	null := Rank(Input{FailureMode: ModeNullRate, Column: "egress_bytes", Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}})
	zeros := Rank(Input{FailureMode: ModeColumn, Column: "egress_bytes", Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}})
	if len(zeros.Candidates) != 1 || len(null.Candidates) != 1 {
		t.Fatalf("candidates: null %+v, column %+v", null.Candidates, zeros.Candidates)
	}
	top := zeros.Candidates[0]
	if top.Score != null.Candidates[0].Score || !strings.Contains(top.Cause, "api-usage-value v12 removed response_bytes") {
		t.Errorf("column failure: %+v against null spike %+v", top, null.Candidates[0])
	}
	if ev := strings.Join(top.Evidence, " | "); !strings.Contains(ev, "explains a column failure") {
		t.Errorf("evidence: %s", ev)
	}
	if !valueMode(ModeColumn) || !columnImpact(ModeColumn) {
		t.Error("a column failure must follow the failing column's lineage and readers, as a null spike does")
	}
}

func TestFailingMetricFilterSelectsTheColumnMetrics(t *testing.T) {
	cond, args := failingMetricFilter(ModeColumn, "")
	if !strings.HasPrefix(cond, "metric IN (") || len(args) != len(quality.AllColumnMetrics()) || strings.Count(cond, "?") != len(args) {
		t.Errorf("%s %v", cond, args)
	}
	if cond, args := failingMetricFilter(ModeNullRate, "null_rate"); cond != "metric = ?" || len(args) != 1 || args[0] != "null_rate" {
		t.Errorf("%s %v", cond, args)
	}
	if cond, args := failingMetricFilter("dbt_test", ""); cond != "1 = 1" || len(args) != 0 {
		t.Errorf("a mode without a metric: %s %v", cond, args)
	}
}

// The newest failing point is found through the failing points' index, never by reading every
// point of the asset (the series index leads with the metric, which a mode may leave open, and an
// OR with a bound value kept SQLite from seeking it). On SQLite, by EXPLAIN QUERY PLAN.
func TestTheNewestFailingPointIsReadFromTheFailingIndex(t *testing.T) {
	st := storetest.Open(t)
	for mode, want := range map[string]string{ModeNullRate: "null_rate", ModeColumn: "", "dbt_test": ""} {
		q, args := newestFailingPointQuery("warehouse:sqlite/main.orders", mode, want)
		p := storetest.ExplainSQLite(t, st, q, args...)
		if strings.Count(p, "INDEX metric_points_failing (asset=?)") != 2 || strings.Contains(p+" |", "SCAN p |") || strings.Contains(p, "SCAN metric_points") {
			t.Errorf("%s: the newest failing point is read with %q, want both halves from metric_points_failing", mode, p)
		}
	}
}
