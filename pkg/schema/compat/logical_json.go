package compat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dataworkers/dw/pkg/schema"
)

// jsonLogical converts a JSON Schema to its logical row, as the registry's JSON Schema mapping
// does: an object with properties is a ROW whose fields keep the document's order, a required
// property is NOT NULL unless its type admits null, an optional one is nullable; integer is
// BIGINT, number DOUBLE, string STRING, boolean BOOLEAN; an array is an ARRAY of its items; an
// object with only additionalProperties a MAP<STRING, V>. Combinations other than "T or null",
// tuples and recursive references have no logical type.
func jsonLogical(s *schema.Schema) (LType, error) {
	order, err := jsonKeyOrder(s.Text)
	if err != nil {
		return LType{}, err
	}
	c := &jsonLogicalConv{root: s.JSONRoot(), order: order, stack: map[string]bool{}}
	t, err := c.convert(s.JSONRoot(), "", "#")
	if err != nil {
		return LType{}, err
	}
	if t.Kind != KRow {
		return LType{}, fmt.Errorf("the top-level schema is %s, not an object with properties: only objects convert to a logical row", t)
	}
	return t, nil
}

type jsonLogicalConv struct {
	root  any
	order map[string][]string // JSON pointer of an object → its keys in document order
	stack map[string]bool
}

// convert maps node (found at JSON pointer ptr) to a logical type; where names it in errors.
func (c *jsonLogicalConv) convert(node any, ptr, where string) (LType, error) {
	resolved, ref := schema.ResolveJSONRef(c.root, node)
	if ref != "" {
		if c.stack[ref] {
			return LType{}, fmt.Errorf("%s: %s refers to itself, which no row type can", where, ref)
		}
		c.stack[ref] = true
		defer delete(c.stack, ref)
		ptr = strings.TrimPrefix(strings.TrimPrefix(ref, "#"), "/")
	}
	m, ok := resolved.(map[string]any)
	if !ok {
		return LType{}, fmt.Errorf("%s: a boolean schema has no logical type", where)
	}
	nullable := false
	types, _ := schema.JSONTypeList(m["type"])
	var nonNull []string
	for _, t := range types {
		if t == "null" {
			nullable = true
		} else {
			nonNull = append(nonNull, t)
		}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		l, ok := m[k].([]any)
		if !ok {
			continue
		}
		var other []int
		for i, x := range l {
			if xm, _ := schema.ResolveJSONRef(c.root, x); isNullSchema(xm) {
				nullable = true
			} else {
				other = append(other, i)
			}
		}
		if len(other) != 1 || len(nonNull) > 0 {
			return LType{}, fmt.Errorf("%s: %s of %d non-null branches has no logical type (only T or null converts)", where, k, len(other))
		}
		t, err := c.convert(l[other[0]], join(ptr, fmt.Sprintf("%s/%d", k, other[0])), where)
		t.Nullable = t.Nullable || nullable
		return t, err
	}
	if len(nonNull) > 1 {
		return LType{}, fmt.Errorf("%s: a type list of %d non-null types has no logical type", where, len(nonNull))
	}
	k := ""
	if len(nonNull) == 1 {
		k = nonNull[0]
	} else if kd := kind(m); kd != "empty" && kd != "combined" {
		k = kd
	}
	var t LType
	switch k {
	case "integer":
		t = LType{Kind: KBigint}
	case "number":
		if isInteger(m) {
			t = LType{Kind: KBigint}
		} else {
			t = LType{Kind: KDouble}
		}
	case "string":
		t = LType{Kind: KString}
	case "boolean":
		t = LType{Kind: KBoolean}
	case "array":
		items, ok := m["items"]
		if _, tuple := items.([]any); !ok || tuple {
			return LType{}, fmt.Errorf("%s: an array without one items schema has no logical type", where)
		}
		e, err := c.convert(items, join(ptr, "items"), where+"/items")
		if err != nil {
			return LType{}, err
		}
		t = LType{Kind: KArray, Elem: &e}
	case "object":
		props, _ := m["properties"].(map[string]any)
		if len(props) == 0 {
			if v := additionalSchema(m); v != nil {
				vt, err := c.convert(v, join(ptr, "additionalProperties"), where+"/additionalProperties")
				if err != nil {
					return LType{}, err
				}
				t = LType{Kind: KMap, Key: &LType{Kind: KString}, Value: &vt}
				break
			}
		}
		req := requiredSet(m)
		row := LType{Kind: KRow}
		for _, name := range c.keys(join(ptr, "properties"), props) {
			ft, err := c.convert(props[name], join(ptr, "properties/"+name), where+"/properties/"+name)
			if err != nil {
				return LType{}, err
			}
			if !req[name] {
				ft.Nullable = true
			}
			row.Fields = append(row.Fields, LField{Name: name, Type: ft, HasDefault: hasDefault(deref(c.root, props[name]))})
		}
		t = row
	default:
		return LType{}, fmt.Errorf("%s: a schema without a type has no logical type", where)
	}
	t.Nullable = t.Nullable || nullable
	return t, nil
}

// keys returns the properties in document order (sorted when the order is unknown).
func (c *jsonLogicalConv) keys(ptr string, props map[string]any) []string {
	var out []string
	for _, k := range c.order[ptr] {
		if _, ok := props[k]; ok {
			out = append(out, k)
		}
	}
	if len(out) == len(props) {
		return out
	}
	return sortedKeys(props)
}

func isNullSchema(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	l, _ := schema.JSONTypeList(m["type"])
	return len(l) == 1 && l[0] == "null"
}

// jsonKeyOrder reads text once more as a token stream and records, for every object, its keys in
// the order the document gives them (a decoded map has none), keyed by JSON pointer without "#/".
func jsonKeyOrder(text string) (map[string][]string, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	out := map[string][]string{}
	var value func(ptr string) error
	value = func(ptr string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				out[ptr] = append(out[ptr], k)
				esc := strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
				if err := value(join(ptr, esc)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := value(join(ptr, fmt.Sprint(i))); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := value(""); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading property order: %w", err)
	}
	return out, nil
}
