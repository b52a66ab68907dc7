// Package diagnosis diagnoses an incident from observed evidence. A Gatherer (gather.go, live.go)
// collects it: the check history, the failing column's upstream lineage, the recorded schema
// versions and their diffs, and the live state of what lies on that path (connector tasks, Flink
// statements, Tableflow, a bounded sample of the topic) through readers the caller builds — a
// backend that is not configured or errors is named in Unchecked, never guessed. Rank judges what
// was observed, by a stated rule, never by constant confidences; impact.go adds the blast radius
// and the severity it implies (SeverityRule).
//
// The rule: every candidate is scored by how many independent kinds of evidence support it —
//
//	timing   the change happened within the look-back window before the onset of the failure
//	lineage  the change touches a field or asset on the failing column's upstream lineage
//	reader   a reader on that path is known to consume what changed (a statement pinned to the old
//	         version that reads the removed field; a sink task of the failing table; a dbt model,
//	         view or job on the path whose SQL drops or misreads the change)
//	mode     the kind of change explains the kind of failure (a removed field → nulls; a stopped
//	         statement → staleness or missing volume; a retyped field → any value check)
//	data     the data shows it (the new version's share of the topic sample; the on-path field null or
//	         missing more often in records written with the new version than in older ones; a
//	         component's own error)
//
// — and ties are broken by the time from the change to the onset (closer first), then by lineage
// distance (nearer first). A candidate without lineage evidence is never ranked above one with it.
// When nothing upstream changed, the answer says so instead of blaming the deepest node.
package diagnosis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// Evidence kinds, in the order they are listed.
const (
	KindTiming  = "timing"
	KindLineage = "lineage"
	KindReader  = "reader"
	KindMode    = "mode"
	KindData    = "data"
)

// Failure modes the checks produce.
const (
	ModeNullRate   = "null_rate"
	ModeVolume     = "volume"
	ModeFreshness  = "freshness"
	ModeUniqueness = "uniqueness"
	ModeCustom     = "custom"
)

// FieldChange is one field-level change of a schema version.
type FieldChange struct {
	Path string `json:"path"`
	// Change is removed, renamed, type_changed, nullability_changed, added or default_changed.
	Change string `json:"change"`
	// OldName and OldType are the field in the earlier version, NewName and NewType in this one
	// (empty where the field does not exist): what plans read, never Detail.
	OldName string `json:"old_name,omitempty"`
	NewName string `json:"new_name,omitempty"`
	OldType string `json:"old_type,omitempty"`
	NewType string `json:"new_type,omitempty"`
	// SymbolsAdded and SymbolsRemoved are the enum symbols an enum change names.
	SymbolsAdded   []string `json:"symbols_added,omitempty"`
	SymbolsRemoved []string `json:"symbols_removed,omitempty"`
	Detail         string   `json:"detail,omitempty"`
}

// Reader is a consumer of a subject known from the graph.
type Reader struct {
	URN string `json:"urn"`
	// Kind is the graph asset's kind (flink_statement, dbt_model, warehouse_table for a view, job…).
	Kind string `json:"kind,omitempty"`
	// PinnedVersion is the schema version the reader was created against (Flink statements), 0 if unknown.
	PinnedVersion int `json:"pinned_version,omitempty"`
	// ReadsFields are the changed fields this reader reads.
	ReadsFields []string `json:"reads_fields,omitempty"`
	// Expression is how it reads them, e.g. SUM(response_bytes).
	Expression string `json:"expression,omitempty"`
	SelectStar bool   `json:"select_star,omitempty"`
	// Reads say what its SQL does with the changed value (what the format predicts it sees, or a
	// new value the sample shows), the expression quoted.
	Reads []impact.SQLRead `json:"reads,omitempty"`

	sql, table string // the statement's SQL and the topic it reads the fields from, as named there
}

