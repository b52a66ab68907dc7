package plans

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
)

type flinkTables map[string]flinksql.Table

func (ts flinkTables) ResolveTable(_ context.Context, ref flinksql.TableRef, _ time.Time) (flinksql.Table, error) {
	if t, ok := ts[ref.Table]; ok {
		return t, nil
	}
	return flinksql.Table{}, flinksql.ErrTableNotFound
}

// payoutSources is a graph holding the settled-payouts statement with sql, reading topic payouts
// (the value schema of payouts-value).
func payoutSources(t *testing.T, sql string) Sources {
	t.Helper()
	ctx := context.Background()
	src := storySources(t, false)
	col := func(names ...string) []flinksql.Column {
		var out []flinksql.Column
		for _, n := range names {
			out = append(out, flinksql.Column{Name: n, Type: "STRING"})
		}
		return out
	}
	ts := flinkTables{
		"payouts":         {Topic: "payouts", ValueSubject: "payouts-value", SchemaVersion: 3, Columns: col("payout_id", "merchant", "payout_state", "amount_cents")},
		"settled-payouts": {Topic: "settled-payouts", Columns: col("merchant", "settled_cents")},
	}
	b, err := flinksql.Import(ctx, flinksql.Statement{Name: "settled-payouts", SQL: sql}, ts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Graph.Import(ctx, b); err != nil {
		t.Fatal(err)
	}
	return src
}

// payoutDiagnosis: v4 of payouts-value only declared SETTLED_PARTIAL, read by the statement.
func payoutDiagnosis(t *testing.T) string {
	t.Helper()
	sc := diagnosis.SchemaChange{Subject: "payouts-value", Version: 4, FirstSeen: time.Date(2026, 5, 6, 9, 0, 0, 0, time.UTC),
		Changes:   []diagnosis.FieldChange{{Path: "payout_state", Change: "enum_symbols_added", SymbolsAdded: []string{"SETTLED_PARTIAL"}}},
		OnPath:    []string{"payout_state"},
		Readers:   []diagnosis.Reader{{URN: "flink:statement/settled-payouts", ReadsFields: []string{"payout_state"}}},
		NewValues: []diagnosis.ValuesSeen{{Field: "payout_state", Values: []string{"SETTLED_PARTIAL"}, From: diagnosis.ValuesFromSchema}}}
	raw, err := json.Marshal(recorded{
		Input:  diagnosis.Input{Column: "settled_cents", Onset: time.Date(2026, 5, 6, 9, 30, 0, 0, time.UTC), SchemaChanges: []diagnosis.SchemaChange{sc}},
		Result: diagnosis.Result{Candidates: []diagnosis.Candidate{{Kind: "schema_change", Source: "schema:payouts-value v4"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

var payoutIncident = incidents.Incident{ID: 3, Asset: "warehouse:snowflake/FIN.PUBLIC.SETTLED_PAYOUTS", FailureMode: "volume", OpenedAt: time.Date(2026, 5, 6, 11, 0, 0, 0, time.UTC)}

// A statement whose filter lists the kept states gets a corrected statement with the new state
// added, writing a -v2 sink from the plan's start; the checks move there.
func TestValueChangeWidensAFlinkStatementsFilter(t *testing.T) {
	sql := "INSERT INTO `settled-payouts` SELECT merchant, SUM(amount_cents) AS settled_cents FROM `payouts` WHERE payout_state IN ('SETTLED', 'PAID') GROUP BY merchant"
	p, err := Generate(context.Background(), payoutSources(t, sql), Request{Incident: payoutIncident, Diagnosis: payoutDiagnosis(t), Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Proposals) != 1 {
		t.Fatalf("want the corrected statement alone, got %+v (notes %v)", p.Proposals, p.Notes)
	}
	st := p.Proposals[0]
	got, _ := st.Payload["sql"].(string)
	if st.Class != config.ClassFlinkStatement || st.Target != "flink:statement/settled-payouts" || st.Payload["sink"] != "settled-payouts-v2" ||
		!strings.Contains(got, "payout_state IN ('SETTLED', 'PAID', 'SETTLED_PARTIAL')") || !strings.Contains(got, "INSERT INTO `settled-payouts-v2`") ||
		!strings.Contains(got, "scan.startup.timestamp-millis") {
		t.Fatalf("step %+v\nsql: %s", st, got)
	}
	if !strings.HasPrefix(st.Why, "no schema restore needed: payouts-value v4 changes only the values of payout_state") ||
		!strings.Contains(st.Why, "`payout_state IN ('SETTLED', 'PAID')` in flink:statement/settled-payouts drops the new value SETTLED_PARTIAL") {
		t.Errorf("why: %s", st.Why)
	}
	if !strings.Contains(st.Title, "Run settled-payouts-v2: lets SETTLED_PARTIAL through its filter on payout_state") || st.NeedsMapping != nil {
		t.Errorf("title %q", st.Title)
	}
	v2 := "warehouse:snowflake/FIN.PUBLIC.SETTLED_PAYOUTS_V2"
	for _, c := range p.Checks {
		if c.Asset != v2 || c.Supersedes != payoutIncident.Asset {
			t.Errorf("check %+v: want it on %s", c, v2)
		}
	}
	// The draft is what request_approval routes: a client proposal of it validates the same way.
	if r := st.Routable(); r != "" {
		t.Errorf("not routable: %s", r)
	}
}

// A filter that is not a literal list, or a statement with no SQL in the graph: the owner decides.
func TestValueChangeOnAFlinkFilterThatIsNotMechanicalAsksTheOwner(t *testing.T) {
	for sql, want := range map[string]string{
		"INSERT INTO `settled-payouts` SELECT merchant, SUM(amount_cents) AS settled_cents FROM `payouts` WHERE payout_state LIKE 'SETTLED%' GROUP BY merchant":                      "is not a literal `= '…'` or `IN ('…')` list",
		"INSERT INTO `settled-payouts` SELECT merchant, SUM(amount_cents) AS settled_cents FROM `payouts` WHERE payout_state = 'SETTLED' OR payout_state = 'PAID' GROUP BY merchant": "appears 2 times",
	} {
		p, err := Generate(context.Background(), payoutSources(t, sql), Request{Incident: payoutIncident, Diagnosis: payoutDiagnosis(t), Actor: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Proposals) != 1 {
			t.Fatalf("%s: %+v", sql, p.Proposals)
		}
		st := p.Proposals[0]
		steps, _ := st.Payload["steps"].([]string)
		if st.Class != config.ClassFlinkStatement || st.Payload["sql"] != nil || !strings.Contains(st.Why, want) ||
			!strings.HasPrefix(st.Title, "Decide whether settled-payouts keeps SETTLED_PARTIAL in payout_state") || len(steps) != 1 {
			t.Errorf("%s: %+v", sql, st)
		}
		for _, c := range p.Checks {
			if c.Asset != payoutIncident.Asset || c.Supersedes != "" {
				t.Errorf("nothing moves, yet check %+v", c)
			}
		}
	}
}
