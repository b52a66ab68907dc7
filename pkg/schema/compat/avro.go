package compat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/dataworkers/dw/pkg/schema"
)

// avroCompatible decides with hamba/avro, then explains. A fresh SchemaCompatibility per check:
// its cache keys on Parsing Canonical Form fingerprints, which drop defaults and aliases, so a
// shared checker would reuse a stale verdict for schemas that differ only there
// (docs/reference/schema-rules.md, Avro).
func avroCompatible(reader, writer *schema.Schema) []Incompatibility {
	err := avro.NewSchemaCompatibility().Compatible(reader.AvroSchema(), writer.AvroSchema())
	if err == nil {
		return nil
	}
	e := &avroExplainer{seen: map[[2][32]byte]bool{}}
	e.check(reader.AvroSchema(), writer.AvroSchema(), "", "")
	if len(e.out) == 0 {
		return []Incompatibility{{Type: "TYPE_MISMATCH", Path: "/", Message: err.Error()}}
	}
	return e.out
}

// avroExplainer walks reader and writer the way Avro's SchemaCompatibility does and records every
// incompatibility with SR's error type and JSON path, where hamba stops at the first.
type avroExplainer struct {
	out  []Incompatibility
	seen map[[2][32]byte]bool
}

func (e *avroExplainer) add(typ, path, field, msg string) {
	if path == "" {
		path = "/"
	}
	e.out = append(e.out, Incompatibility{Type: typ, Path: path, Field: field, Message: msg})
}

func promotable(reader, writer avro.Type) bool {
	switch writer {
	case avro.Int:
		return reader == avro.Long || reader == avro.Float || reader == avro.Double
	case avro.Long:
		return reader == avro.Float || reader == avro.Double
	case avro.Float:
		return reader == avro.Double
	case avro.String:
		return reader == avro.Bytes
	case avro.Bytes:
		return reader == avro.String
	}
	return false
}

// compatible is a silent yes/no with a fresh checker, for picking union branches.
func compatible(reader, writer avro.Schema) bool {
	return avro.NewSchemaCompatibility().Compatible(reader, writer) == nil
}

func typeLabel(s avro.Schema) string {
	n, nullable := schema.AvroTypeName(s)
	if nullable && s.Type() == avro.Union {
		return "[null," + n + "]"
	}
	return n
}

func (e *avroExplainer) check(reader, writer avro.Schema, path, field string) {
	reader, writer = derefSchema(reader), derefSchema(writer)
	key := [2][32]byte{reader.Fingerprint(), writer.Fingerprint()}
	if e.seen[key] {
		return
	}
	e.seen[key] = true
	if reader.Type() != writer.Type() {
		switch {
		case writer.Type() == avro.Union:
			for i, b := range writer.(*avro.UnionSchema).Types() {
				if !compatible(reader, b) {
					e.add("MISSING_UNION_BRANCH", fmt.Sprintf("%s/%d", path, i), field,
						fmt.Sprintf("The reader type %s at path '%s' cannot read the writer's union branch %s%s", typeLabel(reader), orRoot(path), typeLabel(b), fieldNote(field)))
				}
			}
		case reader.Type() == avro.Union:
			for _, b := range reader.(*avro.UnionSchema).Types() {
				if compatible(b, writer) {
					return
				}
			}
			e.add("TYPE_MISMATCH", orRoot(path), field,
				fmt.Sprintf("The reader union %s at path '%s' has no branch for the writer type %s%s", typeLabel(reader), orRoot(path), typeLabel(writer), fieldNote(field)))
		case promotable(reader.Type(), writer.Type()):
		default:
			e.add("TYPE_MISMATCH", orRoot(path), field,
				fmt.Sprintf("The type at path '%s' is %s in the reader and %s in the writer, which Avro cannot promote%s", orRoot(path), typeLabel(reader), typeLabel(writer), fieldNote(field)))
		}
		return
	}
	switch r := reader.(type) {
	case *avro.ArraySchema:
		e.check(r.Items(), writer.(*avro.ArraySchema).Items(), path+"/items", field)
	case *avro.MapSchema:
		e.check(r.Values(), writer.(*avro.MapSchema).Values(), path+"/values", field)
	case *avro.FixedSchema:
		w := writer.(*avro.FixedSchema)
		e.checkName(r, w, path, field)
		if r.Size() != w.Size() {
			e.add("FIXED_SIZE_MISMATCH", path+"/size", field,
				fmt.Sprintf("The size of fixed %s at path '%s/size' is %d in the reader and %d in the writer%s", r.FullName(), path, r.Size(), w.Size(), fieldNote(field)))
		}
	case *avro.EnumSchema:
		w := writer.(*avro.EnumSchema)
		e.checkName(r, w, path, field)
		var missing []string
		for _, s := range w.Symbols() {
			if !slices.Contains(r.Symbols(), s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 && !r.HasDefault() {
			e.add("MISSING_ENUM_SYMBOLS", path+"/symbols", field,
				fmt.Sprintf("The reader enum %s at path '%s/symbols' lacks the writer's symbols [%s] and has no default symbol%s", r.FullName(), path, strings.Join(missing, ", "), fieldNote(field)))
		}
	case *avro.RecordSchema:
		w := writer.(*avro.RecordSchema)
		e.checkName(r, w, path, field)
		for i, rf := range r.Fields() {
			fpath := fmt.Sprintf("%s/fields/%d", path, i)
			fname := joinField(field, rf.Name())
			wf := findField(w.Fields(), rf)
			if wf == nil {
				if !rf.HasDefault() {
					e.add("READER_FIELD_MISSING_DEFAULT_VALUE", fpath, fname,
						fmt.Sprintf("The field '%s' at path '%s' in the reader schema has no default value and is missing in the writer schema", fname, fpath))
				}
				continue
			}
			e.check(rf.Type(), wf.Type(), fpath+"/type", fname)
		}
	case *avro.UnionSchema:
		for i, b := range writer.(*avro.UnionSchema).Types() {
			if !compatible(reader, b) {
				e.add("MISSING_UNION_BRANCH", fmt.Sprintf("%s/%d", path, i), field,
					fmt.Sprintf("The reader union %s at path '%s' lacks the writer's union branch %s%s", typeLabel(reader), orRoot(path), typeLabel(b), fieldNote(field)))
			}
		}
	}
}

// checkName follows Avro: unqualified names must match, or the reader lists the writer's full
// name among its aliases.
func (e *avroExplainer) checkName(r, w avro.NamedSchema, path, field string) {
	if r.Name() != w.Name() && !slices.Contains(r.Aliases(), w.FullName()) {
		e.add("NAME_MISMATCH", path+"/name", field,
			fmt.Sprintf("The name at path '%s/name' is %s in the reader and %s in the writer, and the reader has no alias for it%s", path, r.FullName(), w.FullName(), fieldNote(field)))
	}
}

func findField(fields []*avro.Field, rf *avro.Field) *avro.Field {
	for _, f := range fields {
		if f.Name() == rf.Name() {
			return f
		}
	}
	for _, f := range fields {
		if slices.Contains(rf.Aliases(), f.Name()) {
			return f
		}
	}
	return nil
}

func derefSchema(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func joinField(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func fieldNote(field string) string {
	if field == "" {
		return ""
	}
	return " (field " + field + ")"
}
