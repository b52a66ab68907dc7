package catalogsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
)

// version is one registered version of a subject with when Data Workers first saw it (the
// registry keeps no timestamps).
type version struct {
	sv        registry.SubjectVersion
	firstSeen time.Time
}

// ---- schema registry ----

func (r *run) registry(ctx context.Context) ([]graph.Batch, []string, error) {
	rc, err := r.registryClient()
	if err != nil {
		return nil, nil, err
	}
	subjects, err := rc.Subjects(ctx, "", false)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if len(subjects) > MaxSubjects {
		warnings = append(warnings, fmt.Sprintf("%d subjects: only the first %d were synced", len(subjects), MaxSubjects))
		subjects = subjects[:MaxSubjects]
	}
	b := graph.Batch{Source: "sync:schema_registry"}
	for _, subj := range subjects {
		hist, err := r.history(ctx, subj)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
			warnings = append(warnings, fmt.Sprintf("subject %s: %v", subj, err))
			continue
		}
		latest := latestLive(hist)
		if latest == nil {
			continue // every version soft-deleted
		}
		u := graph.SubjectURN(subj)
		var vs []string
		for _, v := range hist {
			if !v.sv.Deleted {
				vs = append(vs, strconv.Itoa(v.sv.Version))
			}
		}
		attrs := map[string]string{"latest_version": strconv.Itoa(latest.sv.Version), "schema_id": strconv.Itoa(latest.sv.ID),
			"schema_type": string(latest.sv.Type), "versions": strings.Join(vs, ",")}
		b.Assets = append(b.Assets, graph.Asset{URN: u, Kind: graph.KindSchemaSubject, Name: subj, Attrs: attrs})
		parsed, err := rc.Parse(ctx, latest.sv)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("subject %s v%d: fields not read: %v", subj, latest.sv.Version, err))
		} else {
			for i, f := range parsed.Fields {
				b.Fields = append(b.Fields, graph.Field{Asset: u, Path: f.Path, Type: f.Type, Nullable: f.Nullable, Description: f.Doc, Ordinal: i + 1})
			}
		}
		// TopicNameStrategy, Confluent's default: <topic>-value is the schema of the topic's values.
		if topic, ok := strings.CutSuffix(subj, "-value"); ok && topic != "" && (!r.kafkaOK || r.topics[topic]) {
			b.Edges = append(b.Edges, graph.Edge{From: u.Field(""), To: graph.TopicURN(topic).Field(""), Kind: graph.EdgeSchemaOf,
				Transformation: "TopicNameStrategy: " + subj + " is the value schema of topic " + topic})
		}
	}
	return []graph.Batch{b}, warnings, nil
}

func (r *run) registryClient() (*registry.Client, error) {
	if r.regc != nil {
		return r.regc, nil
	}
	if r.s.Config.SchemaRegistry == nil {
		return nil, errSkipped{"schema_registry.url"}
	}
	rc, err := registry.New(r.s.Config.SchemaRegistry)
	if err != nil {
		return nil, err
	}
	r.regc = rc
	return rc, nil
}

// history reads a subject's versions and records them in the store, which keeps the first time
// each version was seen.
func (r *run) history(ctx context.Context, subject string) ([]version, error) {
	if h, ok := r.reg[subject]; ok {
		return h, nil
	}
	rc, err := r.registryClient()
	if err != nil {
		return nil, err
	}
	svs, err := rc.History(ctx, subject)
	if err != nil {
		return nil, err
	}
	seen, err := registry.RecordVersions(ctx, r.s.Store, r.now, svs)
	if err != nil {
		return nil, err
	}
	out := make([]version, 0, len(svs))
	for _, sv := range svs {
		out = append(out, version{sv: sv, firstSeen: seen[sv.Version].FirstSeen})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].sv.Version < out[j].sv.Version })
	r.reg[subject] = out
	return out, nil
}

func latestLive(h []version) *version {
	for i := len(h) - 1; i >= 0; i-- {
		if !h[i].sv.Deleted {
			return &h[i]
		}
	}
	return nil
}

// ---- flink ----