// SchemaChange is a registered version first seen near the onset.
type SchemaChange struct {
	Subject   string        `json:"subject"`
	Version   int           `json:"version"`
	FirstSeen time.Time     `json:"first_seen"`
	Changes   []FieldChange `json:"changes"`
	// OnPath lists the changed fields that lie on the failing column's upstream lineage.
	OnPath []string `json:"on_path"`
	// SubjectUpstream is true when the subject is upstream of the failing asset at table level
	// (field-level lineage unknown); OnPath, when set, is the stronger evidence.
	SubjectUpstream bool `json:"subject_upstream"`
	// Distance is the number of lineage hops from the failing asset to the subject.
	Distance int `json:"distance"`
	// Readers are the Flink statements that decode the subject's topic themselves: what plans correct.
	Readers []Reader `json:"readers"`
	// PathReaders are the other readers with SQL on the path from the subject to the failing asset
	// (dbt models, views, jobs, statements further down), each with what its SQL does with the
	// change, read as assess_impact reads it.
	PathReaders []Reader `json:"path_readers,omitempty"`
	// FirstSeenFrom is "sample" when FirstSeen is the version's earliest record in the topic
	// sample (dw-schema stored it only after the onset); empty when dw-schema's time is used.
	FirstSeenFrom string `json:"first_seen_from,omitempty"`
	// NewVersionShare is the share of the topic sample written with this version, -1 if unknown.
	NewVersionShare float64 `json:"new_version_share"`
	// FieldNullRate is the null-or-missing rate of NullField among the sample's records written
	// with this version or a later one, OlderNullRate among older-version records. Both are -1
	// unless the newer rate is the higher (only then is it evidence).
	FieldNullRate float64 `json:"field_null_rate"`
	OlderNullRate float64 `json:"older_versions_null_rate"`
	NullField     string  `json:"null_field,omitempty"`
	// Predicted is, per reader-affecting change, what a reader pinned to the version before sees
	// of it by the format's rules (nulls, zeros, default, rows missing, statement failed).
	Predicted []impact.View `json:"predicted,omitempty"`
	// NewValues are values of on-path fields this version brings: enum symbols it declares, and
	// values only records of this version or later carry in the topic sample (a new code).
	NewValues []ValuesSeen `json:"new_values,omitempty"`

	// readFields are the on-path changed fields as readers name them (a rename's old name).
	readFields []string
	// oldVersion, old and new are the versions diffed, for reading the readers further down.
	oldVersion int
	old, new   *schema.Schema
}

// ValuesSeen are new values of one field.
type ValuesSeen struct {
	Field  string   `json:"field"`
	Values []string `json:"values"`
	// From says where they are known from: the schema (enum symbols the version declares), the
	// topic sample (values only its records carry), or both.
	From string `json:"from,omitempty"`
}

// Where new values are known from.
const (
	ValuesFromSchema = "schema"
	ValuesFromSample = "topic sample"
	ValuesFromBoth   = "schema and topic sample"
)

// FirstSeenSample is SchemaChange.FirstSeenFrom when the time is the earliest record in the sample.
const FirstSeenSample = "sample"

// ComponentState is a connector task, a Flink statement or a Tableflow topic on the path.
type ComponentState struct {
	URN string `json:"urn"`
	// Kind is connector, statement or tableflow.
	Kind string `json:"kind"`
	// State is the backend's word: FAILED, STOPPED, DEGRADED, PAUSED, RUNNING, SUSPENDED…
	State    string    `json:"state"`
	Detail   string    `json:"detail,omitempty"`
	Since    time.Time `json:"since,omitzero" jsonschema:"When it entered this state, when the backend says"`
	Distance int       `json:"distance"`
	// Streaming is true for a Flink statement that is not bounded: any phase but RUNNING stops its rows.
	Streaming bool `json:"streaming,omitempty" jsonschema:"A Flink statement that is not bounded: any phase but RUNNING stops its rows"`
}

// Input is everything observed about one incident.
type Input struct {
	FailureMode string    `json:"failure_mode"`
	Column      string    `json:"column,omitempty"`
	Onset       time.Time `json:"onset"`
	// LookBack bounds "near the onset" (default 24h).
	LookBack      time.Duration    `json:"look_back"`
	SchemaChanges []SchemaChange   `json:"schema_changes"`
	Components    []ComponentState `json:"components"`
	// Unchecked names what could not be looked at, and why (a backend not configured…).
	Unchecked []string `json:"unchecked"`
	// PathKnown is false when the graph has no upstream lineage for the failing asset.
	PathKnown bool `json:"path_known"`
	// Untimed are schema versions on the path dw-schema recorded only after the onset whose
	// registration time nothing dates: they may be the cause, so "nothing changed" is not said.
	Untimed []string `json:"untimed,omitempty"`
	// WarehouseChanges are warehouse tables' column changes on the path near the onset.
	WarehouseChanges []WarehouseSchemaChange `json:"warehouse_changes,omitempty"`
}

