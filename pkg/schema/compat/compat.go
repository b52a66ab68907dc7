// Package compat judges a schema change the way Confluent Schema Registry does: the seven
// compatibility levels over Avro (reader/writer resolution through hamba/avro), Protobuf
// (SR's tag-based diff and its compatible set) and JSON Schema (SR's content-model diff, STRICT
// or LENIENT policy), the LOGICAL policy's Flink and Iceberg v2 rules on top (logical.go), and
// compatibilityGroup filtering, with one message per incompatibility. The rules it follows, what
// it covers and how closely it agrees with the registry: docs/reference/schema-rules.md.
package compat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/schema"
)

// Level is a Schema Registry compatibility level.
type Level string

// The seven levels.
const (
	None               Level = "NONE"
	Backward           Level = "BACKWARD"
	BackwardTransitive Level = "BACKWARD_TRANSITIVE"
	Forward            Level = "FORWARD"
	ForwardTransitive  Level = "FORWARD_TRANSITIVE"
	Full               Level = "FULL"
	FullTransitive     Level = "FULL_TRANSITIVE"
)

// Levels lists every level, in the registry's order.
var Levels = []Level{None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive}

// ParseLevel reads a level name; empty means BACKWARD, the registry's default.
func ParseLevel(s string) (Level, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "" {
		return Backward, nil
	}
	for _, l := range Levels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown compatibility level %q: use one of NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE", s)
}

// Transitive levels compare against every earlier version; the others against the latest only.
func (l Level) Transitive() bool { return strings.HasSuffix(string(l), "_TRANSITIVE") }

func (l Level) backward() bool {
	return strings.HasPrefix(string(l), "BACKWARD") || strings.HasPrefix(string(l), "FULL")
}
func (l Level) forward() bool {
	return strings.HasPrefix(string(l), "FORWARD") || strings.HasPrefix(string(l), "FULL")
}

// Policy is SR's compatibilityPolicy.
type Policy string

// STRICT is SR's default; LENIENT also accepts the JSON Schema open/closed content-model
// differences; LOGICAL runs the native check (as STRICT) and then the Flink and Iceberg v2
// logical-type rules (docs/reference/schema-rules.md), so it can only make a verdict stricter.
const (
	Strict  Policy = "STRICT"
	Lenient Policy = "LENIENT"
	Logical Policy = "LOGICAL"
)

// ParsePolicy reads a policy; empty means STRICT.
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "STRICT":
		return Strict, nil
	case "LENIENT":
		return Lenient, nil
	case "LOGICAL":
		return Logical, nil
	}
	return "", fmt.Errorf("unknown compatibility policy %q: use STRICT, LENIENT or LOGICAL", s)
}

// Direction says which reader reads which writer.
type Direction string

// BACKWARD: the new schema reads data written with the old one. FORWARD: the old reads the new.
const (
	NewReadsOld Direction = "new_reads_old"
	OldReadsNew Direction = "old_reads_new"
)

// Incompatibility is one reason a check failed.
type Incompatibility struct {
	// Type is SR's error or difference type, e.g. READER_FIELD_MISSING_DEFAULT_VALUE,
	// FIELD_SCALAR_KIND_CHANGED, PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL.
	Type string `json:"type"`
	// Path locates it: "/fields/3" (Avro), "#/Msg/2" (Protobuf), "#/properties/x" (JSON Schema).
	Path string `json:"path"`
	// Field is the field it concerns, when there is one.
	Field     string    `json:"field,omitempty"`
	Direction Direction `json:"direction"`
	// OldVersion is the earlier version it was found against (0 when unnamed).
	OldVersion int `json:"old_version,omitempty"`
	// LogicalMode is FLINK or ICEBERG_V2 for an incompatibility found by the LOGICAL policy.
	LogicalMode LogicalMode `json:"logical_mode,omitempty"`
	Message     string      `json:"message"`
}

// Version is an earlier, non-deleted version of the subject.
type Version struct {
	Version int
	Schema  *schema.Schema
	// Metadata are the version's metadata properties (the registry's metadata.properties), which
	// compatibilityGroup filters on.
	Metadata map[string]string
}

// Result is a compatibility verdict.
type Result struct {
	Compatible bool   `json:"compatible"`
	Level      Level  `json:"level"`
	Policy     Policy `json:"policy,omitempty"`
	// Compared lists the versions checked, newest first, in the order SR checks them.
	Compared []int `json:"compared_versions"`
	// Group is the compatibilityGroup filter, when the subject has one: which versions it kept
	// and which it left out.
	Group *GroupFilter `json:"compatibility_group,omitempty"`
	// LogicalSkipped are compared versions the LOGICAL rules skipped because they have no logical
	// type (SR skips an unconvertible previous version); their native check still ran.
	LogicalSkipped []SkippedVersion `json:"logical_skipped,omitempty"`
	// LogicalNotReproduced says why the LOGICAL rules could not be judged (a format whose logical
	// conversion Data Workers does not reproduce); the native verdict stands alone then.
	LogicalNotReproduced string `json:"logical_not_reproduced,omitempty"`
	// AlreadyRegistered is the version the proposed schema already is (same canonical form), 0
	// when it is new. Such a schema is judged against the versions before it, as the registry
	// judged it at registration, never against itself.
	AlreadyRegistered int `json:"already_registered_as_version,omitempty"`
	// RuleSet names the rules that judged: format, JSON Schema draft, level, policy, group.
	RuleSet           RuleSet           `json:"rule_set"`
	Incompatibilities []Incompatibility `json:"incompatibilities"`
}

