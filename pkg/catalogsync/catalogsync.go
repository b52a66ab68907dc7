// Package catalogsync harvests the running systems into the context graph: Kafka topics, Schema
// Registry subjects and their fields, Kafka Connect connectors and the topics and tables their
// configs name, Flink statements (through the Flink SQL lineage importer), Tableflow topic → table
// mappings, warehouse tables and columns, and the declarative catalog files. Each system is its
// own graph source, imported as a complete view: what it stopped reporting is marked stale, and a
// system that fails or is not configured leaves its earlier assertions untouched.
package catalogsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/lineage/catalogfile"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// Systems, in the order they are harvested (the warehouse before Tableflow, whose tables it
// matches; the registry before Flink, whose read schemas it pins).
const (
	SystemWarehouse = "warehouse"
	SystemKafka     = "kafka"
	SystemRegistry  = "schema_registry"
	SystemConnect   = "connect"
	SystemFlink     = "flink"
	SystemTableflow = "tableflow"
	SystemCatalog   = "catalog_files"
)

// AllSystems lists every system sync knows.
var AllSystems = []string{SystemWarehouse, SystemKafka, SystemRegistry, SystemConnect, SystemFlink, SystemTableflow, SystemCatalog}

// Bounds of one sync, so a huge estate is an explicit partial answer, never an unbounded crawl.
const (
	MaxSubjects   = 2000
	MaxTables     = 5000
	MaxStatements = 2000
	maxListed     = 100 // URNs listed per category in a report
)

// fingerprintAttr records, on each asset a sync asserts, a hash of what the sync said about it,
// so the next sync can tell changed from unchanged.
const fingerprintAttr = "sync_fingerprint"

// Syncer harvests the configured systems into a graph.
type Syncer struct {
	Config *config.Config
	Store  *store.Store
	Graph  *graph.Graph
	Now    func() time.Time
}

// Options choose what to sync.
type Options struct {
	// Systems limits the sync (default all configured).
	Systems []string
	// Progress, when set, is called before each system is harvested.
	Progress func(done, total int, system string)
}

// SystemReport is one system's outcome.
type SystemReport struct {
	System string `json:"system"`
	// Status is synced, skipped (not configured) or failed (earlier assertions kept as they were).
	Status    string   `json:"status"`
	ConfigKey string   `json:"config_key,omitempty" jsonschema:"The config key that would configure a skipped system"`
	Error     string   `json:"error,omitempty"`
	Sources   []string `json:"sources,omitempty" jsonschema:"Graph sources written"`
	Assets    int      `json:"assets"`
	Fields    int      `json:"fields"`
	Edges     int      `json:"edges"`
	// Added lists assets this system's sources assert for the first time (a topic first named by a
	// statement's lineage counts under flink); Changed, assets whose synced description changed.
	// At most 100 URNs each; the counts are exact.
	AddedCount   int         `json:"added_count"`
	Added        []graph.URN `json:"added,omitempty"`
	ChangedCount int         `json:"changed_count"`
	Changed      []graph.URN `json:"changed,omitempty"`
	Unchanged    int         `json:"unchanged"`
	// Refreshed counts assets re-asserted by a lineage importer or catalog file, whose changes
	// show in their fields and edges rather than in a fingerprint.
	Refreshed   int          `json:"refreshed,omitempty"`
	MarkedStale graph.Counts `json:"marked_stale"`
	// Stale lists assets this sync stopped finding (at most 100; the count above is exact).
	Stale     []graph.URN `json:"stale,omitempty"`
	Warnings  []string    `json:"warnings,omitempty"`
	ElapsedMS int64       `json:"elapsed_ms"`
}

// Report is what a sync did.
type Report struct {
	StartedAt   time.Time      `json:"started_at"`
	Systems     []SystemReport `json:"systems"`
	Added       int            `json:"added"`
	Changed     int            `json:"changed"`
	Unchanged   int            `json:"unchanged"`
	MarkedStale graph.Counts   `json:"marked_stale"`
	Failed      []string       `json:"failed_systems,omitempty"`
	Skipped     []string       `json:"skipped_systems,omitempty"`
	Summary     []string       `json:"summary"`
}

