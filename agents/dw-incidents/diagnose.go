package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/store"
)

type diagnoseParams struct {
	IncidentID    int64 `json:"incident_id" jsonschema:"The incident to diagnose (from open_incident or get_incident_history)"`
	LookBackHours int   `json:"look_back_hours,omitempty" jsonschema:"How long before the onset a change still counts as near it (default 24)"`
}

// diagnoseEvidence is what was gathered, so the ranking can be checked against it.
type diagnoseEvidence struct {
	Asset       string    `json:"asset"`
	FailureMode string    `json:"failure_mode"`
	Metric      string    `json:"metric,omitempty" jsonschema:"The failing metric in the check history, empty when no failing point is recorded"`
	Column      string    `json:"column,omitempty"`
	Onset       time.Time `json:"onset" jsonschema:"The first failing point of the current streak (the incident's opening time when the history has none)"`
	OnsetSource string    `json:"onset_source"`
	FailingRuns int       `json:"failing_runs" jsonschema:"Consecutive failing points up to the latest"`
	// Path is the upstream lineage, one line per reached node with its distance.
	Path     []string            `json:"path"`
	Versions []versionConsidered `json:"versions_considered"`
}

// versionConsidered is a stored schema version first seen within the look-back before the onset.
type versionConsidered struct {
	Subject   string    `json:"subject"`
	Version   int       `json:"version"`
	FirstSeen time.Time `json:"first_seen"`
	DiffedTo  int       `json:"diffed_against,omitempty" jsonschema:"The previous stored version it was compared with"`
	Changes   int       `json:"changes"`
}

type diagnoseResult struct {
	IncidentID int64            `json:"incident_id"`
	Diagnosis  diagnosis.Result `json:"diagnosis"`
	Evidence   diagnoseEvidence `json:"evidence"`
	Cause      string           `json:"cause" jsonschema:"The one-line cause recorded on the incident"`
	Next       string           `json:"next"`
}

func diagnoseIncident(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Write("diagnose_incident",
		"Diagnose an incident from recorded evidence only: the failing metric's first bad point, the failing column's upstream lineage, "+
			"schema versions first seen before the onset with their field diffs, and the Flink statements reading changed fields with their pinned versions. "+
			"Ranks candidate causes by a stated rule, says what it could not check, and records the cause on the incident.",
		func(ctx context.Context, p diagnoseParams) (diagnoseResult, error) {
			if p.LookBackHours < 0 || p.LookBackHours > 24*30 {
				return diagnoseResult{}, fmt.Errorf("look_back_hours %d: use 1 to 720 (default 24)", p.LookBackHours)
			}
			st, err := env.Store.Get(ctx)
			if err != nil {
				return diagnoseResult{}, err
			}
			s := incidents.New(st, env.Now)
			inc, err := s.Get(ctx, p.IncidentID)
			if err != nil {
				return diagnoseResult{}, err
			}
			lookBack := 24 * time.Hour
			if p.LookBackHours > 0 {
				lookBack = time.Duration(p.LookBackHours) * time.Hour
			}
			in, ev, err := gather(ctx, st, graph.New(st, env.Now), env, inc, lookBack)
			if err != nil {
				return diagnoseResult{}, err
			}
			res := diagnosis.Rank(in)
			cause := res.Conclusion
			if len(res.Candidates) > 0 {
				cause = res.Candidates[0].Cause
			}
			raw, err := json.Marshal(struct {
				Input    diagnosis.Input  `json:"input"`
				Result   diagnosis.Result `json:"result"`
				Evidence diagnoseEvidence `json:"evidence"`
			}{in, res, ev})
			if err != nil {
				return diagnoseResult{}, err
			}
			if err := s.RecordDiagnosis(ctx, inc.ID, string(raw), cause, env.Agent); err != nil {
				return diagnoseResult{}, err
			}
			return diagnoseResult{IncidentID: inc.ID, Diagnosis: res, Evidence: ev, Cause: cause,
				Next: fmt.Sprintf("get_incident_history with assets on this path for earlier incidents; request_approval for a fix of incident %d", inc.ID)}, nil
		}, mcpkit.LocalOnly())
}

