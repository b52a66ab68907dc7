package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dataworkers/dw/pkg/schema"
)

// maxMessageIndexes bounds the message-index list of a Protobuf payload (nesting depth of the
// message in its file); anything longer is not a real payload.
const maxMessageIndexes = 32

// MessageIndexes reads the message indexes Confluent's Protobuf serializer writes after the
// schema id: a zigzag varint count, then that many zigzag varint indexes (the message's position
// among the file's messages, then among its nested ones). A single 0 stands for [0], the first
// message. It returns the indexes and the Protobuf bytes after them.
func MessageIndexes(b []byte) ([]int, []byte, error) {
	n, k := binary.Varint(b)
	if k <= 0 {
		return nil, nil, errors.New("protobuf payload: no message-index count after the schema id")
	}
	b = b[k:]
	if n == 0 {
		return []int{0}, b, nil
	}
	if n < 0 || n > maxMessageIndexes {
		return nil, nil, fmt.Errorf("protobuf payload: message-index count %d is out of range", n)
	}
	idx := make([]int, 0, n)
	for i := int64(0); i < n; i++ {
		v, k := binary.Varint(b)
		if k <= 0 || v < 0 || v > 1<<20 {
			return nil, nil, errors.New("protobuf payload: bad message index")
		}
		idx = append(idx, int(v))
		b = b[k:]
	}
	return idx, b, nil
}

// messageAt finds the message the indexes name in the file.
func messageAt(fd protoreflect.FileDescriptor, idx []int) (protoreflect.MessageDescriptor, error) {
	if len(idx) == 0 || idx[0] >= fd.Messages().Len() {
		return nil, fmt.Errorf("protobuf payload: message index %v is not in the schema", idx)
	}
	md := fd.Messages().Get(idx[0])
	for _, i := range idx[1:] {
		if i >= md.Messages().Len() {
			return nil, fmt.Errorf("protobuf payload: message index %v is not in the schema", idx)
		}
		md = md.Messages().Get(i)
	}
	return md, nil
}

// newProto compiles the schema and lists the first message's fields (the one producers
// write by default); records of other messages report their own fields.
func (d *decoder) newProto(info SchemaInfo) {
	s, err := schema.Parse(schema.Protobuf, info.Schema)
	if err != nil {
		d.err = fmt.Errorf("schema id %d (%s v%d) does not compile as Protobuf (imports other than the standard ones are not fetched): %w", info.ID, info.Subject, info.Version, err)
		return
	}
	d.proto = s.ProtoFile()
	walkProto(d.proto.Messages().Get(0), "", 0, &d.fields)
}

func walkProto(md protoreflect.MessageDescriptor, prefix string, depth int, out *[]fieldDef) {
	if depth > maxFieldDepth {
		return
	}
	fs := md.Fields()
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		p := joinField(prefix, string(fd.Name()))
		*out = append(*out, fieldDef{path: p, typ: schema.ProtoTypeName(fd), nullable: fd.HasPresence() && !fd.IsList() && !fd.IsMap(), enum: fd.Enum() != nil})
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			walkProto(fd.Message(), p, depth+1, out)
		}
	}
}

func joinField(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// observeProto decodes one framed Protobuf payload. A field with presence (proto3 optional, a
// message, a oneof member, proto2) that is not set is null; a scalar without presence that is
// not on the wire is its zero value, not null (as a reader sees it).
func (d *decoder) observeProto(payload []byte, seen func(string, observed)) error {
	idx, rest, err := MessageIndexes(payload)
	if err != nil {
		return fmt.Errorf("%w: %v", errUndecodable, err)
	}
	md, err := messageAt(d.proto, idx)
	if err != nil {
		return fmt.Errorf("%w: %v", errUndecodable, err)
	}
	m := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rest, m); err != nil {
		return fmt.Errorf("%w: %v", errUndecodable, err)
	}
	reportProto(m, "", 0, seen)
	return nil
}

func reportProto(m protoreflect.Message, prefix string, depth int, seen func(string, observed)) {
	if depth > maxFieldDepth {
		return
	}
	fs := m.Descriptor().Fields()
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		p := joinField(prefix, string(fd.Name()))
		set := m.Has(fd)
		switch {
		case fd.IsList() || fd.IsMap():
			seen(p, observed{zero: !set})
		case fd.Message() != nil:
			seen(p, observed{null: !set})
			if set {
				reportProto(m.Get(fd).Message(), p, depth+1, seen)
			}
		case fd.HasPresence() && !set:
			seen(p, observed{null: true})
		default:
			v := m.Get(fd)
			seen(p, observed{zero: !set, value: protoValue(fd, v), countable: countableKind(fd.Kind())})
		}
	}
}

func protoValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	if fd.Kind() == protoreflect.EnumKind {
		n := v.Enum()
		if ev := fd.Enum().Values().ByNumber(n); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(n)) // a number the schema does not name
	}
	if fd.Kind() == protoreflect.BytesKind {
		return ""
	}
	return fmt.Sprint(v.Interface())
}

func countableKind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.FloatKind, protoreflect.DoubleKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}
