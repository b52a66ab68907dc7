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

// insertion replaces text[offset:end] with text (end == offset: a pure insertion).
type insertion struct {
	offset, end int
	text        string
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
	lift := map[*ast.MessageNode][]protoreflect.FieldDescriptor{} // reservations to lift, per message
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
				if nd.Fields().ByName(of.Name()) != nil {
					r.Skipped = append(r.Skipped, fmt.Sprintf("%s.%s: the new version uses the name on another tag", full, of.Name()))
					continue
				}
				why := ""
				if nd.ReservedRanges().Has(of.Number()) || nd.ReservedNames().Has(of.Name()) {
					// Nothing else holds the tag or the name: lifting the reservation brings back
					// exactly the field old records carry.
					lift[node] = append(lift[node], of)
					why = fmt.Sprintf("the new version reserved %s (tag %d) when it removed it; no field uses the tag or the name, so the reservation is lifted and "+
						"the field comes back with the same name, type and tag: records written before the removal carry exactly this field, and "+
						"Schema Registry's Protobuf compatibility rules do not forbid removing a reservation", of.Name(), of.Number())
				}
				decl := fieldDecl(of)
				off := fileNode.NodeInfo(node.CloseBrace).Start().Offset
				ins = append(ins, insertion{offset: off, end: off, text: "  " + decl + " // restored\n"})
				r.Restored = append(r.Restored, Restored{Path: full + "." + string(of.Name()), Type: schema.ProtoTypeName(of), How: decl, Why: why})
			}
		}
	}
	walk(old.ProtoFile().Messages())
	for node, fds := range lift {
		ins = append(ins, liftReservation(fileNode, new.Text, node, fds)...)
	}
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].offset > ins[j].offset })
	text := new.Text
	for _, in := range ins {
		if in.end > in.offset {
			text = text[:in.offset] + in.text + text[in.end:]
			continue
		}
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

// maxTag is the largest Protobuf field number ("max" in a reserved range).
const maxTag = 536870911

// liftReservation rewrites the message's reserved statements without the fields' tags and names:
// a range holding a tag is split around it, a name is dropped, and a statement left empty goes.
func liftReservation(file *ast.FileNode, src string, msg *ast.MessageNode, fds []protoreflect.FieldDescriptor) []insertion {
	var out []insertion
	tags := map[int32]bool{}
	names := map[string]bool{}
	for _, fd := range fds {
		tags[int32(fd.Number())] = true
		names[string(fd.Name())] = true
	}
	for _, d := range msg.Decls {
		rn, ok := d.(*ast.ReservedNode)
		if !ok {
			continue
		}
		var keep []string
		changed := false
		for _, rg := range rn.Ranges {
			lo, _ := rg.StartValueAsInt32(1, maxTag)
			hi := lo
			switch {
			case rg.Max != nil:
				hi = maxTag
			case rg.EndVal != nil:
				hi, _ = rg.EndValueAsInt32(1, maxTag)
			}
			// Split the range around every lifted tag inside it.
			var inside []int32
			for t := range tags {
				if t >= lo && t <= hi {
					inside = append(inside, t)
				}
			}
			sort.Slice(inside, func(i, j int) bool { return inside[i] < inside[j] })
			from := lo
			for _, t := range inside {
				changed = true
				if from < t {
					keep = append(keep, rangeText(from, t-1))
				}
				from = t + 1
			}
			if from <= hi {
				keep = append(keep, rangeText(from, hi))
			}
		}
		for _, n := range rn.Names {
			if names[n.AsString()] {
				changed = true
				continue
			}
			keep = append(keep, fmt.Sprintf("%q", n.AsString()))
		}
		for _, n := range rn.Identifiers {
			if names[string(n.AsIdentifier())] {
				changed = true
				continue
			}
			keep = append(keep, string(n.AsIdentifier()))
		}
		if !changed {
			continue
		}
		start, end := file.NodeInfo(rn).Start().Offset, file.NodeInfo(rn).End().Offset+1 // End is the last character
		text := ""
		if len(keep) > 0 {
			text = "reserved " + strings.Join(keep, ", ") + ";"
		} else {
			// The whole line goes when the statement is alone on it: its indentation and newline too.
			ls := strings.LastIndexByte(src[:start], '\n') + 1
			le := strings.IndexByte(src[end:], '\n')
			if le >= 0 && strings.TrimSpace(src[ls:start]) == "" && strings.TrimSpace(src[end:end+le]) == "" {
				start, end = ls, end+le+1
			}
		}
		out = append(out, insertion{offset: start, end: end, text: text})
	}
	return out
}

func rangeText(lo, hi int32) string {
	switch {
	case lo == hi:
		return fmt.Sprint(lo)
	case hi == maxTag:
		return fmt.Sprintf("%d to max", lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}
