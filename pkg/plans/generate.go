package plans

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/schema/compat"
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
	// FieldMappings are the caller's reads of removed fields: old field → SQL expression over the
	// new schema's fields. They win over derived conversions and are validated with pkg/sqlparse.
	FieldMappings map[string]string
}

// recorded is the part of the recorded diagnosis the generator reads; the rest of the JSON is
// the gatherer's business and may change shape.
type recorded struct {
	Input  diagnosis.Input  `json:"input"`
	Result diagnosis.Result `json:"result"`
}

// draftContext is what one generation learned that later steps and client proposals reuse.
type draftContext struct {
	src  Sources
	inc  incidents.Incident
	from time.Time
	diag *recorded
	// mappings are the caller's field_mappings and who gave them.
	mappings map[string]string
	actor    string
	// needsMapping are the removed fields the statement could not read; the steps that depend on
	// the statement wait for them.
	needsMapping []string
	restore      *restoreDraft           // the schema restore, when one is proposed
	cause        *diagnosis.SchemaChange // the schema change the plan follows from
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

// Generate writes the mechanical plan for an incident: hold the jobs that push to external sinks,
// restore the schema, draft the corrected statement and the dbt change, and the checks that prove
// the fix. What cannot be generated is said in Notes with the reason.
func Generate(ctx context.Context, src Sources, req Request) (Plan, error) {
	_, p, err := generate(ctx, src, req)
	return p, err
}

func generate(ctx context.Context, src Sources, req Request) (*draftContext, Plan, error) {
	dc := &draftContext{src: src, inc: req.Incident, registered: map[string]registeredSchema{}, manifest: &manifestCache{},
		mappings: req.FieldMappings, actor: req.Actor}
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
	if sc, seen, ok := dc.valueCauseOf(); ok {
		dc.cause = &sc
		steps, err := dc.valueSteps(ctx, sc, seen)
		if err != nil {
			return nil, Plan{}, err
		}
		p.Proposals = append(p.Proposals, steps...)
	} else if dc.diag != nil {
		sc, reader, ok := dc.schemaCause()
		if ok {
			dc.cause = &sc
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
					pr.NeedsMapping = dc.needsMapping // it reads the table the waiting statement writes
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

// schemaCause picks the top-ranked schema change that removed or renamed a field a reader reads.
func (dc *draftContext) schemaCause() (diagnosis.SchemaChange, diagnosis.Reader, bool) {
	order := dc.rankedSchemaChanges()
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

// rankedSchemaChanges are the recorded schema changes in the order the diagnosis ranked them.
func (dc *draftContext) rankedSchemaChanges() []diagnosis.SchemaChange {
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
	return order
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
	out = append(out, dc.symptomChecks(asset, supersedes, column, out)...)
	if len(dc.key) > 0 {
		out = append(out, Check{Asset: asset, Check: "uniqueness", KeyColumns: dc.key, Window: "today", Supersedes: supersedes,
			Why: fmt.Sprintf("one row per %s, the statement's GROUP BY key", strings.Join(dc.key, ", "))})
	}
	out = append(out,
		Check{Asset: asset, Check: "volume", Window: "today", Supersedes: supersedes, Why: "rows arrive at the usual rate on " + where},
		Check{Asset: asset, Check: "freshness", Window: "today", Supersedes: supersedes, Why: "the data is current on " + where})
	return out
}

// symptomChecks are the checks that can see what the cause's readers were predicted to see
// (impact.Symptom.QualityChecks): zeros need zero-rate and sum checks, nulls a null-rate check,
// on the failing column. Table checks (volume, freshness) are always in the plan, so only their
// reason is added here; a check already in have is not repeated.
func (dc *draftContext) symptomChecks(asset, supersedes, column string, have []Check) []Check {
	if dc.cause == nil {
		return nil
	}
	var out []Check
	for _, v := range dc.cause.Predicted {
		for _, name := range v.Symptom.QualityChecks() {
			if name == "volume" || name == "freshness" {
				continue
			}
			if column == "" {
				dc.note(fmt.Sprintf("the %s check the predicted %s of %s calls for is left out: the failing column is unknown (run diagnose_incident)", name, v.Symptom, v.Field))
				continue
			}
			dup := false
			for _, c := range append(have, out...) {
				dup = dup || c.Check == name && slices.Equal(c.Columns, []string{column})
			}
			if dup {
				continue
			}
			out = append(out, Check{Asset: asset, Check: name, Columns: []string{column}, Window: "today", Supersedes: supersedes,
				Why: fmt.Sprintf("readers pinned before %s v%d read %s as %s (%s: %s); %s on %s sees that", dc.cause.Subject, dc.cause.Version, v.Field, v.Sees, v.Symptom, v.Why, name, column)})
		}
	}
	return out
}

// renameOf returns the old name of a renamed field, from the change's structured fields.
func renameOf(ch diagnosis.FieldChange) (string, bool) {
	if ch.Change != "renamed" || ch.OldName == "" {
		return "", false
	}
	return ch.OldName, true
}
