package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/fix"
	"github.com/dataworkers/dw/pkg/sqlparse"
	"github.com/dataworkers/dw/pkg/store"
)

// Origins of a proposal.
const (
	OriginGenerated = "generated"
	OriginClient    = "client"
)

// Sources are what plans are generated from and validated against.
type Sources struct {
	Store  *store.Store
	Graph  *graph.Graph
	Config *config.Config
	Now    func() time.Time
	// Offsets reads start offsets from Kafka; nil when kafka is not configured.
	Offsets OffsetsFunc
	// Level is the compatibility rule of a subject (from the registry when configured); nil means
	// the registry default BACKWARD, said in the proposal's validation.
	Level func(ctx context.Context, subject string) (compat.Level, error)
}

// Request asks for a plan for one incident.
type Request struct {
	Incident incidents.Incident
	// Diagnosis is the JSON diagnose_incident recorded ("" when none).
	Diagnosis string
	// From is where corrected data starts; zero means 00:00 UTC of the onset day.
	From  time.Time
	Actor string
}

// recorded is the part of the recorded diagnosis the generator reads; the rest of the JSON is
// the gatherer's business and may change shape.
type recorded struct {
	Input  diagnosis.Input  `json:"input"`
	Result diagnosis.Result `json:"result"`
}

// draftContext is what one generation learned that later steps and client proposals reuse.
type draftContext struct {
	src     Sources
	inc     incidents.Incident
	from    time.Time
	diag    *recorded
	restore *restoreDraft // the schema restore, when one is proposed
	// registered are the schemas the plan registers, by subject: what a new statement reading
	// the subject's topic will pin. Client proposals are checked against the final plan's.
	registered map[string]registeredSchema
	manifest   *manifestCache
	newAsset   graph.URN // where the data lands after the plan ("" when it stays put)
	key        []string  // the statement's GROUP BY output columns
	timeCol    string
	sinkV2     string
	stmtURN    graph.URN
	notes      []string
}

type registeredSchema struct {
	schema *schema.Schema
	how    string
}

type restoreDraft struct {
	subject string
	version int
	schema  *schema.Schema
	topics  []string
}

// Generate writes the mechanical plan for an incident: hold the jobs that push to external sinks,
// restore the schema, draft the corrected statement and the dbt change, and the checks that prove
// the fix. What cannot be generated is said in Notes with the reason.
func Generate(ctx context.Context, src Sources, req Request) (Plan, error) {
	_, p, err := generate(ctx, src, req)
	return p, err
}

func generate(ctx context.Context, src Sources, req Request) (*draftContext, Plan, error) {
	dc := &draftContext{src: src, inc: req.Incident, registered: map[string]registeredSchema{}, manifest: &manifestCache{}}
	p := Plan{IncidentID: req.Incident.ID, CreatedBy: req.Actor, Proposals: []Proposal{}, Checks: []Check{}}
	if req.Diagnosis == "" {
		dc.note("no diagnosis is recorded: run diagnose_incident first; only the hold on external sinks was generated")
	} else {
		var r recorded
		if err := json.Unmarshal([]byte(req.Diagnosis), &r); err != nil {
			dc.note(fmt.Sprintf("the recorded diagnosis could not be read (%v): run diagnose_incident again; only the hold on external sinks was generated", err))
		} else {
			dc.diag = &r
		}
	}
	onset := req.Incident.OpenedAt
	if dc.diag != nil && !dc.diag.Input.Onset.IsZero() {
		onset = dc.diag.Input.Onset
	}
	dc.from = req.From
	if dc.from.IsZero() {
		o := onset.UTC()
		dc.from = time.Date(o.Year(), o.Month(), o.Day(), 0, 0, 0, 0, time.UTC)
	}
	holds, err := dc.holds(ctx)
	if err != nil {
		return nil, Plan{}, err
	}
	p.Proposals = append(p.Proposals, holds...)
	if dc.diag != nil {
		sc, reader, ok := dc.schemaCause()
		if ok {
			if pr, ok, err := dc.schemaRestore(ctx, sc, reader); err != nil {
				return nil, Plan{}, err
			} else if ok {
				p.Proposals = append(p.Proposals, pr)
			}
			if pr, ok, err := dc.statement(ctx, sc, reader); err != nil {
				return nil, Plan{}, err
			} else if ok {
				p.Proposals = append(p.Proposals, pr)
				if pr, ok := dc.dbtDiff(ctx); ok {
					p.Proposals = append(p.Proposals, pr)
				}
			}
		}
	}
	p.Checks = dc.checks()
	for i := range p.Proposals {
		p.Proposals[i].Order = i + 1
	}
	p.Notes = dc.notes
	if p.Notes == nil {
		p.Notes = []string{}
	}
	return dc, p, nil
}