// gather collects the observations for Rank from the store: check history, the context graph and
// the recorded schema versions. Live backends are not read here; each is named in Unchecked.
func gather(ctx context.Context, st *store.Store, g *graph.Graph, env *mcpkit.Env, inc incidents.Incident, lookBack time.Duration) (diagnosis.Input, diagnoseEvidence, error) {
	in := diagnosis.Input{FailureMode: inc.FailureMode, LookBack: lookBack, SchemaChanges: []diagnosis.SchemaChange{}, Components: []diagnosis.ComponentState{}}
	ev := diagnoseEvidence{Asset: inc.Asset, FailureMode: inc.FailureMode, Path: []string{}, Versions: []versionConsidered{}}
	if err := onset(ctx, st, inc, &ev); err != nil {
		return in, ev, err
	}
	in.Onset, in.Column = ev.Onset, ev.Column

	lin, err := upstream(ctx, g, graph.URN(inc.Asset), &ev)
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		in.Unchecked = append(in.Unchecked, fmt.Sprintf("lineage: %s is not in the context graph (run sync_catalog or import_dbt_manifest)", inc.Asset))
		return in, ev, nil
	}
	if err != nil {
		return in, ev, err
	}
	in.PathKnown = len(lin.Nodes) > 0
	fieldLevel := ev.Column != "" && len(lin.Start) > 0 && lin.Start[0].Path != ""

	// Subjects and their on-path fields, statements, and the topic each subject describes.
	type subj struct {
		fields   map[string]bool
		distance int
		topics   map[graph.URN]bool
	}
	subjects := map[string]*subj{}
	var statements, connectors, tableflows []graph.URN
	seen := map[graph.URN]bool{}
	for _, n := range lin.Nodes {
		ev.Path = append(ev.Path, fmt.Sprintf("%d %s", n.Depth, n.Node))
		u := n.Node.Asset
		if u.System() == graph.SystemSchema {
			name := u.ID()
			if subjects[name] == nil {
				subjects[name] = &subj{fields: map[string]bool{}, distance: n.Depth, topics: map[graph.URN]bool{}}
			}
			if n.Node.Path != "" {
				subjects[name].fields[n.Node.Path] = true
			}
			subjects[name].distance = min(subjects[name].distance, n.Depth)
		}
		if seen[u] {
			continue
		}
		seen[u] = true
		switch u.System() {
		case graph.SystemFlink:
			statements = append(statements, u)
		case graph.SystemConnect:
			connectors = append(connectors, u)
		case graph.SystemTableflow:
			tableflows = append(tableflows, u)
		}
	}
	for _, h := range lin.Hops {
		if h.Kind == graph.EdgeSchemaOf && h.From.Asset.System() == graph.SystemSchema {
			if sj := subjects[h.From.Asset.ID()]; sj != nil {
				sj.topics[h.To.Asset] = true
			}
		}
	}
	pins := map[graph.URN]map[string]flinksql.Pin{}
	for _, u := range statements {
		a, err := g.Get(ctx, u)
		if err != nil {
			return in, ev, err
		}
		pins[u] = flinksql.ParsePins(a.Attrs)
	}

	names := make([]string, 0, len(subjects))
	for name := range subjects {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sj := subjects[name]
		versions, err := storedVersions(ctx, st, name)
		if err != nil {
			return in, ev, err
		}
		for i, v := range versions {
			if v.firstSeen.After(in.Onset) || in.Onset.Sub(v.firstSeen) > lookBack {
				continue
			}
			vc := versionConsidered{Subject: name, Version: v.version, FirstSeen: v.firstSeen}
			if i == 0 {
				ev.Versions = append(ev.Versions, vc)
				in.Unchecked = append(in.Unchecked, fmt.Sprintf("%s v%d: no earlier version is stored to diff against (list the subject's versions with dw-schema first)", name, v.version))
				continue
			}
			prev := versions[i-1]
			changes, err := diffVersions(prev, v)
			if err != nil {
				ev.Versions = append(ev.Versions, vc)
				in.Unchecked = append(in.Unchecked, fmt.Sprintf("%s v%d: %v", name, v.version, err))
				continue
			}
			vc.DiffedTo, vc.Changes = prev.version, len(changes)
			ev.Versions = append(ev.Versions, vc)
			sc := diagnosis.SchemaChange{Subject: name, Version: v.version, FirstSeen: v.firstSeen, Changes: []diagnosis.FieldChange{},
				OnPath: []string{}, Distance: sj.distance, Readers: []diagnosis.Reader{}, NewVersionShare: -1, FieldNullRate: -1}
			// A field counts as changed-and-read under the name readers knew it by (the old path of a rename).
			changed := map[string]string{}
			for _, c := range changes {
				sc.Changes = append(sc.Changes, diagnosis.FieldChange{Path: c.Path, Change: string(c.Kind), Detail: c.Detail})
				old := c.Path
				if c.OldPath != "" {
					old = c.OldPath
				}
				if c.Kind.AffectsReaders() {
					changed[old] = c.Path
				}
				if sj.fields[old] || sj.fields[c.Path] {
					sc.OnPath = append(sc.OnPath, c.Path)
				}
			}
			sc.SubjectUpstream = !fieldLevel
			sc.Readers = readers(lin, sj.topics, changed, pins, name, v.version)
			in.SchemaChanges = append(in.SchemaChanges, sc)
		}
	}
	in.Unchecked = append(in.Unchecked, unchecked(env, statements, connectors, tableflows, len(subjects) > 0)...)
	return in, ev, nil
}

