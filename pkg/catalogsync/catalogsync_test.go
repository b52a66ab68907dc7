package catalogsync_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/dataworkers/dw/pkg/catalogsync"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_DISABLE_PLATFORM_DETECTION", "true")
	os.Setenv("SF_DISABLE_MINICORE", "true")
	os.Exit(m.Run())
}

// The scenario's statement, as Confluent Cloud returns it: created against api-usage-value v11.
const rollupSQL = "INSERT INTO `usage-hourly`\n" +
	"SELECT account_id, window_start AS `hour`, SUM(response_bytes) AS egress_bytes, COUNT(*) AS requests\n" +
	"FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR($rowtime), INTERVAL '1' HOUR))\n" +
	"GROUP BY account_id, window_start, window_end"

const usageHourlyValue = `{"type":"record","name":"UsageHourly","namespace":"com.example.billing","fields":[` +
	`{"name":"account_id","type":"long"},{"name":"hour","type":{"type":"long","logicalType":"timestamp-millis"}},` +
	`{"name":"egress_bytes","type":["null","long"],"default":null},{"name":"requests","type":"long"}]}`

var created = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

type peers struct {
	cfg     *config.Config
	kafka   *kafkatest.Fixture
	connect *connecttest.Server
	cloud   *confluenttest.Server
	st      *store.Store
	g       *graph.Graph
	clock   time.Time
}