func (dc *draftContext) note(s string) { dc.notes = append(dc.notes, s) }

func (dc *draftContext) executor(class string) string {
	if config.IsOwnerOnly(class) {
		return ExecutorOwner
	}
	if c, ok := dc.src.Config.Class(class); ok && c.Executor == config.ExecutorDataWorkers {
		return ExecutorDataWorkers
	}
	return ExecutorOwner
}

// holds pauses every orchestrator job downstream of the incident asset that pushes to an
// external sink, soonest next run first.
func (dc *draftContext) holds(ctx context.Context) ([]Proposal, error) {
	asset := graph.URN(dc.inc.Asset)
	br, err := dc.src.Graph.BlastRadius(ctx, graph.BlastRadiusRequest{Asset: asset})
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		dc.note(fmt.Sprintf("no hold generated: %s is not in the context graph, so the jobs downstream are unknown (run sync_catalog or import_dbt_manifest)", asset))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("blast radius of %s: %w", asset, err)
	}
	next := map[graph.URN]*time.Time{}
	for _, j := range br.ScheduledJobs {
		next[j.URN] = j.NextRun
	}
	type hold struct {
		job   graph.Impact
		sinks []string
		next  *time.Time
	}
	var hs []hold
	for _, im := range append(append([]graph.Impact{}, br.FieldLevel...), br.TableLevel...) {
		if im.Kind != graph.KindJob && im.System != "job" {
			continue
		}
		edges, _, err := dc.src.Graph.Neighbours(ctx, im.URN, graph.Downstream)
		if err != nil {
			return nil, err
		}
		var sinks []string
		for _, e := range edges {
			if e.To.Asset.System() == graph.SystemSink && !containsFold(sinks, string(e.To.Asset)) {
				sinks = append(sinks, string(e.To.Asset))
			}
		}
		if len(sinks) > 0 {
			hs = append(hs, hold{job: im, sinks: sinks, next: next[im.URN]})
		}
	}
	sort.SliceStable(hs, func(i, j int) bool {
		a, b := hs[i].next, hs[j].next
		if a == nil || b == nil {
			return a != nil && b == nil
		}
		return a.Before(*b)
	})
	var out []Proposal
	for _, h := range hs {
		a, err := dc.src.Graph.Get(ctx, h.job.URN)
		if err != nil {
			return nil, err
		}
		orch, id, _ := strings.Cut(h.job.URN.ID(), "/")
		if a.Attrs["orchestrator"] != "" {
			orch = a.Attrs["orchestrator"]
		}
		if orch != "airflow" {
			dc.note(fmt.Sprintf("%s pushes to %s but is not an Airflow DAG: Data Workers pauses only Airflow DAGs; hold it by hand before its next run", h.job.URN, strings.Join(h.sinks, ", ")))
			continue
		}
		dag := a.Attrs["dag_id"]
		if dag == "" {
			dag = id
		}
		// Dispatch refuses a target that does not name its DAG (CheckTarget), so such a hold
		// would be approved and then never run: say so now instead of proposing it.
		if CheckTarget(config.ClassPauseJob, string(h.job.URN), map[string]any{"dag_id": dag}) != nil {
			dc.note(holdByHand(string(h.job.URN)) + fmt.Sprintf(" (it pushes to %s; its DAG is %s)", strings.Join(h.sinks, ", "), dag))
			continue
		}
		when := "it is not scheduled"
		if a.Attrs["paused"] == "true" {
			when = "it is paused already"
		} else if h.next != nil {
			when = fmt.Sprintf("its next run is %s (in %s)", h.next.UTC().Format("2006-01-02 15:04 UTC"), h.next.Sub(dc.src.Now()).Round(time.Minute))
		}
		out = append(out, Proposal{Class: config.ClassPauseJob, Target: string(h.job.URN),
			Title:    fmt.Sprintf("Pause %s before it pushes wrong numbers to %s", dag, strings.Join(h.sinks, ", ")),
			Payload:  map[string]any{"dag_id": dag},
			Executor: dc.executor(config.ClassPauseJob), Reversible: true,
			Undo: fmt.Sprintf("unpause_job {\"dag_id\": %q} once verify_incident passes (remediate records the undo)", dag),
			Why: fmt.Sprintf("%s is downstream of %s (%d hops) and pushes to %s; %s. Held until verify_incident passes, no wrong number leaves",
				h.job.URN, dc.inc.Asset, h.job.Depth, strings.Join(h.sinks, ", "), when),
			BlastRadius: append([]string{string(h.job.URN)}, h.sinks...), Origin: OriginGenerated,
			Validation: fmt.Sprintf("%s is a job in the context graph with dag_id %s; the payload is what remediate's pause_job dispatch reads", h.job.URN, dag)})
	}
	if len(out) == 0 && len(hs) == 0 {
		dc.note(fmt.Sprintf("no hold needed: no orchestrator job downstream of %s pushes to an external sink", asset))
	}
	return out, nil
}

