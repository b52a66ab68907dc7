package compat

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/schema"
)

// jsonCompatibleChanges is SR's JSON Schema SchemaDiff.COMPATIBLE_CHANGES (STRICT policy).
var jsonCompatibleChanges = setOf(
	"ID_CHANGED", "DESCRIPTION_CHANGED", "TITLE_CHANGED", "DEFAULT_CHANGED", "SCHEMA_REMOVED", "TYPE_EXTENDED",
	"MAX_LENGTH_INCREASED", "MAX_LENGTH_REMOVED", "MIN_LENGTH_DECREASED", "MIN_LENGTH_REMOVED", "PATTERN_REMOVED",
	"MAXIMUM_INCREASED", "MAXIMUM_REMOVED", "MINIMUM_DECREASED", "MINIMUM_REMOVED",
	"EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_REMOVED", "EXCLUSIVE_MINIMUM_DECREASED", "EXCLUSIVE_MINIMUM_REMOVED",
	"MULTIPLE_OF_REDUCED", "MULTIPLE_OF_REMOVED",
	"REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", "REQUIRED_ATTRIBUTE_REMOVED",
	"DEPENDENCY_ARRAY_NARROWED", "DEPENDENCY_ARRAY_REMOVED", "DEPENDENCY_SCHEMA_REMOVED",
	"MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_REMOVED", "MIN_PROPERTIES_DECREASED", "MIN_PROPERTIES_REMOVED",
	"ADDITIONAL_PROPERTIES_ADDED", "ADDITIONAL_PROPERTIES_EXTENDED",
	"PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
	"OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
	"PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
	"PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
	"MAX_ITEMS_INCREASED", "MAX_ITEMS_REMOVED", "MIN_ITEMS_DECREASED", "MIN_ITEMS_REMOVED", "UNIQUE_ITEMS_REMOVED",
	"ADDITIONAL_ITEMS_ADDED", "ADDITIONAL_ITEMS_EXTENDED", "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
	"ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
	"ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
	"ENUM_ARRAY_EXTENDED", "COMBINED_TYPE_EXTENDED", "PRODUCT_TYPE_NARROWED", "SUM_TYPE_EXTENDED", "NOT_TYPE_NARROWED",
	// Draft 2019-09 and 2020-12 keywords, by the same reading: what accepts more is compatible.
	"UNEVALUATED_PROPERTIES_ADDED", "UNEVALUATED_PROPERTIES_EXTENDED", "UNEVALUATED_ITEMS_ADDED", "UNEVALUATED_ITEMS_EXTENDED",
	"MAX_CONTAINS_INCREASED", "MAX_CONTAINS_REMOVED", "MIN_CONTAINS_DECREASED", "MIN_CONTAINS_REMOVED",
)

// jsonLenientChanges are what compatibilityPolicy LENIENT accepts on top (docs/reference/schema-rules.md).
var jsonLenientChanges = setOf(
	"ADDITIONAL_PROPERTIES_NARROWED", "ADDITIONAL_PROPERTIES_REMOVED",
	"UNEVALUATED_PROPERTIES_NARROWED", "UNEVALUATED_PROPERTIES_REMOVED",
	"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL", "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
	"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
	"PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
)

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// JSONDifference is one entry of SR's JSON Schema diff.
type JSONDifference struct {
	Type       string `json:"type"`
	Path       string `json:"path"`
	Compatible bool   `json:"compatible"`
}

// JSONDiff lists SR's differences from original to update under policy.
func JSONDiff(original, update *schema.Schema, policy Policy) []JSONDifference {
	c := &jsonDiff{policy: policy, oroot: original.JSONRoot(), uroot: update.JSONRoot(),
		odraft: draftOf(original.JSONRoot()), udraft: draftOf(update.JSONRoot()), st: &jsonState{active: map[[2]uintptr]bool{}}}
	c.compare("", original.JSONRoot(), update.JSONRoot())
	return c.out
}

