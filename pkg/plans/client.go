package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// ClientProposal is a proposal the caller wrote. SQL and Diff may be given beside the payload
// (they then go into payload.sql / payload.diff).
type ClientProposal struct {
	Class   string         `json:"class"`
	Target  string         `json:"target"`
	Title   string         `json:"title"`
	Payload map[string]any `json:"payload"`
	SQL     string         `json:"sql,omitempty"`
	Diff    string         `json:"diff,omitempty"`
	Undo    string         `json:"undo,omitempty"`
	Why     string         `json:"why,omitempty"`
}

// reversibleClass says which classes can be undone by a later action of the same kind.
var reversibleClass = map[string]bool{config.ClassPauseJob: true, config.ClassUnpauseJob: true, config.ClassRegisterSchema: true,
	config.ClassFlinkStatement: true, config.ClassDBTCode: true, config.ClassTableflow: true}

// MaxClientProposals bounds the proposals one call may author (each is parsed and checked).
const MaxClientProposals = 50

// Build generates the incident's plan and adds the client's proposals, each validated as the
// generated ones are; replaceGenerated keeps only the client's (the checks and notes stay).
// Client SQL is checked against the schemas the final plan registers: the client's
// register_schema proposals, the generated restore unless it is replaced, else the stored ones.
func Build(ctx context.Context, src Sources, req Request, client []ClientProposal, replaceGenerated bool) (Plan, error) {
	if len(client) > MaxClientProposals {
		return Plan{}, fmt.Errorf("%d proposals given; at most %d per plan", len(client), MaxClientProposals)
	}
	if replaceGenerated && len(client) == 0 {
		return Plan{}, errors.New("replace_generated needs proposals: give the client-authored proposals that replace the generated ones")
	}
	dc, p, err := generate(ctx, src, req)
	if err != nil {
		return Plan{}, err
	}
	if replaceGenerated {
		p.Proposals = []Proposal{}
		dc.restore, dc.registered = nil, map[string]registeredSchema{}
	}
	out, err := dc.validateAll(ctx, client)
	if err != nil {
		return Plan{}, err
	}
	p.Proposals = append(p.Proposals, out...)
	for i := range p.Proposals {
		p.Proposals[i].Order = i + 1
	}
	return p, nil
}

// ValidateProposals checks proposals a caller wrote outside a plan (request_approval's raw
// proposals) exactly as Build checks a plan's client proposals: the class is known, the target is
// the asset the payload changes (a job's dag_id is that job's DAG, a schema's subject is the target
// subject, a dbt run targets a dbt asset, a dbt diff changes the target model), the payload holds
// only what the executor reads, and statements and schemas are checked. It returns them with their
// payloads as they would run (e.g. schema_type normalized), in order: a proposal that routes to
// one domain's approvers must not change an asset of another.
func ValidateProposals(ctx context.Context, src Sources, client []ClientProposal) ([]Proposal, error) {
	if len(client) > MaxClientProposals {
		return nil, fmt.Errorf("%d proposals given; at most %d per call", len(client), MaxClientProposals)
	}
	dc := &draftContext{src: src, registered: map[string]registeredSchema{}, manifest: &manifestCache{}}
	out, err := dc.validateAll(ctx, client)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Order = i + 1
	}
	return out, nil
}

// validateAll validates client proposals in their order, schemas first, so a statement is judged
// by what the final plan registers whatever the order.
func (dc *draftContext) validateAll(ctx context.Context, client []ClientProposal) ([]Proposal, error) {
	out := make([]Proposal, len(client))
	for _, schemasFirst := range []bool{true, false} {
		for i, cp := range client {
			if (cp.Class == config.ClassRegisterSchema) != schemasFirst {
				continue
			}
			pr, err := dc.validate(ctx, cp, i+1)
			if err != nil {
				return nil, fmt.Errorf("proposals[%d] (%s on %s): %w", i, cp.Class, cp.Target, err)
			}
			out[i] = pr
		}
	}
	return out, nil
}

func payloadString(p map[string]any, key string) string {
	s, _ := p[key].(string)
	return s
}