// schemaCause picks the top-ranked schema change that removed or renamed a field a reader reads.
func (dc *draftContext) schemaCause() (diagnosis.SchemaChange, diagnosis.Reader, bool) {
	byKey := map[string]diagnosis.SchemaChange{}
	for _, sc := range dc.diag.Input.SchemaChanges {
		byKey[fmt.Sprintf("schema:%s v%d", sc.Subject, sc.Version)] = sc
	}
	var order []diagnosis.SchemaChange
	for _, c := range dc.diag.Result.Candidates {
		if sc, ok := byKey[c.Source]; ok && c.Kind == "schema_change" {
			order = append(order, sc)
		}
	}
	if len(order) == 0 {
		order = dc.diag.Input.SchemaChanges
	}
	for _, sc := range order {
		for _, r := range sc.Readers {
			for _, f := range r.ReadsFields {
				for _, ch := range sc.Changes {
					old, renamed := renameOf(ch)
					if ch.Change == "removed" && ch.Path == f || renamed && old == f {
						return sc, r, true
					}
				}
			}
		}
	}
	if len(dc.diag.Input.SchemaChanges) > 0 {
		dc.note("no schema restore, statement or dbt change generated: no recorded schema change removed or renamed a field a known reader reads")
	} else {
		dc.note("no schema restore, statement or dbt change generated: the diagnosis names no schema change (" + dc.diag.Result.Conclusion + ")")
	}
	return diagnosis.SchemaChange{}, diagnosis.Reader{}, false
}

// storedSchemas reads the subject's recorded versions, oldest first.
func storedSchemas(ctx context.Context, st *store.Store, subject string) ([]int, map[int]*schema.Schema, error) {
	rows, err := st.DB.QueryContext(ctx, `SELECT version, schema_type, schema FROM schema_versions WHERE subject = ? AND deleted = 0 ORDER BY version`, subject)
	if err != nil {
		return nil, nil, fmt.Errorf("read schema versions of %s: %w", subject, err)
	}
	defer rows.Close()
	var order []int
	out := map[int]*schema.Schema{}
	for rows.Next() {
		var v int
		var typ, text string
		if err := rows.Scan(&v, &typ, &text); err != nil {
			return nil, nil, err
		}
		f, err := schema.ParseFormat(typ)
		if err != nil {
			continue
		}
		s, err := schema.Parse(f, text)
		if err != nil {
			continue // an unparsable stored version is left out; the diff names it
		}
		order = append(order, v)
		out[v] = s
	}
	return order, out, rows.Err()
}

func (dc *draftContext) level(ctx context.Context, subject string) (compat.Level, string, error) {
	if dc.src.Level == nil {
		return compat.Backward, "schema_registry not configured: judged under BACKWARD, the registry default (set schema_registry.url to use the subject's own rule)", nil
	}
	l, err := dc.src.Level(ctx, subject)
	if err != nil {
		return "", "", err
	}
	return l, "the subject's rule from the registry", nil
}

