package plans

import (
	"context"
	"errors"
	"fmt"
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

// Build generates the incident's plan and adds the client's proposals, each validated as the
// generated ones are; replaceGenerated keeps only the client's (the checks and notes stay).
func Build(ctx context.Context, src Sources, req Request, client []ClientProposal, replaceGenerated bool) (Plan, error) {
	dc, p, err := generate(ctx, src, req)
	if err != nil {
		return Plan{}, err
	}
	if replaceGenerated {
		if len(client) == 0 {
			return Plan{}, errors.New("replace_generated needs proposals: give the client-authored proposals that replace the generated ones")
		}
		p.Proposals = []Proposal{}
	}
	for i, cp := range client {
		pr, err := dc.validate(ctx, cp)
		if err != nil {
			return Plan{}, fmt.Errorf("proposals[%d] (%s on %s): %w", i, cp.Class, cp.Target, err)
		}
		p.Proposals = append(p.Proposals, pr)
	}
	for i := range p.Proposals {
		p.Proposals[i].Order = i + 1
	}
	return p, nil
}

func payloadString(p map[string]any, key string) string {
	s, _ := p[key].(string)
	return s
}

// validate checks one client proposal the way generated ones are checked.
func (dc *draftContext) validate(ctx context.Context, cp ClientProposal) (Proposal, error) {
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
		pr.Validation, err = dc.validateSchema(ctx, cp.Target, payload)
	case config.ClassPauseJob, config.ClassUnpauseJob, config.ClassTriggerJob:
		pr.Validation, err = dc.validateJob(ctx, cp.Target, payload)
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
	var pinned []string
	for _, t := range stmt.Tables {
		name := t[len(t)-1]
		fields, how, err := dc.knownFields(ctx, name)
		if err != nil {
			return "", err
		}
		if fields != nil {
			known[strings.ToLower(name)] = fields
			pinned = append(pinned, how)
		}
	}
	if len(known) == 0 {
		return "", errors.New("none of the tables the statement reads has a stored schema version (<topic>-value), so the fields it reads cannot be checked; list the subject with dw-schema get_subject first")
	}
	if _, err := checkStatement(sql, known); err != nil {
		return "", err
	}
	return "parses with pkg/sqlparse; reads only fields of " + strings.Join(pinned, ", "), nil
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
	md, _, err := loadModel(dc.src.Config.DBT.ManifestPath, strings.TrimPrefix(target, "dbt:"))
	if err != nil {
		return "", err
	}
	_, path, err := ApplyDiff(md.Code, diff)
	if err != nil {
		return "", fmt.Errorf("the diff does not apply to %s: %w", md.Path, err)
	}
	if path != md.Path && path != "/dev/null" {
		return "", fmt.Errorf("the diff changes %s but %s lives in %s", path, target, md.Path)
	}
	payload["path"] = md.Path
	base := "the manifest's raw_code"
	if md.FromFile {
		base = md.Path + " as it is now"
	}
	return "unified diff applies cleanly to " + base, nil
}

func (dc *draftContext) validateSchema(ctx context.Context, target string, payload map[string]any) (string, error) {
	subject, text := payloadString(payload, "subject"), payloadString(payload, "schema")
	if subject == "" || text == "" {
		return "", errors.New(`a register_schema payload is {"subject", "schema_type", "schema"} (what register_stream_schema checks)`)
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
	if len(order) == 0 {
		return fmt.Sprintf("parses as %s; no stored version of %s to compare with (%s)", s.Format, subject, how), nil
	}
	return fmt.Sprintf("parses as %s; compatible under %s with versions %v (%s)", s.Format, lvl, res.Compared, how), nil
}

func (dc *draftContext) validateJob(ctx context.Context, target string, payload map[string]any) (string, error) {
	dag := payloadString(payload, "dag_id")
	if dag == "" {
		return "", errors.New(`payload needs "dag_id" (the Airflow DAG), as remediate's dispatch reads it`)
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
	want := a.Attrs["dag_id"]
	if want == "" {
		_, want, _ = strings.Cut(graph.URN(target).ID(), "/")
	}
	if want != dag {
		return "", fmt.Errorf("payload.dag_id %q is not the DAG of %s (%q)", dag, target, want)
	}
	return fmt.Sprintf("%s is a job in the context graph with dag_id %s", target, dag), nil
}

// parseOne parses one statement and lists the tables it reads.
func parseOne(sql string) (*sqlparse.Lineage, error) {
	stmt, err := sqlparse.Parse(sql)
	if err != nil {
		return nil, err
	}
	return sqlparse.Analyze(stmt, nil), nil
}