// RuleSet is which of the registry's rules judged a verdict.
type RuleSet struct {
	Format schema.Format `json:"format"`
	// Draft is the JSON Schema draft the proposed schema declares ($schema; draft-07 when absent).
	Draft  string `json:"draft,omitempty"`
	Level  Level  `json:"level"`
	Policy Policy `json:"policy"`
	// Group is the compatibilityGroup property, when the subject has one.
	Group string `json:"compatibility_group,omitempty"`
	// ValidateFields: the subject enforces reserved field names (confluent:reserved).
	ValidateFields bool `json:"validate_fields,omitempty"`
}

// GroupFilter is what compatibilityGroup did to the versions compared.
type GroupFilter struct {
	// Property is the metadata property named by compatibilityGroup.
	Property string `json:"property"`
	// Value is the proposed schema's value of it; ValueSet is false when it has none.
	Value    string `json:"value,omitempty"`
	ValueSet bool   `json:"value_set"`
	// Kept are the versions in the group (oldest first), Excluded those left out.
	Kept     []int  `json:"kept_versions"`
	Excluded []int  `json:"excluded_versions"`
	Note     string `json:"note"`
}

// SkippedVersion is an earlier version left out of a check, and why.
type SkippedVersion struct {
	Version int    `json:"version"`
	Reason  string `json:"reason"`
}

// Request is one compatibility question as the registry's register and compatibility paths ask
// it.
type Request struct {
	Level  Level
	Policy Policy
	// Group is the subject's compatibilityGroup (a metadata property name), or empty.
	Group    string
	Proposed *schema.Schema
	// ProposedMetadata are the proposed schema's metadata properties.
	ProposedMetadata map[string]string
	// Previous are the earlier versions, oldest first, soft-deleted ones already left out.
	Previous []Version
	// AlreadyRegistered is the version the proposed schema already is, when it is registered (0:
	// it is new); only the versions before it are compared.
	AlreadyRegistered int
	// ValidateFields is the subject's validateFields: the reserved names of the metadata property
	// confluent:reserved are enforced (ReservedDiff) against the latest earlier version, whatever
	// the level.
	ValidateFields bool
}

// Check judges proposed against the earlier versions (oldest first, soft-deleted ones already
// left out) under level, as SR's register and compatibility paths do: NONE passes, the plain
// levels compare with the latest version only, transitive ones with every version newest first,
// stopping at the first failing version.
func Check(level Level, policy Policy, proposed *schema.Schema, previous []Version) Result {
	return Evaluate(Request{Level: level, Policy: policy, Proposed: proposed, Previous: previous})
}