func (dc *draftContext) schemaRestore(ctx context.Context, sc diagnosis.SchemaChange, reader diagnosis.Reader) (Proposal, bool, error) {
	order, versions, err := storedSchemas(ctx, dc.src.Store, sc.Subject)
	if err != nil {
		return Proposal{}, false, err
	}
	broken := versions[sc.Version]
	base := reader.PinnedVersion
	if versions[base] == nil {
		base = 0
		for _, v := range order {
			if v < sc.Version {
				base = v
			}
		}
	}
	if broken == nil || versions[base] == nil {
		dc.note(fmt.Sprintf("no schema restore generated: %s v%d or the version before it is not stored (list the subject with dw-schema get_subject so its versions are recorded)", sc.Subject, sc.Version))
		return Proposal{}, false, nil
	}
	r, err := fix.Restore(versions[base], broken)
	if err != nil {
		dc.note(fmt.Sprintf("no schema restore generated for %s v%d: %v", sc.Subject, sc.Version, err))
		return Proposal{}, false, nil
	}
	proposed, err := schema.Parse(r.Format, r.Text, broken.References...)
	if err != nil {
		return Proposal{}, false, fmt.Errorf("the restoring schema of %s does not parse (a bug): %w", sc.Subject, err)
	}
	next := order[len(order)-1] + 1
	lvl, how, err := dc.level(ctx, sc.Subject)
	if err != nil {
		return Proposal{}, false, err
	}
	var prev []compat.Version
	for _, v := range order {
		prev = append(prev, compat.Version{Version: v, Schema: versions[v]})
	}
	res := compat.Check(lvl, compat.Strict, proposed, prev)
	if !res.Compatible {
		dc.note(fmt.Sprintf("no schema restore generated: the restoring version of %s is not compatible under %s (%d incompatibilities); restore by hand", sc.Subject, lvl, len(res.Incompatibilities)))
		return Proposal{}, false, nil
	}
	var restored []string
	for _, f := range r.Restored {
		restored = append(restored, f.Path)
	}
	dc.restore = &restoreDraft{subject: sc.Subject, version: next, schema: proposed}
	dc.registered[sc.Subject] = registeredSchema{schema: proposed, how: fmt.Sprintf("%s v%d (the restoring version this plan registers first)", sc.Subject, next)}
	subj := graph.SubjectURN(sc.Subject)
	blast := []string{string(subj)}
	if reader.URN != "" {
		blast = append(blast, reader.URN)
	}
	return Proposal{Class: config.ClassRegisterSchema, Target: string(subj),
		Title:    fmt.Sprintf("Register %s v%d: %s back as optional beside what v%d added", sc.Subject, next, strings.Join(restored, ", "), sc.Version),
		Payload:  map[string]any{"subject": sc.Subject, "schema_type": string(proposed.Format), "schema": proposed.Text},
		Executor: dc.executor(config.ClassRegisterSchema), Reversible: true,
		Undo: fmt.Sprintf("soft-delete %s v%d once no producer uses it; records written with it stay readable", sc.Subject, next),
		Why: fmt.Sprintf("v%d removed %s, which %s (pinned to v%d) still reads; v%d restores it so readers pinned to v%d find it again",
			sc.Version, strings.Join(restored, ", "), reader.URN, reader.PinnedVersion, next, base),
		BlastRadius: blast, Origin: OriginGenerated,
		Validation: fmt.Sprintf("pkg/schema/fix restoration of v%d→v%d; parses as %s; compatible under %s with versions %v (%s)", base, sc.Version, proposed.Format, lvl, res.Compared, how)}, true, nil
}

// knownFields are the fields a new statement reading topic will pin: the restoring version
// when the plan registers one, else the latest stored version of <topic>-value.
func (dc *draftContext) knownFields(ctx context.Context, topic string) ([]string, string, error) {
	subject := topic + "-value"
	if r, ok := dc.registered[subject]; ok {
		return fieldNames(r.schema), r.how, nil
	}
	order, versions, err := storedSchemas(ctx, dc.src.Store, subject)
	if err != nil {
		return nil, "", err
	}
	if len(order) == 0 {
		return nil, "", nil
	}
	v := order[len(order)-1]
	return fieldNames(versions[v]), fmt.Sprintf("%s v%d (the latest stored version)", subject, v), nil
}

func fieldNames(s *schema.Schema) []string {
	var out []string
	for _, f := range s.Fields {
		if !strings.ContainsAny(f.Path, ".[{") {
			out = append(out, f.Path)
		}
	}
	return out
}

// topicsOf lists the topics a subject is the value schema of (schema_of edges).
func (dc *draftContext) topicsOf(ctx context.Context, subject string) ([]string, error) {
	edges, _, err := dc.src.Graph.Neighbours(ctx, graph.SubjectURN(subject), graph.Downstream)
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range edges {
		if e.Kind == graph.EdgeSchemaOf && e.To.Asset.System() == graph.SystemKafka && !containsFold(out, e.To.Asset.ID()) {
			out = append(out, strings.TrimPrefix(e.To.Asset.ID(), "topic/"))
		}
	}
	return out, nil
}