// validate checks one client proposal the way generated ones are checked; n is its place among
// the client's proposals.
func (dc *draftContext) validate(ctx context.Context, cp ClientProposal, n int) (Proposal, error) {
	if _, ok := dc.src.Config.Class(cp.Class); !ok {
		return Proposal{}, fmt.Errorf("unknown action class %q; use one of %s", cp.Class, strings.Join(config.ActionClassNames(), ", "))
	}
	if strings.TrimSpace(cp.Target) == "" || strings.TrimSpace(cp.Title) == "" {
		return Proposal{}, errors.New("give target (the URN the action changes) and title (one line for the approver)")
	}
	if _, err := graph.ParseURN(cp.Target); err != nil {
		return Proposal{}, fmt.Errorf("target: %w", err)
	}
	payload := map[string]any{}
	for k, v := range cp.Payload {
		payload[k] = v
	}
	put := func(key, val string) error {
		if val == "" {
			return nil
		}
		if cur := payloadString(payload, key); cur != "" && cur != val {
			return fmt.Errorf("payload.%s and %s differ; give it once", key, key)
		}
		payload[key] = val
		return nil
	}
	if err := put("sql", cp.SQL); err != nil {
		return Proposal{}, err
	}
	if err := put("diff", cp.Diff); err != nil {
		return Proposal{}, err
	}
	pr := Proposal{Class: cp.Class, Target: cp.Target, Title: cp.Title, Payload: payload, Executor: dc.executor(cp.Class),
		Reversible: reversibleClass[cp.Class], Undo: cp.Undo, Why: cp.Why, BlastRadius: []string{cp.Target}, Origin: OriginClient}
	var err error
	switch cp.Class {
	case config.ClassFlinkStatement:
		pr.Validation, err = dc.validateSQL(ctx, payloadString(payload, "sql"))
	case config.ClassDBTCode:
		pr.Validation, err = dc.validateDiff(cp.Target, payload)
	case config.ClassRegisterSchema:
		pr.Validation, err = dc.validateSchema(ctx, cp.Target, payload, n)
	case config.ClassPauseJob, config.ClassUnpauseJob, config.ClassTriggerJob:
		pr.Validation, err = dc.validateJob(ctx, cp.Class, cp.Target, payload)
	case config.ClassTriggerDBTRun:
		if err = CheckTarget(cp.Class, cp.Target, payload); err == nil {
			pr.Validation, err = validateDBTRun(payload)
		}
	default:
		if len(payload) == 0 {
			err = errors.New("payload is empty: give exactly what would run")
		}
		pr.Validation = fmt.Sprintf("no mechanical check exists for %s: the approver reviews the payload", cp.Class)
	}
	if err != nil {
		return Proposal{}, err
	}
	if pr.Undo == "" {
		pr.Undo = "not given by the author"
	}
	if pr.Why == "" {
		pr.Why = "authored by the client"
	}
	return pr, nil
}

func (dc *draftContext) validateSQL(ctx context.Context, sql string) (string, error) {
	if strings.TrimSpace(sql) == "" {
		return "", errors.New("a flink_statement proposal needs the statement: give sql (or payload.sql)")
	}
	stmt, err := parseOne(sql)
	if err != nil {
		return "", fmt.Errorf("the SQL does not parse: %w", err)
	}
	known := map[string][]string{}
	var pinned, unchecked []string
	for _, t := range stmt.Tables {
		name := t[len(t)-1]
		fields, how, err := dc.knownFields(ctx, name)
		if err != nil {
			return "", err
		}
		if fields != nil {
			known[strings.ToLower(name)] = fields
			pinned = append(pinned, how)
		} else if !containsFold(unchecked, name) {
			unchecked = append(unchecked, name)
		}
	}
	if len(known) == 0 {
		return "", errors.New("none of the tables the statement reads has a stored schema version (<topic>-value), so the fields it reads cannot be checked; list the subject with dw-schema get_subject first")
	}
	if _, err := checkStatement(sql, known); err != nil {
		return "", err
	}
	v := "parses with pkg/sqlparse; reads only fields of " + strings.Join(pinned, ", ")
	if len(unchecked) > 0 {
		v += "; the columns read from " + strings.Join(unchecked, ", ") + " were NOT checked (no stored schema version of <topic>-value, and this plan registers none)"
	}
	return v, nil
}

func (dc *draftContext) validateDiff(target string, payload map[string]any) (string, error) {
	diff := payloadString(payload, "diff")
	if strings.TrimSpace(diff) == "" {
		return "", errors.New("a dbt_code proposal needs the change: give diff (a unified diff of the model file)")
	}
	if !strings.HasPrefix(target, "dbt:model.") {
		return "", fmt.Errorf("target %s: a dbt_code proposal targets a model, e.g. dbt:model.billing.fct_billable_egress", target)
	}
	if dc.src.Config.DBT == nil || dc.src.Config.DBT.ManifestPath == "" {
		return "", errors.New("dbt not configured: set dbt.manifest_path so the diff can be applied to the model's current code")
	}
	md, _, err := dc.manifest.model(dc.src.Config.DBT.ManifestPath, strings.TrimPrefix(target, "dbt:"))
	if err != nil {
		return "", err
	}
	d, err := parseDiff(diff)
	if err != nil {
		return "", fmt.Errorf("the diff does not apply to %s: %w", md.Path, err)
	}
	for _, p := range []string{d.oldPath, d.newPath} {
		if p == "/dev/null" {
			return "", fmt.Errorf("the diff creates or deletes a file (/dev/null); a dbt_code proposal changes %s in place", md.Path)
		}
		if p != md.Path {
			return "", fmt.Errorf("the diff names %s but %s lives in %s: give --- a/%s and +++ b/%s", p, target, md.Path, md.Path, md.Path)
		}
	}
	if _, err := applyParsed(md.Code, d); err != nil {
		return "", fmt.Errorf("the diff does not apply to %s: %w", md.Path, err)
	}
	payload["path"] = md.Path
	base := "the manifest's raw_code"
	if md.FromFile {
		base = md.Path + " as it is now"
	}
	return "unified diff applies cleanly to " + base, nil
}

