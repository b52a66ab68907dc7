package compat

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
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
)

// jsonLenientChanges are what compatibilityPolicy LENIENT accepts on top (compatibility.md §4).
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
	c := &jsonDiff{policy: policy, oroot: original.JSONRoot(), uroot: update.JSONRoot(), st: &jsonState{active: map[[2]string]bool{}}}
	c.compare("#", original.JSONRoot(), update.JSONRoot())
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
	out          []JSONDifference
	st           *jsonState
}

// jsonState is shared by a diff and its sub-diffs: the pairs being compared (a cycle guard, as
// SR's enterSchema) and a step budget, since subschema matching over recursive $refs can branch
// without end.
type jsonState struct {
	active map[[2]string]bool
	steps  int
	over   bool
}

const jsonStepBudget = 200000

func (c *jsonDiff) add(path, typ string) {
	ok := jsonCompatibleChanges[typ] || (c.policy == Lenient && jsonLenientChanges[typ])
	c.out = append(c.out, JSONDifference{Type: typ, Path: path, Compatible: ok})
}

func (c *jsonDiff) sub() *jsonDiff {
	return &jsonDiff{policy: c.policy, oroot: c.oroot, uroot: c.uroot, st: c.st}
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
	for i := 0; i < 32; i++ {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return v
		}
		if ref == "#" {
			return root
		}
		v = lookupPointer(root, ref)
	}
	return v
}

