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
		fs := flinksql.Statement{Name: st.Name, SQL: st.SQL, Properties: st.Properties, Phase: st.Phase}
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
				if p := b.Assets[i].Attrs["schema_pins"]; p != "" {
					attrs["schema_pins"] = p
				}
			}
			b.Warnings = append(b.Warnings, res.warnings...)
			out = append(out, b)
		}
		list.Assets = append(list.Assets, graph.Asset{URN: u, Kind: graph.KindFlinkStatement, Name: st.Name, Attrs: attrs})
	}
	// Statements synced before and gone now: their lineage is marked stale too.
	prev, err := r.s.Graph.Search(ctx, graph.SearchQuery{Systems: []string{graph.SystemFlink}, Kinds: []string{graph.KindFlinkStatement}, Limit: 500})
	if err != nil {
		return nil, nil, err
	}
	for _, h := range prev {
		if current[h.URN] {
			continue
		}
		a, err := r.s.Graph.Get(ctx, h.URN)
		if err != nil {
			return nil, nil, err
		}
		for _, cl := range a.Claims {
			if cl.Source == "sync:flink" && !cl.Stale {
				name := strings.TrimPrefix(string(h.URN), "flink:statement/")
				out = append(out, graph.Batch{Source: flinksql.Source(name)}) // an empty complete view: all of it is stale
			}
		}
	}
	return append([]graph.Batch{list}, out...), warnings, nil
}

// previousPins reads the read-schema versions a statement was pinned to at an earlier sync: a
// statement keeps the schema versions that were latest when it was created, for its lifetime.
func (r *run) previousPins(ctx context.Context, u graph.URN, created time.Time) map[string]int {
	a, err := r.s.Graph.Get(ctx, u)
	if err != nil || a.Attrs["schema_pins"] == "" {
		return nil
	}
	if !created.IsZero() && a.Attrs["created_at"] != created.UTC().Format(time.RFC3339) {
		return nil // a new statement under an old name
	}
	return parsePins(a.Attrs["schema_pins"])
}

// parsePins reads the Flink importer's schema_pins attribute: "subject vN,subject vM".
func parsePins(s string) map[string]int {
	pins := map[string]int{}
	for _, p := range strings.Split(s, ",") {
		subj, v, ok := strings.Cut(strings.TrimSpace(p), " v")
		if n, err := strconv.Atoi(v); ok && err == nil && subj != "" {
			pins[subj] = n
		}
	}
	return pins
}

// tableResolver resolves a Flink table (a topic) to its value subject and the version the
// statement read when it was created.
type tableResolver struct {
	r        *run
	pins     map[string]int
	warnings []string
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
	v, how := pick(hist, t.pins[subject], at)
	if how != "" {
		t.warnings = append(t.warnings, fmt.Sprintf("%s: read schema taken as %s v%d (%s)", topic, subject, v.sv.Version, how))
	}
	rc, _ := t.r.registryClient()
	parsed, err := rc.Parse(ctx, v.sv)
	if err != nil {
		return flinksql.Table{}, err
	}
	return flinksql.Table{Topic: topic, ValueSubject: subject, SchemaVersion: v.sv.Version, SchemaID: v.sv.ID, Columns: columns(parsed)}, nil
}

// pick chooses the version a statement created at `at` reads: an earlier sync's pin; else the
// latest version first seen by then; else, when Data Workers first looked after the statement
// was created, the latest version of that first look (and says so).
func pick(hist []version, pinned int, at time.Time) (version, string) {
	if pinned > 0 {
		for _, v := range hist {
			if v.sv.Version == pinned {
				return v, ""
			}
		}
	}
	var best *version
	for i := range hist {
		v := &hist[i]
		if v.sv.Deleted || at.IsZero() || v.firstSeen.After(at) {
			continue
		}
		best = v
	}
	if best != nil {
		return *best, ""
	}
	earliest := time.Time{}
	for _, v := range hist {
		if !v.sv.Deleted && (earliest.IsZero() || v.firstSeen.Before(earliest)) {
			earliest = v.firstSeen
		}
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if !hist[i].sv.Deleted && hist[i].firstSeen.Equal(earliest) {
			return hist[i], "the statement predates Data Workers' first look at the subject; the latest version then is assumed"
		}
	}
	return hist[len(hist)-1], "no live version"
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
