package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// A grocery chain's basket events in Protobuf: v2 drops price_micros (reserving its tag) for a
// price in euros and adds the PAID_IN_STORE status. The revenue statement, pinned to v1, sums the
// price and keeps only PAID baskets.
const (
	basketV1 = `syntax = "proto3";
package grocery;
message BasketEvent {
  string basket_id = 1;
  string store_id = 2;
  int64 price_micros = 3;
  Status status = 4;
}
enum Status { STATUS_UNSPECIFIED = 0; OPEN = 1; PAID = 2; }`
	basketV2 = `syntax = "proto3";
package grocery;
message BasketEvent {
  reserved 3;
  reserved "price_micros";
  string basket_id = 1;
  string store_id = 2;
  Status status = 4;
  double price_eur = 5;
}
enum Status { STATUS_UNSPECIFIED = 0; OPEN = 1; PAID = 2; PAID_IN_STORE = 3; }`
	revenueSQL = "INSERT INTO `store-revenue` SELECT store_id, SUM(price_micros) AS revenue_micros FROM `basket-events` WHERE status = 'PAID' GROUP BY store_id"
)

type basketResolver struct{}

func (basketResolver) ResolveTable(_ context.Context, ref flinksql.TableRef, _ time.Time) (flinksql.Table, error) {
	switch ref.Table {
	case "basket-events":
		return flinksql.Table{Topic: "basket-events", ValueSubject: "basket-events-value", SchemaVersion: 1, Columns: []flinksql.Column{
			{Name: "basket_id", Type: "STRING"}, {Name: "store_id", Type: "STRING"}, {Name: "price_micros", Type: "BIGINT"}, {Name: "status", Type: "STRING"}}}, nil
	case "store-revenue":
		return flinksql.Table{Topic: "store-revenue", Columns: []flinksql.Column{{Name: "store_id", Type: "STRING"}, {Name: "revenue_micros", Type: "BIGINT"}}}, nil
	}
	return flinksql.Table{}, flinksql.ErrTableNotFound
}

func basketTools(t *testing.T) map[string]mcpkit.Tool {
	t.Helper()
	env := mcpkittest.Env(t, "dw-schema")
	env.Now = func() time.Time { return time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC) }
	st, err := env.Store.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := flinksql.Import(context.Background(), flinksql.Statement{Name: "store-revenue-rollup", SQL: revenueSQL}, basketResolver{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graph.New(st, env.Now).Import(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	byName := map[string]mcpkit.Tool{}
	for _, tl := range tools(env) {
		byName[tl.Name] = tl
	}
	return byName
}

func TestAssessImpactPredictsProto3ZerosAndFindsTheFilterThatDropsANewStatus(t *testing.T) {
	tl := basketTools(t)
	var a assessImpactResult
	call(t, tl["assess_impact"], map[string]any{"subject": "basket-events-value", "version": 2, "schema_type": "PROTOBUF",
		"earlier_versions": []map[string]any{{"version": 1, "schema": basketV1}, {"version": 2, "schema": basketV2}}}, &a)
	if len(a.Predicted) != 1 || a.Predicted[0].Field != "price_micros" || a.Predicted[0].Symptom != impact.SymptomZeros || a.Predicted[0].Sees != "0" {
		t.Fatalf("predicted %+v", a.Predicted)
	}
	var sums, filters []string
	for _, r := range a.Readers {
		if r.URN != graph.FlinkStatementURN("store-revenue-rollup") {
			continue
		}
		for _, rd := range r.Reads {
			switch r.Change {
			case impact.ChangeValuesAdded:
				filters = append(filters, rd.Sentence)
			default:
				sums = append(sums, rd.Sentence)
			}
		}
	}
	if len(sums) != 1 || sums[0] != "`SUM(price_micros)` adds zeros: sums drop toward zero and no null check sees it (into revenue_micros)" {
		t.Errorf("what the sum does: %q", sums)
	}
	if len(filters) != 1 || filters[0] != "the new value PAID_IN_STORE is filtered out by `WHERE status = 'PAID'`: those rows vanish from this reader" {
		t.Errorf("what the filter does: %q", filters)
	}
	if len(a.ValueChanges) != 1 || a.Verdict != "compatible but breaks 2 readers" {
		t.Errorf("value changes %+v verdict %q", a.ValueChanges, a.Verdict)
	}
}

func TestTheGateReportsAReaderThatFiltersANewValue(t *testing.T) {
	tl := basketTools(t)
	// The proposal only adds the status; the price stays.
	onlyStatus := strings.Replace(basketV1, "PAID = 2; }", "PAID = 2; PAID_IN_STORE = 3; }", 1)
	var g checkSchemaChangeResult
	call(t, tl["check_schema_change"], map[string]any{"subject": "basket-events-value", "schema": onlyStatus, "schema_type": "PROTOBUF",
		"earlier_versions": []map[string]any{{"version": 1, "schema": basketV1}}, "block_on": []string{"low", "medium", "high", "critical"}}, &g)
	vr := impact.ValueReaders(g.Impact)
	if !g.Failed || len(vr) != 1 || !strings.Contains(vr[0].Effect, "PAID_IN_STORE is filtered out by `WHERE status = 'PAID'`") {
		t.Fatalf("gate %+v\nvalue readers %+v", g.Decision, vr)
	}
}