func lookupPointer(root any, ref string) any {
	cur := root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// kind classifies a node the way the everit loader SR uses does: empty/true, false, combined
// (oneOf/anyOf/allOf or a list of types), enum, not, object, array, string, number, boolean, null.
func kind(v any) string {
	switch t := v.(type) {
	case bool:
		if t {
			return "empty"
		}
		return "false"
	case map[string]any:
		if _, ok := t["oneOf"]; ok {
			return "combined"
		}
		if _, ok := t["anyOf"]; ok {
			return "combined"
		}
		if _, ok := t["allOf"]; ok {
			return "combined"
		}
		if ty, ok := t["type"]; ok {
			l, _ := schema.JSONTypeList(ty)
			if len(l) > 1 {
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
		for _, k := range []string{"properties", "additionalProperties", "required", "patternProperties", "minProperties", "maxProperties"} {
			if _, ok := t[k]; ok {
				return "object"
			}
		}
		for _, k := range []string{"items", "minItems", "maxItems", "uniqueItems"} {
			if _, ok := t[k]; ok {
				return "array"
			}
		}
		for _, k := range []string{"minLength", "maxLength", "pattern"} {
			if _, ok := t[k]; ok {
				return "string"
			}
		}
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
			if _, ok := t[k]; ok {
				return "number"
			}
		}
		return "empty"
	}
	return "empty"
}

// combined returns the criterion and subschemas of a combined node; a list of types becomes an
// anyOf of one node per type, as everit loads it.
func combined(v any) (string, []any) {
	m, _ := v.(map[string]any)
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := m[k].([]any); ok {
			return k, l
		}
	}
	l, _ := schema.JSONTypeList(m["type"])
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
	key := [2]string{identity(o), identity(u)}
	if c.st.active[key] {
		return // already being compared higher up: a recursive $ref
	}
	c.st.active[key] = true
	defer delete(c.st.active, key)
	ok, uk := kind(o), kind(u)
	if ok != "combined" && uk == "combined" {
		crit, subs := combined(u)
		if len(subs) == 1 {
			s := c.sub()
			s.compare(path, o, subs[0])
			if s.compatible() {
				c.out = append(c.out, s.out...)
				return
			}
		} else if crit == "anyOf" || crit == "oneOf" {
			for _, x := range subs {
				s := c.sub()
				s.compare(path, o, x)
				if s.compatible() {
					c.out = append(c.out, s.out...)
					c.add(path, "SUM_TYPE_EXTENDED")
					return
				}
			}
		}
	} else if ok == "combined" && uk != "combined" {
		if _, subs := combined(o); len(subs) == 1 {
			s := c.sub()
			s.compare(path, subs[0], u)
			if s.compatible() {
				c.out = append(c.out, s.out...)
				return
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
	if !jsonEqual(om["$id"], um["$id"]) {
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
		switch op, up := om["pattern"], um["pattern"]; {
		case op == nil && up != nil:
			c.add(path+"/pattern", "PATTERN_ADDED")
		case op != nil && up == nil:
			c.add(path+"/pattern", "PATTERN_REMOVED")
		case !jsonEqual(op, up):
			c.add(path+"/pattern", "PATTERN_CHANGED")
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
		s := c.sub()
		s.compare(path+"/not", um["not"], om["not"])
		if s.compatible() {
			if !jsonEqual(om["not"], um["not"]) {
				c.add(path, "NOT_TYPE_NARROWED")
			}
		} else {
			c.add(path, "NOT_TYPE_EXTENDED")
		}
	case "object":
		c.object(path, om, um)
	case "array":
		c.array(path, om, um)
	}
}

// identity names a schema node: the map itself (the same $ref target is the same map), or the
// boolean.
func identity(v any) string {
	if m, ok := v.(map[string]any); ok {
		return fmt.Sprintf("%p", m)
	}
	return fmt.Sprint(v)
}

func jsonEqual(a, b any) bool {
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
	p := path + "/" + key
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
	p := path + "/multipleOf"
	switch {
	case !oOK && !uOK:
	case !oOK:
		c.add(p, "MULTIPLE_OF_ADDED")
	case !uOK:
		c.add(p, "MULTIPLE_OF_REMOVED")
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
	switch {
	case !oOK && !uOK:
	case !oOK:
		c.add(path+"/enum", "ENUM_ARRAY_NARROWED")
	case !uOK:
		c.add(path+"/enum", "ENUM_ARRAY_EXTENDED")
	default:
		sup, sub := containsAll(uv, ov), containsAll(ov, uv)
		switch {
		case sup && sub:
		case sup:
			c.add(path+"/enum", "ENUM_ARRAY_EXTENDED")
		case sub:
			c.add(path+"/enum", "ENUM_ARRAY_NARROWED")
		default:
			c.add(path+"/enum", "ENUM_ARRAY_CHANGED")
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

// combined mirrors CombinedSchemaDiff: the criterion, the number of subschemas, and that every
// subschema of the smaller side still has a compatible partner.
func (c *jsonDiff) combined(path string, o, u any) {
	oc, os := combined(o)
	uc, us := combined(u)
	if oc != uc {
		if uc == "anyOf" || (oc == "allOf" && uc == "oneOf") {
			c.add(path, "COMBINED_TYPE_EXTENDED")
		} else {
			c.add(path, "COMBINED_TYPE_CHANGED")
			return
		}
	}
	product := uc == "allOf"
	switch {
	case len(us) > len(os):
		if product {
			c.add(path, "PRODUCT_TYPE_EXTENDED")
		} else {
			c.add(path, "SUM_TYPE_EXTENDED")
		}
	case len(us) < len(os):
		if product {
			c.add(path, "PRODUCT_TYPE_NARROWED")
		} else {
			c.add(path, "SUM_TYPE_NARROWED")
		}
	}
	// Match each subschema of the smaller side to a compatible one of the larger side.
	small, large, smallIsOrig := os, us, true
	if len(us) < len(os) {
		small, large, smallIsOrig = us, os, false
	}
	used := make([]bool, len(large))
	for i, s := range small {
		matched := false
		for j, l := range large {
			if used[j] {
				continue
			}
			sc := c.sub()
			if smallIsOrig {
				sc.compare(fmt.Sprintf("%s/%s/%d", path, uc, j), s, l)
			} else {
				sc.compare(fmt.Sprintf("%s/%s/%d", path, uc, i), l, s)
			}
			if sc.compatible() {
				c.out = append(c.out, sc.out...)
				used[j] = true
				matched = true
				break
			}
		}
		if !matched {
			c.add(fmt.Sprintf("%s/%s/%d", path, oc, i), "COMBINED_TYPE_SUBSCHEMAS_CHANGED")
			return
		}
	}
}

// openContent: additionalProperties absent or true and no patternProperties.
func openContent(m map[string]any) bool {
	if pp, ok := m["patternProperties"].(map[string]any); ok && len(pp) > 0 {
		return false
	}
	ap, ok := m["additionalProperties"]
	if !ok {
		return true
	}
	b, isBool := ap.(bool)
	return isBool && b
}

func permitsAdditional(m map[string]any) bool {
	ap, ok := m["additionalProperties"]
	if !ok {
		return true
	}
	if b, isBool := ap.(bool); isBool {
		return b
	}
	return true
}

func additionalSchema(m map[string]any) any {
	ap, ok := m["additionalProperties"]
	if !ok {
		return nil
	}
	if _, isBool := ap.(bool); isBool {
		return nil
	}
	return ap
}

// partialSchema is the schema a partially open model gives an undeclared property.
func partialSchema(m map[string]any, prop string) any {
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		for _, pat := range sortedKeys(pp) {
			if re, err := regexp.Compile(pat); err == nil && re.MatchString(prop) {
				return pp[pat]
			}
		}
	}
	return additionalSchema(m)
}

func requiredSet(m map[string]any) map[string]bool {
	out := map[string]bool{}
	if l, ok := m["required"].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out[s] = true
			}
		}
	}
	return out
}

func hasDefault(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m["default"]
	return ok
}

func isEmptySchema(v any) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	m, ok := v.(map[string]any)
	return ok && kind(m) == "empty"
}

func isFalseSchema(v any) bool {
	b, ok := v.(bool)
	return ok && !b
}

// object mirrors ObjectSchemaDiff: required, properties under the content model, additional
// properties and the property-count bounds.
func (c *jsonDiff) object(path string, om, um map[string]any) {
	op, _ := om["properties"].(map[string]any)
	up, _ := um["properties"].(map[string]any)
	oreq, ureq := requiredSet(om), requiredSet(um)
	for _, k := range sortedKeys(op) {
		if _, ok := up[k]; !ok {
			continue
		}
		p := path + "/required/" + k
		switch {
		case oreq[k] && !ureq[k]:
			c.add(p, "REQUIRED_ATTRIBUTE_REMOVED")
		case !oreq[k] && ureq[k]:
			if hasDefault(deref(c.uroot, up[k])) {
				c.add(p, "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED")
			} else {
				c.add(p, "REQUIRED_ATTRIBUTE_ADDED")
			}
		}
	}
	for _, k := range unionKeys(op, up) {
		p := path + "/properties/" + k
		ov, inO := op[k]
		uv, inU := up[k]
		switch {
		case !inU:
			// Removal looks at the new model: only an open update still accepts the property.
			if openContent(um) {
				c.add(p, "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
			} else if ps := partialSchema(um, k); ps != nil {
				s := c.sub()
				s.compare(p, ov, ps)
				c.out = append(c.out, s.out...)
				if s.compatible() {
					c.add(p, "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
				} else {
					c.add(p, "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
				}
			} else if isFalseSchema(ov) {
				c.add(p, "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
			} else {
				c.add(p, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
			}
		case !inO:
			// Addition looks at the old model: an open original let writers put anything here.
			if openContent(om) {
				switch {
				case isEmptySchema(uv):
					c.add(p, "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
				case ureq[k] && hasDefault(deref(c.uroot, uv)):
					c.add(p, "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL")
				case ureq[k]:
					c.add(p, "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
				default:
					c.add(p, "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
				}
				continue
			}
			if ps := partialSchema(om, k); ps != nil {
				s := c.sub()
				s.compare(p, ps, uv)
				c.out = append(c.out, s.out...)
				if s.compatible() {
					c.add(p, "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
				} else {
					c.add(p, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
				}
			}
			switch {
			case ureq[k] && hasDefault(deref(c.uroot, uv)):
				c.add(p, "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL")
			case ureq[k]:
				c.add(p, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
			default:
				c.add(p, "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
			}
		default:
			c.compare(p, ov, uv)
		}
	}
	ap := path + "/additionalProperties"
	switch oa, ua := permitsAdditional(om), permitsAdditional(um); {
	case oa != ua && ua:
		c.add(ap, "ADDITIONAL_PROPERTIES_ADDED")
	case oa != ua:
		c.add(ap, "ADDITIONAL_PROPERTIES_REMOVED")
	case additionalSchema(om) == nil && additionalSchema(um) != nil:
		c.add(ap, "ADDITIONAL_PROPERTIES_NARROWED")
	case additionalSchema(um) == nil && additionalSchema(om) != nil:
		c.add(ap, "ADDITIONAL_PROPERTIES_EXTENDED")
	case additionalSchema(om) != nil:
		c.compare(ap, additionalSchema(om), additionalSchema(um))
	}
	c.limit(path, "maxProperties", om, um, "MAX_PROPERTIES")
	c.limit(path, "minProperties", om, um, "MIN_PROPERTIES")
	c.dependencies(path, om, um)
}

// dependencies is SR's ObjectSchemaDiff.compareDependencies: property dependencies (a list of
// names) as sets — removed or narrowed is compatible, added, extended or changed is not — and
// schema dependencies — removed is compatible, added is not, both present are compared. The
// draft 2019-09 spellings dependentRequired and dependentSchemas count as the same keyword.
func (c *jsonDiff) dependencies(path string, om, um map[string]any) {
	oprops, oschemas := dependencyMaps(om)
	uprops, uschemas := dependencyMaps(um)
	for _, k := range unionKeys(oprops, uprops) {
		p := path + "/dependencies/" + k
		o, inO := oprops[k]
		u, inU := uprops[k]
		switch {
		case !inU:
			c.add(p, "DEPENDENCY_ARRAY_REMOVED")
		case !inO:
			c.add(p, "DEPENDENCY_ARRAY_ADDED")
		case len(o) == len(u) && containsAll(u, o):
		case containsAll(u, o):
			c.add(p, "DEPENDENCY_ARRAY_EXTENDED")
		case containsAll(o, u):
			c.add(p, "DEPENDENCY_ARRAY_NARROWED")
		default:
			c.add(p, "DEPENDENCY_ARRAY_CHANGED")
		}
	}
	for _, k := range unionKeys(oschemas, uschemas) {
		p := path + "/dependencies/" + k
		o, inO := oschemas[k]
		u, inU := uschemas[k]
		switch {
		case !inU:
			c.add(p, "DEPENDENCY_SCHEMA_REMOVED")
		case !inO:
			c.add(p, "DEPENDENCY_SCHEMA_ADDED")
		default:
			c.compare(p, o, u)
		}
	}
}

// dependencyMaps splits an object's dependencies into property dependencies (deduplicated name
// lists) and schema dependencies.
func dependencyMaps(m map[string]any) (map[string][]string, map[string]any) {
	props, schemas := map[string][]string{}, map[string]any{}
	addProps := func(k string, list []any) {
		seen := map[string]bool{}
		names := []string{}
		for _, x := range list {
			if n, ok := x.(string); ok && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		props[k] = names
	}
	if deps, ok := m["dependencies"].(map[string]any); ok {
		for k, v := range deps {
			if list, ok := v.([]any); ok {
				addProps(k, list)
			} else {
				schemas[k] = v
			}
		}
	}
	if deps, ok := m["dependentRequired"].(map[string]any); ok {
		for k, v := range deps {
			if list, ok := v.([]any); ok {
				addProps(k, list)
			}
		}
	}
	if deps, ok := m["dependentSchemas"].(map[string]any); ok {
		for k, v := range deps {
			schemas[k] = v
		}
	}
	return props, schemas
}

// array compares item schemas and bounds; a tuple (items as a list) compares position by position.
func (c *jsonDiff) array(path string, om, um map[string]any) {
	c.limit(path, "maxItems", om, um, "MAX_ITEMS")
	c.limit(path, "minItems", om, um, "MIN_ITEMS")
	ou, _ := om["uniqueItems"].(bool)
	uu, _ := um["uniqueItems"].(bool)
	if ou && !uu {
		c.add(path+"/uniqueItems", "UNIQUE_ITEMS_REMOVED")
	} else if !ou && uu {
		c.add(path+"/uniqueItems", "UNIQUE_ITEMS_ADDED")
	}
	ot, oTuple := om["items"].([]any)
	ut, uTuple := um["items"].([]any)
	if !oTuple && !uTuple {
		oi, ui := om["items"], um["items"]
		if oi == nil {
			oi = true
		}
		if ui == nil {
			ui = true
		}
		c.compare(path+"/items", oi, ui)
		return
	}
	if oTuple != uTuple {
		c.add(path+"/items", "TYPE_CHANGED")
		return
	}
	openItems := func(m map[string]any) bool {
		a, ok := m["additionalItems"]
		if !ok {
			return true
		}
		b, isBool := a.(bool)
		return isBool && b
	}
	for i := 0; i < max(len(ot), len(ut)); i++ {
		p := fmt.Sprintf("%s/items/%d", path, i)
		switch {
		case i >= len(ut):
			if openItems(um) {
				c.add(p, "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
			} else if isFalseSchema(ot[i]) {
				c.add(p, "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
			} else {
				c.add(p, "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")
			}
		case i >= len(ot):
			if !openItems(om) {
				c.add(p, "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
			} else if isEmptySchema(ut[i]) {
				c.add(p, "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
			} else {
				c.add(p, "ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
			}
		default:
			c.compare(p, ot[i], ut[i])
		}
	}
}
