package compat

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dataworkers/dw/pkg/schema"
)

// protoCompatibleChanges is SR's SchemaDiff.COMPATIBLE_CHANGES; every other difference fails. A
// package change is in it: the registry serialises message indexes, not names, so a reader under
// another package still decodes the bytes (its published diff vectors judge it compatible).
var protoCompatibleChanges = map[string]bool{
	"PACKAGE_CHANGED": true, "MESSAGE_ADDED": true, "MESSAGE_MOVED": true, "ENUM_ADDED": true, "ENUM_REMOVED": true,
	"ENUM_CONST_ADDED": true, "ENUM_CONST_CHANGED": true, "ENUM_CONST_REMOVED": true,
	"FIELD_ADDED": true, "FIELD_REMOVED": true, "FIELD_NAME_CHANGED": true,
	"FIELD_STRING_OR_BYTES_LABEL_CHANGED": true, "ONEOF_ADDED": true, "ONEOF_REMOVED": true,
	"ONEOF_FIELD_ADDED": true,
}

// ProtobufDifference is one entry of SR's Protobuf diff.
type ProtobufDifference struct {
	Type       string `json:"type"`
	Path       string `json:"path"`
	Field      string `json:"field,omitempty"`
	Compatible bool   `json:"compatible"`
}

// ProtobufDiff lists SR's differences from original to update (fields matched by tag number).
func ProtobufDiff(original, update *schema.Schema) []ProtobufDifference {
	c := &protoDiff{seen: map[[2]protoreflect.FullName]bool{}, origFile: original.ProtoFile().Path(), updFile: update.ProtoFile().Path()}
	of, uf := original.ProtoFile(), update.ProtoFile()
	if of.Package() != uf.Package() {
		c.add("PACKAGE_CHANGED", "#/", "")
	}
	c.types("#", of.Messages(), of.Enums(), uf.Messages(), uf.Enums())
	return c.out
}

// protobufCompatible is SR's ProtobufSchema.isBackwardCompatible: diff(original=writer,
// update=reader) and every difference must be in the compatible set.
func protobufCompatible(original, update *schema.Schema) []Incompatibility {
	var out []Incompatibility
	for _, d := range ProtobufDiff(original, update) {
		if d.Compatible {
			continue
		}
		out = append(out, Incompatibility{Type: d.Type, Path: d.Path, Field: d.Field,
			Message: fmt.Sprintf("Difference{jsonPath='%s', type=%s}%s", d.Path, d.Type, protoHint(d))})
	}
	return out
}

func protoHint(d ProtobufDifference) string {
	var h string
	switch d.Type {
	case "MESSAGE_REMOVED":
		h = "a message type exists in the reader's schema but not the writer's (a message added under FORWARD/FULL appears this way; Confluent recommends BACKWARD_TRANSITIVE for Protobuf)"
	case "FIELD_SCALAR_KIND_CHANGED":
		h = "the field's scalar type moved to another wire-compatible group"
	case "FIELD_KIND_CHANGED":
		h = "the field changed between scalar, message and map"
	case "FIELD_NAMED_TYPE_CHANGED":
		h = "the field now refers to a different message type"
	case "FIELD_NUMERIC_LABEL_CHANGED":
		h = "a numeric field changed between singular and repeated"
	case "REQUIRED_FIELD_ADDED", "REQUIRED_FIELD_REMOVED":
		h = "proto2 required fields cannot be added or removed"
	case "ONEOF_FIELD_REMOVED":
		h = "a oneof member's field number is gone from the message"
	case "MULTIPLE_FIELDS_MOVED_TO_ONEOF":
		h = "two or more existing fields moved into one oneof"
	case "FIELD_MOVED_TO_EXISTING_ONEOF":
		h = "an existing field moved into a oneof that already had members"
	case "PACKAGE_CHANGED":
		h = "the package name changed"
	}
	if d.Field != "" {
		h = strings.TrimSpace(h + " (field " + d.Field + ")")
	}
	if h == "" {
		return ""
	}
	return ": " + h
}