// registerKeys are the keys of a register_schema payload, exactly what dw-schema's
// register_stream_schema binds an approval to.
var registerKeys = []string{"subject", "schema_type", "schema"}

// onlyKeys refuses payload keys the executor would not read: an approval binds to the whole
// payload, so nothing in it may go unexecuted.
func onlyKeys(class string, payload map[string]any, allowed ...string) error {
	var extra []string
	for k := range payload {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("a %s payload has only %s; %s would not be executed: leave it out", class, strings.Join(allowed, ", "), strings.Join(extra, ", "))
	}
	return nil
}

func (dc *draftContext) validateSchema(ctx context.Context, target string, payload map[string]any, n int) (string, error) {
	subject, text := payloadString(payload, "subject"), payloadString(payload, "schema")
	if subject == "" || text == "" {
		return "", errors.New(`a register_schema payload is {"subject", "schema_type", "schema"} (what register_stream_schema checks)`)
	}
	if err := onlyKeys(config.ClassRegisterSchema, payload, registerKeys...); err != nil {
		return "", err
	}
	if target != string(graph.SubjectURN(subject)) {
		return "", fmt.Errorf("target %s does not match payload.subject %s (want %s)", target, subject, graph.SubjectURN(subject))
	}
	format, err := schema.ParseFormat(payloadString(payload, "schema_type"))
	if err != nil {
		return "", err
	}
	s, err := schema.Parse(format, text)
	if err != nil {
		return "", fmt.Errorf("the schema does not parse: %w", err)
	}
	// Rebuilt exactly as register_stream_schema builds it, so the approval's hash matches.
	payload["schema_type"] = string(s.Format)
	order, versions, err := storedSchemas(ctx, dc.src.Store, subject)
	if err != nil {
		return "", err
	}
	lvl, how, err := dc.level(ctx, subject)
	if err != nil {
		return "", err
	}
	var prev []compat.Version
	for _, v := range order {
		prev = append(prev, compat.Version{Version: v, Schema: versions[v]})
	}
	res := compat.Check(lvl, compat.Strict, s, prev)
	if !res.Compatible {
		var msgs []string
		for _, inc := range res.Incompatibilities {
			msgs = append(msgs, fmt.Sprintf("%+v", inc))
		}
		return "", fmt.Errorf("the schema is not compatible under %s with %s versions %v: %s", lvl, subject, res.Compared, strings.Join(msgs, "; "))
	}
	dc.registered[subject] = registeredSchema{schema: s, how: fmt.Sprintf("%s as this plan's client proposal %d registers it", subject, n)}
	if len(order) == 0 {
		return fmt.Sprintf("parses as %s; no stored version of %s to compare with (%s)", s.Format, subject, how), nil
	}
	return fmt.Sprintf("parses as %s; compatible under %s with versions %v (%s)", s.Format, lvl, res.Compared, how), nil
}

func (dc *draftContext) validateJob(ctx context.Context, class, target string, payload map[string]any) (string, error) {
	dag := payloadString(payload, "dag_id")
	if dag == "" {
		return "", errors.New(`payload needs "dag_id" (the Airflow DAG), as remediate's dispatch reads it`)
	}
	allowed := []string{"dag_id"}
	if class == config.ClassTriggerJob {
		allowed = append(allowed, "conf") // the run's conf, passed to Airflow
		if c, ok := payload["conf"]; ok {
			if _, ok := c.(map[string]any); !ok {
				return "", errors.New("payload.conf must be an object (the DAG run's conf)")
			}
		}
	}
	if err := onlyKeys(class, payload, allowed...); err != nil {
		return "", err
	}
	a, err := dc.src.Graph.Get(ctx, graph.URN(target))
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		return "", fmt.Errorf("%s is not a known job in the context graph (register it in the catalog file and sync_catalog)", target)
	}
	if err != nil {
		return "", err
	}
	if a.Kind != graph.KindJob {
		return "", fmt.Errorf("%s is a %s, not an orchestrator job", target, a.Kind)
	}
	orch, want, _ := strings.Cut(graph.URN(target).ID(), "/")
	if a.Attrs["orchestrator"] != "" {
		orch = a.Attrs["orchestrator"]
	}
	if orch != "airflow" {
		return "", notAirflow(target, orch)
	}
	if a.Attrs["dag_id"] != "" {
		want = a.Attrs["dag_id"]
	}
	if want != dag {
		return "", fmt.Errorf("%w: payload.dag_id %q is not the DAG of %s (%q)", ErrTargetMismatch, dag, target, want)
	}
	if err := CheckTarget(class, target, payload); err != nil {
		return "", fmt.Errorf("%w; %s", err, holdByHand(target))
	}
	return fmt.Sprintf("%s is a job in the context graph with dag_id %s", target, dag), nil
}

