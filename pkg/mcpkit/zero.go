package mcpkit

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// zeroTime is how encoding/json writes a time.Time that was never set. Go's `omitempty` does not
// drop it, so without this step "at": "0001-01-01T00:00:00Z" would reach clients as if it were a date.
const zeroTime = "0001-01-01T00:00:00Z"

// omitZeroTimes drops unset times from a tool's result: every property the output schema does not
// require whose value is the zero time, at any depth. Done once here, for every tool, so no result
// struct needs its own tags; a required time is kept (the schema promises it).
func omitZeroTimes(res *mcp.CallToolResult, schema map[string]any) {
	if res == nil || res.IsError || res.StructuredContent == nil {
		return
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil || !bytes.Contains(raw, []byte(zeroTime)) {
		return
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return
	}
	if !dropZeroTimes(v, schema) {
		return
	}
	text, err := json.Marshal(v)
	if err != nil {
		return
	}
	res.StructuredContent = v
	// The text content is the same result as JSON (for clients without structured content).
	for i, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok && json.Valid([]byte(tc.Text)) {
			tc.Text = string(text)
			res.Content[i] = tc
		}
	}
}

// dropZeroTimes walks a decoded JSON value beside its schema and reports whether it removed any.
func dropZeroTimes(v any, schema map[string]any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		required := requiredOf(schema)
		extra, _ := schema["additionalProperties"].(map[string]any)
		for k, val := range x {
			if s, ok := val.(string); ok && s == zeroTime && !slices.Contains(required, k) {
				delete(x, k)
				changed = true
				continue
			}
			sub, _ := props[k].(map[string]any)
			if sub == nil {
				sub = extra
			}
			if dropZeroTimes(val, sub) {
				changed = true
			}
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for _, it := range x {
			if dropZeroTimes(it, items) {
				changed = true
			}
		}
	}
	return changed
}

func requiredOf(schema map[string]any) []string {
	switch r := schema["required"].(type) {
	case []string:
		return r
	case []any:
		out := make([]string, 0, len(r))
		for _, x := range r {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// outputSchemaMap is a tool's output schema as a plain map, for walking beside a result.
func outputSchemaMap(t mcp.Tool) map[string]any {
	raw := []byte(t.RawOutputSchema)
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(t.OutputSchema); err != nil {
			return nil
		}
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}
