package kafka

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dataworkers/dw/pkg/registry"
)

// ParseWire splits a value in the Confluent wire format: magic byte 0, a 4-byte big-endian schema
// id, then the serialized payload. ok is false when the value is not framed that way.
func ParseWire(b []byte) (schemaID int, payload []byte, ok bool) {
	if len(b) < 5 || b[0] != 0 {
		return 0, nil, false
	}
	id := binary.BigEndian.Uint32(b[1:5])
	if id == 0 || id > 1<<31-1 {
		return 0, nil, false
	}
	return int(id), b[5:], true
}

// SchemaInfo is what the registry says about one schema id.
type SchemaInfo struct {
	ID      int    `json:"schema_id"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
	Type    string `json:"type"` // AVRO, JSON or PROTOBUF
	Schema  string `json:"-"`
}

// SchemaResolver maps a schema id to its subject and version. topic picks the subject when one
// schema is registered under several (TopicNameStrategy: <topic>-value first).
type SchemaResolver interface {
	ResolveSchema(ctx context.Context, id int, topic string) (SchemaInfo, error)
}

// RegistryResolver resolves ids through Schema Registry (srclient), caching answers: an id's
// schema never changes.
type RegistryResolver struct {
	rc    *registry.Client
	mu    sync.Mutex
	cache map[int]SchemaInfo
}

// NewRegistryResolver wraps a registry client.
func NewRegistryResolver(rc *registry.Client) *RegistryResolver {
	return &RegistryResolver{rc: rc, cache: map[int]SchemaInfo{}}
}

// ResolveSchema implements SchemaResolver.
func (r *RegistryResolver) ResolveSchema(ctx context.Context, id int, topic string) (SchemaInfo, error) {
	r.mu.Lock()
	if si, ok := r.cache[id]; ok {
		r.mu.Unlock()
		return si, nil
	}
	r.mu.Unlock()
	sv, err := r.rc.SchemaByID(ctx, id)
	if err != nil {
		return SchemaInfo{}, err
	}
	si := SchemaInfo{ID: id, Schema: sv.Schema, Type: strings.ToUpper(string(sv.Type))}
	if si.Type == "" {
		si.Type = "AVRO"
	}
	pairs, err := r.rc.SubjectsByID(ctx, id)
	if err != nil {
		return SchemaInfo{}, err
	}
	// TopicNameStrategy first: <topic>-value, then <topic>-key, then whatever registered it.
	best := -1
	for i, p := range pairs {
		if p.Subject == topic+"-value" || best < 0 || (p.Subject == topic+"-key" && pairs[best].Subject != topic+"-value") {
			best = i
		}
	}
	if best >= 0 {
		si.Subject, si.Version = pairs[best].Subject, pairs[best].Version
	}
	r.mu.Lock()
	r.cache[id] = si
	r.mu.Unlock()
	return si, nil
}

// decoder turns one schema's payloads into field presence, nulls, zeros and values.
type decoder struct {
	info   SchemaInfo
	avro   avro.Schema
	proto  protoreflect.FileDescriptor
	fields []fieldDef                 // top-level and nested record fields, in schema order
	unions map[string]map[string]bool // path → named union branches (see fieldDef.branches)
	err    error                      // why this schema cannot be decoded (then records count as undecodable)
}

type fieldDef struct {
	path     string
	typ      string
	nullable bool
	// enum: the values are symbols of an enum (counted however many there are).
	enum bool
	// branches holds the full names of a union's named members: hamba decodes such a branch as
	// {"<full name>": value}.
	branches map[string]bool
}

func newDecoder(info SchemaInfo) *decoder {
	d := &decoder{info: info}
	switch info.Type {
	case "AVRO", "":
		// Each schema version gets its own cache so named types of different versions never collide.
		s, err := avro.ParseWithCache(info.Schema, "", &avro.SchemaCache{})
		if err != nil {
			d.err = fmt.Errorf("schema id %d (%s v%d) does not parse as Avro: %w", info.ID, info.Subject, info.Version, err)
			return d
		}
		d.avro = s
		walkAvro(s, "", 0, &d.fields)
		d.unions = map[string]map[string]bool{}
		for _, f := range d.fields {
			if len(f.branches) > 0 {
				d.unions[f.path] = f.branches
			}
		}
	case "JSON":
		var js struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal([]byte(info.Schema), &js); err != nil {
			d.err = fmt.Errorf("schema id %d is not a JSON Schema object: %w", info.ID, err)
			return d
		}
		for name, raw := range js.Properties {
			var prop struct {
				Enum []any `json:"enum"`
			}
			_ = json.Unmarshal(raw, &prop) // a property that is not an object has no enum
			d.fields = append(d.fields, fieldDef{path: name, typ: "json", nullable: true, enum: len(prop.Enum) > 0})
		}
		sort.Slice(d.fields, func(i, j int) bool { return d.fields[i].path < d.fields[j].path })
	case "PROTOBUF":
		d.newProto(info)
	default:
		d.err = fmt.Errorf("schema id %d is %s: field statistics are computed for AVRO, JSON and PROTOBUF payloads only", info.ID, info.Type)
	}
	return d
}

// maxFieldDepth bounds recursion into nested records (and recursive schemas).
const maxFieldDepth = 4

func walkAvro(s avro.Schema, prefix string, depth int, out *[]fieldDef) {
	rec, ok := s.(*avro.RecordSchema)
	if !ok || depth > maxFieldDepth {
		return
	}
	for _, f := range rec.Fields() {
		p := f.Name()
		if prefix != "" {
			p = prefix + "." + f.Name()
		}
		t, nullable := unwrapNullable(f.Type())
		fd := fieldDef{path: p, typ: typeName(f.Type()), nullable: nullable, enum: t.Type() == avro.Enum}
		if u, ok := f.Type().(*avro.UnionSchema); ok {
			fd.branches = map[string]bool{}
			for _, m := range u.Types() {
				if n, ok := m.(avro.NamedSchema); ok {
					fd.branches[n.FullName()] = true
				}
			}
		}
		*out = append(*out, fd)
		if _, isRec := t.(*avro.RecordSchema); isRec {
			walkAvro(t, p, depth+1, out)
		}
	}
}

// unwrapNullable returns the non-null branch of ["null", T] and whether null is allowed.
func unwrapNullable(s avro.Schema) (avro.Schema, bool) {
	u, ok := s.(*avro.UnionSchema)
	if !ok {
		return s, s.Type() == avro.Null
	}
	var other avro.Schema
	nullable := false
	n := 0
	for _, t := range u.Types() {
		if t.Type() == avro.Null {
			nullable = true
			continue
		}
		other = t
		n++
	}
	if n == 1 {
		return other, nullable
	}
	return s, nullable
}

func typeName(s avro.Schema) string {
	switch t := s.(type) {
	case *avro.UnionSchema:
		parts := make([]string, 0, len(t.Types()))
		for _, m := range t.Types() {
			parts = append(parts, typeName(m))
		}
		return strings.Join(parts, "|")
	case avro.NamedSchema:
		return t.FullName()
	case *avro.PrimitiveSchema:
		if l := t.Logical(); l != nil {
			return string(t.Type()) + "/" + string(l.Type())
		}
	}
	return string(s.Type())
}

// errUndecodable marks a payload that does not match its schema.
var errUndecodable = errors.New("payload does not decode with its schema")

// observed is what one record holds in one field.
type observed struct {
	// null: the value is null or unset (a reader sees NULL); zero: it is its type's zero
	// (0, "", false, an empty list; for proto3 also a scalar absent from the wire).
	null, zero bool
	// value is the value as text when it is countable (a string, an integer, a boolean, an enum
	// symbol); countable says so.
	value     string
	countable bool
}

// observe decodes one payload and reports, per field path, what the record holds there.
func (d *decoder) observe(payload []byte, seen func(path string, o observed)) error {
	if d.err != nil {
		return d.err
	}
	switch {
	case d.avro != nil:
		var v any
		if err := avro.Unmarshal(d.avro, payload, &v); err != nil {
			return fmt.Errorf("%w: %v", errUndecodable, err)
		}
		m, _ := v.(map[string]any)
		for _, f := range d.fields {
			val, present := d.lookup(m, f.path)
			seen(f.path, classify(val, present))
		}
	case d.proto != nil:
		return d.observeProto(payload, seen)
	default: // JSON Schema
		var m map[string]any
		if err := json.Unmarshal(payload, &m); err != nil {
			return fmt.Errorf("%w: %v", errUndecodable, err)
		}
		for _, f := range d.fields {
			val, present := m[f.path]
			seen(f.path, classify(val, present))
		}
	}
	return nil
}

// classify says what a decoded Avro or JSON value is.
func classify(v any, present bool) observed {
	if !present || v == nil {
		return observed{null: true}
	}
	switch x := v.(type) {
	case string:
		return observed{zero: x == "", value: x, countable: true}
	case bool:
		return observed{zero: !x, value: strconv.FormatBool(x), countable: true}
	case int:
		return observed{zero: x == 0, value: strconv.Itoa(x), countable: true}
	case int32:
		return observed{zero: x == 0, value: strconv.Itoa(int(x)), countable: true}
	case int64:
		return observed{zero: x == 0, value: strconv.FormatInt(x, 10), countable: true}
	case float32:
		return observed{zero: x == 0}
	case float64:
		if x == float64(int64(x)) && x > -1e15 && x < 1e15 {
			return observed{zero: x == 0, value: strconv.FormatInt(int64(x), 10), countable: true} // a JSON integer
		}
		return observed{zero: x == 0}
	case []any:
		return observed{zero: len(x) == 0}
	case map[string]any:
		return observed{zero: len(x) == 0}
	}
	return observed{}
}

// lookup follows a dotted path through decoded records, unwrapping the {"<full name>": value}
// form hamba gives named union branches.
func (d *decoder) lookup(m map[string]any, p string) (any, bool) {
	var cur any = m
	prefix := ""
	for _, part := range strings.Split(p, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[part]; !ok {
			return nil, false
		}
		if prefix == "" {
			prefix = part
		} else {
			prefix += "." + part
		}
		cur = d.unwrap(prefix, cur)
	}
	return cur, true
}

func (d *decoder) unwrap(path string, v any) any {
	mm, ok := v.(map[string]any)
	branches := d.unions[path]
	if !ok || len(mm) != 1 || branches == nil {
		return v
	}
	for k, inner := range mm {
		if branches[k] {
			return inner
		}
	}
	return v
}
