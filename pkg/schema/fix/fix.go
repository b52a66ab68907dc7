// Package fix writes the restoring version of a schema change: every field the new version
// removed comes back as optional (nullable, default null in Avro; not required in JSON Schema;
// proto3 optional on its old tag in Protobuf) beside the fields the new version added, so readers
// pinned to the old version find their fields again while new readers keep the new ones.
// Whether the result is compatible is for compat to prove under the subject's rule.
package fix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/dataworkers/dw/pkg/schema"
)

// Restored is one field brought back.
type Restored struct {
	Path string `json:"path"`
	Type string `json:"type"`
	// How says what it looks like in the restoring version.
	How string `json:"how"`
	// Why explains a restore that needed more than adding the field back (a lifted reservation).
	Why string `json:"why,omitempty"`
}

// Restoration is the proposed schema text and what it restores.
type Restoration struct {
	Format   schema.Format `json:"schema_type"`
	Text     string        `json:"schema"`
	Restored []Restored    `json:"restored"`
	// Skipped lists removed fields that could not be brought back, with the reason.
	Skipped []string `json:"skipped,omitempty"`
}

// ErrNothingRemoved means the change removed no field, so there is nothing to restore.
var ErrNothingRemoved = errors.New("nothing to restore: the new version removes no field of the old one")

// Restore builds the restoring version of the change old → new.
func Restore(old, new *schema.Schema) (Restoration, error) {
	if old.Format != new.Format {
		return Restoration{}, fmt.Errorf("cannot restore across schema types (%s → %s)", old.Format, new.Format)
	}
	var r Restoration
	var err error
	switch new.Format {
	case schema.Avro:
		r, err = restoreAvro(old, new)
	case schema.JSON:
		r, err = restoreJSON(old, new)
	case schema.Protobuf:
		r, err = restoreProtobuf(old, new)
	default:
		return Restoration{}, fmt.Errorf("unknown schema type %q", new.Format)
	}
	if err != nil {
		return Restoration{}, err
	}
	r.Format = new.Format
	if len(r.Restored) == 0 {
		if len(r.Skipped) > 0 {
			return r, fmt.Errorf("no removed field could be restored: %s", strings.Join(r.Skipped, "; "))
		}
		return r, ErrNothingRemoved
	}
	return r, nil
}

func decode(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// keyOrder puts the keys people look for first (Avro and JSON Schema alike); the rest follow
// alphabetically. Go maps have no order, and a schema for review should read top-down.
var keyOrder = []string{"$schema", "$id", "name", "type", "title", "namespace", "logicalType", "precision", "scale",
	"doc", "description", "aliases", "symbols", "size", "items", "values", "default", "properties", "required",
	"additionalProperties", "fields"}

func encode(v any) (string, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, v, ""); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *bytes.Buffer, v any, indent string) error {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		rank := func(k string) int {
			for i, o := range keyOrder {
				if o == k {
					return i
				}
			}
			return len(keyOrder)
		}
		sort.Slice(keys, func(i, j int) bool {
			ri, rj := rank(keys[i]), rank(keys[j])
			if ri != rj {
				return ri < rj
			}
			return keys[i] < keys[j]
		})
		b.WriteString("{\n")
		for i, k := range keys {
			kb, _ := json.Marshal(k)
			b.WriteString(indent + "  ")
			b.Write(kb)
			b.WriteString(": ")
			if err := writeJSON(b, t[k], indent+"  "); err != nil {
				return err
			}
			if i < len(keys)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
		return nil
	case []any:
		simple := true
		for _, x := range t {
			switch x.(type) {
			case map[string]any, []any:
				simple = false
			}
		}
		if simple {
			// Short lists of scalars (unions, enum symbols, required) stay on one line.
			raw, err := json.Marshal(t)
			if err != nil {
				return err
			}
			b.Write(bytes.ReplaceAll(raw, []byte(`","`), []byte(`", "`)))
			return nil
		}
		b.WriteString("[\n")
		for i, x := range t {
			b.WriteString(indent + "  ")
			if err := writeJSON(b, x, indent+"  "); err != nil {
				return err
			}
			if i < len(t)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(indent + "]")
		return nil
	}
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimSpace(sb.Bytes()))
	return nil
}