func (dc *draftContext) statement(ctx context.Context, sc diagnosis.SchemaChange, reader diagnosis.Reader) (Proposal, bool, error) {
	u := graph.URN(reader.URN)
	a, err := dc.src.Graph.Get(ctx, u)
	var nf *graph.NotFoundError
	if errors.As(err, &nf) || err == nil && a.Attrs["sql"] == "" {
		dc.note(fmt.Sprintf("no corrected statement generated: the SQL of %s is not in the context graph (import_flink_statement or sync_catalog with confluent_cloud configured)", u))
		return Proposal{}, false, nil
	}
	if err != nil {
		return Proposal{}, false, err
	}
	sql := a.Attrs["sql"]
	var added []string
	renamed := map[string]string{}
	types := map[string]string{}
	for _, ch := range sc.Changes {
		types[ch.Path] = ch.Type
		switch ch.Change {
		case "added":
			added = append(added, ch.Path)
		case "renamed":
			if old, ok := renameOf(ch); ok && containsExact(reader.ReadsFields, old) {
				renamed[old] = ch.Path
			}
		}
	}
	var reps []Replacement
	for _, f := range reader.ReadsFields {
		removed := false
		for _, ch := range sc.Changes {
			removed = removed || (ch.Change == "removed" && ch.Path == f) || (ch.Change == "renamed" && renamed[f] != "")
		}
		if !removed {
			continue
		}
		r, why := deriveReplacement(f, added, renamed[f], types)
		if why != "" {
			dc.note("no corrected statement generated: " + why)
			return Proposal{}, false, nil
		}
		reps = append(reps, r)
	}
	topics, err := dc.topicsOf(ctx, sc.Subject)
	if err != nil {
		return Proposal{}, false, err
	}
	stmt, err := sqlparse.Parse(sql)
	if err != nil {
		dc.note(fmt.Sprintf("no corrected statement generated: the SQL of %s does not parse: %v", u, err))
		return Proposal{}, false, nil
	}
	lin := sqlparse.Analyze(stmt, nil)
	source := ""
	for _, t := range lin.Tables {
		for _, tp := range topics {
			if strings.EqualFold(t[len(t)-1], tp) {
				source = tp
			}
		}
	}
	if source == "" || len(lin.Target) == 0 {
		dc.note(fmt.Sprintf("no corrected statement generated: %s reads no topic of %s that the graph knows, or writes no table", u, sc.Subject))
		return Proposal{}, false, nil
	}
	sink := lin.Target[len(lin.Target)-1] + "-v2"
	var opts [][2]string
	start := map[string]any{"from": dc.from.UTC().Format(time.RFC3339)}
	var offs []PartitionOffset
	why := "kafka not configured (set kafka.bootstrap_servers)"
	if dc.src.Offsets != nil {
		if offs, err = dc.src.Offsets(ctx, source, dc.from); err != nil {
			why, offs = fmt.Sprintf("the offsets of %s could not be read (%v)", source, err), nil
		}
	}
	if offs != nil {
		opts = [][2]string{{"scan.startup.mode", "specific-offsets"}, {"scan.startup.specific-offsets", specificOffsets(offs)}}
		start["mode"], start["offsets"] = "specific-offsets", specificOffsets(offs)
	} else {
		ms := strconv.FormatInt(dc.from.UnixMilli(), 10)
		opts = [][2]string{{"scan.startup.mode", "timestamp"}, {"scan.startup.timestamp-millis", ms}}
		start["mode"], start["timestamp_millis"] = "timestamp", ms
		dc.note(fmt.Sprintf("%s: the corrected statement starts from timestamp %s (%s) instead of per-partition offsets", why, ms, dc.from.UTC().Format(time.RFC3339)))
	}
	known, pinned, err := dc.knownFields(ctx, source)
	if err != nil {
		return Proposal{}, false, err
	}
	d, err := rewriteStatement(sql, reps, source, sink, optionsHint(opts), known)
	if err != nil {
		dc.note(fmt.Sprintf("no corrected statement generated for %s: %v", u, err))
		return Proposal{}, false, nil
	}
	check := map[string][]string{}
	if known != nil {
		check[strings.ToLower(source)] = known
	}
	rc, err := checkStatement(d.SQL, check)
	if err != nil {
		// Our own output must parse and read only what the pinned schema has; otherwise refuse it.
		dc.note(fmt.Sprintf("the corrected statement drafted for %s was refused by its own validation: %v", u, err))
		return Proposal{}, false, nil
	}
	if len(rc.Target) == 0 || !strings.EqualFold(rc.Target[len(rc.Target)-1], sink) {
		dc.note(fmt.Sprintf("the corrected statement drafted for %s does not write %s; refused", u, sink))
		return Proposal{}, false, nil
	}
	validation := "parses with pkg/sqlparse; writes " + sink
	if known != nil {
		validation += fmt.Sprintf("; reads only fields of %s (%s)", pinned, strings.Join(rc.Reads[strings.ToLower(source)], ", "))
	} else {
		validation += "; the fields read were not checked: no stored schema version of " + source + "-value"
	}
	dc.key, dc.timeCol = groupKey(stmt)
	dc.sinkV2, dc.stmtURN = sink, u
	dc.newAsset = dc.v2Asset(ctx, lin.Target[len(lin.Target)-1], sink)
	old := strings.TrimPrefix(u.ID(), "statement/")
	name := old + "-v2"
	var whys []string
	for _, r := range reps {
		w := fmt.Sprintf("it reads %s as %s", r.Removed, r.Readable())
		if r.Factor != "1" && (r.Conversion == "" || r.Exact) {
			w += fmt.Sprintf(" (the SQL casts %s to BIGINT before multiplying, so the product cannot overflow INT)", r.With)
		}
		whys = append(whys, w+"; "+r.Why)
	}
	landing := ""
	if dc.newAsset != "" {
		landing = fmt.Sprintf(". %s is expected to land in the warehouse as %s, the name Tableflow gives it when enabled like %s (an expectation, not checked)",
			sink, dc.newAsset, lin.Target[len(lin.Target)-1])
	}
	steps := []string{
		fmt.Sprintf("CREATE TABLE `%s` LIKE `%s` (the new sink, same columns)", sink, lin.Target[len(lin.Target)-1]),
		fmt.Sprintf("Create Flink statement %s with the sql of this payload (after the schema restore is registered, so it pins the restored version)", name),
		fmt.Sprintf("Enable Tableflow on %s like %s; the warehouse table is expected as %s (check the name Tableflow gives it before the checks run)", sink, lin.Target[len(lin.Target)-1], dc.newAsset),
		fmt.Sprintf("Once %s has caught up, stop %s (after every reader of %s reads %s)", name, old, lin.Target[len(lin.Target)-1], sink),
	}
	return Proposal{Class: config.ClassFlinkStatement, Target: string(u),
		Title:    fmt.Sprintf("Run %s: reads %s and writes %s from %s", name, exprList(reps), sink, dc.from.UTC().Format("2006-01-02 15:04 UTC")),
		Payload:  map[string]any{"statement_name": name, "sql": d.SQL, "sink": sink, "start": start, "steps": steps},
		Executor: dc.executor(config.ClassFlinkStatement), Reversible: true,
		Undo: fmt.Sprintf("stop and delete statement %s and topic %s; %s keeps running until stopped, so nothing else changes", name, sink, old),
		Why: fmt.Sprintf("%s is pinned to %s v%d and reads %s, which v%d removed; %s%s", u, sc.Subject, reader.PinnedVersion,
			strings.Join(reader.ReadsFields, ", "), sc.Version, strings.Join(whys, "; "), landing),
		BlastRadius: []string{string(u), string(graph.TopicURN(sink)), string(dc.newAsset)}, Origin: OriginGenerated,
		Validation: validation}, true, nil
}

