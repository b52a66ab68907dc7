package schema

import (
	"fmt"
	"slices"
	"strings"
)

// ChangeKind is one kind of field-level change between two schema versions.
type ChangeKind string

// The field-level changes Diff reports.
const (
	FieldAdded          ChangeKind = "added"
	FieldRemoved        ChangeKind = "removed"
	FieldRenamed        ChangeKind = "renamed"
	TypeChanged         ChangeKind = "type_changed"
	NullabilityChanged  ChangeKind = "nullability_changed"
	OptionalityChanged  ChangeKind = "optionality_changed"
	DefaultChanged      ChangeKind = "default_changed"
	EnumSymbolsAdded    ChangeKind = "enum_symbols_added"
	EnumSymbolsRemoved  ChangeKind = "enum_symbols_removed"
	ProtobufTagChanged  ChangeKind = "tag_changed"
	ProtobufOneofChange ChangeKind = "oneof_changed"
)

// AffectsReaders reports whether a reader that selects the field by name may see something
// different afterwards (nothing, another type, or nulls): the changes impact analysis follows.
func (k ChangeKind) AffectsReaders() bool {
	switch k {
	case FieldRemoved, FieldRenamed, TypeChanged, NullabilityChanged, ProtobufTagChanged:
		return true
	}
	return false
}

// Change is one field-level difference.
type Change struct {
	Kind ChangeKind `json:"kind"`
	// Path is the field's path in the new schema (the old path for a removal).
	Path    string `json:"path"`
	OldPath string `json:"old_path,omitempty"`
	Old     *Field `json:"old,omitempty"`
	New     *Field `json:"new,omitempty"`
	// OldName and OldType are the field's path and type in the old schema (empty for an addition);
	// NewName and NewType in the new one (empty for a removal). Code reads these, never Detail.
	OldName string `json:"old_name,omitempty"`
	NewName string `json:"new_name,omitempty"`
	OldType string `json:"old_type,omitempty"`
	NewType string `json:"new_type,omitempty"`
	// SymbolsAdded and SymbolsRemoved are the enum symbols (Avro enum symbols, Protobuf enum
	// values, JSON Schema enum or const values) an enum_symbols_added / _removed change names:
	// a new symbol is a new value before any record carries it.
	SymbolsAdded   []string `json:"symbols_added,omitempty"`
	SymbolsRemoved []string `json:"symbols_removed,omitempty"`
	// Detail says the change in one sentence, for people.
	Detail string `json:"detail"`
}

// change builds a Change between o and n (either may be nil) with its structured fields filled.
func change(k ChangeKind, path string, o, n *Field, detail string) Change {
	c := Change{Kind: k, Path: path, Old: o, New: n, Detail: detail}
	if o != nil {
		c.OldName, c.OldType = o.Path, o.Type
	}
	if n != nil {
		c.NewName, c.NewType = n.Path, n.Type
	}
	if o != nil && n != nil {
		c.OldPath = o.Path
	}
	return c
}

// Diff lists the field-level changes from old to new. Fields match by path, Avro renames through
// the new field's aliases, and Protobuf fields by tag number within their message (a new name on
// the same tag is a rename, as the wire sees it).
func Diff(old, new *Schema) []Change {
	var out []Change
	renamed := map[string]string{} // old path → new path, for fields whose path changed
	matchedNew := map[string]bool{}
	newByPath := map[string]int{}
	for i, f := range new.Fields {
		newByPath[f.Path] = i
	}
	for _, o := range old.Fields {
		parent, name := splitPath(o.Path)
		mp := mapPrefix(parent, renamed)
		idx := -1
		if old.Format == Protobuf && new.Format == Protobuf {
			for i, n := range new.Fields {
				if p, _ := splitPath(n.Path); p == mp && n.Tag == o.Tag && !matchedNew[n.Path] {
					idx = i
					break
				}
			}
		} else if i, ok := newByPath[joinPath(mp, name)]; ok && !matchedNew[new.Fields[i].Path] {
			idx = i
		} else if new.Format == Avro {
			for i, n := range new.Fields {
				if p, _ := splitPath(n.Path); p == mp && !matchedNew[n.Path] && slices.Contains(n.Aliases, name) {
					idx = i
					break
				}
			}
		}
		if idx < 0 {
			of := o
			out = append(out, change(FieldRemoved, o.Path, &of, nil, fmt.Sprintf("%s (%s) is removed", o.Path, describe(o))))
			continue
		}
		n := new.Fields[idx]
		matchedNew[n.Path] = true
		if n.Path != o.Path {
			renamed[o.Path] = n.Path
		}
		out = append(out, compareFields(o, n, n.Path != joinPath(mp, name))...)
	}
	for _, n := range new.Fields {
		if matchedNew[n.Path] {
			continue
		}
		nf := n
		out = append(out, change(FieldAdded, n.Path, nil, &nf, fmt.Sprintf("%s (%s) is added", n.Path, describe(n))))
	}
	return out
}

