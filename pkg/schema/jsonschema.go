package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

type jsonSchema struct {
	root any // map[string]any or bool
}

// JSONRoot returns the decoded JSON Schema document (a map or a bool), or nil for other formats.
func (s *Schema) JSONRoot() any {
	if s.json == nil {
		return nil
	}
	return s.json.root
}

var jsonTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "integer": true, "string": true}

func parseJSON(text string, refs []Reference) (*Schema, error) {
	root, err := decodeJSON(text)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	if err := validateJSONSchema(root, "#"); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	docs := map[string]any{}
	for _, r := range refs {
		d, err := decodeJSON(r.Schema)
		if err != nil {
			return nil, fmt.Errorf("JSON Schema reference %q is invalid: %v", r.Name, err)
		}
		if err := validateJSONSchema(d, r.Name+"#"); err != nil {
			return nil, fmt.Errorf("JSON Schema reference %q is invalid: %v", r.Name, err)
		}
		docs[strings.SplitN(r.Name, "#", 2)[0]] = d
	}
	if len(docs) > 0 {
		root = inlineRefs(root, docs)
	}
	if err := checkRefs(root); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %v", err)
	}
	s := &Schema{Format: JSON, Text: text, References: refs, json: &jsonSchema{root: root}}
	if m, ok := root.(map[string]any); ok {
		if t, ok := m["title"].(string); ok {
			s.Name = t
		}
	}
	w := &jsonWalker{root: root, seen: map[string]bool{}}
	w.walk("", root)
	s.Fields = w.fields
	return s, nil
}