// jsonCompatible is SR's JsonSchema.isBackwardCompatible: diff(original=writer, update=reader).
func jsonCompatible(original, update *schema.Schema, policy Policy) []Incompatibility {
	var out []Incompatibility
	for _, d := range JSONDiff(original, update, policy) {
		if d.Compatible {
			continue
		}
		out = append(out, Incompatibility{Type: d.Type, Path: d.Path, Field: jsonField(d.Path),
			Message: fmt.Sprintf("Difference{jsonPath='%s', type=%s}%s", d.Path, d.Type, jsonHint(d.Type))})
	}
	return out
}

func jsonHint(t string) string {
	switch t {
	case "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL", "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL":
		return ": the old schema's open content model (additionalProperties absent or true) let writers put anything under this name; close the old model with additionalProperties:false, or use compatibilityPolicy LENIENT"
	case "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL":
		return ": the new schema is closed (additionalProperties:false) and no longer accepts a property old data carries"
	case "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "REQUIRED_ATTRIBUTE_ADDED":
		return ": old data lacks a property the new schema requires (give it a default)"
	case "TYPE_CHANGED":
		return ": the value's type changed"
	case "DIFF_TOO_COMPLEX":
		return ": the schemas' recursive references branch too much to compare exhaustively; simplify the $refs or check with the registry"
	case "TYPE_NARROWED":
		return ": the type accepts fewer values"
	case "ENUM_ARRAY_NARROWED", "ENUM_ARRAY_CHANGED":
		return ": the enum no longer accepts every old value"
	case "DEPENDENCY_ARRAY_ADDED", "DEPENDENCY_ARRAY_EXTENDED", "DEPENDENCY_ARRAY_CHANGED", "DEPENDENCY_SCHEMA_ADDED":
		return ": the new schema requires more of an object when this property is present, which old data may not satisfy"
	case "UNEVALUATED_PROPERTIES_REMOVED", "UNEVALUATED_PROPERTIES_NARROWED", "ADDITIONAL_PROPERTIES_REMOVED", "ADDITIONAL_PROPERTIES_NARROWED":
		return ": the new schema accepts fewer undeclared properties than old data may carry (compatibilityPolicy LENIENT accepts this)"
	case "UNEVALUATED_ITEMS_REMOVED", "UNEVALUATED_ITEMS_NARROWED", "ADDITIONAL_ITEMS_REMOVED", "ADDITIONAL_ITEMS_NARROWED":
		return ": the new schema accepts fewer items after its tuple than old data may carry"
	case "ITEM_ADDED_TO_OPEN_CONTENT_MODEL":
		return ": the old array was open, so old data may hold anything at this position"
	case "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL":
		return ": the new array is closed and no longer accepts an item old data carries here"
	case "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
		"ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL":
		return ": the schema that covers undeclared properties or items does not match this one"
	case "COMBINED_TYPE_SUBSCHEMAS_CHANGED":
		return ": no pairing of old and new subschemas reads every old one"
	case "COMBINED_TYPE_CHANGED":
		return ": the combination keyword changed in a way that accepts other values (only a change to anyOf, or from a single subschema, is an extension)"
	case "SUM_TYPE_NARROWED":
		return ": the anyOf/oneOf lost a branch old data may match"
	case "PRODUCT_TYPE_EXTENDED":
		return ": the allOf gained a part old data may not satisfy"
	}
	return ""
}

// jsonField turns "#/properties/a/properties/b" into "a.b".
func jsonField(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "#/"), "/")
	var names []string
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties":
			if i+1 < len(parts) {
				names = append(names, parts[i+1])
				i++
			}
		case "items":
			if len(names) > 0 {
				names[len(names)-1] += "[]"
			}
		}
	}
	return strings.Join(names, ".")
}

type jsonDiff struct {
	policy       Policy
	oroot, uroot any
	// odraft and udraft are each side's draft, which decides what items means.
	odraft, udraft jsonDraft
	out            []JSONDifference
	st             *jsonState
}

// jsonState is shared by a diff and its sub-diffs: the pairs being compared (a cycle guard, as
// SR's enterSchema) and a step budget, since subschema matching over recursive $refs can branch
// without end.
type jsonState struct {
	active map[[2]uintptr]bool
	steps  int
	over   bool
}