// errSkipped marks a system that is not configured; its message names the key.
type errSkipped struct{ key string }

func (e errSkipped) Error() string { return "not configured: set " + e.key }

// Run syncs the chosen systems. It fails only when nothing could be synced.
func (s *Syncer) Run(ctx context.Context, opt Options) (Report, error) {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	want := map[string]bool{}
	for _, sys := range opt.Systems {
		if !slices.Contains(AllSystems, sys) && sys != SystemLake {
			return Report{}, fmt.Errorf("unknown system %q: use %s", sys, strings.Join(AllSystems, ", "))
		}
		want[sys] = true
	}
	run := &run{s: s, now: now(), reg: map[string][]version{}}
	rep := Report{StartedAt: run.now, Systems: []SystemReport{}, Summary: []string{}}
	systems := s.systems(want)
	total := len(systems)
	if len(want) > 0 {
		total = len(want)
	}
	for _, sys := range systems {
		if len(want) > 0 && !want[sys] {
			continue
		}
		if opt.Progress != nil {
			opt.Progress(len(rep.Systems), total, sys)
		}
		start := time.Now()
		sr := SystemReport{System: sys}
		batches, warnings, err := run.harvest(ctx, sys)
		sr.Warnings = warnings
		var sk errSkipped
		switch {
		case errors.As(err, &sk):
			sr.Status, sr.ConfigKey = "skipped", sk.key
			rep.Skipped = append(rep.Skipped, sys)
		case err != nil:
			sr.Status, sr.Error = "failed", err.Error()
			rep.Failed = append(rep.Failed, sys)
		default:
			sr.Status = "synced"
			if err := run.apply(ctx, &sr, batches); err != nil {
				sr.Status, sr.Error = "failed", err.Error()
				rep.Failed = append(rep.Failed, sys)
			}
		}
		sr.ElapsedMS = time.Since(start).Milliseconds()
		rep.Added += sr.AddedCount
		rep.Changed += sr.ChangedCount
		rep.Unchanged += sr.Unchanged
		rep.MarkedStale.Assets += sr.MarkedStale.Assets
		rep.MarkedStale.Fields += sr.MarkedStale.Fields
		rep.MarkedStale.Edges += sr.MarkedStale.Edges
		rep.Systems = append(rep.Systems, sr)
		if ctx.Err() != nil {
			return rep, fmt.Errorf("sync interrupted after %s: %w", sys, ctx.Err())
		}
	}
	synced := 0
	for _, sr := range rep.Systems {
		switch sr.Status {
		case "synced":
			synced++
			rep.Summary = append(rep.Summary, fmt.Sprintf("%s: %d assets (%d added, %d changed, %d unchanged), %d fields, %d edges; marked stale %d assets, %d fields, %d edges",
				sr.System, sr.Assets, sr.AddedCount, sr.ChangedCount, sr.Unchanged, sr.Fields, sr.Edges, sr.MarkedStale.Assets, sr.MarkedStale.Fields, sr.MarkedStale.Edges))
		case "skipped":
			rep.Summary = append(rep.Summary, fmt.Sprintf("%s: skipped, not configured (set %s)", sr.System, sr.ConfigKey))
		case "failed":
			rep.Summary = append(rep.Summary, fmt.Sprintf("%s: FAILED, its earlier assets were left as they were: %s", sr.System, sr.Error))
		}
	}
	if synced == 0 {
		return rep, fmt.Errorf("nothing was synced: %s", strings.Join(rep.Summary, "; "))
	}
	return rep, nil
}

// run holds one sync's shared state.
type run struct {
	s   *Syncer
	now time.Time
	// tables are the warehouse tables harvested in this run (nil when the warehouse was not).
	tables []warehouse.Table
	engine string
	// columns are the harvested tables' column names, by table URN.
	columns map[graph.URN][]string
	// reg caches subject histories with first-seen times, filled by the registry harvest.
	reg     map[string][]version
	regc    *registry.Client
	kafkaOK bool
	topics  map[string]bool
}