// ---- Avro ----

func restoreAvro(old, new *schema.Schema) (Restoration, error) {
	ov, err := decode(old.Text)
	if err != nil {
		return Restoration{}, err
	}
	nv, err := decode(new.Text)
	if err != nil {
		return Restoration{}, err
	}
	a := &avroRestorer{defined: map[string]bool{}, oldFields: old}
	collectNames(nv, "", a.defined)
	var r Restoration
	a.record(ov, nv, "", "", &r)
	text, err := encode(nv)
	if err != nil {
		return Restoration{}, err
	}
	r.Text = text
	return r, nil
}

type avroRestorer struct {
	defined   map[string]bool
	oldFields *schema.Schema
}

// collectNames records every named type the schema defines, by full name.
func collectNames(v any, ns string, out map[string]bool) {
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			collectNames(x, ns, out)
		}
	case map[string]any:
		typ, _ := t["type"].(string)
		if name, ok := t["name"].(string); ok && (typ == "record" || typ == "error" || typ == "enum" || typ == "fixed") {
			if n, ok := t["namespace"].(string); ok {
				ns = n
			}
			full := name
			if !strings.Contains(name, ".") && ns != "" {
				full = ns + "." + name
			}
			out[full] = true
			if i := strings.LastIndexByte(full, '.'); i > 0 {
				ns = full[:i]
			}
		}
		if fs, ok := t["fields"].([]any); ok {
			for _, f := range fs {
				if fm, ok := f.(map[string]any); ok {
					collectNames(fm["type"], ns, out)
				}
			}
		}
		for _, k := range []string{"items", "values"} {
			if x, ok := t[k]; ok {
				collectNames(x, ns, out)
			}
		}
		if x, ok := t["type"]; ok {
			if _, isStr := x.(string); !isStr {
				collectNames(x, ns, out)
			}
		}
	}
}

// dedupeNames replaces definitions of named types the new schema already defines with a reference
// by full name, so the restored field does not define a type twice.
func dedupeNames(v any, ns string, defined map[string]bool) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = dedupeNames(x, ns, defined)
		}
		return out
	case map[string]any:
		typ, _ := t["type"].(string)
		if name, ok := t["name"].(string); ok && (typ == "record" || typ == "error" || typ == "enum" || typ == "fixed") {
			if n, ok := t["namespace"].(string); ok {
				ns = n
			}
			full := name
			if !strings.Contains(name, ".") && ns != "" {
				full = ns + "." + name
			}
			if defined[full] {
				return full
			}
			defined[full] = true
		}
		out := map[string]any{}
		for k, x := range t {
			out[k] = x
		}
		if fs, ok := t["fields"].([]any); ok {
			nf := make([]any, len(fs))
			for i, f := range fs {
				if fm, ok := f.(map[string]any); ok {
					c := map[string]any{}
					for k, x := range fm {
						c[k] = x
					}
					c["type"] = dedupeNames(fm["type"], ns, defined)
					nf[i] = c
				} else {
					nf[i] = f
				}
			}
			out["fields"] = nf
		}
		for _, k := range []string{"items", "values"} {
			if x, ok := t[k]; ok {
				out[k] = dedupeNames(x, ns, defined)
			}
		}
		return out
	}
	return v
}

// optionalType makes an Avro type nullable with null first, so default null is valid.
func optionalType(t any) any {
	if u, ok := t.([]any); ok {
		rest := []any{"null"}
		for _, b := range u {
			if s, ok := b.(string); ok && s == "null" {
				continue
			}
			rest = append(rest, b)
		}
		return rest
	}
	return []any{"null", t}
}

