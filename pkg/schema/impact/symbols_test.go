package impact_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/gate"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// A Protobuf enum value added: pinned readers still decode it (an enum keeps the number), and
// the statement whose filter lists the old values drops it. assess_impact and the gate name the
// symbol and the reader from the schemas alone, before any record carries it.
func TestAssessProtobufEnumValueAddedNamesTheSymbolAndTheFilter(t *testing.T) {
	g := seeded(t, 0)
	ctx := context.Background()
	ts := tables{
		"shipments":            {Topic: "shipments", ValueSubject: "shipments-value", SchemaVersion: 2, Columns: cols("shipment_id", "carrier", "stage")},
		"delivered-by-carrier": {Topic: "delivered-by-carrier", Columns: cols("carrier", "delivered")},
	}
	importStatement(t, g, "delivered-by-carrier",
		"INSERT INTO `delivered-by-carrier` SELECT carrier, COUNT(*) AS delivered FROM `shipments` WHERE stage IN ('DELIVERED', 'SIGNED') GROUP BY carrier", ts, nil)
	v2 := mustParse(t, schema.Protobuf, `syntax = "proto3"; package ship; message Shipment { string shipment_id = 1; string carrier = 2; Stage stage = 3; }
enum Stage { STAGE_UNSPECIFIED = 0; IN_TRANSIT = 1; DELIVERED = 2; SIGNED = 3; }`)
	v3 := mustParse(t, schema.Protobuf, `syntax = "proto3"; package ship; message Shipment { string shipment_id = 1; string carrier = 2; Stage stage = 3; }
enum Stage { STAGE_UNSPECIFIED = 0; IN_TRANSIT = 1; DELIVERED = 2; SIGNED = 3; DELIVERED_TO_NEIGHBOUR = 4; }`)
	a, err := impact.New(g, func() time.Time { return now }).Assess(ctx, impact.Request{Subject: "shipments-value", OldVersion: 2, NewVersion: 3, Old: v2, New: v3})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.ValueChanges) != 1 || strings.Join(a.ValueChanges[0].NewValues, ",") != "DELIVERED_TO_NEIGHBOUR" {
		t.Fatalf("value changes %+v", a.ValueChanges)
	}
	vr := impact.ValueReaders(a)
	if len(vr) != 1 || !strings.Contains(vr[0].Effect, "the new value DELIVERED_TO_NEIGHBOUR is filtered out by `WHERE stage IN ('DELIVERED', 'SIGNED')`") {
		t.Fatalf("value readers %+v (all %+v)", vr, a.Readers)
	}
	d := gate.Decide(gate.Policy{BlockOn: []impact.Severity{vr[0].Severity}}, compat.Result{Compatible: true, Level: compat.Backward}, gate.Registry{}, &a)
	if !d.Failed || !strings.Contains(strings.Join(d.Reasons, "\n"), "DELIVERED_TO_NEIGHBOUR is filtered out") {
		t.Errorf("gate %+v", d)
	}
}
