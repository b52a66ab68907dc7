package catalogsync

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/warehouse"
)

func TestPickReadSchemaVersion(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	v := func(n int, seen time.Time, deleted bool) version {
		return version{sv: registry.SubjectVersion{Subject: "s", Version: n, Deleted: deleted}, firstSeen: seen}
	}
	seen := flinksql.Pin{Version: 11, Source: flinksql.PinFirstSeen}
	inferred := flinksql.Pin{Version: 11, Source: flinksql.PinInferred}
	cases := []struct {
		name       string
		hist       []version
		prior      flinksql.Pin
		at         time.Time
		want       int
		source     string
		candidates []int
	}{
		{"earlier real pin wins", []version{v(11, day(1), false), v(12, day(1), false)}, seen, day(5), 11, flinksql.PinFirstSeen, nil},
		{"latest seen by creation", []version{v(11, day(1), false), v(12, day(10), false)}, flinksql.Pin{}, day(5), 11, flinksql.PinFirstSeen, nil},
		{"both seen before creation", []version{v(11, day(1), false), v(12, day(2), false)}, flinksql.Pin{}, day(5), 12, flinksql.PinFirstSeen, nil},
		{"deleted versions are skipped", []version{v(11, day(1), false), v(12, day(2), true)}, flinksql.Pin{}, day(5), 11, flinksql.PinFirstSeen, nil},
		{"statement predates first look: inferred, newest first", []version{v(11, day(20), false), v(12, day(20), false)}, flinksql.Pin{}, day(5), 12, "", []int{12, 11}},
		{"an earlier inference is tried first", []version{v(11, day(20), false), v(12, day(29), false)}, inferred, day(5), 11, "", []int{11, 12}},
		{"an inferred pin is not a fact", []version{v(11, day(1), false), v(12, day(2), false)}, flinksql.Pin{Version: 11, Source: flinksql.PinInferred}, day(5), 12, flinksql.PinFirstSeen, nil},
		{"unknown creation time is inferred", []version{v(11, day(1), false), v(12, day(2), false)}, flinksql.Pin{}, time.Time{}, 12, "", []int{12, 11}},
		{"real pin of a vanished version falls back", []version{v(11, day(1), false)}, flinksql.Pin{Version: 9, Source: flinksql.PinFirstSeen}, day(5), 11, flinksql.PinFirstSeen, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, source, cands := pick(c.hist, c.prior, c.at)
			if got.sv.Version != c.want || source != c.source || !slices.Equal(cands, c.candidates) {
				t.Fatalf("pick = v%d %q %v, want v%d %q %v", got.sv.Version, source, cands, c.want, c.source, c.candidates)
			}
		})
	}
}