func setup(t *testing.T) *peers {
	t.Helper()
	p := &peers{clock: time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)}
	p.kafka = kafkatest.Start(t, "api-usage", "usage-hourly")
	p.kafka.Registry.SeedSchema(kafkatest.Subject, 11, 11, sr.Schema{Schema: kafkatest.SchemaV11, Type: sr.TypeAvro})
	p.kafka.Registry.SeedSchema("usage-hourly-value", 1, 21, sr.Schema{Schema: usageHourlyValue, Type: sr.TypeAvro})

	p.connect = connecttest.New(t, connecttest.Connector{Name: "raw-usage-snowflake-sink", Type: "sink", State: "RUNNING", WorkerID: "w1:8083",
		Config: map[string]string{"connector.class": "com.snowflake.kafka.connector.SnowflakeSinkConnector", "topics": "api-usage",
			"snowflake.topic2table.map": "api-usage:RAW_API_USAGE", "snowflake.database.name": "ANALYTICS", "snowflake.schema.name": "RAW"},
		Tasks: []connecttest.Task{{State: "RUNNING", WorkerID: "w1:8083"}}})

	p.cloud = confluenttest.New(t,
		[]confluenttest.Statement{{Name: "usage-hourly-rollup", SQL: rollupSQL, Phase: "RUNNING", CreatedAt: created, ComputePoolID: confluenttest.Pool,
			Properties: map[string]string{"sql.current-catalog": confluenttest.Env, "sql.current-database": confluenttest.Cluster}}},
		[]confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING",
			CatalogSync: []map[string]string{{"catalog_integration_id": "tci-snow", "catalog_type": "SNOWFLAKE", "sync_status": "SYNCED"}}}})

	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse.db")
	db, err := sql.Open("sqlite3", wh)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE usage_hourly (account_id INTEGER NOT NULL, hour TIMESTAMP NOT NULL, egress_bytes BIGINT, requests BIGINT)`,
		`CREATE TABLE accounts (account_id INTEGER PRIMARY KEY, name TEXT)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	catalog := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(catalog, []byte(`version: 1
assets:
  - urn: bi:sigma/revenue-today
    kind: bi_workbook
    name: Revenue today
    tags: [money]
    reads: [warehouse:sqlite/main.usage_hourly]
`), 0o644); err != nil {
		t.Fatal(err)
	}

	p.cfg = &config.Config{Kafka: p.kafka.Kafka, SchemaRegistry: p.kafka.SchemaRegistry,
		Connect:        &config.Connect{URL: p.connect.URL, Timeout: 2 * time.Second},
		ConfluentCloud: p.cloud.Config(),
		Warehouse:      &config.Warehouse{Engine: "sqlite", DSN: wh, StatementTimeout: 5 * time.Second},
		Catalog:        config.Catalog{Files: []string{catalog}}}
	p.st, err = store.Open(context.Background(), filepath.Join(dir, "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.st.Close() })
	p.g = graph.New(p.st, func() time.Time { return p.clock })
	return p
}

func (p *peers) sync(t *testing.T, systems ...string) catalogsync.Report {
	t.Helper()
	s := &catalogsync.Syncer{Config: p.cfg, Store: p.st, Graph: p.g, Now: func() time.Time { return p.clock }}
	rep, err := s.Run(context.Background(), catalogsync.Options{Systems: systems})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func system(rep catalogsync.Report, name string) catalogsync.SystemReport {
	for _, s := range rep.Systems {
		if s.System == name {
			return s
		}
	}
	return catalogsync.SystemReport{}
}

func reached(l graph.Lineage) map[string]bool {
	out := map[string]bool{}
	for _, n := range l.Nodes {
		out[n.Node.String()] = true
		out[string(n.Node.Asset)] = true
	}
	return out
}

func TestSyncBuildsTheScenarioGraphFromLivePeers(t *testing.T) {
	p := setup(t)
	rep := p.sync(t)
	for _, s := range rep.Systems {
		if s.Status != "synced" {
			t.Fatalf("%s: %s %s", s.System, s.Status, s.Error)
		}
	}
	if rep.Added == 0 || rep.Changed != 0 {
		t.Errorf("first sync: added %d changed %d", rep.Added, rep.Changed)
	}

	// 14:05: v12 is registered. The statement keeps reading v11.
	p.kafka.Registry.SeedSchema(kafkatest.Subject, 12, 12, sr.Schema{Schema: kafkatest.SchemaV12, Type: sr.TypeAvro})
	p.clock = time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	rep = p.sync(t)
	reg := system(rep, catalogsync.SystemRegistry)
	if !slices.Contains(reg.Changed, graph.SubjectURN(kafkatest.Subject)) || reg.MarkedStale.Fields != 1 {
		t.Errorf("registry after v12: changed %v, stale %+v (want the subject changed and response_bytes stale)", reg.Changed, reg.MarkedStale)
	}
	if k := system(rep, catalogsync.SystemKafka); k.AddedCount != 0 || k.ChangedCount != 0 || k.Unchanged != 2 {
		t.Errorf("kafka re-sync: %+v", k)
	}

	stmt, err := p.g.Get(context.Background(), graph.FlinkStatementURN("usage-hourly-rollup"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stmt.Attrs["schema_pins"], "api-usage-value v11") || stmt.Attrs["phase"] != "RUNNING" {
		t.Errorf("statement attrs = %v (want pinned to v11)", stmt.Attrs)
	}

	// The scenario's path, field by field, from the field v12 removed.
	l, err := p.g.Downstream(context.Background(), []graph.FieldRef{graph.SubjectURN(kafkatest.Subject).Field("response_bytes")}, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := reached(l)
	for _, want := range []string{
		"kafka:topic/api-usage#response_bytes",
		"flink:statement/usage-hourly-rollup#egress_bytes",
		"kafka:topic/usage-hourly#egress_bytes",
		"tableflow:usage-hourly",
		"warehouse:sqlite/main.usage_hourly",
		"bi:sigma/revenue-today",
	} {
		if !got[want] {
			t.Errorf("downstream of response_bytes misses %s; reached %v", want, l.Nodes)
		}
	}
	if got["warehouse:sqlite/main.accounts"] {
		t.Errorf("an unrelated table was reached")
	}
	// Every hop's evidence comes from a sync or an importer, except the workbook's catalog file.
	for _, h := range l.Hops {
		for _, e := range h.Evidence {
			if strings.HasPrefix(e.Source, "catalog:") && h.To.Asset != "bi:sigma/revenue-today" {
				t.Errorf("hand-declared edge %s → %s", h.From, h.To)
			}
		}
	}

	// The connector's config lineage.
	l, err = p.g.Downstream(context.Background(), []graph.FieldRef{graph.TopicURN("api-usage").Field("")}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := reached(l); !got["connect:connector/raw-usage-snowflake-sink"] || !got["warehouse:snowflake/ANALYTICS.RAW.RAW_API_USAGE"] {
		t.Errorf("connector lineage missing: %v", l.Nodes)
	}
}

// Data Workers first looks after v12 (response_bytes dropped) is registered: no version was seen
// by the statement's creation, so its pin is inferred from its SQL (v11, the newest that has
// response_bytes), and the blast radius of the dropped field still reaches the statement.
func TestFirstSyncAfterV12InfersTheStatementsPinFromItsSQL(t *testing.T) {
	p := setup(t)
	p.kafka.Registry.SeedSchema(kafkatest.Subject, 12, 12, sr.Schema{Schema: kafkatest.SchemaV12, Type: sr.TypeAvro})
	rep := p.sync(t)
	f := system(rep, catalogsync.SystemFlink)
	if f.Status != "synced" || !strings.Contains(strings.Join(f.Warnings, "\n"), "pinned to v11") {
		t.Fatalf("flink: %+v (want synced, with a warning that v11 was inferred)", f)
	}
	ctx := context.Background()
	stmt, err := p.g.Get(ctx, graph.FlinkStatementURN("usage-hourly-rollup"))
	if err != nil {
		t.Fatal(err)
	}
	pins, sources := strings.Split(stmt.Attrs["schema_pins"], ","), strings.Split(stmt.Attrs["schema_pin_source"], ",")
	i := slices.Index(pins, "api-usage-value v11")
	if i < 0 || len(sources) != len(pins) || sources[i] != "inferred_from_sql" {
		t.Fatalf("statement attrs = %v (want api-usage-value v11 inferred_from_sql)", stmt.Attrs)
	}
	br, err := p.g.BlastRadius(ctx, graph.BlastRadiusRequest{Asset: graph.SubjectURN(kafkatest.Subject), Fields: []string{"response_bytes"},
		ChangeType: graph.ChangeColumnDrop, MaxDepth: 10})
	if err != nil {
		t.Fatal(err)
	}
	hit := map[graph.URN]bool{}
	for _, im := range br.FieldLevel {
		hit[im.URN] = true
	}
	for _, u := range []graph.URN{graph.FlinkStatementURN("usage-hourly-rollup"), "tableflow:usage-hourly"} {
		if !hit[u] {
			t.Errorf("blast radius of response_bytes misses %s: %+v", u, br.FieldLevel)
		}
	}

	// A re-sync re-infers the same pin: nothing it asserted goes stale.
	p.clock = p.clock.Add(time.Hour)
	rep = p.sync(t, catalogsync.SystemRegistry, catalogsync.SystemFlink)
	if f := system(rep, catalogsync.SystemFlink); f.MarkedStale != (graph.Counts{}) {
		t.Errorf("re-sync marked flink lineage stale: %+v", f.MarkedStale)
	}
}

func TestResyncMarksWhatVanishedStale(t *testing.T) {
	p := setup(t)
	p.sync(t)
	p.connect.Delete("raw-usage-snowflake-sink")
	p.cloud.SetStatements(nil)
	p.cloud.SetTableflow(nil)
	p.clock = p.clock.Add(time.Hour)
	rep := p.sync(t)
	if c := system(rep, catalogsync.SystemConnect); c.MarkedStale.Assets != 1 || c.MarkedStale.Edges != 2 ||
		len(c.Stale) != 1 || c.Stale[0] != "connect:connector/raw-usage-snowflake-sink" {
		t.Errorf("connect: %+v", c)
	}
	if f := system(rep, catalogsync.SystemFlink); f.MarkedStale.Assets == 0 || f.MarkedStale.Edges == 0 {
		t.Errorf("flink: statement and its lineage not marked stale: %+v", f)
	}
	if tf := system(rep, catalogsync.SystemTableflow); tf.MarkedStale.Assets != 1 || tf.MarkedStale.Edges != 2 || len(tf.Stale) != 1 {
		t.Errorf("tableflow: %+v", tf)
	}
	a, err := p.g.Get(context.Background(), graph.FlinkStatementURN("usage-hourly-rollup"))
	if err != nil || !a.Stale {
		t.Errorf("statement not stale: %+v %v", a.Claims, err)
	}
	l, err := p.g.Downstream(context.Background(), []graph.FieldRef{graph.SubjectURN(kafkatest.Subject).Field("response_bytes")}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if reached(l)["tableflow:usage-hourly"] {
		t.Errorf("stale lineage still followed: %v", l.Nodes)
	}
}

func TestAFailingBackendKeepsItsEarlierAssertions(t *testing.T) {
	p := setup(t)
	p.sync(t)
	p.cloud.Inject = []int{503, 503, 503, 503, 503, 503}
	p.clock = p.clock.Add(time.Hour)
	rep := p.sync(t, catalogsync.SystemFlink, catalogsync.SystemKafka)
	f := system(rep, catalogsync.SystemFlink)
	if f.Status != "failed" || !strings.Contains(f.Error, "503") {
		t.Fatalf("flink = %+v", f)
	}
	if system(rep, catalogsync.SystemKafka).Status != "synced" || len(rep.Systems) != 2 {
		t.Fatalf("systems = %+v", rep.Systems)
	}
	a, err := p.g.Get(context.Background(), graph.FlinkStatementURN("usage-hourly-rollup"))
	if err != nil || a.Stale {
		t.Fatalf("statement went stale on a failed sync: %+v %v", a, err)
	}
}

func TestNothingConfiguredIsAnError(t *testing.T) {
	st := storetest.Open(t)
	s := &catalogsync.Syncer{Config: &config.Config{}, Store: st, Graph: graph.New(st, nil)}
	rep, err := s.Run(context.Background(), catalogsync.Options{})
	if err == nil || !strings.Contains(err.Error(), "kafka.bootstrap_servers") || len(rep.Skipped) != len(catalogsync.AllSystems) {
		t.Fatalf("err = %v, skipped %v", err, rep.Skipped)
	}
	if _, err := s.Run(context.Background(), catalogsync.Options{Systems: []string{"mainframe"}}); err == nil {
		t.Fatal("unknown system accepted")
	}
}

func TestJDBCSinkLinksOnlyAHarvestedTable(t *testing.T) {
	p := setup(t)
	p.connect.Set(connecttest.Connector{Name: "pg-sink", Type: "sink", State: "RUNNING", WorkerID: "w1:8083",
		Config: map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "accounts,api-usage",
			"table.name.format": "${topic}", "connection.url": "jdbc:sqlite:/elsewhere.db"},
		Tasks: []connecttest.Task{{State: "RUNNING", WorkerID: "w1:8083"}}})
	rep := p.sync(t)
	c := system(rep, catalogsync.SystemConnect)
	if c.Status != "synced" || !strings.Contains(strings.Join(c.Warnings, "\n"), "writes table api-usage, which matches no harvested warehouse table") {
		t.Fatalf("connect = %+v", c)
	}
	downstream := func() map[string]bool {
		l, err := p.g.Downstream(context.Background(), []graph.FieldRef{graph.URN("connect:connector/pg-sink").Field("")}, 1)
		if err != nil {
			t.Fatal(err)
		}
		return reached(l)
	}
	got := downstream()
	if !got["warehouse:sqlite/main.accounts"] {
		t.Errorf("JDBC sink → matched table edge missing: %v", got)
	}
	for n := range got {
		if strings.Contains(n, "api-usage") && strings.HasPrefix(n, "warehouse:") {
			t.Errorf("phantom table asserted: %s", n)
		}
	}
	// A connect-only sync cannot match tables: it keeps the earlier edge and says so.
	p.clock = p.clock.Add(time.Hour)
	rep = p.sync(t, catalogsync.SystemConnect)
	if c := system(rep, catalogsync.SystemConnect); !strings.Contains(strings.Join(c.Warnings, "\n"), "were not harvested") {
		t.Errorf("connect-only sync warnings = %v", c.Warnings)
	}
	if !downstream()["warehouse:sqlite/main.accounts"] {
		t.Error("a connect-only sync dropped the matched edge")
	}
}

// Every statement an earlier sync listed and the account no longer has goes stale with its
// lineage, however many there were (the stale set once came from a 500-asset search).
func TestResyncMarksEveryVanishedStatementStale(t *testing.T) {
	ctx := context.Background()
	p := setup(t)
	const n = 520
	list := graph.Batch{Source: "sync:flink"}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("old-%03d", i)
		list.Assets = append(list.Assets, graph.Asset{URN: graph.FlinkStatementURN(name), Kind: graph.KindFlinkStatement})
		if _, err := p.g.Import(ctx, graph.Batch{Source: flinksql.Source(name), Edges: []graph.Edge{{
			From: graph.FieldRef{Asset: "kafka:topic/api-usage"}, To: graph.FieldRef{Asset: graph.FlinkStatementURN(name)}, Kind: graph.EdgeReads}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.g.Import(ctx, list); err != nil {
		t.Fatal(err)
	}
	p.clock = p.clock.Add(time.Hour)
	rep := p.sync(t, catalogsync.SystemFlink)
	if f := system(rep, catalogsync.SystemFlink); f.MarkedStale.Assets < n || f.MarkedStale.Edges < n {
		t.Errorf("flink: %d statements vanished, marked stale %+v", n, f.MarkedStale)
	}
	last := graph.FlinkStatementURN(fmt.Sprintf("old-%03d", n-1))
	edges, _, err := p.g.Neighbours(ctx, last, graph.Upstream)
	if err != nil || len(edges) != 1 || !edges[0].Stale {
		t.Errorf("lineage of %s not stale: %+v %v", last, edges, err)
	}
	if a, err := p.g.Get(ctx, graph.FlinkStatementURN("usage-hourly-rollup")); err != nil || a.Stale {
		t.Errorf("the live statement went stale: %+v %v", a, err)
	}
}

// A JDBC sink flattening the value into a landing table: each field reaches its column, through
// the Flatten transform's delimiter, so field-level lineage does not stop at the connector.
func TestJDBCSinkFieldLineageThroughFlatten(t *testing.T) {
	p := setup(t)
	db, err := sql.Open("sqlite3", p.cfg.Warehouse.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE usage_landing (usage_id TEXT, account_id INTEGER, ts TIMESTAMP, endpoint_path TEXT, endpoint_region TEXT, response_bytes BIGINT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	p.connect.Set(connecttest.Connector{Name: "landing-sink", Type: "sink", State: "RUNNING", WorkerID: "w1:8083",
		Config: map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "api-usage",
			"table.name.format": "usage_landing", "transforms": "flat",
			"transforms.flat.type": "org.apache.kafka.connect.transforms.Flatten$Value", "transforms.flat.delimiter": "_"},
		Tasks: []connecttest.Task{{State: "RUNNING", WorkerID: "w1:8083"}}})
	p.sync(t)
	for field, col := range map[string]string{"response_bytes": "response_bytes", "endpoint.path": "endpoint_path"} {
		l, err := p.g.Downstream(context.Background(), []graph.FieldRef{graph.SubjectURN("api-usage-value").Field(field)}, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := graph.WarehouseURN("sqlite", "main", "usage_landing").Field(col).String()
		if !reached(l)[want] {
			t.Errorf("%s does not reach %s: %v", field, want, l.Nodes)
		}
	}
}