const jsonStepBudget = 200000

// jsonDraft is the JSON Schema draft a document declares in $schema. The registry loads a
// document without $schema as draft-07.
type jsonDraft int

const (
	draft4 jsonDraft = iota
	draft6
	draft7
	draft2019
	draft2020
)

func draftOf(root any) jsonDraft {
	m, _ := root.(map[string]any)
	s, _ := m["$schema"].(string)
	switch {
	case strings.Contains(s, "2020-12"):
		return draft2020
	case strings.Contains(s, "2019-09"):
		return draft2019
	case strings.Contains(s, "draft-04"):
		return draft4
	case strings.Contains(s, "draft-06"):
		return draft6
	}
	return draft7
}

// JSONDraftName names the draft a JSON Schema declares, as the registry's loader reads $schema.
func JSONDraftName(s *schema.Schema) string {
	switch draftOf(s.JSONRoot()) {
	case draft4:
		return "draft-04"
	case draft6:
		return "draft-06"
	case draft2019:
		return "2019-09"
	case draft2020:
		return "2020-12"
	}
	return "draft-07"
}

// at spells a diff path as the registry does: "#/" for the root, "#/properties/a" below it.
func at(path string) string { return "#/" + path }

func join(path, seg string) string {
	if path == "" {
		return seg
	}
	return path + "/" + seg
}

func (c *jsonDiff) add(path, typ string) {
	ok := jsonCompatibleChanges[typ] || (c.policy == Lenient && jsonLenientChanges[typ])
	c.out = append(c.out, JSONDifference{Type: typ, Path: at(path), Compatible: ok})
}

func (c *jsonDiff) sub() *jsonDiff {
	return &jsonDiff{policy: c.policy, oroot: c.oroot, uroot: c.uroot, odraft: c.odraft, udraft: c.udraft, st: c.st}
}

func (c *jsonDiff) compatible() bool {
	for _, d := range c.out {
		if !d.Compatible {
			return false
		}
	}
	return true
}

func deref(root, v any) any {
	out, _ := schema.ResolveJSONRef(root, v)
	return out
}

var (
	objectKeywords = []string{"properties", "additionalProperties", "required", "patternProperties", "minProperties",
		"maxProperties", "dependencies", "dependentRequired", "dependentSchemas", "propertyNames", "unevaluatedProperties"}
	arrayKeywords = []string{"items", "additionalItems", "prefixItems", "minItems", "maxItems", "uniqueItems",
		"contains", "minContains", "maxContains", "unevaluatedItems"}
	stringKeywords = []string{"minLength", "maxLength", "pattern"}
	numberKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)

// without copies m without the keys given.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, x := range m {
		if !slices.Contains(keys, k) {
			out[k] = x
		}
	}
	return out
}

// constraintKeywords are the keywords that restrict values (as opposed to annotations such as
// title, description, $defs).
var constraintKeywords = slices.Concat([]string{"type", "enum", "const", "not"}, objectKeywords, arrayKeywords, stringKeywords, numberKeywords)

func hasAny(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// kind classifies a node the way the everit loader the registry uses does: empty/true, false,
// combined (oneOf/anyOf/allOf or a list of types), enum, not, object, array, string, number,
// boolean, null. Without "type" the kind is inferred from the keywords present (properties or
// required make an object, items an array, minLength a string, minimum a number).
func kind(v any) string {
	switch t := v.(type) {
	case bool:
		if t {
			return "empty"
		}
		return "false"
	case map[string]any:
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			if _, ok := t[k]; ok {
				return "combined"
			}
		}
		if _, ok := t["not"]; ok && len(t) > 1 && hasAny(without(t, "not"), constraintKeywords) {
			return "combined" // a not beside other constraints: both apply
		}
		if ty, ok := t["type"]; ok {
			l, _ := schema.JSONTypeList(ty)
			if len(l) > 1 || (len(l) == 1 && hasAny(t, []string{"enum", "const"})) {
				return "combined"
			}
			if len(l) == 1 {
				if l[0] == "integer" {
					return "number"
				}
				return l[0]
			}
		}
		if _, ok := t["enum"]; ok {
			return "enum"
		}
		if _, ok := t["const"]; ok {
			return "enum"
		}
		if _, ok := t["not"]; ok {
			return "not"
		}
		switch {
		case hasAny(t, objectKeywords):
			return "object"
		case hasAny(t, arrayKeywords):
			return "array"
		case hasAny(t, stringKeywords):
			return "string"
		case hasAny(t, numberKeywords):
			return "number"
		}
		return "empty"
	}
	return "empty"
}

