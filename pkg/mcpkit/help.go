package mcpkit

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/pkg/version"
)

// versionLine is the release plus the commit the binary was built from (Go stamps it when building
// inside a git checkout), so a bug report names exactly what ran.
func versionLine() string {
	line := version.Version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{GoVersion: "go?"}
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && modified == "true" {
		rev += "+dirty"
	}
	if rev == "" {
		rev = version.Commit
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("%s (commit %s, %s)", line, rev, bi.GoVersion)
}

// writeToolHelp prints one tool's description and arguments for a person at a terminal.
func writeToolHelp(w io.Writer, agent string, t mcp.Tool) {
	fmt.Fprintf(w, "%s call %s [JSON|-]\n\n", agent, t.Name)
	if title := toolTitle(t); title != "" {
		fmt.Fprintf(w, "%s\n\n", title)
	}
	fmt.Fprintf(w, "%s\n\n", t.Description)
	raw := []byte(t.RawInputSchema)
	if len(raw) == 0 {
		raw, _ = json.Marshal(t.InputSchema)
	}
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	_ = json.Unmarshal(raw, &schema)
	if len(schema.Properties) == 0 {
		fmt.Fprintf(w, "Arguments: none (call it with no JSON, or {}).\n")
		return
	}
	fmt.Fprintf(w, "Arguments (a JSON object):\n")
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range schema.Properties {
			if !yield(n) {
				return
			}
		}
	})
	// Required arguments first, each group alphabetical.
	slices.SortStableFunc(names, func(a, b string) int {
		ra, rb := slices.Contains(schema.Required, a), slices.Contains(schema.Required, b)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return 0
	})
	for _, n := range names {
		p := schema.Properties[n]
		req := "optional"
		if slices.Contains(schema.Required, n) {
			req = "required"
		}
		fmt.Fprintf(w, "  %s (%s, %s)\n", n, schemaType(p), req)
		if d, _ := p["description"].(string); d != "" {
			fmt.Fprintf(w, "      %s\n", d)
		}
		if enum, ok := p["enum"].([]any); ok {
			var vs []string
			for _, v := range enum {
				vs = append(vs, fmt.Sprint(v))
			}
			fmt.Fprintf(w, "      one of: %s\n", strings.Join(vs, ", "))
		}
		if d, ok := p["default"]; ok {
			fmt.Fprintf(w, "      default: %v\n", d)
		}
		writeNestedFields(w, p)
	}
}

// writeNestedFields lists the fields of an object argument, or of each element of an array of
// objects, one level deep (e.g. earlier_versions: [{version, file}]).
func writeNestedFields(w io.Writer, p map[string]any) {
	obj := p
	if items, ok := p["items"].(map[string]any); ok {
		obj = items
	}
	props, _ := obj["properties"].(map[string]any)
	if len(props) == 0 {
		return
	}
	required, _ := obj["required"].([]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		sub, _ := props[n].(map[string]any)
		req := "optional"
		if slices.Contains(required, any(n)) {
			req = "required"
		}
		line := fmt.Sprintf("      .%s (%s, %s)", n, schemaType(sub), req)
		if d, _ := sub["description"].(string); d != "" {
			line += ": " + d
		}
		fmt.Fprintln(w, line)
	}
}

func toolTitle(t mcp.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	return t.Annotations.Title
}

// schemaType names a property's JSON type: "string", "array of string", "object".
func schemaType(p map[string]any) string {
	t, _ := p["type"].(string)
	if list, ok := p["type"].([]any); ok {
		// null only says the argument may be left out, which "optional" already says.
		var ts []string
		for _, x := range list {
			if x != "null" {
				ts = append(ts, fmt.Sprint(x))
			}
		}
		t = strings.Join(ts, " or ")
	}
	if t == "array" {
		if items, ok := p["items"].(map[string]any); ok {
			return "array of " + schemaType(items)
		}
	}
	if t == "" {
		return "any"
	}
	return t
}

// properWords are spelled as their projects spell them when a title is made from a tool's name.
var properWords = map[string]string{"flink": "Flink", "tableflow": "Tableflow", "openlineage": "OpenLineage", "mcp": "MCP", "sql": "SQL"}

// titleFromName makes a tool's display title from its name ("check_schema_change" → "Check schema
// change"), for clients that show titles; a tool may set its own with Title.
func titleFromName(name string) string {
	words := strings.Split(name, "_")
	for i, w := range words {
		if p, ok := properWords[w]; ok {
			words[i] = p
		} else if i == 0 && w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}
