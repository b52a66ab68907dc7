package fix

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile/ast"
	"github.com/bufbuild/protocompile/parser"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dataworkers/dw/pkg/schema"
)

type insertion struct {
	offset int
	text   string
}

// restoreProtobuf inserts each removed field, on its old tag, before the closing brace of its
// message in the new text: wire readers match by tag, so the old tag is what brings data back.
func restoreProtobuf(old, new *schema.Schema) (Restoration, error) {
	fileNode, err := parser.Parse(schema.ProtoFileName, strings.NewReader(new.Text), reporter.NewHandler(nil))
	if err != nil {
		return Restoration{}, fmt.Errorf("parse new schema: %v", err)
	}
	nodes := map[string]*ast.MessageNode{}
	var collect func(prefix string, decls []ast.MessageElement)
	collect = func(prefix string, decls []ast.MessageElement) {
		for _, d := range decls {
			if m, ok := d.(*ast.MessageNode); ok {
				name := prefix + string(m.Name.AsIdentifier())
				nodes[name] = m
				collect(name+".", m.Decls)
			}
		}
	}
	pkg := string(new.ProtoFile().Package())
	prefix := ""
	if pkg != "" {
		prefix = pkg + "."
	}
	for _, d := range fileNode.Decls {
		if m, ok := d.(*ast.MessageNode); ok {
			name := prefix + string(m.Name.AsIdentifier())
			nodes[name] = m
			collect(name+".", m.Decls)
		}
	}
	var r Restoration
	var ins []insertion
	var walk func(om protoreflect.MessageDescriptors)
	walk = func(om protoreflect.MessageDescriptors) {
		for i := 0; i < om.Len(); i++ {
			o := om.Get(i)
			if o.IsMapEntry() {
				continue
			}
			walk(o.Messages())
			full := string(o.FullName())
			nd := findMessage(new.ProtoFile(), o.FullName())
			if nd == nil {
				r.Skipped = append(r.Skipped, fmt.Sprintf("message %s is gone from the new version; restore the message first", full))
				continue
			}
			node := nodes[string(nd.FullName())]
			if node == nil {
				continue
			}
			for j := 0; j < o.Fields().Len(); j++ {
				of := o.Fields().Get(j)
				if nd.Fields().ByNumber(of.Number()) != nil {
					continue
				}
				if nd.ReservedRanges().Has(of.Number()) || nd.ReservedNames().Has(of.Name()) {
					r.Skipped = append(r.Skipped, fmt.Sprintf("%s.%s (tag %d) is reserved in the new version; remove the reservation to restore it", full, of.Name(), of.Number()))
					continue
				}
				if nd.Fields().ByName(of.Name()) != nil {
					r.Skipped = append(r.Skipped, fmt.Sprintf("%s.%s: the new version uses the name on another tag", full, of.Name()))
					continue
				}
				decl := fieldDecl(of)
				off := fileNode.NodeInfo(node.CloseBrace).Start().Offset
				ins = append(ins, insertion{offset: off, text: "  " + decl + " // restored\n"})
				r.Restored = append(r.Restored, Restored{Path: full + "." + string(of.Name()), Type: schema.ProtoTypeName(of), How: decl})
			}
		}
	}
	walk(old.ProtoFile().Messages())
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].offset > ins[j].offset })
	text := new.Text
	for _, in := range ins {
		// Keep the closing brace on its own line.
		before := text[:in.offset]
		if !strings.HasSuffix(before, "\n") {
			before += "\n"
		}
		text = before + in.text + text[in.offset:]
	}
	r.Text = text
	return r, nil
}

func findMessage(f protoreflect.FileDescriptor, name protoreflect.FullName) protoreflect.MessageDescriptor {
	d := f.Messages()
	parts := strings.Split(strings.TrimPrefix(string(name), string(f.Package())+"."), ".")
	var m protoreflect.MessageDescriptor
	for _, p := range parts {
		m = d.ByName(protoreflect.Name(p))
		if m == nil {
			return nil
		}
		d = m.Messages()
	}
	return m
}

func typeRef(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "." + string(fd.Message().FullName())
	case protoreflect.EnumKind:
		return "." + string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

// fieldDecl declares a restored field; "optional" (valid in proto2 and proto3) gives a singular
// field explicit presence, so readers can tell a missing value from a zero.
func fieldDecl(fd protoreflect.FieldDescriptor) string {
	var typ string
	switch {
	case fd.IsMap():
		typ = "map<" + typeRef(fd.MapKey()) + ", " + typeRef(fd.MapValue()) + ">"
	case fd.IsList():
		typ = "repeated " + typeRef(fd)
	default:
		typ = "optional " + typeRef(fd)
	}
	return fmt.Sprintf("%s %s = %d;", typ, fd.Name(), fd.Number())
}
