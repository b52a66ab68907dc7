// Package schema is the format-neutral model of a registered schema: Avro (hamba/avro), Protobuf
// (bufbuild/protocompile) and JSON Schema parsed into field paths with type, optionality, default
// and aliases, so diffs, compatibility messages and downstream impact speak about the same fields.
//
// Beside it: compat judges a change as Schema Registry does; subject holds a subject's history and
// rule; impact finds the downstream readers a change breaks; gate is the CI decision; fix writes
// the restoring version. The story's Avro versions live in testdata/scenario.
package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Format is a Schema Registry schema type.
type Format string

// The three formats Schema Registry stores. The registry omits schemaType for AVRO.
const (
	Avro     Format = "AVRO"
	Protobuf Format = "PROTOBUF"
	JSON     Format = "JSON"
)

// ParseFormat reads a schemaType as the registry spells it; empty means AVRO, as in the REST API.
func ParseFormat(s string) (Format, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "AVRO":
		return Avro, nil
	case "PROTOBUF", "PROTO":
		return Protobuf, nil
	case "JSON", "JSONSCHEMA", "JSON_SCHEMA":
		return JSON, nil
	}
	return "", fmt.Errorf("unknown schema type %q: use AVRO, PROTOBUF or JSON", s)
}

// Reference is a schema another schema builds on: an Avro named type, a Protobuf import or a JSON
// Schema $ref target, with its text so it can be parsed alongside.
type Reference struct {
	// Name is the Avro full name, the Protobuf import path or the $ref URL.
	Name    string `json:"name"`
	Subject string `json:"subject,omitempty"`
	Version int    `json:"version,omitempty"`
	// Schema is the referenced schema's text.
	Schema string `json:"-"`
}

// Field is one field path of a schema. Nested records, messages and objects flatten into dotted
// paths; array items add "[]" and map values "{}" (e.g. "items[].sku").
type Field struct {
	Path string `json:"path"`
	// Type is the value type without nullability: "long", "string", "record com.acme.Address",
	// "enum Status", "array<long>", "int64", "message acme.Address", "integer|number".
	Type string `json:"type"`
	// Nullable: the value may be null (Avro union with null, JSON type with "null", Protobuf field
	// with presence: proto3 optional, message types, oneof members).
	Nullable bool `json:"nullable"`
	// Optional: a reader can do without it (Avro default present, JSON not required, Protobuf not
	// proto2 required).
	Optional bool `json:"optional"`
	// Default is the default as JSON text, when the schema declares one.
	Default    string `json:"default,omitempty"`
	HasDefault bool   `json:"has_default,omitempty"`
	// Aliases are Avro field aliases (earlier names a reader accepts).
	Aliases []string `json:"aliases,omitempty"`
	// Tag is the Protobuf field number.
	Tag int `json:"tag,omitempty"`
	// Oneof is the Protobuf oneof the field belongs to.
	Oneof string `json:"oneof,omitempty"`
	// Symbols are enum symbols (Avro enum, Protobuf enum values, JSON enum).
	Symbols []string `json:"symbols,omitempty"`
	Doc     string   `json:"doc,omitempty"`
}

// Schema is a parsed schema of one format.
type Schema struct {
	Format Format
	// Text is the schema as given.
	Text string
	// Name is the record full name (Avro), the first message's full name (Protobuf, the type SR
	// serialises by default) or the title (JSON Schema).
	Name   string
	Fields []Field
	// References the schema was parsed with.
	References []Reference

	avro  *avroSchema
	proto *protoSchema
	json  *jsonSchema
}

// Parse parses text in the given format, with the schemas it references. Malformed input is an
// error that says which format failed and why; it never panics.
func Parse(format Format, text string, refs ...Reference) (s *Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("%s schema could not be parsed: %v", format, p)
		}
	}()
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("%s schema is empty", format)
	}
	switch format {
	case Avro:
		return parseAvro(text, refs)
	case Protobuf:
		return parseProtobuf(text, refs)
	case JSON:
		return parseJSON(text, refs)
	}
	return nil, fmt.Errorf("unknown schema type %q: use AVRO, PROTOBUF or JSON", format)
}

// Field returns the field at path.
func (s *Schema) Field(path string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Path == path {
			return f, true
		}
	}
	return Field{}, false
}

// SameAs says whether o is the same registered schema: the same format and canonical form, built
// on the same references (by name and text, and by subject and version where both name them), as
// the registry recognises a schema registered twice.
func (s *Schema) SameAs(o *Schema) bool {
	if s.Format != o.Format || s.Fingerprint() != o.Fingerprint() || len(s.References) != len(o.References) {
		return false
	}
	byName := map[string]Reference{}
	for _, r := range o.References {
		byName[r.Name] = r
	}
	for _, r := range s.References {
		x, ok := byName[r.Name]
		if !ok || strings.TrimSpace(compactJSON(r.Schema)) != strings.TrimSpace(compactJSON(x.Schema)) {
			return false
		}
		if r.Subject != "" && x.Subject != "" && (r.Subject != x.Subject || r.Version != x.Version) {
			return false
		}
	}
	return true
}

// Fingerprint is a SHA-256 of the schema's canonical form: the text with insignificant whitespace
// removed for the JSON-based formats, the compiled descriptor (no comments, no layout) for
// Protobuf, so the same schema registered twice is recognised.
func (s *Schema) Fingerprint() string {
	sum := sha256.Sum256([]byte(s.canonical()))
	return hex.EncodeToString(sum[:])
}

func (s *Schema) canonical() string {
	switch s.Format {
	case Avro, JSON:
		return compactJSON(s.Text)
	case Protobuf:
		if c, ok := s.protoCanonical(); ok {
			return c
		}
	}
	return strings.TrimSpace(s.Text)
}

// Sniff says which format text plainly is, when it is plain: Protobuf source (a syntax, package,
// import or message declaration), a JSON Schema ($schema, properties without Avro's fields,
// combinators, $ref or definitions, or a JSON-Schema-only type such as object or integer), or an
// Avro record, enum or fixed. ok is false for text that could be more than one (a bare
// {"type":"string"}) or none; the caller's schema_type decides then.
func Sniff(text string) (Format, bool) {
	t := strings.TrimSpace(text)
	if t == "" {
		return "", false
	}
	if t[0] != '{' && t[0] != '[' && t[0] != '"' {
		for _, line := range strings.Split(t, "\n") {
			l := strings.TrimSpace(line)
			for _, kw := range []string{"syntax", "edition", "package ", "import ", "message ", "enum ", "option "} {
				if strings.HasPrefix(l, kw) {
					return Protobuf, true
				}
			}
		}
		return "", false
	}
	var m map[string]any
	if json.Unmarshal([]byte(t), &m) != nil || m == nil {
		return "", false
	}
	if _, ok := m["fields"]; ok {
		return Avro, true
	}
	for _, k := range []string{"$schema", "properties", "allOf", "anyOf", "oneOf", "$ref", "definitions", "$defs", "patternProperties", "additionalProperties"} {
		if _, ok := m[k]; ok {
			return JSON, true
		}
	}
	switch ty := m["type"].(type) {
	case string:
		switch ty {
		case "object", "integer", "number", "boolean":
			return JSON, true
		case "record", "enum", "fixed", "map":
			return Avro, true
		}
	case []any:
		for _, x := range ty {
			if s, ok := x.(string); ok && (s == "object" || s == "integer" || s == "number") {
				return JSON, true
			}
		}
	}
	return "", false
}
