package diagnosis

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/metrics"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/impact"
	"github.com/dataworkers/dw/pkg/sqlparse"
	"github.com/dataworkers/dw/pkg/store"
)

// DefaultBackendTimeout bounds all the reads of one live backend in one diagnosis.
const DefaultBackendTimeout = 20 * time.Second

// Gatherer collects what Rank judges: the check history, the failing column's upstream lineage,
// the recorded schema versions, the live states on that path (through Live; nil readers are
// backends that are not configured) and the blast radius. It never invents evidence: what it
// cannot read is named in Input.Unchecked.
type Gatherer struct {
	st     *store.Store
	g      *graph.Graph
	cfg    *config.Config
	now    func() time.Time
	live   Live
	redact func(string) string
	bounds time.Duration
	watch  Watch
	// watchSet is true once WithWatch was called: only then are missing readers reported.
	watchSet bool
}

// NewGatherer builds a Gatherer. redact scrubs the configured secrets from every text a backend
// gives (the env's redactor; nil: URL secrets only). backendTimeout bounds each live backend
// (0: DefaultBackendTimeout); now nil is the wall clock.
func NewGatherer(st *store.Store, g *graph.Graph, cfg *config.Config, now func() time.Time, live Live, redact func(string) string, backendTimeout time.Duration) *Gatherer {
	if backendTimeout <= 0 {
		backendTimeout = DefaultBackendTimeout
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	if now == nil {
		now = time.Now
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &Gatherer{st: st, g: g, cfg: cfg, now: now, live: live, redact: redact, bounds: backendTimeout}
}

// Evidence is what was gathered, so the ranking can be checked against it.
type Evidence struct {
	Asset       string    `json:"asset"`
	FailureMode string    `json:"failure_mode"`
	Metric      string    `json:"metric,omitempty" jsonschema:"The failing metric in the check history, empty when no failing point is recorded"`
	Column      string    `json:"column,omitempty"`
	Onset       time.Time `json:"onset" jsonschema:"The first failing point of the current streak (the incident's opening time when the history has none)"`
	OnsetSource string    `json:"onset_source"`
	FailingRuns int       `json:"failing_runs" jsonschema:"Consecutive failing points up to the latest"`
	// Path is the upstream lineage, one line per reached node with its distance.
	Path     []string            `json:"path"`
	Versions []VersionConsidered `json:"versions_considered"`
	// Live are the states read from Kafka Connect, Flink and Tableflow for the components on the path.
	Live []ComponentState `json:"live_states" jsonschema:"Connector, statement and Tableflow states read on the path (healthy ones too)"`
	// Samples are the topics on the path whose recent records were sampled.
	Samples []TopicSample `json:"topic_samples"`
	// Lag and LakeSchema come from the monitoring and the lake (see Watch).
	Lag        []metrics.OnsetLag `json:"consumer_lag,omitempty" jsonschema:"Consumer lag of the sink connectors on the path before and after the onset"`
	LakeSchema []string           `json:"lake_schema_changes,omitempty" jsonschema:"Fields added or dropped in the Tableflow tables on the path near the onset"`
}

// VersionConsidered is a stored schema version first seen within the look-back before the onset
// (by dw-schema, or by its earliest record in the topic sample when dw-schema stored it later).
type VersionConsidered struct {
	Subject   string    `json:"subject"`
	Version   int       `json:"version"`
	FirstSeen time.Time `json:"first_seen"`
	DiffedTo  int       `json:"diffed_against,omitempty" jsonschema:"The previous stored version it was compared with"`
	Changes   int       `json:"changes"`
	Note      string    `json:"note,omitempty"`
}

// Report is one diagnosis: what was observed, the ranking, and what is downstream.
type Report struct {
	Incident incidents.Incident `json:"-"`
	Input    Input              `json:"input"`
	Result   Result             `json:"result"`
	Evidence Evidence           `json:"evidence"`
	Impact   Impact             `json:"impact"`
	// Cause is the one line recorded on the incident: the top candidate, or the conclusion.
	Cause string    `json:"cause"`
	At    time.Time `json:"diagnosed_at"`
}

// Diagnose gathers the evidence for incident inc, ranks the causes and computes the blast radius
// and the severity it implies. It writes nothing; Record stores the outcome on the incident.
func (g *Gatherer) Diagnose(ctx context.Context, inc incidents.Incident, lookBack time.Duration) (Report, error) {
	if lookBack <= 0 {
		lookBack = 24 * time.Hour
	}
	in, ev, err := g.gather(ctx, inc, lookBack)
	if err != nil {
		return Report{}, err
	}
	res := Rank(in)
	cause := res.Conclusion
	if len(res.Candidates) > 0 {
		cause = res.Candidates[0].Cause
	}
	imp, err := g.impact(ctx, inc, ev)
	if err != nil {
		return Report{}, err
	}
	return Report{Incident: inc, Input: in, Result: res, Evidence: ev, Impact: imp, Cause: cause, At: g.now().UTC()}, nil
}

func (g *Gatherer) gather(ctx context.Context, inc incidents.Incident, lookBack time.Duration) (Input, Evidence, error) {
	in := Input{FailureMode: inc.FailureMode, LookBack: lookBack, SchemaChanges: []SchemaChange{}, Components: []ComponentState{}, Unchecked: []string{}}
	ev := Evidence{Asset: inc.Asset, FailureMode: inc.FailureMode, Path: []string{}, Versions: []VersionConsidered{},
		Live: []ComponentState{}, Samples: []TopicSample{}}
	if err := onset(ctx, g.st, inc, &ev); err != nil {
		return in, ev, err
	}
	in.Onset, in.Column = ev.Onset, ev.Column

	lin, err := upstream(ctx, g.g, graph.URN(inc.Asset), inc.FailureMode, ev.Column)
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		in.Unchecked = append(in.Unchecked, fmt.Sprintf("lineage: %s is not in the context graph (run sync_catalog or import_dbt_manifest)", inc.Asset))
		return in, ev, nil
	}
	if err != nil {
		return in, ev, err
	}
	in.PathKnown = len(lin.Nodes) > 0
	fieldLevel := len(lin.Start) > 0 && lin.Start[0].Path != ""

	p := onPath(lin)
	for _, n := range lin.Nodes {
		ev.Path = append(ev.Path, fmt.Sprintf("%d %s", n.Depth, n.Node))
	}
	pins := map[graph.URN]map[string]flinksql.Pin{}
	for _, u := range p.statements {
		a, err := g.g.Get(ctx, u)
		if err != nil {
			return in, ev, err
		}
		pins[u] = flinksql.ParsePins(a.Attrs)
		p.sql[u] = a.Attrs[impact.SQLAttr]
	}

	// Versions first seen within the look-back; those dw-schema stored only after the onset wait
	// for the sample, whose earliest record of them may still date them before it.
	type late struct {
		subject string
		i       int
	}
	var after []late
	stored := map[string][]storedVersion{}
	for _, name := range p.subjectNames() {
		versions, err := storedVersions(ctx, g.st, name)
		if err != nil {
			return in, ev, err
		}
		stored[name] = versions
		for i, v := range versions {
			switch {
			case v.firstSeen.After(in.Onset):
				after = append(after, late{name, i})
			case in.Onset.Sub(v.firstSeen) <= lookBack:
				g.consider(ctx, &in, &ev, lin, p, pins, fieldLevel, name, versions, i, v.firstSeen, "")
			}
		}
	}

	// The live backends are independent: read them side by side, each under its own bound. The
	// sample starts at the look-back before the onset, so it spans the onset.
	lr := g.readLive(ctx, p, stored, in.Onset.Add(-lookBack))
	in.Components = append(in.Components, lr.components...)
	ev.Live = append(ev.Live, lr.components...)
	in.Unchecked = append(in.Unchecked, lr.unchecked...)
	ev.Samples = append(ev.Samples, lr.samples...)
	g.readWatch(ctx, &in, &ev, lin, p)

	for _, l := range after {
		v := stored[l.subject][l.i]
		first, ok := earliestInSample(lr.sampled[l.subject], l.subject, v.version)
		switch {
		case ok && !first.After(in.Onset) && in.Onset.Sub(first) <= lookBack:
			g.consider(ctx, &in, &ev, lin, p, pins, fieldLevel, l.subject, stored[l.subject], l.i, first,
				fmt.Sprintf("dw-schema recorded v%d at %s, after the onset; its earliest record in the sample is at %s", v.version,
					v.firstSeen.UTC().Format(time.RFC3339), first.UTC().Format(time.RFC3339)))
		case ok && !first.After(in.Onset):
			// Its records predate the look-back: an old version, not a change near the onset.
		default:
			line := fmt.Sprintf("%s v%d first recorded at %s, after the onset; its registration time is unknown", l.subject, v.version, v.firstSeen.UTC().Format(time.RFC3339))
			if ok {
				line += fmt.Sprintf(" and its earliest record in the sample is at %s", first.UTC().Format(time.RFC3339))
			}
			in.Unchecked = append(in.Unchecked, line)
			in.Untimed = append(in.Untimed, fmt.Sprintf("%s v%d", l.subject, v.version))
		}
	}
	for i := range in.SchemaChanges {
		in.Unchecked = append(in.Unchecked, measure(&in.SchemaChanges[i], lr.sampled[in.SchemaChanges[i].Subject])...)
		if err := g.readPath(ctx, &in.SchemaChanges[i], graph.URN(inc.Asset), p); err != nil {
			return in, ev, err
		}
	}
	g.warehouseSchemaChanges(ctx, &in, inc, lin)
	return in, ev, nil
}

// consider diffs versions[i] of subject against the version before it and adds the schema change,
// first seen at firstSeen (note says where that time comes from when not from dw-schema).
func (g *Gatherer) consider(ctx context.Context, in *Input, ev *Evidence, lin graph.Lineage, p path, pins map[graph.URN]map[string]flinksql.Pin, fieldLevel bool,
	name string, versions []storedVersion, i int, firstSeen time.Time, note string) {
	sj := p.subjects[name]
	v := versions[i]
	vc := VersionConsidered{Subject: name, Version: v.version, FirstSeen: firstSeen, Note: note}
	if i == 0 {
		ev.Versions = append(ev.Versions, vc)
		in.Unchecked = append(in.Unchecked, fmt.Sprintf("%s v%d: no earlier version is stored to diff against (list the subject's versions with dw-schema first)", name, v.version))
		return
	}
	prev := versions[i-1]
	changes, predicted, oldSchema, newSchema, err := diffVersions(prev, v, "")
	if err != nil {
		ev.Versions = append(ev.Versions, vc)
		in.Unchecked = append(in.Unchecked, fmt.Sprintf("%s v%d: %v", name, v.version, err))
		return
	}
	vc.DiffedTo, vc.Changes = prev.version, len(changes)
	ev.Versions = append(ev.Versions, vc)
	sc := SchemaChange{Subject: name, Version: v.version, FirstSeen: firstSeen, Changes: []FieldChange{},
		OnPath: []string{}, Distance: sj.distance, Readers: []Reader{}, NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1,
		Predicted: predicted, oldVersion: prev.version, old: oldSchema, new: newSchema}
	if note != "" {
		sc.FirstSeenFrom = FirstSeenSample
	}
	// A field counts as changed-and-read under the name readers knew it by (the old path of a rename).
	changed := map[string]string{}
	for _, c := range changes {
		sc.Changes = append(sc.Changes, FieldChange{Path: c.Path, Change: string(c.Kind), OldName: c.OldName, NewName: c.NewName,
			OldType: c.OldType, NewType: c.NewType, SymbolsAdded: c.SymbolsAdded, SymbolsRemoved: c.SymbolsRemoved, Detail: c.Detail})
		old := c.Path
		if c.OldPath != "" {
			old = c.OldPath
		}
		if c.Kind.AffectsReaders() || c.Kind == schema.EnumSymbolsAdded {
			changed[old] = c.Path
		}
		switch {
		case sj.fields[old]:
			sc.OnPath = append(sc.OnPath, c.Path)
			sc.readFields = append(sc.readFields, old)
		case sj.fields[c.Path]:
			sc.OnPath = append(sc.OnPath, c.Path)
			sc.readFields = append(sc.readFields, c.Path)
		}
	}
	sc.SubjectUpstream = !fieldLevel
	sc.Readers = readers(lin, sj.topics, changed, pins, name, p.sql)
	if mode := g.errorHandling(ctx, sc.Readers); mode != "" {
		// The pinned readers skip (or log) what they cannot decode: predict that, not a failure.
		if _, again, _, _, err := diffVersions(prev, v, mode); err == nil {
			sc.Predicted = again
		}
	}
	for i := range sc.Readers {
		readSQL(&sc.Readers[i], p.sql[graph.URN(sc.Readers[i].URN)], sc.Predicted, sc.Changes)
	}
	in.SchemaChanges = append(in.SchemaChanges, sc)
}

// path is what the upstream walk reached, grouped by what can be read about it.
type path struct {
	subjects                           map[string]*subjectOnPath
	statements, connectors, tableflows []graph.URN
	depth                              map[graph.URN]int
	// sql is each statement's SQL text.
	sql map[graph.URN]string
}

type subjectOnPath struct {
	fields   map[string]bool
	distance int
	topics   map[graph.URN]bool
}

func (p path) subjectNames() []string {
	names := make([]string, 0, len(p.subjects))
	for name := range p.subjects {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func onPath(lin graph.Lineage) path {
	p := path{subjects: map[string]*subjectOnPath{}, depth: map[graph.URN]int{}, sql: map[graph.URN]string{}}
	for _, n := range lin.Nodes {
		u := n.Node.Asset
		if u.System() == graph.SystemSchema {
			name := u.ID()
			if p.subjects[name] == nil {
				p.subjects[name] = &subjectOnPath{fields: map[string]bool{}, distance: n.Depth, topics: map[graph.URN]bool{}}
			}
			if n.Node.Path != "" {
				p.subjects[name].fields[n.Node.Path] = true
			}
			p.subjects[name].distance = min(p.subjects[name].distance, n.Depth)
		}
		if d, ok := p.depth[u]; ok {
			p.depth[u] = min(d, n.Depth)
			continue
		}
		p.depth[u] = n.Depth
		switch u.System() {
		case graph.SystemFlink:
			if strings.HasPrefix(u.ID(), "statement/") {
				p.statements = append(p.statements, u)
			}
		case graph.SystemConnect:
			if strings.HasPrefix(u.ID(), "connector/") {
				p.connectors = append(p.connectors, u)
			}
		case graph.SystemTableflow:
			p.tableflows = append(p.tableflows, u)
		}
	}
	for _, h := range lin.Hops {
		if h.Kind == graph.EdgeSchemaOf && h.From.Asset.System() == graph.SystemSchema {
			if sj := p.subjects[h.From.Asset.ID()]; sj != nil {
				sj.topics[h.To.Asset] = true
			}
		}
	}
	return p
}

// newestFailingPointQuery selects asset's newest failing point of the mode's metrics (want, or
// any when the mode has none): metric, subject, at and id. The failing points' own index
// (migration 0018) serves it, newest first, whatever the metric.
func newestFailingPointQuery(asset, mode, want string) (string, []any) {
	cond, args := failingMetricFilter(mode, want)
	return store.PointsQuery("metric, subject, at, id", `p.asset = ? AND p.status = 'fail' AND `+cond,
		"at DESC, id DESC", append([]any{asset}, args...), 1)
}

// onset finds the failing metric and the first failing point of its current streak.
func onset(ctx context.Context, st *store.Store, inc incidents.Incident, ev *Evidence) error {
	var metric, subject, at string
	// The metric pkg/quality records for each failure mode; any failing metric when the mode has none.
	want := map[string]string{ModeNullRate: "null_rate", ModeVolume: "rows_per_hour", ModeFreshness: "freshness_lag_seconds",
		ModeUniqueness: "duplicate_rows", ModeCustom: "violating_rows"}[inc.FailureMode]
	var id int64
	q, qargs := newestFailingPointQuery(inc.Asset, inc.FailureMode, want)
	err := st.DB.QueryRowContext(ctx, q, qargs...).Scan(&metric, &subject, &at, &id)
	if errors.Is(err, sql.ErrNoRows) {
		ev.Onset, ev.OnsetSource = inc.OpenedAt, "no failing point in the check history: the incident's opening time"
		return nil
	}
	if err != nil {
		return fmt.Errorf("read check history of %s: %w", inc.Asset, err)
	}
	ev.Metric, ev.Column = metric, subject
	q, qargs = store.PointsQuery("at, status, id", "p.asset = ? AND p.metric = ? AND p.subject = ?",
		"at DESC, id DESC", []any{inc.Asset, metric, subject}, 0)
	rows, err := st.DB.QueryContext(ctx, q, qargs...)
	if err != nil {
		return fmt.Errorf("read check history of %s: %w", inc.Asset, err)
	}
	defer rows.Close()
	first := ""
	for rows.Next() {
		var a, status string
		if err := rows.Scan(&a, &status, &id); err != nil {
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

// valueMode reports whether a failure is about the values of one column (so its field-level
// lineage is the path); staleness and volume concern the whole table and everything feeding it.
func valueMode(mode string) bool {
	return nullLike(mode) || mode == ModeCustom || mode == ModeUniqueness
}

// graphField is the graph's own spelling of column on asset, "" when the graph has no such field.
func graphField(ctx context.Context, g *graph.Graph, asset graph.URN, column string) (string, error) {
	if column == "" {
		return "", nil
	}
	fields, err := g.Fields(ctx, asset)
	if err != nil {
		return "", err
	}
	for _, f := range fields {
		if strings.EqualFold(f.Path, column) {
			return f.Path, nil
		}
	}
	return "", nil
}

// upstream walks the failing column's lineage (the graph's own spelling of the column) for value
// failures, or the whole asset's when the failure is staleness or volume, the column is unknown
// or it has no field-level lineage.
func upstream(ctx context.Context, g *graph.Graph, asset graph.URN, mode, column string) (graph.Lineage, error) {
	if _, err := g.Get(ctx, asset); err != nil {
		return graph.Lineage{}, err
	}
	if valueMode(mode) {
		f, err := graphField(ctx, g, asset, column)
		if err != nil {
			return graph.Lineage{}, err
		}
		if f != "" {
			lin, err := g.Upstream(ctx, []graph.FieldRef{asset.Field(f)}, 0)
			if err != nil || len(lin.Nodes) > 0 {
				return lin, err
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

// errorHandling is the Flink error-handling mode the readers decode with: the first one set on
// a reader or on the topic it reads ("" = fail, the default).
func (g *Gatherer) errorHandling(ctx context.Context, rs []Reader) string {
	for _, r := range rs {
		stmt, err := g.g.Get(ctx, graph.URN(r.URN))
		if err != nil {
			continue
		}
		topic, _ := g.g.Get(ctx, graph.TopicURN(r.table))
		if m := impact.ErrorHandling(stmt, topic); m != "" {
			return m
		}
	}
	return ""
}

// diffVersions diffs two stored versions and predicts what a reader pinned to prev, decoding
// with the Flink error-handling mode errorHandling, sees of each reader-affecting change in
// records written with cur. It returns both versions parsed.
func diffVersions(prev, cur storedVersion, errorHandling string) ([]schema.Change, []impact.View, *schema.Schema, *schema.Schema, error) {
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
		return nil, nil, nil, nil, err
	}
	n, err := parse(cur)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return schema.Diff(o, n), impact.Predict(o, n, errorHandling), o, n, nil
}

// readers are the statements on the path that read a changed field from a topic the subject
// describes, with the version each is pinned to and the expression the graph edge records.
//
// A walk at table level (staleness, volume) reaches a statement through its table-level read of
// the topic: which changed fields it reads then comes from its SQL, so the same field-level
// reasoning applies as for a null spike.
func readers(lin graph.Lineage, topics map[graph.URN]bool, changed map[string]string, pins map[graph.URN]map[string]flinksql.Pin, subject string,
	sql map[graph.URN]string) []Reader {
	byStmt := map[graph.URN]*Reader{}
	var order []graph.URN
	for _, h := range lin.Hops {
		if h.To.Asset.System() != graph.SystemFlink || !topics[h.From.Asset] {
			continue
		}
		fields := []string{h.From.Path}
		if h.From.Path == "" {
			fields = referenced(sql[h.To.Asset], strings.TrimPrefix(h.From.Asset.ID(), "topic/"), changed)
		}
		if _, ok := changed[h.From.Path]; h.From.Path != "" && !ok || h.From.Path == "" && len(fields) == 0 {
			continue
		}
		r := byStmt[h.To.Asset]
		if r == nil {
			r = &Reader{URN: string(h.To.Asset), PinnedVersion: pins[h.To.Asset][subject].Version, table: strings.TrimPrefix(h.From.Asset.ID(), "topic/")}
			byStmt[h.To.Asset] = r
			order = append(order, h.To.Asset)
		}
		for _, f := range fields {
			if !has(r.ReadsFields, f) {
				r.ReadsFields = append(r.ReadsFields, f)
			}
		}
		for _, e := range h.Evidence {
			if e.Transformation != "" && !strings.Contains(r.Expression, e.Transformation) {
				r.Expression = strings.TrimPrefix(r.Expression+", "+e.Transformation, ", ")
			}
		}
	}
	out := []Reader{}
	for _, u := range order {
		out = append(out, *byStmt[u])
	}
	return out
}

// referenced are the changed fields (as readers name them) the statement's SQL reads from table.
func referenced(sql, table string, changed map[string]string) []string {
	if sql == "" {
		return nil
	}
	stmts, _, err := sqlparse.ParseScript(sql)
	if err != nil {
		return nil
	}
	var out []string
	for f := range changed {
		for _, st := range stmts {
			if len(sqlparse.ValueUses(st, nil, table, f)) > 0 && !has(out, f) {
				out = append(out, f)
			}
		}
	}
	sort.Strings(out)
	return out
}

func joinURNs(us []graph.URN) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = string(u)
	}
	return strings.Join(s, ", ")
}

// readSQL says what the reader's SQL does with each changed field it reads, given what the
// format predicts it sees (nulls when there is no prediction).
func readSQL(r *Reader, sql string, predicted []impact.View, changes []FieldChange) {
	if sql == "" {
		return
	}
	r.sql = sql
	for _, f := range r.ReadsFields {
		if !slices.ContainsFunc(changes, func(c FieldChange) bool {
			return c.Path == f && c.Change != string(schema.EnumSymbolsAdded) && c.Change != string(schema.FieldAdded)
		}) && !slices.ContainsFunc(predicted, func(p impact.View) bool { return p.Field == f }) {
			continue // only its values changed: the sample's new values say what the SQL does
		}
		v := impact.View{Field: f, Symptom: impact.SymptomNulls, Sees: "NULL"}
		for _, p := range predicted {
			if p.Field == f {
				v = p
			}
		}
		r.Reads = append(r.Reads, impact.ReadsOf(sql, r.table, f, v, nil)...)
	}
}