// harvest reads one system into batches (each a complete view of its source).
func (r *run) harvest(ctx context.Context, sys string) ([]graph.Batch, []string, error) {
	switch sys {
	case SystemWarehouse:
		return r.warehouse(ctx)
	case SystemKafka:
		return r.kafka(ctx)
	case SystemRegistry:
		return r.registry(ctx)
	case SystemConnect:
		return r.connect(ctx)
	case SystemFlink:
		return r.flink(ctx)
	case SystemTableflow:
		return r.tableflow(ctx)
	case SystemLake:
		return r.lake(ctx)
	case SystemCatalog:
		return r.catalog(ctx)
	}
	return nil, nil, fmt.Errorf("unknown system %s", sys)
}

// apply imports each batch, classifying its assets as added, changed or unchanged first.
func (r *run) apply(ctx context.Context, sr *SystemReport, batches []graph.Batch) error {
	classified := map[graph.URN]bool{} // an asset several batches mention is counted once
	for _, b := range batches {
		if b.ObservedAt.IsZero() {
			b.ObservedAt = r.now
		}
		// Only this package's own sources carry a fingerprint (each of their assets is asserted by
		// exactly one of them); the lineage importers' and catalog files' assets are refreshed.
		own := strings.HasPrefix(b.Source, "sync:")
		if own {
			fingerprint(&b)
		}
		for _, a := range b.Assets {
			if classified[a.URN] {
				continue
			}
			classified[a.URN] = true
			prev, err := r.s.Graph.Get(ctx, a.URN)
			var nf *graph.NotFoundError
			switch {
			case errors.As(err, &nf):
				r.added(sr, a.URN)
				continue
			case err != nil:
				return err
			}
			claimed := false
			for _, c := range prev.Claims {
				if c.Source == b.Source && !c.Stale {
					claimed = true
				}
			}
			switch {
			case !claimed:
				r.added(sr, a.URN)
			case !own:
				sr.Refreshed++
			case prev.Attrs[fingerprintAttr] != a.Attrs[fingerprintAttr]:
				sr.ChangedCount++
				if len(sr.Changed) < maxListed {
					sr.Changed = append(sr.Changed, a.URN)
				}
			default:
				sr.Unchanged++
			}
		}
		if own {
			gone, err := r.vanished(ctx, b)
			if err != nil {
				return err
			}
			for _, u := range gone {
				if len(sr.Stale) < maxListed {
					sr.Stale = append(sr.Stale, u)
				}
			}
		}
		res, err := r.s.Graph.Import(ctx, b)
		if err != nil {
			return fmt.Errorf("import %s: %w", b.Source, err)
		}
		sr.Sources = append(sr.Sources, b.Source)
		sr.Assets += res.Assets
		sr.Fields += res.Fields
		sr.Edges += res.Edges
		sr.MarkedStale.Assets += res.Stale.Assets
		sr.MarkedStale.Fields += res.Stale.Fields
		sr.MarkedStale.Edges += res.Stale.Edges
		sr.Warnings = append(sr.Warnings, res.Warnings...)
	}
	return nil
}

// sourceSystems maps each sync source to the URN system of the assets it asserts.
var sourceSystems = map[string]string{
	"sync:warehouse": graph.SystemWarehouse, "sync:kafka": graph.SystemKafka, "sync:schema_registry": graph.SystemSchema,
	"sync:connect": graph.SystemConnect, "sync:flink": graph.SystemFlink, "sync:tableflow": graph.SystemTableflow,
	"sync:lake": graph.SystemTableflow,
}

// vanished names the assets b.Source asserted before and does not assert now: the ones Import is
// about to mark stale.
func (r *run) vanished(ctx context.Context, b graph.Batch) ([]graph.URN, error) {
	if _, ok := sourceSystems[b.Source]; !ok {
		return nil, nil
	}
	now := map[graph.URN]bool{}
	for _, a := range b.Assets {
		now[a.URN] = true
	}
	prev, err := r.s.Graph.AssetsClaimedBy(ctx, b.Source)
	if err != nil {
		return nil, err
	}
	var out []graph.URN
	for _, u := range prev {
		if !now[u] {
			out = append(out, u)
		}
	}
	return out, nil
}

