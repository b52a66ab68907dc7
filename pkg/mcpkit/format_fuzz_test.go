package mcpkit

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// FuzzSummarize: any JSON result, however shaped, gives a summary every format can write.
func FuzzSummarize(f *testing.F) {
	for _, seed := range []string{
		`{"failed":true,"verdict":"incompatible","incompatibilities":[{"type":"T","path":"/f","field":"x"}]}`,
		`{"healthy":false,"backends":[{"backend":"kafka","configured":true,"reachable":false}],"store":{"ok":false}}`,
		`{"runs":[{"monitor":"m","status":"fail","table":"t"}],"failed":true}`,
		`{"blocking_readers":[{"name":1,"owners":[null,"a"]}],"impact":{"readers":"no"}}`,
		`[]`, `null`, `"x"`, `{"reasons":[1,2],"next_steps":{}}`,
	} {
		f.Add(seed, "schemas/x.avsc")
	}
	f.Fuzz(func(t *testing.T, raw, file string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		s := summarize("dw-x", "tool", map[string]any{"schema_file": file}, json.RawMessage(raw))
		for _, format := range Formats {
			if format == "github" {
				// No step summary, and a file that need not exist: annotations only.
				if err := writeGitHub(io.Discard, s, func(string) string { return "" }); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := writeFormatted(io.Discard, format, s, json.RawMessage(raw), func(string) string { return "" }); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
	})
}

// FuzzParseCallArgs: `call`'s arguments parse or fail with an error, never panic, and a parsed
// format is always one of Formats.
func FuzzParseCallArgs(f *testing.F) {
	for _, seed := range []string{"--format github check_schema_change {}", "tool --help", "--format", "--format=junit a b c", "-h"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := parseCallArgs(strings.Fields(line))
		if err == nil {
			ok := false
			for _, f := range Formats {
				ok = ok || f == c.format
			}
			if !ok {
				t.Fatalf("format %q accepted", c.format)
			}
		}
	})
}