// Candidate is one possible cause with the evidence behind it.
type Candidate struct {
	Cause    string   `json:"cause"`
	Kind     string   `json:"kind" jsonschema:"schema_change, warehouse_schema_change, component_failure or none_upstream"`
	Source   string   `json:"source"`
	Evidence []string `json:"evidence"`
	// Supports lists the evidence kinds present: timing, lineage, reader, mode, data.
	Supports []string `json:"supports"`
	Score    int      `json:"score" jsonschema:"The number of independent kinds of evidence (0-5)"`
	// Predicted is, for a schema change, what readers pinned to the version before see of each
	// changed field by the format's rules; SymptomCheck compares the observed failure with it.
	Predicted    []impact.View `json:"predicted,omitempty" jsonschema:"For a schema change: what a reader pinned to the version before sees of each changed field (nulls, zeros, default, rows missing, statement failed)"`
	SymptomCheck string        `json:"symptom_check,omitempty" jsonschema:"The observed failure against the symptom the change predicts for pinned readers"`
	// EffectOf names the candidate this one is the effect of (a statement that failed to
	// deserialize the new version): it is evidence for that cause and ranks after it.
	EffectOf string `json:"effect_of,omitempty" jsonschema:"The cause this failure is an effect of; it ranks right after it"`
	lag      time.Duration
	distance int
}

// Rule is the ranking rule, stated in every diagnosis.
const Rule = "Ranked by the number of independent kinds of evidence (timing, lineage, reader, mode, data), " +
	"then by the time from the change to the onset, then by lineage distance; a cause without lineage evidence never outranks one with it. " +
	"A component that failed to read a schema version after it appeared (its error names the version's change) is evidence for that change and ranks right after it."

// Result is the ranked diagnosis.
type Result struct {
	Candidates []Candidate `json:"candidates"`
	Rule       string      `json:"rule"`
	// Conclusion is one sentence: the top cause, or that nothing upstream changed.
	Conclusion string   `json:"conclusion"`
	Unchecked  []string `json:"unchecked"`
}

// Rank judges the observations.
func Rank(in Input) Result {
	if in.LookBack <= 0 {
		in.LookBack = 24 * time.Hour
	}
	var cands []Candidate
	for _, sc := range in.SchemaChanges {
		cands = append(cands, judgeSchema(in, sc))
	}
	for _, c := range in.Components {
		if cand, ok := judgeComponent(in, c); ok {
			tieToChange(in, c, &cand, cands[:len(in.SchemaChanges)])
			cands = append(cands, cand)
		}
	}
	for _, wc := range in.WarehouseChanges {
		cands = append(cands, judgeWarehouseSchema(in, wc))
	}
	// Drop candidates nothing supports beyond timing alone.
	kept := cands[:0]
	for _, c := range cands {
		if c.Score >= 2 || has(c.Supports, KindLineage) {
			kept = append(kept, c)
		}
	}
	cands = kept
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if la, lb := has(a.Supports, KindLineage), has(b.Supports, KindLineage); la != lb {
			return la
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.lag != b.lag {
			return a.lag < b.lag
		}
		return a.distance < b.distance
	})
	cands = effectsAfterCauses(cands)
	res := Result{Candidates: cands, Rule: Rule, Unchecked: in.Unchecked}
	if res.Unchecked == nil {
		res.Unchecked = []string{}
	}
	switch {
	case len(cands) == 0 && !in.PathKnown:
		res.Candidates = []Candidate{}
		res.Conclusion = "No upstream lineage is known for this asset, so no upstream cause can be named; import the lineage (sync_catalog, import_dbt_manifest) and diagnose again."
	case len(cands) == 0 && len(in.Untimed) > 0:
		res.Candidates = []Candidate{}
		res.Conclusion = fmt.Sprintf("No upstream change is dated before the onset, but %s on the path was first recorded after it and its registration time is unknown: "+
			"find when it was registered (its subject's history in the registry, or sample_topic over the onset) before ruling it out.", strings.Join(in.Untimed, ", "))
	case len(cands) == 0:
		res.Candidates = []Candidate{{Cause: "No upstream change was found on the lineage path near the onset", Kind: "none_upstream",
			Evidence: []string{fmt.Sprintf("no schema version, connector, statement or Tableflow change upstream within %s before the onset", in.LookBack)}, Supports: []string{}}}
		res.Conclusion = "Nothing upstream changed near the onset: look at the asset itself (its load job, its own SQL, or the source data), not at the deepest upstream node."
	default:
		top := cands[0]
		res.Conclusion = fmt.Sprintf("Most likely: %s (%d of 5 kinds of evidence: %s).", top.Cause, top.Score, strings.Join(top.Supports, ", "))
	}
	if len(in.Unchecked) > 0 {
		res.Conclusion += " Not checked: " + strings.Join(in.Unchecked, "; ") + "."
	}
	return res
}