type protoDiff struct {
	out               []ProtobufDifference
	seen              map[[2]protoreflect.FullName]bool
	origFile, updFile string
}

func (c *protoDiff) add(typ, path, field string) {
	c.out = append(c.out, ProtobufDifference{Type: typ, Path: path, Field: field, Compatible: protoCompatibleChanges[typ]})
}

type indexed[T any] struct {
	byName map[string]T
	index  map[string]int
}

func indexMessages(l protoreflect.MessageDescriptors) indexed[protoreflect.MessageDescriptor] {
	ix := indexed[protoreflect.MessageDescriptor]{byName: map[string]protoreflect.MessageDescriptor{}, index: map[string]int{}}
	n := 0
	for i := 0; i < l.Len(); i++ {
		m := l.Get(i)
		if m.IsMapEntry() {
			continue
		}
		ix.byName[string(m.Name())] = m
		ix.index[string(m.Name())] = n
		n++
	}
	return ix
}

func (c *protoDiff) types(path string, om protoreflect.MessageDescriptors, oe protoreflect.EnumDescriptors, um protoreflect.MessageDescriptors, ue protoreflect.EnumDescriptors) {
	oix, uix := indexMessages(om), indexMessages(um)
	for _, name := range unionKeys(oix.byName, uix.byName) {
		p := path + "/" + name
		o, inO := oix.byName[name]
		u, inU := uix.byName[name]
		switch {
		case !inU:
			c.add("MESSAGE_REMOVED", p, "")
		case !inO:
			c.add("MESSAGE_ADDED", p, "")
		default:
			c.message(p, o, u)
			if oix.index[name] != uix.index[name] {
				c.add("MESSAGE_MOVED", p, "")
			}
		}
	}
	oen, uen := map[string]protoreflect.EnumDescriptor{}, map[string]protoreflect.EnumDescriptor{}
	for i := 0; i < oe.Len(); i++ {
		oen[string(oe.Get(i).Name())] = oe.Get(i)
	}
	for i := 0; i < ue.Len(); i++ {
		uen[string(ue.Get(i).Name())] = ue.Get(i)
	}
	for _, name := range unionKeys(oen, uen) {
		p := path + "/" + name
		o, inO := oen[name]
		u, inU := uen[name]
		switch {
		case !inU:
			c.add("ENUM_REMOVED", p, "")
		case !inO:
			c.add("ENUM_ADDED", p, "")
		default:
			c.enum(p, o, u)
		}
	}
}

func (c *protoDiff) enum(path string, o, u protoreflect.EnumDescriptor) {
	ov, uv := map[int32]string{}, map[int32]string{}
	for i := 0; i < o.Values().Len(); i++ {
		ov[int32(o.Values().Get(i).Number())] = string(o.Values().Get(i).Name())
	}
	for i := 0; i < u.Values().Len(); i++ {
		uv[int32(u.Values().Get(i).Number())] = string(u.Values().Get(i).Name())
	}
	for _, n := range unionKeys(ov, uv) {
		p := fmt.Sprintf("%s/%d", path, n)
		on, inO := ov[n]
		un, inU := uv[n]
		switch {
		case !inU:
			c.add("ENUM_CONST_REMOVED", p, on)
		case !inO:
			c.add("ENUM_CONST_ADDED", p, un)
		case on != un:
			c.add("ENUM_CONST_CHANGED", p, un)
		}
	}
}

func realOneof(fd protoreflect.FieldDescriptor) protoreflect.OneofDescriptor {
	if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
		return od
	}
	return nil
}