func (r *run) added(sr *SystemReport, u graph.URN) {
	sr.AddedCount++
	if len(sr.Added) < maxListed {
		sr.Added = append(sr.Added, u)
	}
}

// fingerprint hashes, per asset, its claim, its fields and the edges that touch it, and stores the
// hash in the asset's attributes.
func fingerprint(b *graph.Batch) {
	parts := map[graph.URN][]string{}
	for _, f := range b.Fields {
		parts[f.Asset] = append(parts[f.Asset], fmt.Sprintf("f|%s|%s|%t|%d|%s", f.Path, f.Type, f.Nullable, f.Ordinal, f.Description))
	}
	for _, e := range b.Edges {
		line := fmt.Sprintf("e|%s|%s|%s|%s", e.From, e.To, e.Kind, e.Transformation)
		parts[e.From.Asset] = append(parts[e.From.Asset], line)
		parts[e.To.Asset] = append(parts[e.To.Asset], line)
	}
	for i := range b.Assets {
		a := &b.Assets[i]
		lines := append([]string(nil), parts[a.URN]...)
		lines = append(lines, "a|"+a.Kind+"|"+a.Name+"|"+a.Description+"|"+strings.Join(a.Owners, ",")+"|"+strings.Join(a.Tags, ","))
		for k, v := range a.Attrs {
			if k != fingerprintAttr {
				lines = append(lines, "t|"+k+"="+v)
			}
		}
		sort.Strings(lines)
		h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		if a.Attrs == nil {
			a.Attrs = map[string]string{}
		}
		a.Attrs[fingerprintAttr] = hex.EncodeToString(h[:8])
	}
}

// ---- warehouse ----

func (r *run) warehouse(ctx context.Context) ([]graph.Batch, []string, error) {
	wc := r.s.Config.Warehouse
	if wc == nil {
		return nil, nil, errSkipped{"warehouse (engine, dsn)"}
	}
	db, err := warehouse.Connect(wc)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	tables, err := db.ListTables(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if len(tables) > MaxTables {
		warnings = append(warnings, fmt.Sprintf("%d tables: only the first %d were synced", len(tables), MaxTables))
		tables = tables[:MaxTables]
	}
	engine := string(db.Dialect.Engine)
	b := graph.Batch{Source: "sync:warehouse"}
	// One bulk column read per schema instead of a round trip per table; should it fail (a broken
	// SQLite view fails the whole statement), each table is described on its own so one bad table
	// costs only itself.
	infos, err := db.DescribeColumns(ctx, tables)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		warnings = append(warnings, fmt.Sprintf("bulk column read failed, describing each table instead: %v", err))
		infos = nil
	}
	for i, t := range tables {
		var ti *warehouse.TableInfo
		if infos != nil && len(infos[i].Columns) > 0 {
			ti = &infos[i]
		} else {
			ti, err = db.Resolve(ctx, quotedRef(t))
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, err
				}
				warnings = append(warnings, fmt.Sprintf("table %s: %v", t.Ref(), err))
				continue
			}
		}
		u := tableURN(engine, t)
		attrs := map[string]string{"table_kind": t.Kind}
		if t.RowCount != nil {
			attrs["row_count"] = fmt.Sprint(*t.RowCount)
		}
		if len(ti.PrimaryKey) > 0 {
			attrs["primary_key"] = strings.Join(ti.PrimaryKey, ",")
		}
		b.Assets = append(b.Assets, graph.Asset{URN: u, Kind: graph.KindWarehouseTable, Name: t.Ref().String(), Attrs: attrs})
		if r.columns == nil {
			r.columns = map[graph.URN][]string{}
		}
		for _, c := range ti.Columns {
			b.Fields = append(b.Fields, graph.Field{Asset: u, Path: c.Name, Type: c.Type, Nullable: c.Nullable, Ordinal: c.Position})
			r.columns[u] = append(r.columns[u], c.Name)
		}
	}
	r.tables, r.engine = tables, engine
	notes, err := r.views(ctx, db, &b)
	if err != nil {
		return nil, nil, err
	}
	return []graph.Batch{b}, append(warnings, notes...), nil
}