// The acceptance scenario: usage-hourly-rollup was created against api-usage-value v11 and sums
// response_bytes; v12 drops it. Data Workers first looks after v12 is registered, so no version
// was seen by the statement's creation: the pin is inferred from the SQL (v12 lacks
// response_bytes, v11 has it) and the incident's lineage is kept.
func TestFirstLookAfterV12InfersV11FromTheSQL(t *testing.T) {
	ctx := context.Background()
	rc, err := registry.New(&config.SchemaRegistry{URL: "http://127.0.0.1:1", Timeout: time.Second}) // never called: no references
	if err != nil {
		t.Fatal(err)
	}
	firstLook := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	sv := func(subject string, n int, text string) version {
		return version{sv: registry.SubjectVersion{Subject: subject, Version: n, ID: n, Type: schema.Avro, Schema: text}, firstSeen: firstLook}
	}
	r := &run{now: firstLook, regc: rc, reg: map[string][]version{
		kafkatest.Subject:    {sv(kafkatest.Subject, 11, kafkatest.SchemaV11), sv(kafkatest.Subject, 12, kafkatest.SchemaV12)},
		"usage-hourly-value": {sv("usage-hourly-value", 1, usageHourlyValueSchema)},
	}}
	st := flinksql.Statement{Name: "usage-hourly-rollup", CreatedAt: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), SQL: "INSERT INTO `usage-hourly`\n" +
		"SELECT account_id, window_start AS `hour`, SUM(response_bytes) AS egress_bytes, COUNT(*) AS requests\n" +
		"FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR($rowtime), INTERVAL '1' HOUR))\nGROUP BY account_id, window_start, window_end"}
	b, err := flinksql.Import(ctx, st, &tableResolver{r: r})
	if err != nil {
		t.Fatal(err)
	}
	var attrs map[string]string
	for _, a := range b.Assets {
		if a.URN == graph.FlinkStatementURN(st.Name) {
			attrs = a.Attrs
		}
	}
	if attrs["schema_pins"] != "usage-hourly-value v1,api-usage-value v11" || attrs["schema_pin_source"] != "inferred_from_sql,inferred_from_sql" {
		t.Errorf("pins %q (%q), want api-usage-value v11 inferred from the SQL; %v", attrs["schema_pins"], attrs["schema_pin_source"], b.Warnings)
	}
	if w := strings.Join(b.Warnings, "\n"); !strings.Contains(w, "pinned to v11") || !strings.Contains(w, "inferred_from_sql") || !strings.Contains(w, "v12 lacks response_bytes") {
		t.Errorf("warnings do not say the pin was inferred: %s", w)
	}
	edges := map[string]bool{}
	for _, e := range b.Edges {
		edges[e.From.String()+" -> "+e.To.String()] = true
	}
	for _, want := range []string{
		"kafka:topic/api-usage#response_bytes -> flink:statement/usage-hourly-rollup#egress_bytes",
		"flink:statement/usage-hourly-rollup#egress_bytes -> kafka:topic/usage-hourly#egress_bytes",
	} {
		if !edges[want] {
			t.Errorf("missing edge %s", want)
		}
	}
	subjectField := false
	for _, f := range b.Fields {
		subjectField = subjectField || f.Asset == graph.SubjectURN(kafkatest.Subject) && f.Path == "response_bytes"
	}
	if !subjectField {
		t.Errorf("the pinned version's field api-usage-value#response_bytes is not asserted")
	}

	// A statement that reads a column no version has: unpinned, lineage by name, and said so.
	st.Name, st.SQL = "bad", "INSERT INTO `usage-hourly` SELECT account_id, no_such_column FROM `api-usage`"
	b, err = flinksql.Import(ctx, st, &tableResolver{r: r})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range b.Assets {
		if a.URN == graph.FlinkStatementURN("bad") && strings.Contains(a.Attrs["schema_pins"], kafkatest.Subject) {
			t.Errorf("unresolvable statement pinned: %v", a.Attrs)
		}
	}
	found := false
	for _, e := range b.Edges {
		found = found || e.From.String() == "kafka:topic/api-usage#no_such_column"
	}
	if !found || !strings.Contains(strings.Join(b.Warnings, "\n"), "left unpinned") {
		t.Errorf("unpinned lineage by name: edges %v warnings %v", b.Edges, b.Warnings)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{"usage-hourly": "usage_hourly", "USAGE_HOURLY": "usage_hourly", "usage..hourly": "usage_hourly", "-x-": "x"} {
		if got := normalizeName(in); got != want {
			t.Errorf("normalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

const usageHourlyValueSchema = `{"type":"record","name":"UsageHourly","namespace":"com.example.billing","fields":[` +
	`{"name":"account_id","type":"long"},{"name":"hour","type":{"type":"long","logicalType":"timestamp-millis"}},` +
	`{"name":"egress_bytes","type":["null","long"],"default":null},{"name":"requests","type":"long"}]}`

func TestMatchRelation(t *testing.T) {
	tables := []warehouse.Table{{Database: "DW", Schema: "PUBLIC", Name: "ORDERS"}, {Database: "DW", Schema: "RAW", Name: "ORDERS"},
		{Database: "DW", Schema: "RAW", Name: "events"}}
	cases := []struct {
		rel  string
		want []string
	}{
		{"orders", []string{"DW.PUBLIC.ORDERS", "DW.RAW.ORDERS"}}, // ambiguous: the caller emits no edge
		{"raw.orders", []string{"DW.RAW.ORDERS"}},
		{`"RAW"."events"`, []string{"DW.RAW.events"}},
		{"dw.raw.events", []string{"DW.RAW.events"}},
		{"other.raw.events", nil},
		{"missing", nil},
		{"a.b.c.d", nil},
		{"", nil},
	}
	for _, c := range cases {
		var got []string
		for _, m := range matchRelation(tables, c.rel) {
			got = append(got, m.Database+"."+m.Schema+"."+m.Name)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("matchRelation(%q) = %v, want %v", c.rel, got, c.want)
		}
	}
}

func TestTableflowCandidatesPreferTheClusterNamespace(t *testing.T) {
	tables := []warehouse.Table{{Database: "ICE", Schema: "lkc-usage", Name: "usage_hourly"}, {Database: "DW", Schema: "PUBLIC", Name: "USAGE_HOURLY"},
		{Database: "DW", Schema: "A", Name: "orders"}, {Database: "DW", Schema: "B", Name: "orders"}, {Database: "DW", Schema: "C", Name: "only"}}
	cases := []struct {
		topic, cluster string
		want           []string
	}{
		{"usage-hourly", "lkc-usage", []string{"lkc-usage"}},           // several: the cluster's namespace wins
		{"usage-hourly", "lkc-other", []string{"lkc-usage", "PUBLIC"}}, // several, none in the namespace: ambiguous
		{"orders", "lkc-usage", []string{"A", "B"}},
		{"only", "lkc-usage", []string{"C"}}, // exactly one match
		{"nothing", "lkc-usage", nil},
	}
	for _, c := range cases {
		var got []string
		for _, m := range tableflowCandidates(tables, c.topic, c.cluster) {
			got = append(got, m.Schema)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("tableflowCandidates(%q, %q) = %v, want %v", c.topic, c.cluster, got, c.want)
		}
	}
}