// combined returns the criterion and subschemas of a combined node, as everit loads it: a list
// of types becomes an anyOf of one node per type, a type beside enum or const an allOf of the
// typed schema and the enumeration (so dropping the enum narrows the product), and a combinator
// beside other constraints (properties and a oneOf in one object, or two combinators) an allOf of
// the rest and each combinator, so no constraint is left out of the comparison.
func combined(v any) (string, []any) {
	m, _ := v.(map[string]any)
	var combs []string
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if _, ok := m[k].([]any); ok {
			combs = append(combs, k)
		}
	}
	if len(combs) > 0 {
		base := without(m, combs...)
		constrained := hasAny(base, constraintKeywords)
		if len(combs) == 1 && !constrained {
			return combs[0], m[combs[0]].([]any)
		}
		var subs []any
		if constrained {
			subs = append(subs, base)
		}
		for _, k := range combs {
			subs = append(subs, map[string]any{k: m[k]})
		}
		return "allOf", subs
	}
	if n, ok := m["not"]; ok {
		if rest := without(m, "not"); hasAny(rest, constraintKeywords) {
			return "allOf", []any{rest, map[string]any{"not": n}}
		}
	}
	l, _ := schema.JSONTypeList(m["type"])
	if len(l) == 1 {
		typed, enum := map[string]any{}, map[string]any{}
		for k, x := range m {
			if k == "enum" || k == "const" {
				enum[k] = x
			} else {
				typed[k] = x
			}
		}
		return "allOf", []any{typed, enum}
	}
	var subs []any
	for _, t := range l {
		n := map[string]any{}
		for k, x := range m {
			n[k] = x
		}
		n["type"] = t
		subs = append(subs, n)
	}
	return "anyOf", subs
}