// quotedRef names a listed table exactly (quoted parts keep their case).
func quotedRef(t warehouse.Table) string {
	var parts []string
	for _, p := range []string{t.Database, t.Schema, t.Name} {
		if p != "" {
			parts = append(parts, `"`+strings.ReplaceAll(p, `"`, `""`)+`"`)
		}
	}
	return strings.Join(parts, ".")
}

// tableURN is the graph URN of a listed table. Names come back from the catalog exactly, so they
// are passed quoted: WarehouseURN keeps quoted parts as they are.
func tableURN(engine string, t warehouse.Table) graph.URN {
	var parts []string
	for _, p := range []string{t.Database, t.Schema, t.Name} {
		if p != "" {
			parts = append(parts, `"`+strings.ReplaceAll(p, `"`, `""`)+`"`)
		}
	}
	return graph.WarehouseURN(engine, parts...)
}

// ---- kafka ----

func (r *run) kafka(ctx context.Context) ([]graph.Batch, []string, error) {
	kc := r.s.Config.Kafka
	if kc == nil {
		return nil, nil, errSkipped{"kafka.bootstrap_servers"}
	}
	cl, err := kafka.Open(kc)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	topics, err := cl.ListTopics(ctx, "", false)
	if err != nil {
		return nil, nil, err
	}
	b := graph.Batch{Source: "sync:kafka"}
	r.topics = map[string]bool{}
	var warnings []string
	for _, t := range topics {
		if t.Error != "" {
			warnings = append(warnings, fmt.Sprintf("topic %s: %s", t.Name, t.Error))
			continue
		}
		r.topics[t.Name] = true
		b.Assets = append(b.Assets, graph.Asset{URN: graph.TopicURN(t.Name), Kind: graph.KindKafkaTopic, Name: t.Name,
			Attrs: map[string]string{"partitions": fmt.Sprint(t.Partitions), "replication_factor": fmt.Sprint(t.ReplicationFactor)}})
	}
	r.kafkaOK = true
	return []graph.Batch{b}, warnings, nil
}

// ---- catalog files ----

func (r *run) catalog(ctx context.Context) ([]graph.Batch, []string, error) {
	files := r.s.Config.Catalog.Files
	if len(files) == 0 {
		return nil, nil, errSkipped{"catalog.files"}
	}
	var out []graph.Batch
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		b, err := catalogfile.Load(f)
		if err != nil {
			return nil, nil, fmt.Errorf("catalog file %s: %w", f, err)
		}
		out = append(out, b)
	}
	return out, nil, nil
}

// ---- connect ----