func (r *run) flink(ctx context.Context) ([]graph.Batch, []string, error) {
	cc := r.s.Config.ConfluentCloud
	if cc == nil || cc.FlinkURL == "" {
		return nil, nil, errSkipped{"confluent_cloud.flink_url"}
	}
	c, err := confluent.New(cc)
	if err != nil {
		return nil, nil, err
	}
	stmts, err := c.ListStatements(ctx, confluent.StatementFilter{Limit: MaxStatements})
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if len(stmts) == MaxStatements {
		warnings = append(warnings, fmt.Sprintf("at least %d statements: only the first %d were synced", MaxStatements, MaxStatements))
	}
	// The statement list is its own source, so a statement that disappears is marked stale even
	// though its lineage was asserted under the statement's own source.
	list := graph.Batch{Source: "sync:flink"}
	out := []graph.Batch{}
	current := map[graph.URN]bool{}
	for _, st := range stmts {
		if st.SQLKind != "" && !strings.Contains(st.SQLKind, "INSERT") && !strings.Contains(st.SQLKind, "CREATE_TABLE_AS") && st.SQLKind != "SELECT" {
			continue // DDL, SET, SHOW…: no data flow
		}
		u := graph.FlinkStatementURN(st.Name)
		current[u] = true
		attrs := map[string]string{"phase": st.Phase, "compute_pool_id": st.ComputePoolID, "sql_sha256": shortHash(st.SQL)}
		if st.CreatedAt != nil {
			attrs["created_at"] = st.CreatedAt.UTC().Format(time.RFC3339)
		}
		// Topic URNs denote the configured cluster's topics: a table qualified with it is local.
		fs := flinksql.Statement{Name: st.Name, SQL: st.SQL, Properties: st.Properties, Phase: st.Phase,
			CatalogAliases: nonEmpty(cc.EnvironmentID), DatabaseAliases: nonEmpty(cc.KafkaClusterID)}
		if st.CreatedAt != nil {
			fs.CreatedAt = *st.CreatedAt
		}
		res := &tableResolver{r: r, pins: r.previousPins(ctx, u, fs.CreatedAt)}
		b, err := flinksql.Import(ctx, fs, res)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
			attrs["lineage_error"] = err.Error()
			warnings = append(warnings, fmt.Sprintf("statement %s: lineage not imported: %v", st.Name, err))
		} else {
			for i := range b.Assets {
				if b.Assets[i].URN != u {
					continue
				}
				if b.Assets[i].Attrs == nil {
					b.Assets[i].Attrs = map[string]string{}
				}
				b.Assets[i].Attrs["compute_pool_id"] = st.ComputePoolID
				if st.Principal != "" {
					b.Assets[i].Attrs["principal"] = st.Principal
				}
				// The pins change the lineage: the list entry carries them so a change shows.
				for _, k := range []string{"schema_pins", "schema_pin_source"} {
					if p := b.Assets[i].Attrs[k]; p != "" {
						attrs[k] = p
					}
				}
			}
			out = append(out, b)
		}
		list.Assets = append(list.Assets, graph.Asset{URN: u, Kind: graph.KindFlinkStatement, Name: st.Name, Attrs: attrs})
	}
	// Statements synced before and gone now: their lineage is marked stale too.
	prev, err := r.s.Graph.AssetsClaimedBy(ctx, "sync:flink")
	if err != nil {
		return nil, nil, err
	}
	for _, u := range prev {
		name, ok := strings.CutPrefix(string(u), "flink:statement/")
		if !ok || current[u] {
			continue
		}
		out = append(out, graph.Batch{Source: flinksql.Source(name)}) // an empty complete view: all of it is stale
	}
	return append([]graph.Batch{list}, out...), warnings, nil
}

// previousPins reads the schema pins an earlier sync recorded on the statement, with their
// sources: a real pin (first seen) holds for the statement's lifetime; an inferred one is tried
// first when inferring again.
func (r *run) previousPins(ctx context.Context, u graph.URN, created time.Time) map[string]flinksql.Pin {
	a, err := r.s.Graph.Get(ctx, u)
	if err != nil {
		return nil
	}
	return flinksql.PreviousPins(a, created)
}