func exprList(reps []Replacement) string {
	var out []string
	for _, r := range reps {
		out = append(out, r.Readable())
	}
	return strings.Join(out, ", ")
}

// groupKey is the statement's GROUP BY as output column names (window_end, grouped but not
// selected, is left out) and the output column of the window start (the time column).
func groupKey(stmt sqlparse.Statement) ([]string, string) {
	var q *sqlparse.Query
	switch s := stmt.(type) {
	case *sqlparse.Insert:
		q = s.Query
	case *sqlparse.CreateTableAs:
		q = s.Query
	}
	if q == nil {
		return nil, ""
	}
	sel, ok := q.Body.(*sqlparse.Select)
	if !ok {
		return nil, ""
	}
	var key []string
	timeCol := ""
	for _, g := range sel.GroupBy {
		c, ok := g.(*sqlparse.ColumnRef)
		if !ok {
			continue
		}
		name := c.Parts[len(c.Parts)-1]
		for _, it := range sel.Items {
			ic, ok := it.Expr.(*sqlparse.ColumnRef)
			if !ok || !strings.EqualFold(ic.Parts[len(ic.Parts)-1], name) {
				continue
			}
			out := name
			if it.Alias != "" {
				out = it.Alias
			}
			key = append(key, out)
			if strings.EqualFold(name, "window_start") {
				timeCol = out
			}
		}
	}
	return key, timeCol
}