func (r *run) connect(ctx context.Context) ([]graph.Batch, []string, error) {
	c, err := connect.FromConfig(r.s.Config)
	if errors.Is(err, connect.ErrNotConfigured) {
		return nil, nil, errSkipped{"connect.url (or confluent_cloud.environment_id and kafka_cluster_id for managed connectors)"}
	}
	if err != nil {
		return nil, nil, err
	}
	conns, err := c.ListConnectors(ctx)
	if err != nil {
		return nil, nil, err
	}
	b := graph.Batch{Source: "sync:connect"}
	// JDBC sink → warehouse table edges come from matching the harvested warehouse tables: their
	// own source, re-asserted only when the warehouse was harvested in this run.
	match := graph.Batch{Source: "sync:connect-warehouse"}
	var warnings []string
	jdbcUnmatched, sfUnmatched := false, false
	for _, cn := range conns {
		u := graph.URN("connect:connector/" + cn.Name)
		if _, err := graph.ParseURN(string(u)); err != nil {
			warnings = append(warnings, fmt.Sprintf("connector %q: %v", cn.Name, err))
			continue
		}
		attrs := map[string]string{"connector_class": cn.Class, "type": cn.Type, "state": cn.State, "failed_tasks": fmt.Sprint(cn.FailedTasks)}
		if cn.Lineage.TopicsRegex != "" {
			attrs["topics_regex"] = cn.Lineage.TopicsRegex
		}
		b.Assets = append(b.Assets, graph.Asset{URN: u, Kind: graph.KindConnector, Name: cn.Name, Attrs: attrs})
		lc := strings.ToLower(cn.Class)
		for _, t := range cn.Lineage.Topics {
			topic := graph.TopicURN(t)
			if cn.Type == "source" {
				b.Edges = append(b.Edges, graph.Edge{From: u.Field(""), To: topic.Field(""), Kind: graph.EdgeWrites,
					Transformation: "connector config: " + cn.Class})
				continue
			}
			b.Edges = append(b.Edges, graph.Edge{From: topic.Field(""), To: u.Field(""), Kind: graph.EdgeReads, Transformation: "connector config topics"})
			table, ok := cn.Lineage.Tables[t]
			if !ok {
				continue
			}
			switch {
			case strings.Contains(lc, "snowflake"):
				// Snowflake's connector config names the database and schema it writes. When the
				// harvested warehouse is Snowflake, the edge goes to the one table that name
				// denotes there; else it keeps the config's name, and a warning says so.
				to := graph.WarehouseURN("snowflake", graph.SplitRelation(table)...)
				how := "connector config maps " + t + " to " + table
				switch {
				case r.tables == nil || r.engine != string(warehouse.Snowflake):
					sfUnmatched = true // one warning below covers every such table
				default:
					cands := matchSnowflake(r.tables, table)
					if len(cands) == 1 {
						to = tableURN(r.engine, cands[0])
						how += ", matched to warehouse table " + cands[0].Ref().String()
						edges, notes, err := r.sinkFields(ctx, cn, t, to)
						if err != nil {
							return nil, nil, err
						}
						match.Edges, warnings = append(match.Edges, edges...), append(warnings, notes...)
						break
					}
					why := "matches no harvested Snowflake table (another account or database, or not created yet)"
					if len(cands) > 1 {
						var names []string
						for _, c := range cands {
							names = append(names, c.Ref().String())
						}
						why = "matches several harvested Snowflake tables (" + strings.Join(names, ", ") + ")"
					}
					warnings = append(warnings, fmt.Sprintf("connector %s writes table %s, which %s: the edge goes to %s as the config names it", cn.Name, table, why, to))
				}
				b.Edges = append(b.Edges, graph.Edge{From: u.Field(""), To: to.Field(""), Kind: graph.EdgeWrites, Transformation: how})
			case strings.Contains(lc, "jdbc"):
				// A JDBC sink writes the database of its connection.url, which need not be the
				// configured warehouse: only a table the warehouse harvest found, once, is linked.
				if r.tables == nil {
					jdbcUnmatched = true // one warning below covers every such table
					continue
				}
				cands := matchRelation(r.tables, table)
				if len(cands) != 1 {
					var names []string
					for _, c := range cands {
						names = append(names, c.Ref().String())
					}
					why := "matches no harvested warehouse table (it may write another database)"
					if len(cands) > 1 {
						why = "matches several warehouse tables (" + strings.Join(names, ", ") + ")"
					}
					warnings = append(warnings, fmt.Sprintf("connector %s writes table %s, which %s: no edge; declare it in a catalog file", cn.Name, table, why))
					continue
				}
				match.Edges = append(match.Edges, graph.Edge{From: u.Field(""), To: tableURN(r.engine, cands[0]).Field(""), Kind: graph.EdgeWrites,
					Transformation: fmt.Sprintf("connector config maps %s to %s, matched to warehouse table %s", t, table, cands[0].Ref())})
				edges, notes, err := r.sinkFields(ctx, cn, t, tableURN(r.engine, cands[0]))
				if err != nil {
					return nil, nil, err
				}
				match.Edges, warnings = append(match.Edges, edges...), append(warnings, notes...)
			default:
				warnings = append(warnings, fmt.Sprintf("connector %s writes table %s but its warehouse engine is unknown: no edge to it", cn.Name, table))
			}
		}
	}
	out := []graph.Batch{b}
	if r.tables != nil {
		out = append(out, match)
	} else if jdbcUnmatched {
		warnings = append(warnings, "warehouse tables were not harvested in this sync: JDBC sink → warehouse edges were left as they were")
	}
	if sfUnmatched {
		why := "warehouse tables were not harvested in this sync"
		if r.tables != nil {
			why = "the harvested warehouse is " + r.engine + ", not Snowflake"
		}
		warnings = append(warnings, why+": Snowflake sink → table edges use the table names in the connector configs, unmatched")
	}
	return out, warnings, nil
}

