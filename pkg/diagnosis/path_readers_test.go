package diagnosis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
)

// A shop's orders: subject shop-orders-value describes topic shop-orders, which a sink connector
// lands in RAW.SALES.ORDERS column by column; reader (a dbt model or a view with SQL) reads
// that table. No Flink statement is on the path.
var (
	shopSubject = graph.SubjectURN("shop-orders-value")
	shopTopic   = graph.TopicURN("shop-orders")
	shopSink    = graph.URN("connect:connector/shop-orders-sink")
	shopRaw     = graph.WarehouseURN("snowflake", "RAW", "SALES", "ORDERS")
)

func shopEstate(t *testing.T, fields []string, readers []graph.Asset, edges []graph.Edge, v1, v2 string) fixture {
	t.Helper()
	f := newFixture(t)
	ctx := context.Background()
	var rawFields []graph.Field
	b := graph.Batch{Source: "test:shop", Assets: []graph.Asset{
		{URN: shopSubject, Kind: graph.KindSchemaSubject, Name: "shop-orders-value", Attrs: map[string]string{"schema_type": "AVRO"}},
		{URN: shopTopic, Kind: graph.KindKafkaTopic, Name: "shop-orders"},
		{URN: shopSink, Kind: graph.KindConnector, Name: "shop-orders-sink"},
	}, Edges: []graph.Edge{
		{From: shopSubject.Field(""), To: shopTopic.Field(""), Kind: graph.EdgeSchemaOf},
		{From: shopTopic.Field(""), To: shopSink.Field(""), Kind: graph.EdgeReads},
		{From: shopSink.Field(""), To: shopRaw.Field(""), Kind: graph.EdgeWrites},
	}}
	for _, fl := range fields {
		col := strings.ToUpper(fl)
		rawFields = append(rawFields, graph.Field{Path: col})
		b.Edges = append(b.Edges, graph.Edge{From: shopTopic.Field(fl), To: shopRaw.Field(col), Kind: graph.EdgeIdentity,
			Transformation: "connector shop-orders-sink: same name"})
	}
	b.Assets = append(b.Assets, graph.Asset{URN: shopRaw, Kind: graph.KindWarehouseTable, Name: "ORDERS", Fields: rawFields})
	b.Assets = append(b.Assets, readers...)
	b.Edges = append(b.Edges, edges...)
	if _, err := f.g.Import(ctx, b); err != nil {
		t.Fatal(err)
	}
	old := registry.SubjectVersion{Subject: "shop-orders-value", Version: 1, ID: 7001, Type: schema.Avro, Schema: v1}
	if _, err := registry.RecordVersions(ctx, f.st, storyNow.Add(-5*24*time.Hour), []registry.SubjectVersion{old}); err != nil {
		t.Fatal(err)
	}
	cur := registry.SubjectVersion{Subject: "shop-orders-value", Version: 2, ID: 7002, Type: schema.Avro, Schema: v2}
	if _, err := registry.RecordVersions(ctx, f.st, time.Date(2026, 8, 14, 14, 5, 0, 0, time.UTC), []registry.SubjectVersion{old, cur}); err != nil {
		t.Fatal(err)
	}
	return f
}

// pathReader is the one schema change of rep and its path reader urn; it fails the test when
// either is missing.
func pathReader(t *testing.T, rep Report, urn graph.URN) (SchemaChange, Reader) {
	t.Helper()
	if len(rep.Input.SchemaChanges) != 1 {
		t.Fatalf("schema changes %+v\nunchecked %v", rep.Input.SchemaChanges, rep.Result.Unchecked)
	}
	sc := rep.Input.SchemaChanges[0]
	for _, r := range sc.PathReaders {
		if r.URN == string(urn) {
			return sc, r
		}
	}
	t.Fatalf("%s is not a reader on the path: %+v", urn, sc.PathReaders)
	return sc, Reader{}
}