func (c *jsonDiff) compare(path string, o, u any) {
	o, u = deref(c.oroot, o), deref(c.uroot, u)
	if o == nil && u == nil {
		return
	}
	if o == nil {
		c.add(path, "SCHEMA_ADDED")
		return
	}
	if u == nil {
		c.add(path, "SCHEMA_REMOVED")
		return
	}
	c.st.steps++
	if c.st.steps > jsonStepBudget {
		if !c.st.over {
			c.st.over = true
			c.add(path, "DIFF_TOO_COMPLEX")
		}
		return
	}
	key := [2]uintptr{identity(o), identity(u)}
	if c.st.active[key] {
		return // already being compared higher up: a recursive $ref
	}
	c.st.active[key] = true
	defer delete(c.st.active, key)
	ok, uk := kind(o), kind(u)
	switch {
	case ok != "combined" && uk == "combined":
		// A plain schema that became a combined one: a single subschema is no change at all; a
		// sum type (anyOf/oneOf) with one compatible branch is an extension. Their differences
		// stay at this path, as the registry reports them.
		crit, subs := combined(u)
		if len(subs) == 1 {
			if s := c.try(path, o, subs[0]); s != nil {
				c.out = append(c.out, s.out...)
				return
			}
		} else if crit == "anyOf" || crit == "oneOf" {
			for _, x := range subs {
				if s := c.try(path, o, x); s != nil {
					c.out = append(c.out, s.out...)
					c.add(path, "SUM_TYPE_EXTENDED")
					return
				}
			}
		}
	case ok == "combined" && uk != "combined":
		// A combined schema that became a plain one: a single subschema is no change; an allOf
		// that kept one of its parts is a narrowed product.
		crit, subs := combined(o)
		if len(subs) == 1 {
			if s := c.try(path, subs[0], u); s != nil {
				c.out = append(c.out, s.out...)
				return
			}
		} else if crit == "allOf" {
			for _, x := range subs {
				if s := c.try(path, x, u); s != nil {
					c.out = append(c.out, s.out...)
					c.add(path, "PRODUCT_TYPE_NARROWED")
					return
				}
			}
		}
	}
	if ok != uk {
		if ok == "false" || uk == "empty" {
			return
		}
		c.add(path, "TYPE_CHANGED")
		return
	}
	om, _ := o.(map[string]any)
	um, _ := u.(map[string]any)
	if om == nil || um == nil {
		return
	}
	if !jsonEqual(idOf(om, c.odraft), idOf(um, c.udraft)) {
		c.add(path, "ID_CHANGED")
	}
	if !jsonEqual(om["title"], um["title"]) {
		c.add(path, "TITLE_CHANGED")
	}
	if !jsonEqual(om["description"], um["description"]) {
		c.add(path, "DESCRIPTION_CHANGED")
	}
	if !jsonEqual(om["default"], um["default"]) {
		c.add(path, "DEFAULT_CHANGED")
	}
	switch ok {
	case "string":
		c.limit(path, "maxLength", om, um, "MAX_LENGTH")
		c.limit(path, "minLength", om, um, "MIN_LENGTH")
		p := join(path, "pattern")
		switch op, up := om["pattern"], um["pattern"]; {
		case op == nil && up != nil:
			c.add(p, "PATTERN_ADDED")
		case op != nil && up == nil:
			c.add(p, "PATTERN_REMOVED")
		case !jsonEqual(op, up):
			c.add(p, "PATTERN_CHANGED")
		}
		c.enum(path, om, um)
	case "number":
		oi, ui := isInteger(om), isInteger(um)
		if oi && !ui {
			c.add(path, "TYPE_EXTENDED")
		} else if !oi && ui {
			c.add(path, "TYPE_NARROWED")
		}
		c.limit(path, "maximum", om, um, "MAXIMUM")
		c.limit(path, "minimum", om, um, "MINIMUM")
		c.limit(path, "exclusiveMaximum", om, um, "EXCLUSIVE_MAXIMUM")
		c.limit(path, "exclusiveMinimum", om, um, "EXCLUSIVE_MINIMUM")
		c.multipleOf(path, om, um)
		c.enum(path, om, um)
	case "enum", "boolean":
		c.enum(path, om, um)
	case "combined":
		c.combined(path, o, u)
	case "not":
		// not inverts: the new "not" must be readable by the old one.
		s := c.sub()
		s.compare(join(path, "not"), um["not"], om["not"])
		if s.compatible() {
			if !jsonEqual(om["not"], um["not"]) {
				c.add(join(path, "not"), "NOT_TYPE_NARROWED")
			}
		} else {
			c.add(join(path, "not"), "NOT_TYPE_EXTENDED")
		}
	case "object":
		c.object(path, om, um)
	case "array":
		c.array(path, om, um)
	}
}