// sinkFields is the field-level lineage of a sink connector from topic into the harvested table
// to: each field of the topic's value schema (<topic>-value, as the registry sync recorded it) to
// the column the connector writes it to (connect.SinkFields). Without the schema's fields there is
// nothing to map.
func (r *run) sinkFields(ctx context.Context, cn connect.Connector, topic string, to graph.URN) ([]graph.Edge, []string, error) {
	subj := graph.SubjectURN(topic + "-value")
	fields, err := r.s.Graph.Fields(ctx, subj)
	var nf *graph.NotFoundError
	if errors.As(err, &nf) || err == nil && len(fields) == 0 {
		return nil, nil, nil // no value schema is known for the topic: the table-level edge stands alone
	}
	if err != nil {
		return nil, nil, err
	}
	paths := make([]string, 0, len(fields))
	for _, f := range fields {
		paths = append(paths, f.Path)
	}
	maps, notes := connect.SinkFields(cn.Config, paths, r.columns[to])
	from := graph.TopicURN(topic)
	var edges []graph.Edge
	for _, m := range maps {
		edges = append(edges, graph.Edge{From: from.Field(m.Field), To: to.Field(m.Column), Kind: graph.EdgeIdentity,
			Transformation: "connector " + cn.Name + ": " + m.How})
	}
	var out []string
	for i, n := range notes {
		if i == 3 {
			out = append(out, fmt.Sprintf("connector %s: … and %d more fields without a column", cn.Name, len(notes)-3))
			break
		}
		out = append(out, "connector "+cn.Name+": "+n)
	}
	return edges, out, nil
}