// message mirrors SR's MessageSchemaDiff.compare.
func (c *protoDiff) message(path string, o, u protoreflect.MessageDescriptor) {
	key := [2]protoreflect.FullName{o.FullName(), u.FullName()}
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	oTop, uTop := map[int32]protoreflect.FieldDescriptor{}, map[int32]protoreflect.FieldDescriptor{}
	oAll, uAll := map[int32]protoreflect.FieldDescriptor{}, map[int32]protoreflect.FieldDescriptor{}
	oOneofOf, uOneofOf := map[int32]string{}, map[int32]string{}
	for i := 0; i < o.Fields().Len(); i++ {
		fd := o.Fields().Get(i)
		n := int32(fd.Number())
		oAll[n] = fd
		if od := realOneof(fd); od != nil {
			oOneofOf[n] = string(od.Name())
		} else {
			oTop[n] = fd
		}
	}
	for i := 0; i < u.Fields().Len(); i++ {
		fd := u.Fields().Get(i)
		n := int32(fd.Number())
		uAll[n] = fd
		if od := realOneof(fd); od != nil {
			uOneofOf[n] = string(od.Name())
		} else {
			uTop[n] = fd
		}
	}
	oOneofs, uOneofs := oneofs(o), oneofs(u)
	for _, name := range sortedKeys(uOneofs) {
		moved, existing := 0, 0
		for _, fd := range uOneofs[name] {
			n := int32(fd.Number())
			if _, ok := oTop[n]; ok {
				delete(oTop, n) // not a removal: it moved into the oneof
				moved++
			} else if _, ok := oOneofOf[n]; ok {
				existing++
			}
		}
		switch {
		case moved > 1:
			c.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF", path+"/"+name, "")
		case moved == 1 && existing > 0:
			c.add("FIELD_MOVED_TO_EXISTING_ONEOF", path+"/"+name, "")
		}
	}
	for _, name := range unionKeys(oOneofs, uOneofs) {
		p := path + "/" + name
		of, inO := oOneofs[name]
		uf, inU := uOneofs[name]
		switch {
		case !inU:
			c.add("ONEOF_REMOVED", p, "")
		case !inO:
			c.add("ONEOF_ADDED", p, "")
		default:
			ot, ut := map[int32]protoreflect.FieldDescriptor{}, map[int32]protoreflect.FieldDescriptor{}
			for _, fd := range of {
				ot[int32(fd.Number())] = fd
			}
			for _, fd := range uf {
				ut[int32(fd.Number())] = fd
			}
			for _, n := range unionKeys(ot, ut) {
				fp := fmt.Sprintf("%s/%d", p, n)
				ofd, inO := ot[n]
				ufd, inU := ut[n]
				switch {
				case !inU:
					// A member that left this oneof but is still in the message (top level or
					// another oneof) moved rather than vanished: only this oneof's exclusivity
					// relaxed. Only a number gone from the whole message is a removal.
					if _, still := uAll[n]; !still {
						c.add("ONEOF_FIELD_REMOVED", fp, string(ofd.Name()))
					}
				case !inO:
					c.add("ONEOF_FIELD_ADDED", fp, string(ufd.Name()))
				default:
					c.field(fp, ofd, ufd)
				}
			}
		}
	}
	for _, n := range unionKeys(oTop, uTop) {
		p := fmt.Sprintf("%s/%d", path, n)
		ofd, inO := oTop[n]
		ufd, inU := uTop[n]
		switch {
		case !inU:
			if ofd.Cardinality() == protoreflect.Required {
				c.add("REQUIRED_FIELD_REMOVED", p, string(ofd.Name()))
			} else {
				c.add("FIELD_REMOVED", p, string(ofd.Name()))
			}
		case !inO:
			if ufd.Cardinality() == protoreflect.Required {
				c.add("REQUIRED_FIELD_ADDED", p, string(ufd.Name()))
			} else {
				c.add("FIELD_ADDED", p, string(ufd.Name()))
			}
		default:
			c.field(p, ofd, ufd)
		}
	}
	// Fields whose oneof membership changed are compared by tag across the message, so a type
	// change is not hidden by a move into or out of a oneof.
	for _, n := range unionKeys(oAll, uAll) {
		ofd, inO := oAll[n]
		ufd, inU := uAll[n]
		if !inO || !inU {
			continue
		}
		on, oIn := oOneofOf[n]
		un, uIn := uOneofOf[n]
		if (!oIn && !uIn) || (oIn && uIn && on == un) {
			continue
		}
		c.field(fmt.Sprintf("%s/%d", path, n), ofd, ufd)
	}
	c.types(path, o.Messages(), o.Enums(), u.Messages(), u.Enums())
}

