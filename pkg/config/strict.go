package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// unknownField is how the YAML library's strict mode names a key no field takes.
var unknownField = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): field (.+) not found in type \S+$`) })

// strictKeys decodes data with the YAML library's strict mode (KnownFields), at every depth —
// structs, maps of structs, lists of them — and turns the first unknown key it reports into our
// message: its line, its full path and the keys that are known there. Values are not judged here
// (a ${VAR} is not expanded yet); the decode after expansion reports those with their line.
func strictKeys(data []byte, doc *yaml.Node) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var probe Config
	err := dec.Decode(&probe)
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return nil // a syntax error was reported by the first parse; nothing else concerns keys
	}
	for _, msg := range te.Errors {
		m := unknownField().FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		line, _ := strconv.Atoi(m[1])
		path, ok := keyPath(doc, line, m[2], nil)
		if !ok {
			return fmt.Errorf("line %d: unknown key", line)
		}
		where := strings.Join(path[:len(path)-1], ".")
		where = strings.ReplaceAll(where, ".[", "[")
		// The key itself is quoted only as a near miss of a known one: anything else may be any
		// text of whatever file was named as the config.
		known, typo := "", ""
		if t, ok := typeAt(reflect.TypeOf(probe), path[:len(path)-1]); ok {
			keys := sortedKeys(yamlFields(t))
			known = fmt.Sprintf(" (known keys: %s)", strings.Join(keys, ", "))
			typo = typoOf(m[2], keys)
		}
		return fmt.Errorf("line %d: unknown key%s in %s%s", line, typo, displayPath(where), known)
	}
	return nil
}

// keyPath finds the mapping key named key on line in the tree and returns its path: map keys and
// struct fields by name, list items as "[i]".
func keyPath(n *yaml.Node, line int, key string, path []string) ([]string, bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p, ok := keyPath(c, line, key, path); ok {
				return p, true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			here := append(slices.Clone(path), k.Value)
			if k.Line == line && k.Value == key {
				return here, true
			}
			if p, ok := keyPath(v, line, key, here); ok {
				return p, true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p, ok := keyPath(c, line, key, append(slices.Clone(path), fmt.Sprintf("[%d]", i))); ok {
				return p, true
			}
		}
	}
	return nil, false
}

// typeAt is the struct type the config takes at path, following struct fields, map values and
// list items.
func typeAt(t reflect.Type, path []string) (reflect.Type, bool) {
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			ft, ok := yamlFields(t)[seg]
			if !ok {
				return nil, false
			}
			t = ft
		case reflect.Map, reflect.Slice:
			t = t.Elem()
		default:
			return nil, false
		}
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t, t.Kind() == reflect.Struct
}