// matchSnowflake returns the harvested Snowflake tables a Snowflake sink's table name denotes:
// each part folded as Snowflake folds it (unquoted upper case, quoted kept exactly) and equal to
// the table's own part; a name of fewer than three parts matches on its last parts.
func matchSnowflake(tables []warehouse.Table, rel string) []warehouse.Table {
	parts := graph.SplitRelation(rel)
	if len(parts) == 0 || len(parts) > 3 || parts[len(parts)-1] == "" {
		return nil
	}
	for i, p := range parts {
		parts[i] = graph.NormalizeIdent("snowflake", p)
	}
	var out []warehouse.Table
	for _, t := range tables {
		have := []string{t.Database, t.Schema, t.Name}[3-len(parts):]
		ok := true
		for i := range parts {
			ok = ok && parts[i] == have[i]
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}

// matchRelation returns the harvested tables a sink's table name names: the last part equal to the
// table name and, when given, the schema and database parts equal too (case-insensitively, quotes
// removed, as JDBC sinks quote the names they create).
func matchRelation(tables []warehouse.Table, rel string) []warehouse.Table {
	parts := graph.SplitRelation(rel)
	for i, p := range parts {
		if len(p) >= 2 && (p[0] == '"' || p[0] == '`') && p[len(p)-1] == p[0] {
			parts[i] = strings.ReplaceAll(p[1:len(p)-1], p[:1]+p[:1], p[:1])
		}
	}
	if len(parts) == 0 || parts[len(parts)-1] == "" || len(parts) > 3 {
		return nil
	}
	var out []warehouse.Table
	for _, t := range tables {
		want := []string{t.Database, t.Schema, t.Name}[3-len(parts):]
		ok := true
		for i := range parts {
			ok = ok && strings.EqualFold(parts[i], want[i])
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}

// ---- tableflow ----

func (r *run) tableflow(ctx context.Context) ([]graph.Batch, []string, error) {
	cc := r.s.Config.ConfluentCloud
	if cc == nil || cc.KafkaClusterID == "" {
		return nil, nil, errSkipped{"confluent_cloud.kafka_cluster_id"}
	}
	c, err := confluent.New(cc)
	if err != nil {
		return nil, nil, err
	}
	tfs, err := c.ListTableflowTopics(ctx)
	if err != nil {
		return nil, nil, err
	}
	b := graph.Batch{Source: "sync:tableflow"}
	match := graph.Batch{Source: "sync:tableflow-warehouse"}
	var warnings []string
	for _, t := range tfs {
		u := graph.TableflowURN(t.Topic)
		attrs := map[string]string{"phase": t.Phase, "suspended": fmt.Sprint(t.Suspended), "table_formats": strings.Join(t.TableFormats, ","),
			"healthy": fmt.Sprint(t.Healthy), "kafka_cluster_id": t.KafkaClusterID}
		if t.TablePath != "" {
			attrs["table_path"] = t.TablePath
		}
		var syncs []string
		for _, s := range t.CatalogSync {
			syncs = append(syncs, s.CatalogType+":"+s.SyncStatus)
		}
		if len(syncs) > 0 {
			attrs["catalog_sync"] = strings.Join(syncs, ",")
		}
		b.Assets = append(b.Assets, graph.Asset{URN: u, Kind: graph.KindTableflowTable, Name: t.Topic, Attrs: attrs})
		formats := strings.Join(t.TableFormats, "/")
		if formats == "" {
			formats = "(no format reported)"
		}
		b.Edges = append(b.Edges, graph.Edge{From: graph.TopicURN(t.Topic).Field(""), To: u.Field(""), Kind: graph.EdgeMaterializes,
			Transformation: "Tableflow " + formats + " table of topic " + t.Topic})
		if r.tables == nil {
			continue
		}
		// The warehouse reads the table through a catalog integration under the topic's name, with
		// characters SQL identifiers cannot hold replaced, in a namespace named after the Kafka
		// cluster: match that name, prefer that namespace, never guess among several.
		cluster := t.KafkaClusterID
		if cluster == "" {
			cluster = cc.KafkaClusterID
		}
		cands := tableflowCandidates(r.tables, t.Topic, cluster)
		switch len(cands) {
		case 0:
		case 1:
			match.Edges = append(match.Edges, graph.Edge{From: u.Field(""), To: tableURN(r.engine, cands[0]).Field(""), Kind: graph.EdgeMaterializes,
				Transformation: fmt.Sprintf("Tableflow table %s matched by name to warehouse table %s (catalog sync %s)", t.Topic, cands[0].Ref(), strings.Join(syncs, ", "))})
		default:
			var names []string
			for _, c := range cands {
				names = append(names, c.Ref().String())
			}
			warnings = append(warnings, fmt.Sprintf("Tableflow table %s matches several warehouse tables (%s): no edge; declare the right one in a catalog file", t.Topic, strings.Join(names, ", ")))
		}
	}
	out := []graph.Batch{b}
	if r.tables != nil {
		out = append(out, match)
	} else {
		warnings = append(warnings, "warehouse tables were not harvested in this sync: Tableflow → warehouse edges were left as they were")
	}
	return out, warnings, nil
}

// tableflowCandidates returns the warehouse tables named like topic; when several are, only those
// in the schema named after the Kafka cluster (Tableflow's catalog namespace) are kept.
func tableflowCandidates(tables []warehouse.Table, topic, cluster string) []warehouse.Table {
	var cands []warehouse.Table
	for _, wt := range tables {
		if normalizeName(wt.Name) == normalizeName(topic) {
			cands = append(cands, wt)
		}
	}
	if len(cands) < 2 || cluster == "" {
		return cands
	}
	var inNamespace []warehouse.Table
	for _, wt := range cands {
		if normalizeName(wt.Schema) == normalizeName(cluster) {
			inNamespace = append(inNamespace, wt)
		}
	}
	if len(inNamespace) == 0 {
		return cands
	}
	return inNamespace
}

// normalizeName folds a name to lower case with every run of non-alphanumerics as one '_'.
func normalizeName(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.Trim(b.String(), "_")
}
