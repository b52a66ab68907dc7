package plans

import (
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// The predicted symptom decides the column checks: zeros (a proto3 scalar removed) need zero-rate
// and sum checks, which a null-rate check would never fail on; nulls need the null rate once.
func TestSymptomChecksFollowThePrediction(t *testing.T) {
	for _, tc := range []struct {
		symptom impact.Symptom
		have    []Check
		want    string
	}{
		{impact.SymptomZeros, nil, "zero_rate(net_mass) sum_per_hour(net_mass)"},
		{impact.SymptomNulls, []Check{{Check: "null_rate", Columns: []string{"net_mass"}}}, ""},
		{impact.SymptomNulls, nil, "null_rate(net_mass)"},
		{impact.SymptomStatementFailed, nil, ""}, // freshness and volume are always in the plan
		{impact.SymptomNone, nil, ""},
	} {
		dc := &draftContext{cause: &diagnosis.SchemaChange{Subject: "parcels-value", Version: 4,
			Predicted: []impact.View{{Field: "weight_g", Sees: "0", Symptom: tc.symptom, Why: "proto3 reads a missing scalar as its zero value"}}}}
		var got []string
		for _, c := range dc.symptomChecks("warehouse:postgres/public.parcels", "", "net_mass", tc.have) {
			got = append(got, c.Check+"("+strings.Join(c.Columns, ",")+")")
			if !strings.Contains(c.Why, "parcels-value v4") || !strings.Contains(c.Why, "read weight_g as 0 ("+string(tc.symptom)) {
				t.Errorf("why: %s", c.Why)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: got %v, want %q", tc.symptom, got, tc.want)
		}
	}
	// Without the failing column the check is left out and said so.
	dc := &draftContext{cause: &diagnosis.SchemaChange{Predicted: []impact.View{{Field: "weight_g", Symptom: impact.SymptomZeros}}}}
	if got := dc.symptomChecks("a", "", "", nil); len(got) != 0 || !strings.Contains(strings.Join(dc.notes, ";"), "the failing column is unknown") {
		t.Errorf("%v %v", got, dc.notes)
	}
}
