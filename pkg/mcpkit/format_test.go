package mcpkit

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", os.Getenv("UPDATE_GOLDEN") == "true", "rewrite testdata/format/*.golden")

type gateIn struct {
	SchemaFile string `json:"schema_file,omitempty"`
	Case       string `json:"case" jsonschema:"enum=blocks,enum=incompatible,enum=passes"`
}

type reader struct {
	URN            string   `json:"urn"`
	Kind           string   `json:"kind"`
	Name           string   `json:"name"`
	Field          string   `json:"field"`
	Change         string   `json:"change"`
	Effect         string   `json:"effect"`
	Breaks         bool     `json:"breaks"`
	Severity       string   `json:"severity"`
	SeverityReason string   `json:"severity_reason"`
	Owners         []string `json:"owners,omitempty"`
}

type incompat struct {
	Type  string `json:"type"`
	Path  string `json:"path"`
	Field string `json:"field,omitempty"`
}

type gateOut struct {
	Failed            bool       `json:"failed"`
	Verdict           string     `json:"verdict"`
	Reasons           []string   `json:"reasons"`
	Blocking          []reader   `json:"blocking_readers"`
	Compatible        bool       `json:"compatible"`
	Level             string     `json:"level"`
	Incompatibilities []incompat `json:"incompatibilities"`
	Impact            struct {
		Readers []reader `json:"readers"`
	} `json:"impact"`
}

type healthOut struct {
	Store struct {
		Path string `json:"path"`
		OK   bool   `json:"ok"`
	} `json:"store"`
	Backends []backendStatus `json:"backends"`
	Healthy  bool            `json:"healthy"`
}

type backendStatus struct {
	Backend    string `json:"backend"`
	ConfigKey  string `json:"config_key"`
	Configured bool   `json:"configured"`
	Reachable  *bool  `json:"reachable"`
	Error      string `json:"error,omitempty"`
}

type qualityResult struct {
	Check   string `json:"check"`
	Subject string `json:"subject,omitempty"`
	Status  string `json:"status"`
	Why     string `json:"why"`
}

type qualityOut struct {
	Table   string          `json:"table"`
	Failed  bool            `json:"failed"`
	Summary string          `json:"summary"`
	Results []qualityResult `json:"results"`
}

type noIn struct{}

// formatAgent's tools return results shaped like the schema gate's and check_connections', so the
// golden files show what each format makes of a verdict without depending on those tools.
func formatAgent() Agent {
	sumsField := reader{URN: "flink:statement/orders-hourly", Kind: "flink_statement", Name: "orders-hourly", Field: "currency", Change: "retyped",
		Effect: "the statement casts currency to STRING and fails on the new type", Breaks: true, Severity: "high",
		SeverityReason: "feeds a table tagged money", Owners: []string{"payments-team"}}
	dashboard := reader{URN: "bi:workbook/sales", Kind: "workbook", Name: "Sales by currency", Field: "currency", Change: "retyped",
		Effect: "the currency filter shows numbers", Breaks: true, Severity: "low", SeverityReason: "internal dashboard"}
	return Agent{Name: "dw-test", Tools: func(*Env) []Tool {
		return []Tool{
			Read("gate", "A gate-shaped verdict.", func(_ context.Context, in gateIn) (gateOut, error) {
				out := gateOut{Level: "BACKWARD", Compatible: true, Incompatibilities: []incompat{}, Blocking: []reader{}}
				switch in.Case {
				case "blocks":
					out.Failed, out.Verdict = true, "compatible but breaks 2 readers"
					out.Reasons = []string{"1 reader at severity high breaks (block_on: high, critical)"}
					out.Blocking = []reader{sumsField}
					out.Impact.Readers = []reader{sumsField, dashboard}
				case "incompatible":
					out.Failed, out.Verdict, out.Compatible = true, "incompatible", false
					out.Reasons = []string{"the registry would refuse it under BACKWARD"}
					out.Incompatibilities = []incompat{{Type: "TYPE_MISMATCH", Path: "/fields/2/type", Field: "currency"}}
				default:
					out.Verdict = "compatible and safe"
					out.Reasons = []string{"no reader of the changed fields breaks"}
				}
				return out, nil
			}),
			Read("health", "A check_connections-shaped report with one backend down.", func(context.Context, noIn) (healthOut, error) {
				var h healthOut
				h.Store.Path, h.Store.OK = "/var/dw/dw.db", true
				no, yes := false, true
				h.Backends = []backendStatus{
					{"kafka", "kafka", true, &no, "dial tcp 127.0.0.1:9: connection refused"},
					{"warehouse", "warehouse", true, &yes, ""},
					{"airflow", "airflow", false, nil, ""},
				}
				return h, nil
			}),
			Read("quality", "A run_quality_check-shaped run with one failing check.", func(context.Context, noIn) (qualityOut, error) {
				return qualityOut{Table: "orders", Failed: true, Summary: "1 of 2 checks failed on orders", Results: []qualityResult{
					{Check: "null_rate", Subject: "amount_cents", Status: "fail", Why: "30% null against 0% in the last 7 runs"},
					{Check: "volume", Status: "pass", Why: "1200 rows/hour within 900–1500"},
				}}, nil
			}),
			Read("broken", "Always a tool error.", func(context.Context, noIn) (healthOut, error) {
				return healthOut{}, fmt.Errorf("schema registry at 127.0.0.1:9: dial tcp: connection refused")
			}),
			Read("unconfigured", "A backend the config leaves out.", func(context.Context, noIn) (healthOut, error) {
				return healthOut{}, fmt.Errorf("schema registry is not configured: add a schema_registry section (url) to the config")
			}),
		}
	}}
}

// TestCallFormatsGolden pins every output format and exit code of `call` for a blocking gate, an
// incompatible change, a passing gate, an unhealthy backend and a tool error. UPDATE_GOLDEN=true
// rewrites the files after a deliberate change.
func TestCallFormatsGolden(t *testing.T) {
	schema := filepath.Join("testdata", "format", "orders-v2.avsc")
	cases := []struct {
		name, tool, args string
		exit             int
	}{
		{"gate-blocks", "gate", `{"case":"blocks","schema_file":"` + schema + `"}`, ExitBlocked},
		{"gate-incompatible", "gate", `{"case":"incompatible","schema_file":"` + schema + `"}`, ExitBlocked},
		{"gate-passes", "gate", `{"case":"passes","schema_file":"` + schema + `"}`, ExitOK},
		{"unhealthy", "health", `{}`, ExitToolError},
		{"checks-fail", "quality", `{}`, ExitBlocked},
		{"tool-error", "broken", `{}`, ExitToolError},
		{"not-configured", "unconfigured", `{}`, ExitUsage},
	}
	for _, c := range cases {
		for _, format := range Formats {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				summaryFile := filepath.Join(t.TempDir(), "summary.md")
				env := func(k string) (string, bool) {
					switch k {
					case "DW_HOME":
						return t.TempDir(), true
					case "GITHUB_STEP_SUMMARY":
						return summaryFile, true
					}
					return "", false
				}
				var out, errb strings.Builder
				code := Run(context.Background(), formatAgent(), []string{"call", "--format", format, c.tool, c.args},
					IO{In: strings.NewReader(""), Out: &out, Err: &errb}, env)
				if code != c.exit {
					t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.exit, out.String(), errb.String())
				}
				got := fmt.Sprintf("exit %d\n--- stdout\n%s", code, out.String())
				if b, err := os.ReadFile(summaryFile); err == nil {
					got += "--- $GITHUB_STEP_SUMMARY\n" + string(b)
				}
				golden := filepath.Join("testdata", "format", c.name+"."+format+".golden")
				if *updateGolden {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (UPDATE_GOLDEN=true go test ./pkg/mcpkit -run TestCallFormatsGolden writes it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from %s:\n%s", c.name+"/"+format, golden, got)
				}
				if strings.HasPrefix(c.name, "gate-") && c.exit == ExitBlocked && !strings.Contains(errb.String(), `"msg":"blocked"`) {
					t.Errorf("stderr does not log blocked: %s", errb.String())
				}
				if strings.Contains(out.String(), `"level":"`) {
					t.Errorf("a log line reached stdout: %s", out.String())
				}
			})
		}
	}
}

func TestCallUsageAndHelp(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"tool help", []string{"call", "gate", "--help"}, ExitOK, "case (string, required)\n      one of: blocks, incompatible, passes"},
		{"help before tool", []string{"call", "--help", "gate"}, ExitOK, "dw-test call gate [JSON|-]"},
		{"no arguments tool help", []string{"call", "health", "-h"}, ExitOK, "Arguments: none"},
		{"bad format", []string{"call", "--format", "yaml", "gate"}, ExitUsage, ""},
		{"format without value", []string{"call", "gate", "--format"}, ExitUsage, ""},
		{"--format=", []string{"call", "--format=text", "gate", `{"case":"passes"}`}, ExitOK, "dw-test gate: PASS — compatible and safe"},
		{"-V", []string{"-V"}, ExitOK, "dw-test 0.1.0-dev (commit "},
		{"--version", []string{"--version"}, ExitOK, "dw-test 0.1.0-dev (commit "},
		{"--help", []string{"--help"}, ExitOK, "Exit codes: 0 ok, 1 tool error or unreachable backend, 2 usage or config error, 100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb strings.Builder
			code := Run(context.Background(), formatAgent(), c.args, IO{In: strings.NewReader(""), Out: &out, Err: &errb},
				func(k string) (string, bool) {
					if k == "DW_HOME" {
						return t.TempDir(), true
					}
					return "", false
				})
			if code != c.code || !strings.Contains(out.String(), c.out) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, c.code, out.String(), errb.String())
			}
		})
	}
}

func TestHelpIsDeterministic(t *testing.T) {
	a := formatAgent()
	a.Commands = map[string]Command{}
	for _, n := range []string{"zeta", "alpha", "mid", "beta", "omega"} {
		a.Commands[n] = func(context.Context, *Env, []string, IO) int { return 0 }
	}
	var first string
	for i := 0; i < 20; i++ {
		var out strings.Builder
		Run(context.Background(), a, []string{"help"}, IO{In: strings.NewReader(""), Out: &out, Err: &out}, func(string) (string, bool) { return "", false })
		if i == 0 {
			first = out.String()
			if strings.Index(first, "alpha") > strings.Index(first, "zeta") {
				t.Fatalf("commands not sorted:\n%s", first)
			}
		} else if out.String() != first {
			t.Fatalf("help changed between runs:\n%s\n---\n%s", first, out.String())
		}
	}
}