// v2Asset is the warehouse table the new sink lands as: the incident's table named like the new
// topic when the old table is named like the old topic (Tableflow turns '-' into '_'), else the
// old name with _V2 appended; either way the note says so.
func (dc *draftContext) v2Asset(ctx context.Context, oldTopic, newTopic string) graph.URN {
	asset := graph.URN(dc.inc.Asset)
	id := asset.ID()
	engine, rel, ok := strings.Cut(id, "/")
	if asset.System() != graph.SystemWarehouse || !ok {
		dc.note(fmt.Sprintf("the incident asset %s is not a warehouse table, so the table %s lands in is unknown; the checks stay on the incident asset", asset, newTopic))
		return ""
	}
	parts := graph.SplitRelation(rel)
	last := parts[len(parts)-1]
	newLast := last + "_V2"
	if strings.EqualFold(strings.ReplaceAll(oldTopic, "-", "_"), last) {
		newLast = strings.ReplaceAll(newTopic, "-", "_")
		if strings.ToUpper(last) == last {
			newLast = strings.ToUpper(newLast)
		}
	}
	parts[len(parts)-1] = newLast
	u := graph.WarehouseURN(engine, parts...)
	dc.note(fmt.Sprintf("%s is expected to land as %s (the name Tableflow gives topic %s when enabled like %s); the checks run there", newTopic, u, newTopic, oldTopic))
	return u
}

func (dc *draftContext) dbtDiff(ctx context.Context) (Proposal, bool) {
	if dc.newAsset == "" {
		return Proposal{}, false
	}
	if dc.src.Config.DBT == nil || dc.src.Config.DBT.ManifestPath == "" {
		dc.note("no dbt diff generated: dbt not configured (set dbt.manifest_path to the project's target/manifest.json)")
		return Proposal{}, false
	}
	if dc.timeCol == "" {
		dc.note("no dbt diff generated: the statement's time column (the window start it groups by) is unknown, so today's hours cannot be told apart")
		return Proposal{}, false
	}
	// The dbt sources that name the incident table, and the models that read them.
	edges, _, err := dc.src.Graph.Neighbours(ctx, graph.URN(dc.inc.Asset), graph.Downstream)
	if err != nil {
		dc.note(fmt.Sprintf("no dbt diff generated: %v", err))
		return Proposal{}, false
	}
	var sources []graph.URN
	for _, e := range edges {
		if strings.HasPrefix(string(e.To.Asset), "dbt:source.") {
			sources = append(sources, e.To.Asset)
		}
	}
	// The model that reads the failing column (field-level lineage) gets the diff; other readers
	// of the table are named, since they too must move before the old statement stops.
	column := ""
	if dc.diag != nil {
		column = dc.diag.Input.Column
	}
	var models, readsColumn []graph.URN
	for _, s := range sources {
		es, _, err := dc.src.Graph.Neighbours(ctx, s, graph.Downstream)
		if err != nil {
			continue
		}
		for _, e := range es {
			m := e.To.Asset
			if !strings.HasPrefix(string(m), "dbt:model.") {
				continue
			}
			if !containsFold(urnStrings(models), string(m)) {
				models = append(models, m)
			}
			if column != "" && strings.EqualFold(e.From.Path, column) && !containsFold(urnStrings(readsColumn), string(m)) {
				readsColumn = append(readsColumn, m)
			}
		}
	}
	if len(models) == 0 {
		dc.note(fmt.Sprintf("no dbt diff generated: no dbt model reads %s in the context graph (import_dbt_manifest)", dc.inc.Asset))
		return Proposal{}, false
	}
	model := models[0]
	if len(readsColumn) > 0 {
		model = readsColumn[0]
	}
	var others []string
	for _, m := range models {
		if m != model {
			others = append(others, string(m))
		}
	}
	if len(others) > 0 {
		dc.note(fmt.Sprintf("only %s (which reads %s) got a dbt diff; %s also read %s: repoint them the same way before %s is stopped",
			model, column, strings.Join(others, ", "), dc.inc.Asset, dc.stmtURN))
	}
	md, m, err := dc.manifest.model(dc.src.Config.DBT.ManifestPath, strings.TrimPrefix(string(model), "dbt:"))
	if err != nil {
		dc.note("no dbt diff generated: " + err.Error())
		return Proposal{}, false
	}
	var total int
	// A CRLF model is edited and diffed by its lines; ApplyDiff keeps its CRLF endings.
	base := md.Code
	crlf := crlfOnly(base)
	if crlf {
		base = strings.ReplaceAll(base, "\r\n", "\n")
	}
	code := base
	for _, s := range sources {
		srcNode, ok := m.Sources[strings.TrimPrefix(string(s), "dbt:")]
		if !ok {
			continue
		}
		var n int
		code, n = splitModelCode(code, sourceRef(srcNode.SourceName, srcNode.Name), relationOf(dc.newAsset), dc.timeCol, srcNode.Name, dc.from)
		total += n
	}
	if total == 0 {
		where := "raw_code in the manifest"
		if md.FromFile {
			where = md.Path
		}
		dc.note(fmt.Sprintf("no dbt diff generated: %s has no {{ source(...) }} reference to %s in %s", model, dc.inc.Asset, where))
		return Proposal{}, false
	}
	diff := unifiedDiff(md.Path, base, code)
	want := code
	if crlf {
		want = strings.ReplaceAll(code, "\n", "\r\n")
	}
	if got, _, err := ApplyDiff(md.Code, diff); err != nil || got != want {
		dc.note(fmt.Sprintf("the dbt diff drafted for %s was refused: it does not apply to the current code (%v)", model, err))
		return Proposal{}, false
	}
	appliesTo := "the manifest's raw_code"
	if md.FromFile {
		appliesTo = md.Path + " as it is now"
	}
	return Proposal{Class: config.ClassDBTCode, Target: string(model),
		Title: fmt.Sprintf("Point %s at %s for hours from %s", model.ID(), relationOf(dc.newAsset), dc.from.UTC().Format("2006-01-02 15:04 UTC")),
		Payload: map[string]any{"model": strings.TrimPrefix(string(model), "dbt:"), "path": md.Path, "diff": diff,
			"steps": []string{"git apply the diff in the dbt project", "dbt build -s " + model.ID()[strings.LastIndex(model.ID(), ".")+1:]}},
		Executor: dc.executor(config.ClassDBTCode), Reversible: true,
		Undo: "git revert the change and rebuild the model",
		Why: fmt.Sprintf("%s reads %s; rows from %s on are corrected by the new statement in %s (the table Tableflow is expected to create for %s: an expectation, check the name before merging), earlier rows stay where they are",
			model, dc.inc.Asset, dc.from.UTC().Format(time.RFC3339), dc.newAsset, dc.sinkV2),
		BlastRadius: []string{string(model), string(dc.newAsset)}, Origin: OriginGenerated,
		Validation: "unified diff applies cleanly to " + appliesTo}, true
}