// tableResolver resolves a Flink table (a topic) to its value subject and the version the
// statement read when it was created.
type tableResolver struct {
	r    *run
	pins map[string]flinksql.Pin
}

// ResolveTable implements flinksql.Resolver.
func (t *tableResolver) ResolveTable(ctx context.Context, ref flinksql.TableRef, at time.Time) (flinksql.Table, error) {
	topic := ref.Table
	if _, err := t.r.registryClient(); err != nil {
		return flinksql.Table{}, fmt.Errorf("%w: no schema registry to read %s's columns from (set schema_registry.url)", flinksql.ErrTableNotFound, topic)
	}
	subject := topic + "-value"
	hist, err := t.r.history(ctx, subject)
	if registry.IsCode(err, 40401) || err == nil && latestLive(hist) == nil {
		return flinksql.Table{Topic: topic}, nil // a topic without a value schema
	}
	if err != nil {
		return flinksql.Table{}, err
	}
	v, source, candidates := pick(hist, t.pins[subject], at)
	tbl, err := t.table(ctx, topic, v)
	tbl.PinSource, tbl.Candidates = source, candidates
	return tbl, err
}

// ResolveTableVersion implements flinksql.VersionResolver.
func (t *tableResolver) ResolveTableVersion(ctx context.Context, ref flinksql.TableRef, n int) (flinksql.Table, error) {
	hist, err := t.r.history(ctx, ref.Table+"-value")
	if err != nil {
		return flinksql.Table{}, err
	}
	for _, v := range hist {
		if v.sv.Version == n {
			return t.table(ctx, ref.Table, v)
		}
	}
	return flinksql.Table{}, fmt.Errorf("%w: %s-value has no version %d", flinksql.ErrTableNotFound, ref.Table, n)
}

func (t *tableResolver) table(ctx context.Context, topic string, v version) (flinksql.Table, error) {
	rc, err := t.r.registryClient()
	if err != nil {
		return flinksql.Table{}, err
	}
	parsed, err := rc.Parse(ctx, v.sv)
	if err != nil {
		return flinksql.Table{}, err
	}
	return flinksql.Table{Topic: topic, ValueSubject: v.sv.Subject, SchemaVersion: v.sv.Version, SchemaID: v.sv.ID, Columns: columns(parsed)}, nil
}

// pick chooses the version a statement created at `at` reads, and how that is known: an earlier
// sync's real pin; else the newest version first seen by then (flinksql.PinFirstSeen); else
// none is known (source ""): the statement predates Data Workers' first look, and the importer
// infers the pin from the SQL, trying candidates in order (the first is the version returned).
func pick(hist []version, prior flinksql.Pin, at time.Time) (v version, source string, candidates []int) {
	byNumber := map[int]version{}
	var seen []flinksql.SeenVersion
	var live []int
	for _, h := range hist {
		byNumber[h.sv.Version] = h
		seen = append(seen, flinksql.SeenVersion{Version: h.sv.Version, FirstSeen: h.firstSeen, Deleted: h.sv.Deleted})
		if !h.sv.Deleted {
			live = append(live, h.sv.Version)
		}
	}
	if h, ok := byNumber[prior.Version]; ok && prior.Real() {
		return h, prior.Source, nil
	}
	if n, ok := flinksql.FirstSeenPin(seen, at); ok {
		return byNumber[n], flinksql.PinFirstSeen, nil
	}
	candidates = flinksql.InferenceOrder(live, prior)
	if len(candidates) == 0 {
		return hist[len(hist)-1], "", nil // no live version: the caller checked, kept for safety
	}
	return byNumber[candidates[0]], "", candidates
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

func columns(s *schema.Schema) []flinksql.Column {
	var out []flinksql.Column
	for _, f := range s.Fields {
		if strings.ContainsAny(f.Path, ".[{") {
			continue // nested: a Flink ROW column's members
		}
		out = append(out, flinksql.Column{Name: f.Path, Type: f.Type, Nullable: f.Nullable})
	}
	return out
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