// covered compares a property or item with the schema a partially open model gives it, keeps the
// differences, and says whether that schema covers it: <what>_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
// or <what>_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL (what: PROPERTY_ADDED, ITEM_REMOVED, …).
func (c *jsonDiff) covered(path string, o, u any, what string) {
	s := c.sub()
	s.compare(path, o, u)
	c.out = append(c.out, s.out...)
	if s.compatible() {
		c.add(path, what+"_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
	} else {
		c.add(path, what+"_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
	}
}

// try compares o with u in a sub-diff and returns it when the pair is compatible, nil otherwise.
func (c *jsonDiff) try(path string, o, u any) *jsonDiff {
	s := c.sub()
	s.compare(path, o, u)
	if s.compatible() {
		return s
	}
	return nil
}

// idOf is the schema's identifier as the draft's loader exposes it: "id" in draft-04, "$id" (else
// "id") in drafts 6 and 7; the 2019-09 and 2020-12 loaders do not report it.
func idOf(m map[string]any, d jsonDraft) any {
	switch d {
	case draft4:
		return m["id"]
	case draft6, draft7:
		if id, ok := m["$id"]; ok {
			return id
		}
		return m["id"]
	}
	return nil
}

// identity names a schema node for the cycle guard: the map itself (the same $ref target is the
// same map); booleans and other leaves never recurse, so they share the zero name.
func identity(v any) uintptr {
	if m, ok := v.(map[string]any); ok {
		return uintptr(reflect.ValueOf(m).UnsafePointer())
	}
	return 0
}

func jsonEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if x, ok := a.(string); ok {
		y, ok := b.(string)
		return ok && x == y
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func isInteger(m map[string]any) bool {
	l, _ := schema.JSONTypeList(m["type"])
	return slices.Contains(l, "integer")
}

func num(v any) (*big.Float, bool) {
	switch t := v.(type) {
	case json.Number:
		f, _, err := big.ParseFloat(string(t), 10, 128, big.ToNearestEven)
		return f, err == nil
	case float64:
		return big.NewFloat(t), true
	}
	return nil, false
}

// limit compares a bound as SR names it: NAME_ADDED, _REMOVED, _INCREASED or _DECREASED. Which of
// those is compatible (a maximum increased, a minimum decreased) is the compatible set's business.
func (c *jsonDiff) limit(path, key string, om, um map[string]any, name string) {
	ov, oOK := num(om[key])
	uv, uOK := num(um[key])
	p := join(path, key)
	switch {
	case !oOK && !uOK:
	case !oOK:
		c.add(p, name+"_ADDED")
	case !uOK:
		c.add(p, name+"_REMOVED")
	default:
		switch ov.Cmp(uv) {
		case -1:
			c.add(p, name+"_INCREASED")
		case 1:
			c.add(p, name+"_DECREASED")
		}
	}
}

func (c *jsonDiff) multipleOf(path string, om, um map[string]any) {
	ov, oOK := num(om["multipleOf"])
	uv, uOK := num(um["multipleOf"])
	p := join(path, "multipleOf")
	switch {
	case !oOK && !uOK:
	case !oOK:
		c.add(p, "MULTIPLE_OF_ADDED")
	case !uOK:
		c.add(p, "MULTIPLE_OF_REMOVED")
	case ov.Sign() == 0 || uv.Sign() == 0:
		if ov.Cmp(uv) != 0 {
			c.add(p, "MULTIPLE_OF_CHANGED")
		}
	case ov.Cmp(uv) != 0:
		// Reduced when the old factor is a multiple of the new one.
		q := new(big.Float).Quo(ov, uv)
		if q.IsInt() {
			c.add(p, "MULTIPLE_OF_REDUCED")
		} else if q2 := new(big.Float).Quo(uv, ov); q2.IsInt() {
			c.add(p, "MULTIPLE_OF_EXPANDED")
		} else {
			c.add(p, "MULTIPLE_OF_CHANGED")
		}
	}
}

func enumValues(m map[string]any) ([]string, bool) {
	var l []any
	if e, ok := m["enum"].([]any); ok {
		l = e
	} else if cv, ok := m["const"]; ok {
		l = []any{cv}
	} else {
		return nil, false
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		b, _ := json.Marshal(x)
		out = append(out, string(b))
	}
	return out, true
}

func (c *jsonDiff) enum(path string, om, um map[string]any) {
	ov, oOK := enumValues(om)
	uv, uOK := enumValues(um)
	p := join(path, "enum")
	switch {
	case !oOK && !uOK:
	case !oOK:
		c.add(p, "ENUM_ARRAY_NARROWED")
	case !uOK:
		c.add(p, "ENUM_ARRAY_EXTENDED")
	default:
		sup, sub := containsAll(uv, ov), containsAll(ov, uv)
		switch {
		case sup && sub:
		case sup:
			c.add(p, "ENUM_ARRAY_EXTENDED")
		case sub:
			c.add(p, "ENUM_ARRAY_NARROWED")
		default:
			c.add(p, "ENUM_ARRAY_CHANGED")
		}
	}
}

func containsAll(a, b []string) bool {
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// criteria is the registry's compareCriteria: the same criterion is no change; anything may become
// anyOf; a single subschema may become oneOf; a single subschema may become a single allOf.
// Everything else changes the combined type.
func criteria(oc, uc string, osize, usize int) string {
	switch {
	case oc == uc:
		return ""
	case uc == "anyOf":
		return "COMBINED_TYPE_EXTENDED"
	case uc == "oneOf" && osize == 1:
		return "COMBINED_TYPE_EXTENDED"
	case uc == "allOf" && osize == 1 && usize == 1:
		return "COMBINED_TYPE_EXTENDED"
	}
	return "COMBINED_TYPE_CHANGED"
}

// distinct collapses duplicate subschemas (the registry compares them as a set), keeping the
// first occurrence's position.
func distinct(root any, subs []any) []any {
	seen := map[string]bool{}
	var out []any
	for _, s := range subs {
		b, _ := json.Marshal(deref(root, s))
		if seen[string(b)] {
			continue
		}
		seen[string(b)] = true
		out = append(out, s)
	}
	return out
}

// combined mirrors CombinedSchemaDiff: the criterion, the number of distinct subschemas, and a
// best pairing of old to new subschemas — a maximum matching over every compatible pair, not the
// first fit — that must cover the smaller side. A subschema's differences are reported under the
// old keyword and the old subschema's position ("#/allOf/1/enum").
func (c *jsonDiff) combined(path string, o, u any) {
	oc, osubs := combined(o)
	uc, usubs := combined(u)
	if t := criteria(oc, uc, len(osubs), len(usubs)); t != "" {
		c.add(path, t)
		if t == "COMBINED_TYPE_CHANGED" {
			return
		}
	}
	os, us := distinct(c.oroot, osubs), distinct(c.uroot, usubs)
	// Growth is named after the new keyword (an allOf asks more, a sum accepts more); narrowing
	// after the old one: an allOf that lost parts asks less, even when it became an anyOf.
	switch {
	case len(us) > len(os) && uc == "allOf":
		c.add(path, "PRODUCT_TYPE_EXTENDED")
	case len(us) > len(os):
		c.add(path, "SUM_TYPE_EXTENDED")
	case len(us) < len(os) && oc == "allOf":
		c.add(path, "PRODUCT_TYPE_NARROWED")
	case len(us) < len(os):
		c.add(path, "SUM_TYPE_NARROWED")
	}
	edges := make([][]*jsonDiff, len(os))
	for i, x := range os {
		edges[i] = make([]*jsonDiff, len(us))
		for j, y := range us {
			edges[i][j] = c.try(join(path, fmt.Sprintf("%s/%d", oc, i)), x, y)
		}
	}
	match := maxMatching(len(os), len(us), func(i, j int) bool { return edges[i][j] != nil })
	matched := 0
	for i, j := range match {
		if j >= 0 {
			matched++
			c.out = append(c.out, edges[i][j].out...)
		}
	}
	if matched < min(len(os), len(us)) {
		c.add(path, "COMBINED_TYPE_SUBSCHEMAS_CHANGED")
	}
}

// maxMatching is a maximum bipartite matching of n left to m right nodes over the pairs ok
// accepts (augmenting paths; subschema lists are short). It returns each left node's partner, or
// -1.
func maxMatching(n, m int, ok func(i, j int) bool) []int {
	left, right := make([]int, n), make([]int, m)
	for i := range left {
		left[i] = -1
	}
	for j := range right {
		right[j] = -1
	}
	var augment func(i int, seen []bool) bool
	augment = func(i int, seen []bool) bool {
		for j := 0; j < m; j++ {
			if seen[j] || !ok(i, j) {
				continue
			}
			seen[j] = true
			if right[j] < 0 || augment(right[j], seen) {
				left[i], right[j] = j, i
				return true
			}
		}
		return false
	}
	for i := 0; i < n; i++ {
		augment(i, make([]bool, m))
	}
	return left
}