// checkRefs refuses a $ref that leads nowhere, as the registry does when it loads the schema: a
// local pointer to nothing, or another document that was neither given as a reference nor named
// by an $id inside this one. Following such a ref would read as the empty schema and pass any
// change.
func checkRefs(root any) error {
	ids := map[string]bool{}
	var collect func(v any)
	collect = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range []string{"$id", "id"} {
				if id, ok := t[k].(string); ok {
					ids[strings.SplitN(id, "#", 2)[0]] = true
				}
			}
			for _, x := range t {
				collect(x)
			}
		case []any:
			for _, x := range t {
				collect(x)
			}
		}
	}
	collect(root)
	var check func(v any, at string) error
	check = func(v any, at string) error {
		switch t := v.(type) {
		case map[string]any:
			if ref, ok := t["$ref"].(string); ok {
				if strings.HasPrefix(ref, "#") {
					if got, _ := ResolveJSONRef(root, t); got == nil {
						return fmt.Errorf("%s: $ref %q points to nothing in the schema (or to a cycle of refs)", at, ref)
					}
				} else if doc := strings.SplitN(ref, "#", 2)[0]; !ids[doc] && !idSuffix(ids, doc) {
					return fmt.Errorf("%s: $ref %q names a document that was not given as a reference: give it in references (name %q)", at, ref, doc)
				}
			}
			for _, k := range sortedMapKeys(t) {
				if k == "enum" || k == "const" || k == "default" || k == "examples" {
					continue // data, not schemas
				}
				if err := check(t[k], at+"/"+k); err != nil {
					return err
				}
			}
		case []any:
			for i, x := range t {
				if err := check(x, fmt.Sprintf("%s/%d", at, i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return check(root, "#")
}

// idSuffix: doc is a relative name one of the document's $ids resolves to ("address.json" for
// "https://example.com/schemas/address.json").
func idSuffix(ids map[string]bool, doc string) bool {
	for id := range ids {
		if strings.HasSuffix(id, "/"+doc) || strings.HasSuffix(doc, "/"+id) {
			return true
		}
	}
	return false
}

func sortedMapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// refsKey holds referenced documents inside the root, so every $ref becomes a local pointer and
// one resolver serves the field model and the compatibility diff.
const refsKey = "$dw_references"

// inlineRefs copies root with each referenced document under refsKey, rewriting "$ref": "name#/x"
// to "#/$dw_references/name/x" and the documents' own local refs to point inside their copy.
func inlineRefs(root any, docs map[string]any) any {
	esc := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }
	var rewrite func(v any, doc string) any
	rewrite = func(v any, doc string) any {
		switch t := v.(type) {
		case []any:
			out := make([]any, len(t))
			for i, x := range t {
				out[i] = rewrite(x, doc)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, x := range t {
				out[k] = rewrite(x, doc)
			}
			if ref, ok := t["$ref"].(string); ok {
				switch name, frag, _ := strings.Cut(ref, "#"); {
				case name == "" && doc != "":
					out["$ref"] = "#/" + refsKey + "/" + esc(doc) + frag
				case name != "":
					if _, known := docs[name]; known {
						out["$ref"] = "#/" + refsKey + "/" + esc(name) + frag
					}
				}
			}
			return out
		}
		return v
	}
	m, ok := rewrite(root, "").(map[string]any)
	if !ok {
		return root
	}
	inlined := map[string]any{}
	for name, d := range docs {
		inlined[name] = rewrite(d, name)
	}
	m[refsKey] = inlined
	return m
}

// decodeJSON decodes one JSON value, keeping numbers exact and reporting the byte offset of
// a syntax error.
func decodeJSON(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("malformed JSON at byte %d: %v", se.Offset, err)
		}
		return nil, fmt.Errorf("malformed JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("malformed JSON: more than one value")
	}
	return v, nil
}

// validateJSONSchema checks the structure the diff relies on: a schema is an object or a bool;
// type names are the seven JSON types; properties is an object of schemas; required lists strings.
func validateJSONSchema(v any, at string) error {
	switch t := v.(type) {
	case bool:
		return nil
	case map[string]any:
		if ty, ok := t["type"]; ok {
			names, ok := JSONTypeList(ty)
			if !ok {
				return fmt.Errorf("%s/type must be a type name or a list of type names", at)
			}
			for _, n := range names {
				if !jsonTypes[n] {
					return fmt.Errorf("%s/type: unknown type %q (want one of null, boolean, object, array, number, integer, string)", at, n)
				}
			}
		}
		if p, ok := t["properties"]; ok {
			pm, ok := p.(map[string]any)
			if !ok {
				return fmt.Errorf("%s/properties must be an object", at)
			}
			for k, sub := range pm {
				if err := validateJSONSchema(sub, at+"/properties/"+k); err != nil {
					return err
				}
			}
		}
		if r, ok := t["required"]; ok {
			rl, ok := r.([]any)
			if !ok {
				return fmt.Errorf("%s/required must be an array of property names", at)
			}
			for _, x := range rl {
				if _, ok := x.(string); !ok {
					return fmt.Errorf("%s/required must be an array of property names", at)
				}
			}
		}
		for _, k := range []string{"items", "additionalProperties", "not"} {
			if sub, ok := t[k]; ok {
				if _, isArr := sub.([]any); isArr && k == "items" {
					continue
				}
				if err := validateJSONSchema(sub, at+"/"+k); err != nil {
					return err
				}
			}
		}
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			if sub, ok := t[k]; ok {
				l, ok := sub.([]any)
				if !ok {
					return fmt.Errorf("%s/%s must be an array of schemas", at, k)
				}
				for i, x := range l {
					if err := validateJSONSchema(x, fmt.Sprintf("%s/%s/%d", at, k, i)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return fmt.Errorf("%s: a schema must be an object or a boolean, got %s", at, jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case bool:
		return "a boolean"
	}
	return "an object"
}

// JSONTypeList reads a JSON Schema "type" keyword (a name or a list of names) as a list; false when it
// is neither. Parse has already refused schemas whose list holds anything but names.
func JSONTypeList(v any) ([]string, bool) {
	switch t := v.(type) {
	case string:
		return []string{t}, true
	case []any:
		var out []string
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

type jsonWalker struct {
	root   any
	fields []Field
	seen   map[string]bool
}

// resolve follows a local $ref chain ("#/definitions/X", "#/$defs/X", refs to refs); other refs
// stay opaque. It returns the last ref followed, which guards the walk against cycles.
func (w *jsonWalker) resolve(v any) (any, string) {
	return ResolveJSONRef(w.root, v)
}

// maxRefHops bounds a chain of $refs to $refs; a longer chain is treated as a cycle.
const maxRefHops = 32

// ResolveJSONRef follows local $refs from v within root until it reaches a schema that is not a
// local reference: "#" is the root, "#/a/b" a JSON pointer (with ~0 and ~1 escapes), and a ref to a
// ref is followed again. It returns the schema reached and the last ref followed ("" when v is not
// a reference). A pointer that leads nowhere, or a chain longer than 32 hops (a cycle of refs),
// yields nil. External refs ("other.json#/x") stay as they are: Parse has already inlined the
// documents it was given. This is the one resolver both the field model and the compatibility
// diff use, so they see the same schema behind every reference.
func ResolveJSONRef(root, v any) (any, string) {
	last := ""
	for hop := 0; ; hop++ {
		m, ok := v.(map[string]any)
		if !ok {
			return v, last
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return v, last
		}
		if hop == maxRefHops {
			return nil, ref
		}
		last = ref
		if ref == "#" || ref == "#/" {
			v = root
			continue
		}
		v = jsonPointer(root, ref)
	}
}

func jsonPointer(root any, ref string) any {
	cur := root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func (w *jsonWalker) walk(prefix string, v any) {
	v, ref := w.resolve(v)
	if ref != "" {
		if w.seen[ref] {
			return
		}
		w.seen[ref] = true
		defer delete(w.seen, ref)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if items, ok := m["items"]; ok {
		if _, isArr := items.([]any); !isArr {
			w.walk(prefix+"[]", items)
		}
	}
	props, _ := m["properties"].(map[string]any)
	required := map[string]bool{}
	if rl, ok := m["required"].([]any); ok {
		for _, x := range rl {
			if s, ok := x.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		sub, _ := w.resolve(props[name])
		path := joinPath(prefix, name)
		typ, nullable := JSONTypeName(sub)
		fld := Field{Path: path, Type: typ, Nullable: nullable, Optional: !required[name]}
		if sm, ok := sub.(map[string]any); ok {
			if d, ok := sm["default"]; ok {
				fld.HasDefault = true
				b, _ := json.Marshal(d)
				fld.Default = string(b)
			}
			values, _ := sm["enum"].([]any)
			if c, ok := sm["const"]; ok && values == nil {
				values = []any{c} // a const is an enum of one value
			}
			for _, x := range values {
				b, _ := json.Marshal(x)
				fld.Symbols = append(fld.Symbols, strings.Trim(string(b), `"`))
			}
			if d, ok := sm["description"].(string); ok {
				fld.Doc = d
			}
		}
		w.fields = append(w.fields, fld)
		w.walk(path, props[name])
	}
}

// JSONTypeName names a JSON Schema's type ("integer", "string|number", "object", "any") and says
// whether it admits null.
func JSONTypeName(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		if b, ok := v.(bool); ok && !b {
			return "never", false
		}
		return "any", true
	}
	var names []string
	nullable := false
	if t, ok := m["type"]; ok {
		l, _ := JSONTypeList(t)
		for _, n := range l {
			if n == "null" {
				nullable = true
				continue
			}
			names = append(names, n)
		}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if l, ok := m[k].([]any); ok {
			for _, x := range l {
				n, nl := JSONTypeName(x)
				if nl && n == "null" {
					nullable = true
					continue
				}
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		switch {
		case m["$ref"] != nil:
			return fmt.Sprint("ref ", m["$ref"]), nullable
		case m["properties"] != nil:
			return "object", nullable
		case len(names) == 0 && m["type"] != nil:
			return "null", true
		}
		return "any", true
	}
	return strings.Join(names, "|"), nullable
}