// Evaluate is Check with the whole of SR's recipe (docs/reference/schema-rules.md): the versions are first
// filtered by compatibilityGroup, then the level picks the latest or every one; each is checked
// natively and, under LOGICAL, by the Flink and Iceberg v2 rules.
//
// Under LOGICAL a proposed schema without a logical type is rejected even under NONE or as a
// first version: SR rejects it at conversion, and the reference does not say the level or an
// empty history spares it (the stricter reading).
func Evaluate(req Request) Result {
	res := Result{Compatible: true, Level: req.Level, Policy: req.Policy, Incompatibilities: []Incompatibility{}, Compared: []int{}}
	if res.Policy == "" {
		res.Policy = Strict
	}
	res.RuleSet = RuleSet{Format: req.Proposed.Format, Level: req.Level, Policy: res.Policy, Group: req.Group, ValidateFields: req.ValidateFields}
	if req.Proposed.Format == schema.JSON {
		res.RuleSet.Draft = JSONDraftName(req.Proposed)
	}
	previous := req.Previous
	if n := req.AlreadyRegistered; n > 0 {
		res.AlreadyRegistered = n
		var before []Version
		for _, v := range previous {
			if v.Version < n {
				before = append(before, v)
			}
		}
		previous = before
	}
	if req.Group != "" {
		previous, res.Group = filterGroup(req.Group, req.ProposedMetadata, previous)
	}
	var proposedLT LType
	logical := req.Policy == Logical
	if logical {
		var err error
		proposedLT, err = ToLogical(req.Proposed)
		switch {
		case errors.Is(err, ErrLogicalNotReproduced):
			logical, res.LogicalNotReproduced = false, "compatibilityPolicy LOGICAL: "+err.Error()+"; only the native (STRICT) check ran"
		case err != nil:
			res.Compatible = false
			res.Incompatibilities = []Incompatibility{{Type: LogicalUnconvertible, Path: "#",
				Message: fmt.Sprintf("%s: compatibilityPolicy LOGICAL rejects a schema without a logical type: %v", LogicalUnconvertible, err)}}
			return res
		}
	}
	if req.ValidateFields {
		var latest *schema.Schema
		var latestMeta map[string]string
		latestVersion := 0
		if len(previous) > 0 {
			l := previous[len(previous)-1]
			latest, latestMeta, latestVersion = l.Schema, l.Metadata, l.Version
		}
		if found := ReservedDiff(latest, latestMeta, req.Proposed, req.ProposedMetadata); len(found) > 0 {
			for i := range found {
				found[i].OldVersion = latestVersion
			}
			res.Compatible = false
			res.Incompatibilities = found
			return res
		}
	}
	if req.Level == None || len(previous) == 0 {
		return res
	}
	targets := previous
	if !req.Level.Transitive() {
		targets = previous[len(previous)-1:]
	}
	for i := len(targets) - 1; i >= 0; i-- {
		old := targets[i]
		res.Compared = append(res.Compared, old.Version)
		var found []Incompatibility
		if req.Level.backward() {
			found = append(found, Pair(old.Schema, req.Proposed, NewReadsOld, req.Policy)...)
		}
		if req.Level.forward() {
			found = append(found, Pair(old.Schema, req.Proposed, OldReadsNew, req.Policy)...)
		}
		if len(found) == 0 && logical {
			// LOGICAL is additive: it runs only once the native check passed.
			oldLT, err := ToLogical(old.Schema)
			if err != nil {
				res.LogicalSkipped = append(res.LogicalSkipped, SkippedVersion{Version: old.Version, Reason: "no logical type: " + err.Error()})
			} else {
				name := fmt.Sprintf("version %d", old.Version)
				if req.Level.backward() {
					found = append(found, LogicalPair(oldLT, proposedLT, name, NewReadsOld)...)
				}
				if req.Level.forward() {
					found = append(found, LogicalPair(oldLT, proposedLT, name, OldReadsNew)...)
				}
			}
		}
		if len(found) > 0 {
			for j := range found {
				found[j].OldVersion = old.Version
			}
			res.Compatible = false
			res.Incompatibilities = found
			return res
		}
	}
	return res
}

// filterGroup keeps the versions whose metadata property equals the proposed schema's value
// (AbstractSchemaRegistry's compatibilityGroup). A version without the property is outside any
// group with a value. When the proposed schema has no value the reference is silent; nothing is
// filtered then, the stricter reading: for the plain levels it is the same version SR compares
// when the new schema inherits the latest version's metadata, and transitive levels compare a
// superset of any group.
func filterGroup(property string, proposed map[string]string, previous []Version) ([]Version, *GroupFilter) {
	g := &GroupFilter{Property: property, Kept: []int{}, Excluded: []int{}}
	g.Value, g.ValueSet = proposed[property]
	if !g.ValueSet {
		for _, v := range previous {
			g.Kept = append(g.Kept, v.Version)
		}
		g.Note = fmt.Sprintf("the proposed schema has no metadata property %q, so no version was left out (give its metadata to compare within its group)", property)
		return previous, g
	}
	var kept []Version
	for _, v := range previous {
		if val, ok := v.Metadata[property]; ok && val == g.Value {
			kept = append(kept, v)
			g.Kept = append(g.Kept, v.Version)
		} else {
			g.Excluded = append(g.Excluded, v.Version)
		}
	}
	g.Note = fmt.Sprintf("only versions whose metadata property %q is %q were eligible for comparison", property, g.Value)
	return kept, g
}

// Pair checks one direction between two versions. NewReadsOld is SR's
// new.isBackwardCompatible(old); OldReadsNew is old.isBackwardCompatible(new).
func Pair(old, new *schema.Schema, dir Direction, policy Policy) []Incompatibility {
	if old.Format != new.Format {
		return []Incompatibility{{Type: "SCHEMA_TYPE_MISMATCH", Path: "#", Direction: dir,
			Message: fmt.Sprintf("Incompatible because of different schema type: %s vs %s", old.Format, new.Format)}}
	}
	reader, writer := new, old
	if dir == OldReadsNew {
		reader, writer = old, new
	}
	var out []Incompatibility
	switch new.Format {
	case schema.Avro:
		out = avroCompatible(reader, writer)
	case schema.Protobuf:
		// SR diffs original=writer, update=reader for canRead.
		out = protobufCompatible(writer, reader)
	case schema.JSON:
		out = jsonCompatible(writer, reader, policy)
	}
	for i := range out {
		out[i].Direction = dir
	}
	return out
}
