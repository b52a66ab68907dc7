package compat

// The content model of objects and arrays: which properties and items a schema admits beyond
// those it declares, and how the registry judges a property or item added, removed or retyped
// under it.

import (
	"fmt"
	"regexp"
)

// unevaluated returns the node's unevaluatedProperties or unevaluatedItems keyword, or nil.
func unevaluated(m map[string]any, key string) any {
	if v, ok := m[key]; ok {
		return v
	}
	return nil
}

func isTrueOrEmpty(v any) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// openContent: no patternProperties, additionalProperties absent or true, and unevaluatedProperties
// absent or true. unevaluatedProperties false closes the model as additionalProperties false does.
func openContent(m map[string]any) bool {
	if pp, ok := m["patternProperties"].(map[string]any); ok && len(pp) > 0 {
		return false
	}
	if ap, ok := m["additionalProperties"]; ok {
		if b, isBool := ap.(bool); !isBool || !b {
			return false
		}
	}
	u := unevaluated(m, "unevaluatedProperties")
	return u == nil || isTrueOrEmpty(u)
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

// partialSchema is the schema a partially open model gives an undeclared property: the first
// matching patternProperties entry, else a schema additionalProperties, else (additionalProperties
// absent) a schema unevaluatedProperties.
func partialSchema(m map[string]any, prop string) any {
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		for _, pat := range sortedKeys(pp) {
			if re, err := regexp.Compile(pat); err == nil && re.MatchString(prop) {
				return pp[pat]
			}
		}
	}
	if s := additionalSchema(m); s != nil {
		return s
	}
	if _, ok := m["additionalProperties"]; !ok {
		if u := unevaluated(m, "unevaluatedProperties"); u != nil {
			if _, isBool := u.(bool); !isBool && !isTrueOrEmpty(u) {
				return u
			}
		}
	}
	return nil
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

// object mirrors ObjectSchemaDiff: required, properties under the content model, dependencies,
// additional and unevaluated properties, and the property-count bounds.
func (c *jsonDiff) object(path string, om, um map[string]any) {
	op, _ := om["properties"].(map[string]any)
	up, _ := um["properties"].(map[string]any)
	oreq, ureq := requiredSet(om), requiredSet(um)
	for _, k := range sortedKeys(op) {
		if _, ok := up[k]; !ok {
			continue
		}
		p := join(path, "required/"+k)
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
		p := join(path, "properties/"+k)
		ov, inO := op[k]
		uv, inU := up[k]
		switch {
		case !inU:
			// Removal looks at the new model: only an open update still accepts the property.
			if openContent(um) {
				c.add(p, "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
			} else if ps := partialSchema(um, k); ps != nil {
				c.covered(p, ov, ps, "PROPERTY_REMOVED")
			} else if isFalseSchema(deref(c.oroot, ov)) {
				c.add(p, "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
			} else {
				c.add(p, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
			}
		case !inO:
			// Addition looks at the old model: an open original let writers put anything here.
			if openContent(om) {
				switch {
				case isEmptySchema(deref(c.uroot, uv)):
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
				c.covered(p, ps, uv, "PROPERTY_ADDED")
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
	c.dependencies(path, om, um)
	ap := join(path, "additionalProperties")
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
	c.unevaluated(join(path, "unevaluatedProperties"), "UNEVALUATED_PROPERTIES",
		deref(c.oroot, unevaluated(om, "unevaluatedProperties")), deref(c.uroot, unevaluated(um, "unevaluatedProperties")))
	c.limit(path, "maxProperties", om, um, "MAX_PROPERTIES")
	c.limit(path, "minProperties", om, um, "MIN_PROPERTIES")
}

// unevaluated compares unevaluatedProperties or unevaluatedItems as the registry does: absent or
// true accepts anything, false nothing, a schema what it describes. Going from false to anything
// else is ADDED (compatible), to false REMOVED; from true/absent to a schema NARROWED, the reverse
// EXTENDED; two schemas are compared.
func (c *jsonDiff) unevaluated(path, name string, o, u any) {
	switch {
	case o == nil && u == nil:
	case o == nil && isFalseSchema(u):
		c.add(path, name+"_REMOVED")
	case o == nil:
		c.add(path, name+"_NARROWED")
	case u == nil && isFalseSchema(o):
		c.add(path, name+"_ADDED")
	case u == nil:
		c.add(path, name+"_EXTENDED")
	case isFalseSchema(o) && !isFalseSchema(u):
		c.add(path, name+"_ADDED")
	case !isFalseSchema(o) && isFalseSchema(u):
		c.add(path, name+"_REMOVED")
	case isTrueOrEmpty(o) && !isTrueOrEmpty(u):
		c.add(path, name+"_NARROWED")
	case !isTrueOrEmpty(o) && isTrueOrEmpty(u):
		c.add(path, name+"_EXTENDED")
	default:
		c.compare(path, o, u)
	}
}

// dependencies is SR's ObjectSchemaDiff.compareDependencies: property dependencies (a list of
// names) as sets — removed or narrowed is compatible, added, extended or changed is not — and
// schema dependencies — removed is compatible, added is not, both present are compared. The
// draft 2019-09 spellings dependentRequired and dependentSchemas count as the same keyword.
func (c *jsonDiff) dependencies(path string, om, um map[string]any) {
	oprops, oschemas := dependencyMaps(om)
	uprops, uschemas := dependencyMaps(um)
	for _, k := range unionKeys(oprops, uprops) {
		p := join(path, "dependencies/"+k)
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
		p := join(path, "dependencies/"+k)
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

// arrayModel is an array schema as the registry's loader sees it, whatever the draft spelled:
// one schema for every item, a tuple of positional schemas, what comes after the tuple
// (permitted or not, and under which schema) and unevaluatedItems.
type arrayModel struct {
	all         any
	tuple       []any
	permits     bool
	additional  any
	unevaluated any
}

// readArray reads the draft's spelling. Draft 2020-12: prefixItems is the tuple and items what
// follows it (without prefixItems, items false forbids every item and a schema covers them all).
// Earlier drafts: items as a list is the tuple, as a schema covers every item, and additionalItems
// is what follows.
func readArray(m map[string]any, d jsonDraft) arrayModel {
	a := arrayModel{permits: true, unevaluated: unevaluated(m, "unevaluatedItems")}
	after := func(v any) {
		if b, ok := v.(bool); ok {
			a.permits = b
		} else if v != nil {
			a.additional = v
		}
	}
	if d == draft2020 {
		prefix, hasPrefix := m["prefixItems"].([]any)
		a.tuple = prefix
		items, hasItems := m["items"]
		switch {
		case !hasItems:
		case hasPrefix:
			after(items)
		default:
			if _, isBool := items.(bool); isBool {
				after(items)
			} else {
				a.all = items
			}
		}
		return a
	}
	switch items := m["items"].(type) {
	case nil:
	case []any:
		a.tuple = items
	default:
		a.all = items
	}
	if v, ok := m["additionalItems"]; ok {
		after(v)
	}
	return a
}

// open: nothing bounds what follows the tuple.
func (a arrayModel) open() bool {
	return a.permits && a.additional == nil && (a.unevaluated == nil || isTrueOrEmpty(a.unevaluated))
}

// partial is the schema items after the tuple must match: additionalItems (or 2020-12 items),
// else a schema unevaluatedItems.
func (a arrayModel) partial() any {
	if a.additional != nil {
		return a.additional
	}
	if a.permits && a.unevaluated != nil {
		if _, isBool := a.unevaluated.(bool); !isBool && !isTrueOrEmpty(a.unevaluated) {
			return a.unevaluated
		}
	}
	return nil
}

// array mirrors ArraySchemaDiff: the all-items schema, the tuple position by position under the
// content model, additional and unevaluated items, then the bounds.
func (c *jsonDiff) array(path string, om, um map[string]any) {
	oa, ua := readArray(om, c.odraft), readArray(um, c.udraft)
	c.compare(join(path, "items"), oa.all, ua.all)
	for i := 0; i < max(len(oa.tuple), len(ua.tuple)); i++ {
		p := join(path, fmt.Sprintf("items/%d", i))
		switch {
		case i >= len(ua.tuple):
			ov := oa.tuple[i]
			if ua.open() {
				c.add(p, "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
			} else if ps := ua.partial(); ps != nil {
				c.covered(p, ov, ps, "ITEM_REMOVED")
			} else if isFalseSchema(deref(c.oroot, ov)) {
				c.add(p, "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
			} else {
				c.add(p, "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")
			}
		case i >= len(oa.tuple):
			uv := ua.tuple[i]
			if oa.open() {
				if isEmptySchema(deref(c.uroot, uv)) {
					c.add(p, "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
				} else {
					c.add(p, "ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
				}
			} else if ps := oa.partial(); ps != nil {
				c.covered(p, ps, uv, "ITEM_ADDED")
			} else {
				c.add(p, "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
			}
		default:
			c.compare(p, oa.tuple[i], ua.tuple[i])
		}
	}
	ap := join(path, "additionalItems")
	switch {
	case oa.permits != ua.permits && oa.permits:
		c.add(ap, "ADDITIONAL_ITEMS_REMOVED")
	case oa.permits != ua.permits:
		c.add(ap, "ADDITIONAL_ITEMS_ADDED")
	case oa.additional == nil && ua.additional != nil:
		c.add(ap, "ADDITIONAL_ITEMS_NARROWED")
	case ua.additional == nil && oa.additional != nil:
		c.add(ap, "ADDITIONAL_ITEMS_EXTENDED")
	case oa.additional != nil:
		c.compare(ap, oa.additional, ua.additional)
	}
	c.unevaluated(join(path, "unevaluatedItems"), "UNEVALUATED_ITEMS", deref(c.oroot, oa.unevaluated), deref(c.uroot, ua.unevaluated))
	c.limit(path, "maxItems", om, um, "MAX_ITEMS")
	c.limit(path, "minItems", om, um, "MIN_ITEMS")
	ou, _ := om["uniqueItems"].(bool)
	uu, _ := um["uniqueItems"].(bool)
	if ou && !uu {
		c.add(join(path, "uniqueItems"), "UNIQUE_ITEMS_REMOVED")
	} else if !ou && uu {
		c.add(join(path, "uniqueItems"), "UNIQUE_ITEMS_ADDED")
	}
	c.limit(path, "maxContains", om, um, "MAX_CONTAINS")
	c.limit(path, "minContains", om, um, "MIN_CONTAINS")
}
