package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

type avroSchema struct {
	root avro.Schema
}

// AvroSchema returns the parsed hamba/avro schema, or nil for other formats.
func (s *Schema) AvroSchema() avro.Schema {
	if s.avro == nil {
		return nil
	}
	return s.avro.root
}

// parseAvro parses with a cache of its own: named types from different versions of one subject
// share names, and hamba's global cache would let one version's type stand in for another's.
func parseAvro(text string, refs []Reference) (*Schema, error) {
	cache := &avro.SchemaCache{}
	for _, r := range refs {
		if strings.TrimSpace(r.Schema) == "" {
			return nil, fmt.Errorf("avro schema reference %q (subject %s version %d) has no schema text", r.Name, r.Subject, r.Version)
		}
		if _, err := avro.ParseWithCache(r.Schema, "", cache); err != nil {
			return nil, fmt.Errorf("avro schema reference %q (subject %s version %d) is invalid: %v", r.Name, r.Subject, r.Version, err)
		}
	}
	root, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, fmt.Errorf("invalid Avro schema: %v", err)
	}
	s := &Schema{Format: Avro, Text: text, References: refs, avro: &avroSchema{root: root}}
	if n, ok := deref(root).(avro.NamedSchema); ok {
		s.Name = n.FullName()
	}
	w := &avroWalker{seen: map[string]bool{}}
	w.walk("", deref(root))
	s.Fields = w.fields
	return s, nil
}

func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

type avroWalker struct {
	fields []Field
	seen   map[string]bool // record names on the current path, to stop at recursive types
}

// walk flattens the record fields under s at prefix.
func (w *avroWalker) walk(prefix string, s avro.Schema) {
	s = deref(s)
	switch t := s.(type) {
	case *avro.RecordSchema:
		if w.seen[t.FullName()] {
			return
		}
		w.seen[t.FullName()] = true
		defer delete(w.seen, t.FullName())
		for _, f := range t.Fields() {
			path := joinPath(prefix, f.Name())
			typ, nullable := AvroTypeName(f.Type())
			fld := Field{Path: path, Type: typ, Nullable: nullable, Optional: f.HasDefault(), Aliases: f.Aliases(), Doc: f.Doc()}
			if f.HasDefault() {
				fld.HasDefault = true
				b, err := json.Marshal(f.Default())
				if err == nil {
					fld.Default = string(b)
				}
			}
			if e, ok := nonNull(f.Type()).(*avro.EnumSchema); ok {
				fld.Symbols = e.Symbols()
			}
			w.fields = append(w.fields, fld)
			w.walk(path, nonNull(f.Type()))
		}
	case *avro.ArraySchema:
		w.walk(prefix+"[]", nonNull(t.Items()))
	case *avro.MapSchema:
		w.walk(prefix+"{}", nonNull(t.Values()))
	}
}

// nonNull returns the one non-null branch of a ["null", T] union, else s itself.
func nonNull(s avro.Schema) avro.Schema {
	s = deref(s)
	u, ok := s.(*avro.UnionSchema)
	if !ok {
		return s
	}
	var other avro.Schema
	n := 0
	for _, b := range u.Types() {
		if b.Type() != avro.Null {
			other = b
			n++
		}
	}
	if n == 1 {
		return deref(other)
	}
	return s
}

// AvroTypeName names an Avro type for people, and says whether it admits null.
func AvroTypeName(s avro.Schema) (name string, nullable bool) {
	s = deref(s)
	switch t := s.(type) {
	case *avro.UnionSchema:
		var parts []string
		for _, b := range t.Types() {
			if b.Type() == avro.Null {
				nullable = true
				continue
			}
			n, _ := AvroTypeName(b)
			parts = append(parts, n)
		}
		if len(parts) == 1 {
			return parts[0], nullable
		}
		return "union<" + strings.Join(parts, ",") + ">", nullable
	case *avro.RecordSchema:
		return "record " + t.FullName(), false
	case *avro.EnumSchema:
		return "enum " + t.FullName(), false
	case *avro.FixedSchema:
		return fmt.Sprintf("fixed %s(%d)", t.FullName(), t.Size()), false
	case *avro.ArraySchema:
		n, _ := AvroTypeName(t.Items())
		return "array<" + n + ">", false
	case *avro.MapSchema:
		n, _ := AvroTypeName(t.Values())
		return "map<" + n + ">", false
	case *avro.NullSchema:
		return "null", true
	case *avro.PrimitiveSchema:
		if l := t.Logical(); l != nil {
			return string(t.Type()) + "(" + string(l.Type()) + ")", false
		}
		return string(t.Type()), false
	}
	return string(s.Type()), false
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func compactJSON(text string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(text)); err != nil {
		return strings.TrimSpace(text)
	}
	return b.String()
}