// compareFields compares a matched pair; renamed is false when only a parent's name changed.
func compareFields(o, n Field, renamed bool) []Change {
	of, nf := o, n
	mk := func(k ChangeKind, detail string) Change { return change(k, n.Path, &of, &nf, detail) }
	var out []Change
	if renamed {
		how := "by alias"
		if n.Tag != 0 {
			how = fmt.Sprintf("on tag %d", n.Tag)
		}
		out = append(out, mk(FieldRenamed, fmt.Sprintf("%s is renamed to %s (%s)", o.Path, n.Path, how)))
	}
	if o.Tag != n.Tag {
		out = append(out, mk(ProtobufTagChanged, fmt.Sprintf("%s moves from tag %d to tag %d", n.Path, o.Tag, n.Tag)))
	}
	if o.Type != n.Type {
		out = append(out, mk(TypeChanged, fmt.Sprintf("%s changes type from %s to %s", n.Path, o.Type, n.Type)))
	}
	if o.Nullable != n.Nullable {
		if n.Nullable {
			out = append(out, mk(NullabilityChanged, n.Path+" becomes nullable"))
		} else {
			out = append(out, mk(NullabilityChanged, n.Path+" is no longer nullable"))
		}
	}
	if o.Optional != n.Optional {
		if n.Optional {
			out = append(out, mk(OptionalityChanged, n.Path+" becomes optional"))
		} else {
			out = append(out, mk(OptionalityChanged, n.Path+" becomes required"))
		}
	}
	if o.HasDefault != n.HasDefault || o.Default != n.Default {
		switch {
		case !n.HasDefault:
			out = append(out, mk(DefaultChanged, fmt.Sprintf("%s loses its default %s", n.Path, o.Default)))
		case !o.HasDefault:
			out = append(out, mk(DefaultChanged, fmt.Sprintf("%s gains the default %s", n.Path, n.Default)))
		default:
			out = append(out, mk(DefaultChanged, fmt.Sprintf("%s default changes from %s to %s", n.Path, o.Default, n.Default)))
		}
	}
	if o.Oneof != n.Oneof {
		out = append(out, mk(ProtobufOneofChange, fmt.Sprintf("%s moves from oneof %q to oneof %q", n.Path, o.Oneof, n.Oneof)))
	}
	if add := minus(n.Symbols, o.Symbols); len(add) > 0 && len(o.Symbols) > 0 {
		c := mk(EnumSymbolsAdded, fmt.Sprintf("%s gains symbols %s", n.Path, strings.Join(add, ", ")))
		c.SymbolsAdded = add
		out = append(out, c)
	}
	if rem := minus(o.Symbols, n.Symbols); len(rem) > 0 && len(n.Symbols) > 0 {
		c := mk(EnumSymbolsRemoved, fmt.Sprintf("%s loses symbols %s", n.Path, strings.Join(rem, ", ")))
		c.SymbolsRemoved = rem
		out = append(out, c)
	}
	return out
}

func describe(f Field) string {
	s := f.Type
	if f.Nullable {
		s = "nullable " + s
	}
	if f.Optional {
		s = "optional " + s
	} else {
		s = "required " + s
	}
	if f.HasDefault {
		s += ", default " + f.Default
	}
	if f.Tag != 0 {
		s += fmt.Sprintf(", tag %d", f.Tag)
	}
	return s
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// splitPath splits "a.b[].c" into ("a.b[]", "c").
func splitPath(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '.')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// mapPrefix rewrites a parent path of the old schema through the renames found so far.
func mapPrefix(parent string, renamed map[string]string) string {
	best := ""
	for o := range renamed {
		if (parent == o || strings.HasPrefix(parent, o+".") || strings.HasPrefix(parent, o+"[") || strings.HasPrefix(parent, o+"{")) && len(o) > len(best) {
			best = o
		}
	}
	if best == "" {
		return parent
	}
	return renamed[best] + parent[len(best):]
}
