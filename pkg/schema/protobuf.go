package schema

import (
	"context"
	"errors"
	"fmt"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
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

func parseProtobuf(text string, refs []Reference) (*Schema, error) {
	srcs := map[string]string{ProtoFileName: text}
	for _, r := range refs {
		if r.Name == "" {
			return nil, errors.New("protobuf schema reference without a name (the import path)")
		}
		srcs[r.Name] = r.Schema
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(srcs),
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