func relationOf(u graph.URN) string {
	_, rel, _ := strings.Cut(u.ID(), "/")
	return rel
}

func urnStrings(us []graph.URN) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = string(u)
	}
	return out
}

// checks are what verify_incident re-runs: the failure mode on the failing column, uniqueness on
// the statement's key, volume and freshness, today, where the data lands after the plan.
func (dc *draftContext) checks() []Check {
	asset, supersedes, where := dc.inc.Asset, "", "the incident asset"
	if dc.newAsset != "" {
		asset, supersedes, where = string(dc.newAsset), dc.inc.Asset, "where the corrected statement writes"
	}
	column := ""
	if dc.diag != nil {
		column = dc.diag.Input.Column
	}
	var out []Check
	mode := dc.inc.FailureMode
	switch mode {
	case "null_rate", "custom":
		if column == "" {
			dc.note(fmt.Sprintf("the %s check is left out: the failing column is unknown (run diagnose_incident)", mode))
		} else {
			out = append(out, Check{Asset: asset, Check: mode, Columns: []string{column}, Window: "today", Supersedes: supersedes,
				Why: fmt.Sprintf("the incident's failure (%s of %s), on %s", mode, column, where)})
		}
	case "uniqueness", "volume", "freshness":
		// added below
	default:
		if mode != "" {
			out = append(out, Check{Asset: asset, Check: mode, Window: "today", Supersedes: supersedes, Why: "the incident's failure mode"})
		}
	}
	if len(dc.key) > 0 {
		out = append(out, Check{Asset: asset, Check: "uniqueness", KeyColumns: dc.key, Window: "today", Supersedes: supersedes,
			Why: fmt.Sprintf("one row per %s, the statement's GROUP BY key", strings.Join(dc.key, ", "))})
	}
	out = append(out,
		Check{Asset: asset, Check: "volume", Window: "today", Supersedes: supersedes, Why: "rows arrive at the usual rate on " + where},
		Check{Asset: asset, Check: "freshness", Window: "today", Supersedes: supersedes, Why: "the data is current on " + where})
	return out
}

// renameDetail is how pkg/schema/diff.go states a rename: "<old> is renamed to <new> (by alias)"
// or "(on tag N)"; the change's Path is the new name.
var renameDetail = regexp.MustCompile(`^(.+) is renamed to (.+) \((by alias|on tag \d+)\)$`)

// renameOf returns the old name of a renamed field, read exactly from the change's detail.
func renameOf(ch diagnosis.FieldChange) (string, bool) {
	if ch.Change != "renamed" {
		return "", false
	}
	m := renameDetail.FindStringSubmatch(ch.Detail)
	if m == nil || m[2] != ch.Path {
		return "", false
	}
	return m[1], true
}

func containsExact(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
