package schema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ProtoFileName is the name the proposed or registered .proto compiles under; references compile
// under their import paths.
const ProtoFileName = "schema.proto"

type protoSchema struct {
	file linker.File
}

// ProtoFile returns the compiled file descriptor, or nil for other formats.
func (s *Schema) ProtoFile() protoreflect.FileDescriptor {
	if s.proto == nil {
		return nil
	}
	return s.proto.file
}

// builtinProtoImports are the imports the registry resolves without a reference: Confluent's
// field metadata options and decimal type (Google's well-known types come with the compiler). Our
// own definitions of the same public interface: package, messages, field numbers and extensions.
var builtinProtoImports = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;

import "google/protobuf/descriptor.proto";

// Meta is documentation, parameters and tags attached to a file, message, field, enum or enum
// value through the options below.
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
}

extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;

// Decimal is an arbitrary-precision decimal: the unscaled value as big-endian two's-complement
// bytes, and its scale.
message Decimal {
  bytes value = 1;
  int32 scale = 2;
}
`,
}

// builtinFallback serves a built-in import under any path that ends in its name
// ("build/proto/confluent/meta.proto"), when nothing else provides that path: the registry accepts
// such a schema without a reference, since it diffs the text without resolving the import.
func builtinFallback(next func(string) (io.ReadCloser, error)) func(string) (io.ReadCloser, error) {
	return func(path string) (io.ReadCloser, error) {
		rc, err := next(path)
		if err == nil {
			return rc, nil
		}
		for name, src := range builtinProtoImports {
			if strings.HasSuffix(path, "/"+name) {
				return io.NopCloser(strings.NewReader(src)), nil
			}
		}
		return nil, err
	}
}

func parseProtobuf(text string, refs []Reference) (*Schema, error) {
	srcs := map[string]string{ProtoFileName: text}
	for name, src := range builtinProtoImports {
		srcs[name] = src
	}
	for _, r := range refs {
		if r.Name == "" {
			return nil, errors.New("protobuf schema reference without a name (the import path)")
		}
		if strings.TrimSpace(r.Schema) == "" {
			if _, builtin := builtinProtoImports[r.Name]; builtin || strings.HasPrefix(r.Name, "google/protobuf/") {
				continue // the registry's own copy serves a reference given without its text
			}
			return nil, fmt.Errorf("protobuf schema reference %q has no schema text: give its schema inline or as a file, or its subject and version to read it from the registry", r.Name)
		}
		srcs[r.Name] = r.Schema
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: builtinFallback(protocompile.SourceAccessorFromMap(srcs)),
		}),
	}
	files, err := c.Compile(context.Background(), ProtoFileName)
	if err != nil {
		return nil, fmt.Errorf("invalid Protobuf schema: %v", err)
	}
	f := files[0]
	s := &Schema{Format: Protobuf, Text: text, References: refs, proto: &protoSchema{file: f}}
	if f.Messages().Len() == 0 {
		return nil, errors.New("invalid Protobuf schema: it declares no message (Schema Registry serialises the first message)")
	}
	root := f.Messages().Get(0)
	s.Name = string(root.FullName())
	w := &protoWalker{seen: map[protoreflect.FullName]bool{}}
	w.walk("", root)
	s.Fields = w.fields
	return s, nil
}

type protoWalker struct {
	fields []Field
	seen   map[protoreflect.FullName]bool
}

func (w *protoWalker) walk(prefix string, m protoreflect.MessageDescriptor) {
	if w.seen[m.FullName()] {
		return
	}
	w.seen[m.FullName()] = true
	defer delete(w.seen, m.FullName())
	fs := m.Fields()
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		path := joinPath(prefix, string(fd.Name()))
		fld := Field{
			Path:     path,
			Type:     ProtoTypeName(fd),
			Tag:      int(fd.Number()),
			Nullable: fd.HasPresence() && !fd.IsList() && !fd.IsMap(),
			Optional: fd.Cardinality() != protoreflect.Required,
		}
		if fd.HasDefault() {
			fld.HasDefault = true
			fld.Default = fmt.Sprintf("%q", fmt.Sprint(fd.Default().Interface()))
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			fld.Oneof = string(od.Name())
		}
		if ed := fd.Enum(); ed != nil {
			for j := 0; j < ed.Values().Len(); j++ {
				fld.Symbols = append(fld.Symbols, string(ed.Values().Get(j).Name()))
			}
		}
		w.fields = append(w.fields, fld)
		switch {
		case fd.IsMap():
			if v := fd.MapValue(); v.Message() != nil {
				w.walk(path+"{}", v.Message())
			}
		case fd.Message() != nil:
			if fd.IsList() {
				w.walk(path+"[]", fd.Message())
			} else {
				w.walk(path, fd.Message())
			}
		}
	}
}

// protoCanonical is the compiled file descriptor, deterministically serialised without source
// locations: two texts that differ only in comments or layout give the same bytes.
func (s *Schema) protoCanonical() (string, bool) {
	if s.proto == nil {
		return "", false
	}
	fdp := protodesc.ToFileDescriptorProto(s.proto.file)
	fdp.SourceCodeInfo = nil
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(fdp)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// ProtoTypeName names a field's type: "int64", "repeated string", "map<string,int64>",
// "message acme.Address", "enum acme.Status".
func ProtoTypeName(fd protoreflect.FieldDescriptor) string {
	if fd.IsMap() {
		return "map<" + protoKindName(fd.MapKey()) + "," + protoKindName(fd.MapValue()) + ">"
	}
	n := protoKindName(fd)
	if fd.IsList() {
		return "repeated " + n
	}
	return n
}

func protoKindName(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "message " + string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return "enum " + string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}