// holdByHand is what to do with an Airflow job whose URN is not job:airflow/<dag_id> (OpenLineage
// names jobs <namespace>/<dag>.<task>): dispatch checks the URN alone, so it cannot be held for you.
func holdByHand(job string) string {
	return fmt.Sprintf("hold %s by hand: its URN does not name the DAG it runs in; Data Workers only pauses job:airflow/<dag_id> targets", job)
}

func notAirflow(target, orch string) error {
	return fmt.Errorf("%s is a %s job, not an Airflow DAG: Data Workers pauses, unpauses and triggers only Airflow DAGs; propose it as a step for its owner instead", target, orch)
}

// ErrTargetMismatch means a payload changes another asset than the target its approval was routed by.
var ErrTargetMismatch = errors.New("target and payload disagree")

// CheckTarget is the rule tying a Data Workers-executed payload to its target, checked right before
// dispatch (remediation) and, within the stricter checks of ValidateProposals, when a proposal is
// written. The target's URN decides whose approval a request needs (domains match URNs), so the
// payload must change the asset that URN names and nothing else. It reads only the URN and the
// payload, never the context graph: tools can write the graph (register_catalog takes inline YAML),
// so a graph attr must not be able to point a target at another asset.
//   - pause_job, unpause_job, trigger_job: the target is job:airflow/<dag_id> of the payload's DAG.
//     Case is ignored, as domain patterns ignore it, so a match never crosses domains.
//   - trigger_dbt_run: the target is a dbt asset (dbt:…). Which models a dbt Cloud job builds is
//     not known to Data Workers, so job_id itself is for the approver to judge.
//
// Other classes pass: register_schema's subject is checked by its validator and by dw-schema's
// register_stream_schema, and owner-only classes are never dispatched.
func CheckTarget(class, target string, payload map[string]any) error {
	u := graph.URN(target)
	system := strings.ToLower(u.System())
	switch class {
	case config.ClassPauseJob, config.ClassUnpauseJob, config.ClassTriggerJob:
		if system != "job" {
			return fmt.Errorf("%w: %s targets %q, which is not an orchestrator job (job:airflow/<dag_id>)", ErrTargetMismatch, class, target)
		}
		orch, want, _ := strings.Cut(u.ID(), "/")
		if !strings.EqualFold(orch, "airflow") {
			return fmt.Errorf("%w: %w", ErrTargetMismatch, notAirflow(target, orch))
		}
		if dag := payloadString(payload, "dag_id"); want == "" || !strings.EqualFold(dag, want) {
			return fmt.Errorf("%w: payload.dag_id %q is not the DAG %s names (%q): the target decides who approves, so it must be job:airflow/<the DAG the payload changes>",
				ErrTargetMismatch, dag, target, want)
		}
	case config.ClassTriggerDBTRun:
		if system != "dbt" {
			return fmt.Errorf("%w: a trigger_dbt_run targets the dbt asset the run rebuilds (dbt:model.<package>.<model>), not %q", ErrTargetMismatch, target)
		}
	}
	return nil
}

// validateDBTRun checks a trigger_dbt_run payload as remediate's dispatch reads it: {job_id}, the
// dbt Cloud job's number.
func validateDBTRun(payload map[string]any) (string, error) {
	var id int64
	switch v := payload["job_id"].(type) {
	case float64:
		if v == math.Trunc(v) {
			id = int64(v)
		}
	case json.Number:
		id, _ = v.Int64()
	case string:
		id, _ = strconv.ParseInt(v, 10, 64)
	}
	if id <= 0 {
		return "", errors.New(`payload needs "job_id", the dbt Cloud job's number, as remediate's trigger_dbt_run dispatch reads it`)
	}
	if err := onlyKeys(config.ClassTriggerDBTRun, payload, "job_id"); err != nil {
		return "", err
	}
	return fmt.Sprintf("job_id %d is a number, as the dispatch reads it; whether dbt Cloud has the job is known only when it runs", id), nil
}

// parseOne parses one statement and lists the tables it reads.
func parseOne(sql string) (*sqlparse.Lineage, error) {
	stmt, err := sqlparse.Parse(sql)
	if err != nil {
		return nil, err
	}
	return sqlparse.Analyze(stmt, nil), nil
}
