package lake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Schema is one schema of a table as its metadata file writes it (spec: "Schemas and Data
// Types"). It is ours rather than iceberg-go's: the library's root package parses its manifest
// Avro schemas and links Arrow's compute kernels in its initialisers, which every start of the
// agents that read the lake paid.
type Schema struct {
	ID                 int     `json:"schema-id"`
	IdentifierFieldIDs []int   `json:"identifier-field-ids,omitempty"`
	FieldList          []Field `json:"fields"`
}

// Fields are the schema's top-level fields in order.
func (s *Schema) Fields() []Field { return s.FieldList }

// FindFieldByName finds a field by its name, a nested one by its dotted path through structs
// ("address.city"). Names compare exactly, as Iceberg's do.
func (s *Schema) FindFieldByName(name string) (Field, bool) {
	fields := s.FieldList
	parts := strings.Split(name, ".")
	for i, p := range parts {
		var found *Field
		for j := range fields {
			if fields[j].Name == p {
				found = &fields[j]
				break
			}
		}
		if found == nil {
			return Field{}, false
		}
		if i == len(parts)-1 {
			return *found, true
		}
		if found.Type.Name != "struct" {
			return Field{}, false
		}
		fields = found.Type.Fields
	}
	return Field{}, false
}

// Field is a struct field, a list's element or a map's key or value: Iceberg's field id is what
// manifest metrics and Parquet columns are keyed by.
type Field struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Type     Type   `json:"type"`
	Doc      string `json:"doc,omitempty"`
}

// Type is an Iceberg type. Name is the primitive's name ("long", "decimal", "fixed",
// "timestamptz", …, kept as written for one this package does not know, such as
// "geometry(srid:4326)") or "struct", "list" or "map" for a nested type.
type Type struct {
	Name string
	// Precision and Scale of a decimal; Length of a fixed.
	Precision, Scale int
	Length           int
	// Fields of a struct; Element of a list; Key and Value of a map.
	Fields     []Field
	Element    *Field
	Key, Value *Field
}

// Nested reports whether the type is a struct, list or map.
func (t Type) Nested() bool { return t.Name == "struct" || t.Name == "list" || t.Name == "map" }

// String writes the type as iceberg-go does ("decimal(9, 2)", "list<string>",
// "struct<1: id: required long>"), which is what the tools reported before this package read
// schemas itself.
func (t Type) String() string {
	switch t.Name {
	case "decimal":
		return fmt.Sprintf("decimal(%d, %d)", t.Precision, t.Scale)
	case "fixed":
		return fmt.Sprintf("fixed[%d]", t.Length)
	case "struct":
		var b strings.Builder
		b.WriteString("struct<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.String())
		}
		b.WriteString(">")
		return b.String()
	case "list":
		if t.Element == nil {
			return "list<>"
		}
		return "list<" + t.Element.Type.String() + ">"
	case "map":
		if t.Key == nil || t.Value == nil {
			return "map<>"
		}
		return "map<" + t.Key.Type.String() + ", " + t.Value.Type.String() + ">"
	}
	return t.Name
}

// String writes the field as iceberg-go does: "1: id: required long".
func (f Field) String() string {
	req := "optional"
	if f.Required {
		req = "required"
	}
	s := fmt.Sprintf("%d: %s: %s %s", f.ID, f.Name, req, f.Type)
	if f.Doc != "" {
		s += " (" + f.Doc + ")"
	}
	return s
}

// UnmarshalJSON reads a type as table metadata writes it: a primitive as a string ("long",
// "decimal(9,2)", "fixed[16]"), a nested type as an object with its "type".
func (t *Type) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var name string
		if err := json.Unmarshal(b, &name); err != nil {
			return err
		}
		return t.parsePrimitive(name)
	}
	var raw struct {
		Type          string  `json:"type"`
		Fields        []Field `json:"fields"`
		ElementID     *int    `json:"element-id"`
		Element       *Type   `json:"element"`
		ElementReq    bool    `json:"element-required"`
		KeyID         *int    `json:"key-id"`
		Key           *Type   `json:"key"`
		ValueID       *int    `json:"value-id"`
		Value         *Type   `json:"value"`
		ValueRequired bool    `json:"value-required"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("iceberg type: %w", err)
	}
	switch raw.Type {
	case "struct":
		*t = Type{Name: "struct", Fields: raw.Fields}
	case "list":
		if raw.ElementID == nil || raw.Element == nil {
			return fmt.Errorf("iceberg list type without element-id or element")
		}
		*t = Type{Name: "list", Element: &Field{ID: *raw.ElementID, Name: "element", Required: raw.ElementReq, Type: *raw.Element}}
	case "map":
		if raw.KeyID == nil || raw.Key == nil || raw.ValueID == nil || raw.Value == nil {
			return fmt.Errorf("iceberg map type without key-id, key, value-id or value")
		}
		*t = Type{Name: "map", Key: &Field{ID: *raw.KeyID, Name: "key", Required: true, Type: *raw.Key},
			Value: &Field{ID: *raw.ValueID, Name: "value", Required: raw.ValueRequired, Type: *raw.Value}}
	default:
		return fmt.Errorf("iceberg type %q is not struct, list or map", raw.Type)
	}
	return nil
}

// parsePrimitive reads a primitive type's name. decimal(P,S) and fixed[L] are checked, since
// bound decoding relies on them; other names are kept as written.
func (t *Type) parsePrimitive(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("iceberg type: empty type name")
	case strings.HasPrefix(name, "decimal"):
		args, ok := strings.CutPrefix(name, "decimal(")
		args, ok2 := strings.CutSuffix(args, ")")
		p, s, ok3 := strings.Cut(args, ",")
		if !ok || !ok2 || !ok3 {
			return fmt.Errorf("iceberg type %q: want decimal(P,S)", name)
		}
		prec, err1 := strconv.Atoi(strings.TrimSpace(p))
		scale, err2 := strconv.Atoi(strings.TrimSpace(s))
		if err1 != nil || err2 != nil || prec < 1 || prec > 38 || scale < 0 || scale > prec {
			return fmt.Errorf("iceberg type %q: precision 1 to 38 and scale 0 to the precision", name)
		}
		*t = Type{Name: "decimal", Precision: prec, Scale: scale}
	case strings.HasPrefix(name, "fixed"):
		args, ok := strings.CutPrefix(name, "fixed[")
		args, ok2 := strings.CutSuffix(args, "]")
		n, err := strconv.Atoi(strings.TrimSpace(args))
		if !ok || !ok2 || err != nil || n < 0 {
			return fmt.Errorf("iceberg type %q: want fixed[L]", name)
		}
		*t = Type{Name: "fixed", Length: n}
	default:
		*t = Type{Name: name}
	}
	return nil
}