// onset finds the failing metric and the first failing point of its current streak.
func onset(ctx context.Context, st *store.Store, inc incidents.Incident, ev *diagnoseEvidence) error {
	var metric, subject, at string
	// The metric pkg/quality records for each failure mode; any failing metric when the mode has none.
	want := map[string]string{"null_rate": "null_rate", "volume": "rows_per_hour", "freshness": "freshness_lag_seconds",
		"uniqueness": "duplicate_rows", "custom": "violating_rows"}[inc.FailureMode]
	err := st.DB.QueryRowContext(ctx, `SELECT metric, subject, at FROM metric_points WHERE asset = ? AND status = 'fail'
		AND (? = '' OR metric = ?) ORDER BY at DESC, id DESC LIMIT 1`, inc.Asset, want, want).Scan(&metric, &subject, &at)
	if errors.Is(err, sql.ErrNoRows) {
		ev.Onset, ev.OnsetSource = inc.OpenedAt, "no failing point in the check history: the incident's opening time"
		return nil
	}
	if err != nil {
		return fmt.Errorf("read check history of %s: %w", inc.Asset, err)
	}
	ev.Metric, ev.Column = metric, subject
	rows, err := st.DB.QueryContext(ctx, `SELECT at, status FROM metric_points WHERE asset = ? AND metric = ? AND subject = ?
		ORDER BY at DESC, id DESC`, inc.Asset, metric, subject)
	if err != nil {
		return fmt.Errorf("read check history of %s: %w", inc.Asset, err)
	}
	defer rows.Close()
	first := ""
	for rows.Next() {
		var a, status string
		if err := rows.Scan(&a, &status); err != nil {
			return err
		}
		if status != "fail" {
			if first != "" {
				break
			}
			continue // passing points newer than the latest failure
		}
		first = a
		ev.FailingRuns++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	t, err := store.ParseTimestamp(first)
	if err != nil {
		return err
	}
	ev.Onset, ev.OnsetSource = t, fmt.Sprintf("first failing %s point of the current streak in the check history", metric)
	return nil
}

// upstream walks the failing column's lineage (the graph's own spelling of the column), or the
// whole asset's when the column is unknown or has no field-level lineage.
func upstream(ctx context.Context, g *graph.Graph, asset graph.URN, ev *diagnoseEvidence) (graph.Lineage, error) {
	if _, err := g.Get(ctx, asset); err != nil {
		return graph.Lineage{}, err
	}
	if ev.Column != "" {
		fields, err := g.Fields(ctx, asset)
		if err != nil {
			return graph.Lineage{}, err
		}
		for _, f := range fields {
			if strings.EqualFold(f.Path, ev.Column) {
				lin, err := g.Upstream(ctx, []graph.FieldRef{asset.Field(f.Path)}, 0)
				if err != nil || len(lin.Nodes) > 0 {
					return lin, err
				}
			}
		}
	}
	return g.Upstream(ctx, []graph.FieldRef{{Asset: asset}}, 0)
}

type storedVersion struct {
	version   int
	format    string
	text      string
	firstSeen time.Time
}

// storedVersions reads the versions dw-schema recorded (schema_versions, written by
// registry.RecordVersions), oldest first, soft-deleted ones included: they were live once.
func storedVersions(ctx context.Context, st *store.Store, subject string) ([]storedVersion, error) {
	rows, err := st.DB.QueryContext(ctx, `SELECT version, schema_type, schema, first_seen FROM schema_versions WHERE subject = ? ORDER BY version`, subject)
	if err != nil {
		return nil, fmt.Errorf("read schema versions of %s: %w", subject, err)
	}
	defer rows.Close()
	var out []storedVersion
	for rows.Next() {
		var v storedVersion
		var fs string
		if err := rows.Scan(&v.version, &v.format, &v.text, &fs); err != nil {
			return nil, err
		}
		if v.firstSeen, err = store.ParseTimestamp(fs); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func diffVersions(prev, cur storedVersion) ([]schema.Change, error) {
	parse := func(v storedVersion) (*schema.Schema, error) {
		f, err := schema.ParseFormat(v.format)
		if err != nil {
			return nil, err
		}
		s, err := schema.Parse(f, v.text)
		if err != nil {
			return nil, fmt.Errorf("stored v%d does not parse, so it was not diffed: %w", v.version, err)
		}
		return s, nil
	}
	o, err := parse(prev)
	if err != nil {
		return nil, err
	}
	n, err := parse(cur)
	if err != nil {
		return nil, err
	}
	return schema.Diff(o, n), nil
}

// readers are the statements on the path that read a changed field from a topic the subject
// describes, with the version each is pinned to and the expression the graph edge records.
func readers(lin graph.Lineage, topics map[graph.URN]bool, changed map[string]string, pins map[graph.URN]map[string]flinksql.Pin, subject string, version int) []diagnosis.Reader {
	byStmt := map[graph.URN]*diagnosis.Reader{}
	var order []graph.URN
	for _, h := range lin.Hops {
		if h.To.Asset.System() != graph.SystemFlink || !topics[h.From.Asset] {
			continue
		}
		if _, ok := changed[h.From.Path]; !ok {
			continue
		}
		r := byStmt[h.To.Asset]
		if r == nil {
			r = &diagnosis.Reader{URN: string(h.To.Asset), PinnedVersion: pins[h.To.Asset][subject].Version}
			byStmt[h.To.Asset] = r
			order = append(order, h.To.Asset)
		}
		if !contains(r.ReadsFields, h.From.Path) {
			r.ReadsFields = append(r.ReadsFields, h.From.Path)
		}
		for _, e := range h.Evidence {
			if e.Transformation != "" && !strings.Contains(r.Expression, e.Transformation) {
				r.Expression = strings.TrimPrefix(r.Expression+", "+e.Transformation, ", ")
			}
		}
	}
	out := []diagnosis.Reader{}
	for _, u := range order {
		out = append(out, *byStmt[u])
	}
	return out
}

// unchecked names the live states this tool does not read, and why.
func unchecked(env *mcpkit.Env, statements, connectors, tableflows []graph.URN, subjects bool) []string {
	var out []string
	cc := env.Config.ConfluentCloud
	if len(statements) > 0 {
		if cc == nil || cc.FlinkURL == "" {
			out = append(out, "Flink statement state of "+joinURNs(statements)+": confluent_cloud not configured (set confluent_cloud.flink_url and flink_api_key)")
		} else {
			out = append(out, "Flink statement state of "+joinURNs(statements)+": not read by diagnose_incident (see the statements in Confluent Cloud)")
		}
	}
	if len(tableflows) > 0 {
		if cc == nil || cc.APIKey == "" {
			out = append(out, "Tableflow status of "+joinURNs(tableflows)+": confluent_cloud not configured (set confluent_cloud.api_key)")
		} else {
			out = append(out, "Tableflow status of "+joinURNs(tableflows)+": not read by diagnose_incident")
		}
	}
	if len(connectors) > 0 {
		if env.Config.Connect == nil || env.Config.Connect.URL == "" {
			out = append(out, "connector task state of "+joinURNs(connectors)+": connect not configured (set connect.url)")
		} else {
			out = append(out, "connector task state of "+joinURNs(connectors)+": not read by diagnose_incident")
		}
	}
	if subjects {
		if env.Config.Kafka == nil || len(env.Config.Kafka.BootstrapServers) == 0 {
			out = append(out, "schema-version mix of recent records: kafka not configured (set kafka.bootstrap_servers)")
		} else {
			out = append(out, "schema-version mix of recent records: topic not sampled by diagnose_incident")
		}
	}
	return out
}

func joinURNs(us []graph.URN) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = string(u)
	}
	return strings.Join(s, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