func oneofs(m protoreflect.MessageDescriptor) map[string][]protoreflect.FieldDescriptor {
	out := map[string][]protoreflect.FieldDescriptor{}
	for i := 0; i < m.Oneofs().Len(); i++ {
		od := m.Oneofs().Get(i)
		if od.IsSynthetic() {
			continue
		}
		var fs []protoreflect.FieldDescriptor
		for j := 0; j < od.Fields().Len(); j++ {
			fs = append(fs, od.Fields().Get(j))
		}
		out[string(od.Name())] = fs
	}
	return out
}

// field mirrors SR's FieldSchemaDiff.compare plus the label rule of docs/reference/schema-rules.md
func (c *protoDiff) field(path string, o, u protoreflect.FieldDescriptor) {
	if o.Name() != u.Name() {
		c.add("FIELD_NAME_CHANGED", path, string(u.Name()))
	}
	if !o.IsMap() && !u.IsMap() && o.IsList() != u.IsList() && protoKind(o) == "SCALAR" && protoKind(u) == "SCALAR" {
		if scalarGroup(o) == "STRING_OR_BYTES" && scalarGroup(u) == "STRING_OR_BYTES" {
			c.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED", path, string(u.Name()))
		} else {
			c.add("FIELD_NUMERIC_LABEL_CHANGED", path, string(u.Name()))
		}
	}
	c.fieldType(path, string(u.Name()), o, u)
}

func (c *protoDiff) fieldType(path, name string, o, u protoreflect.FieldDescriptor) {
	ok, uk := protoKind(o), protoKind(u)
	if ok != uk {
		c.add("FIELD_KIND_CHANGED", path, name)
		return
	}
	switch ok {
	case "SCALAR":
		if scalarGroup(o) != scalarGroup(u) {
			c.add("FIELD_SCALAR_KIND_CHANGED", path, name)
		}
	case "MAP":
		c.fieldType(path, name, o.MapKey(), u.MapKey())
		c.fieldType(path, name, o.MapValue(), u.MapValue())
	case "MESSAGE":
		om, um := o.Message(), u.Message()
		if localName(om) != localName(um) {
			c.add("FIELD_NAMED_TYPE_CHANGED", path, name)
			return
		}
		// A type from a referenced schema is compared here; local types are compared where
		// they are declared.
		if om.ParentFile().Path() != c.origFile || um.ParentFile().Path() != c.updFile {
			sub := &protoDiff{seen: c.seen, origFile: c.origFile, updFile: c.updFile}
			sub.message("#/"+strings.ReplaceAll(localName(om), ".", "/"), om, um)
			bad := false
			for _, d := range sub.out {
				c.out = append(c.out, d)
				bad = bad || !d.Compatible
			}
			if bad {
				c.add("FIELD_NAMED_TYPE_CHANGED", path, name)
			}
		}
	}
}

func localName(m protoreflect.MessageDescriptor) string {
	pkg := string(m.ParentFile().Package())
	full := string(m.FullName())
	if pkg != "" && strings.HasPrefix(full, pkg+".") {
		return full[len(pkg)+1:]
	}
	return full
}

func protoKind(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "MAP"
	case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
		return "MESSAGE"
	}
	return "SCALAR"
}

// scalarGroup is SR's ScalarKind: a change within a group is wire compatible.
func scalarGroup(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return "GENERAL_NUMBER"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "SIGNED_NUMBER"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "STRING_OR_BYTES"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "FIXED32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "FIXED64"
	case protoreflect.FloatKind:
		return "FLOAT"
	case protoreflect.DoubleKind:
		return "DOUBLE"
	}
	return fd.Kind().String()
}