// A new enum symbol meets a dbt model that keeps only the old ones: with no statement on the
// path and no topic sample, the diagnosis still quotes the model's filter and says the rows
// vanish, from the schemas alone.
func TestTheDiagnosisQuotesADbtModelFilterThatDropsANewValue(t *testing.T) {
	const v1 = `{"type":"record","name":"Order","fields":[{"name":"order_id","type":"string"},` +
		`{"name":"status","type":{"type":"enum","name":"Status","symbols":["A","B"]}},{"name":"amount","type":"long"}]}`
	const v2 = `{"type":"record","name":"Order","fields":[{"name":"order_id","type":"string"},` +
		`{"name":"status","type":{"type":"enum","name":"Status","symbols":["A","B","C"]}},{"name":"amount","type":"long"}]}`
	model := graph.URN("dbt:model.shop.fct_settled_orders")
	mart := graph.WarehouseURN("snowflake", "ANALYTICS", "MARTS", "FCT_SETTLED_ORDERS")
	f := shopEstate(t, []string{"order_id", "status", "amount"}, []graph.Asset{
		{URN: model, Kind: graph.KindDBTModel, Name: "fct_settled_orders",
			Attrs: map[string]string{"sql": "select order_id, amount from RAW.SALES.ORDERS where status in ('A', 'B')"}},
		{URN: mart, Kind: graph.KindWarehouseTable, Name: "FCT_SETTLED_ORDERS", Fields: []graph.Field{{Path: "ORDER_ID"}, {Path: "AMOUNT"}}},
	}, []graph.Edge{
		{From: shopRaw.Field(""), To: model.Field(""), Kind: graph.EdgeDependsOn},
		{From: model.Field(""), To: mart.Field(""), Kind: graph.EdgeMaterializes},
	}, v1, v2)
	inc := f.history(t, mart, ModeVolume, "rows_per_hour", "")

	rep := f.diagnose(t, inc, Live{}, nil)
	sc, r := pathReader(t, rep, model)
	if r.Kind != graph.KindDBTModel || !has(r.ReadsFields, "status") {
		t.Fatalf("the model reads status: %+v", r)
	}
	const want = "the new value C is filtered out by `WHERE status IN ('A', 'B')`: those rows vanish from this reader"
	var sentences []string
	for _, rd := range r.Reads {
		sentences = append(sentences, rd.Sentence)
	}
	if !strings.Contains(strings.Join(sentences, "\n"), want) {
		t.Fatalf("the model's reads do not quote its filter: %q", sentences)
	}
	if len(sc.Readers) != 0 {
		t.Errorf("a model is not one of the statements that decode the topic: %+v", sc.Readers)
	}
	top := rep.Result.Candidates[0]
	if top.Source != "schema:shop-orders-value v2" || !has(top.Supports, KindReader) {
		t.Fatalf("top %+v", top)
	}
	mustHave(t, strings.Join(top.Evidence, "\n"), string(model)+": "+want)
}

// A view that coalesces a removed nullable field to 0 is on the failing column's path: the
// diagnosis quotes the COALESCE and says the number is understated while not_null passes.
func TestTheDiagnosisQuotesAViewThatCoalescesARemovedField(t *testing.T) {
	const v1 = `{"type":"record","name":"Order","fields":[{"name":"order_id","type":"string"},` +
		`{"name":"discount_cents","type":["null","long"],"default":null}]}`
	const v2 = `{"type":"record","name":"Order","fields":[{"name":"order_id","type":"string"}]}`
	view := graph.WarehouseURN("snowflake", "ANALYTICS", "MARTS", "ORDER_DISCOUNTS")
	f := shopEstate(t, []string{"order_id", "discount_cents"}, []graph.Asset{
		{URN: view, Kind: graph.KindWarehouseTable, Name: "ORDER_DISCOUNTS", Fields: []graph.Field{{Path: "ORDER_ID"}, {Path: "DISCOUNT_CENTS"}},
			Attrs: map[string]string{"sql": "SELECT order_id, COALESCE(discount_cents, 0) AS discount_cents FROM RAW.SALES.ORDERS"}},
	}, []graph.Edge{
		{From: shopRaw.Field("ORDER_ID"), To: view.Field("ORDER_ID"), Kind: graph.EdgeIdentity},
		{From: shopRaw.Field("DISCOUNT_CENTS"), To: view.Field("DISCOUNT_CENTS"), Kind: graph.EdgeTransformation, Transformation: "COALESCE(discount_cents, 0)"},
		{From: shopRaw.Field(""), To: view.Field(""), Kind: graph.EdgeReads, Transformation: "view definition"},
	}, v1, v2)
	inc := f.history(t, view, ModeColumn, "zero_rate", "DISCOUNT_CENTS")

	rep := f.diagnose(t, inc, Live{}, nil)
	_, r := pathReader(t, rep, view)
	if !has(r.ReadsFields, "discount_cents") {
		t.Fatalf("the failing view reads discount_cents: %+v", r)
	}
	const want = "`COALESCE(discount_cents, 0)` turns the missing value into 0: the number is understated and every not_null test passes"
	top := rep.Result.Candidates[0]
	if top.Source != "schema:shop-orders-value v2" || !strings.Contains(top.Cause, "removed discount_cents") {
		t.Fatalf("top %+v", top)
	}
	mustHave(t, strings.Join(top.Evidence, "\n"), string(view)+": "+want)
}

func mustHave(t *testing.T, text, want string) {
	t.Helper()
	if !strings.Contains(text, want) {
		t.Errorf("lacks %q:\n%s", want, text)
	}
}