func judgeSchema(in Input, sc SchemaChange) Candidate {
	c := Candidate{Kind: "schema_change", Source: fmt.Sprintf("schema:%s v%d", sc.Subject, sc.Version), distance: sc.Distance}
	var what []string
	for _, ch := range sc.Changes {
		if ch.Change != "added" {
			what = append(what, ch.Change+" "+ch.Path)
		}
	}
	c.Cause = fmt.Sprintf("%s v%d %s", sc.Subject, sc.Version, strings.Join(what, ", "))
	if len(what) == 0 {
		c.Cause = fmt.Sprintf("%s v%d (only additions)", sc.Subject, sc.Version)
	}
	c.lag = in.Onset.Sub(sc.FirstSeen)
	if !sc.FirstSeen.After(in.Onset) && c.lag <= in.LookBack {
		c.Supports = append(c.Supports, KindTiming)
		seen := "was first seen"
		if sc.FirstSeenFrom == FirstSeenSample {
			seen = "is earliest in the topic sample at"
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("v%d %s %s, %s before the onset at %s",
			sc.Version, seen, sc.FirstSeen.UTC().Format("15:04 MST"), c.lag.Round(time.Minute), in.Onset.UTC().Format("15:04 MST")))
	}
	switch {
	case len(sc.OnPath) > 0:
		c.Supports = append(c.Supports, KindLineage)
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s lies on the upstream lineage of %s (%d hops)", strings.Join(sc.OnPath, ", "), orAsset(in.Column), sc.Distance))
	case sc.SubjectUpstream:
		c.Supports = append(c.Supports, KindLineage)
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s is upstream of %s at table level (%d hops; field-level lineage unknown)", sc.Subject, orAsset(in.Column), sc.Distance))
	}
	for _, r := range sc.Readers {
		if len(r.ReadsFields) == 0 && !r.SelectStar {
			continue
		}
		pinned := ""
		if r.PinnedVersion > 0 && r.PinnedVersion < sc.Version {
			pinned = fmt.Sprintf(", pinned to v%d", r.PinnedVersion)
		}
		how := strings.Join(r.ReadsFields, ", ")
		if r.Expression != "" {
			how = r.Expression
		}
		if r.SelectStar {
			how += " (SELECT *, expanded against its creation version)"
		}
		if !has(c.Supports, KindReader) {
			c.Supports = append(c.Supports, KindReader)
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s reads %s%s", r.URN, how, pinned))
		for _, rd := range r.Reads {
			if rd.Breaks {
				c.Evidence = append(c.Evidence, r.URN+": "+rd.Sentence)
			}
		}
	}
	for _, r := range sc.PathReaders {
		for _, rd := range r.Reads {
			if !rd.Breaks {
				continue
			}
			if !has(c.Supports, KindReader) {
				c.Supports = append(c.Supports, KindReader)
			}
			c.Evidence = append(c.Evidence, r.URN+": "+rd.Sentence)
		}
	}
	relevant := relevantChanges(sc)
	predicted := relevantPredictions(in, sc, relevant)
	check, matches := symptomCheck(in.FailureMode, predicted)
	c.SymptomCheck = check
	c.Predicted = sc.Predicted
	switch {
	case schemaExplains(in.FailureMode, relevant):
		c.Supports = append(c.Supports, KindMode)
		c.Evidence = append(c.Evidence, fmt.Sprintf("a %s explains a %s failure", changeWords(relevant), in.FailureMode))
	case matches:
		c.Supports = append(c.Supports, KindMode)
		c.Evidence = append(c.Evidence, check)
	}
	var data []string
	if sc.NewVersionShare > 0 {
		data = append(data, fmt.Sprintf("v%d is %.0f%% of the topic sample", sc.Version, sc.NewVersionShare*100))
	}
	if sc.FieldNullRate >= 0 && sc.OlderNullRate >= 0 && sc.FieldNullRate > sc.OlderNullRate {
		field := sc.NullField
		if field == "" {
			field = "the source field"
		}
		data = append(data, fmt.Sprintf("%s is null or missing in %.0f%% of the sample's v%d-or-later records against %.0f%% of older ones",
			field, sc.FieldNullRate*100, sc.Version, sc.OlderNullRate*100))
	}
	var declared []string
	for _, nv := range sc.NewValues {
		if nv.From == ValuesFromSchema {
			declared = append(declared, fmt.Sprintf("v%d declares the new symbol(s) %s of %s, not yet seen in a topic sample: readers that filter, CASE or join on %s drop or misfile them",
				sc.Version, strings.Join(nv.Values, ", "), nv.Field, nv.Field))
			continue
		}
		data = append(data, fmt.Sprintf("the topic sample shows %s taking %s only in v%d-or-later records: readers that filter, CASE or join on %s drop or misfile them",
			nv.Field, strings.Join(nv.Values, ", "), sc.Version, nv.Field))
	}
	c.Evidence = append(c.Evidence, declared...)
	if len(data) > 0 {
		c.Supports = append(c.Supports, KindData)
		c.Evidence = append(c.Evidence, strings.Join(data, "; "))
	}
	c.Score = len(c.Supports)
	return c
}

// relevantChanges are the changes that can reach the failing column: those on its field-level path,
// or all of them when only table-level lineage links the subject; none when the subject is unrelated.
func relevantChanges(sc SchemaChange) []FieldChange {
	var out []FieldChange
	for _, ch := range sc.Changes {
		if has(sc.OnPath, ch.Path) || (len(sc.OnPath) == 0 && sc.SubjectUpstream) {
			out = append(out, ch)
		}
	}
	return out
}

func schemaExplains(mode string, changes []FieldChange) bool {
	for _, ch := range changes {
		switch ch.Change {
		case "removed", "renamed", "nullability_changed":
			if nullLike(mode) || mode == ModeCustom {
				return true
			}
		case "type_changed":
			return mode != ModeFreshness
		case "enum_symbols_added":
			// A new value a filter drops shows as missing rows; a CASE that misfiles it, as a custom rule failing.
			if mode == ModeVolume || mode == ModeCustom {
				return true
			}
		}
	}
	return false
}

func changeWords(changes []FieldChange) string {
	var ws []string
	for _, ch := range changes {
		ws = append(ws, strings.ReplaceAll(ch.Change, "_", " ")+" field "+ch.Path)
	}
	return strings.Join(ws, " and ")
}

// judgeComponent makes a candidate of a component that is not healthy: a failed, stopped, paused,
// suspended, degraded or deleted (NOT_FOUND) one, or a streaming statement in any phase but
// RUNNING. What stops new rows (all of these but a DEGRADED statement) explains staleness and
// missing volume.
func judgeComponent(in Input, cs ComponentState) (Candidate, bool) {
	state := strings.ToUpper(cs.State)
	stopsRows := true
	switch {
	case state == "DEGRADED":
		// A degraded statement still runs; a degraded Tableflow has a table format or catalog sync failing.
		stopsRows = cs.Kind != ComponentStatement
	case cs.Kind == ComponentStatement && cs.Streaming && state != "RUNNING":
	case state == "FAILED", state == "FAILING", state == "STOPPED", state == "PAUSED", state == "SUSPENDED", state == "UNASSIGNED", state == StateNotFound:
	default:
		return Candidate{}, false
	}
	c := Candidate{Kind: "component_failure", Source: cs.URN, distance: cs.Distance, Cause: fmt.Sprintf("%s %s is %s", cs.Kind, cs.URN, state)}
	if state == StateNotFound {
		c.Cause = fmt.Sprintf("%s %s is gone (its backend answers 404)", cs.Kind, cs.URN)
	}
	c.Supports = append(c.Supports, KindLineage)
	c.Evidence = append(c.Evidence, fmt.Sprintf("%s is on the upstream path (%d hops)", cs.URN, cs.Distance))
	if !cs.Since.IsZero() {
		c.lag = in.Onset.Sub(cs.Since)
		if !cs.Since.After(in.Onset) && c.lag <= in.LookBack {
			c.Supports = append(c.Supports, KindTiming)
			c.Evidence = append(c.Evidence, fmt.Sprintf("%s since %s, %s before the onset", state, cs.Since.UTC().Format("15:04 MST"), c.lag.Round(time.Minute)))
		}
	}
	if cs.Detail != "" {
		c.Supports = append(c.Supports, KindData)
		c.Evidence = append(c.Evidence, cs.Detail)
	}
	if stopsRows && (in.FailureMode == ModeFreshness || in.FailureMode == ModeVolume) {
		c.Supports = append(c.Supports, KindMode)
		c.Evidence = append(c.Evidence, fmt.Sprintf("a %s %s stops new rows: explains a %s failure", strings.ToLower(state), cs.Kind, in.FailureMode))
	}
	c.Score = len(c.Supports)
	return c, true
}

func orAsset(col string) string {
	if col == "" {
		return "the failing asset"
	}
	return col
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
