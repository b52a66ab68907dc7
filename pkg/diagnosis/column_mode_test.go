package diagnosis

import (
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/quality"
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
	if cond, args := failingMetricFilter(ModeNullRate, "null_rate"); cond != "(? = '' OR metric = ?)" || len(args) != 2 {
		t.Errorf("%s %v", cond, args)
	}
}