func recordOf(v any) (map[string]any, bool) {
	switch t := v.(type) {
	case map[string]any:
		if typ, _ := t["type"].(string); typ == "record" || typ == "error" {
			return t, true
		}
		if inner, ok := t["type"]; ok {
			if _, isStr := inner.(string); !isStr {
				return recordOf(inner)
			}
		}
	case []any:
		var rec map[string]any
		n := 0
		for _, b := range t {
			if r, ok := recordOf(b); ok {
				rec = r
				n++
			}
		}
		if n == 1 {
			return rec, true
		}
	}
	return nil, false
}

// record restores removed fields of the old record into the new one, recursing into fields that
// are records on both sides.
func (a *avroRestorer) record(ov, nv any, prefix, ons string, r *Restoration) {
	or, ok1 := recordOf(ov)
	nr, ok2 := recordOf(nv)
	if !ok1 || !ok2 {
		return
	}
	if n, ok := or["namespace"].(string); ok {
		ons = n
	}
	ofs, _ := or["fields"].([]any)
	nfs, _ := nr["fields"].([]any)
	byName := map[string]map[string]any{}
	aliasOf := map[string]map[string]any{}
	for _, f := range nfs {
		fm, ok := f.(map[string]any)
		if !ok {
			continue
		}
		name, _ := fm["name"].(string)
		byName[name] = fm
		if al, ok := fm["aliases"].([]any); ok {
			for _, x := range al {
				if s, ok := x.(string); ok {
					aliasOf[s] = fm
				}
			}
		}
	}
	for _, f := range ofs {
		fm, ok := f.(map[string]any)
		if !ok {
			continue
		}
		name, _ := fm["name"].(string)
		path := prefix + name
		if match, ok := byName[name]; ok {
			a.record(fm["type"], match["type"], path+".", ons, r)
			continue
		}
		if match, ok := aliasOf[name]; ok {
			a.record(fm["type"], match["type"], path+".", ons, r)
			continue
		}
		restored := map[string]any{}
		for k, x := range fm {
			if k == "aliases" || k == "order" {
				continue
			}
			restored[k] = x
		}
		restored["type"] = optionalType(dedupeNames(fm["type"], ons, a.defined))
		restored["default"] = nil
		nfs = append(nfs, restored)
		typ := path
		if f, ok := a.oldFields.Field(path); ok {
			typ = f.Type
		}
		r.Restored = append(r.Restored, Restored{Path: path, Type: typ, How: `["null", ` + typ + `] with default null, after the new version's fields`})
	}
	nr["fields"] = nfs
}

// ---- JSON Schema ----

func restoreJSON(old, new *schema.Schema) (Restoration, error) {
	ov, err := decode(old.Text)
	if err != nil {
		return Restoration{}, err
	}
	nv, err := decode(new.Text)
	if err != nil {
		return Restoration{}, err
	}
	var r Restoration
	restoreJSONObject(ov, nv, "", &r)
	text, err := encode(nv)
	if err != nil {
		return Restoration{}, err
	}
	r.Text = text
	return r, nil
}

func restoreJSONObject(ov, nv any, prefix string, r *Restoration) {
	om, ok1 := ov.(map[string]any)
	nm, ok2 := nv.(map[string]any)
	if !ok1 || !ok2 {
		return
	}
	op, _ := om["properties"].(map[string]any)
	if len(op) == 0 {
		return
	}
	np, _ := nm["properties"].(map[string]any)
	if np == nil {
		np = map[string]any{}
	}
	names := make([]string, 0, len(op))
	for k := range op {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		path := prefix + k
		if nsub, ok := np[k]; ok {
			restoreJSONObject(op[k], nsub, path+".", r)
			continue
		}
		np[k] = op[k]
		typ, _ := schema.JSONTypeName(op[k])
		r.Restored = append(r.Restored, Restored{Path: path, Type: typ, How: "the old property schema, not required"})
	}
	nm["properties"] = np
}
