package gate_test

import (
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/gate"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

func readers(sev ...impact.Severity) *impact.Assessment {
	a := &impact.Assessment{LineageKnown: true, Compatible: true}
	for i, s := range sev {
		a.Readers = append(a.Readers, impact.Reader{Name: "r" + string(rune('a'+i)), Breaks: true, Severity: s, SeverityReason: "test"})
		a.Broken++
	}
	if a.Broken > 0 {
		a.Verdict = "compatible but breaks readers"
	} else {
		a.Verdict = "compatible and safe"
	}
	return a
}

func TestGateDecisions(t *testing.T) {
	ok := compat.Result{Compatible: true, Level: compat.Backward}
	bad := compat.Result{Compatible: false, Level: compat.Backward, Incompatibilities: []compat.Incompatibility{{Type: "TYPE_MISMATCH", OldVersion: 11, Message: "m"}}}
	cases := []struct {
		name   string
		p      gate.Policy
		res    compat.Result
		a      *impact.Assessment
		failed bool
		reason string
	}{
		{"safe passes", gate.Policy{}, ok, readers(), false, "no reader breaks"},
		{"low reader passes the default policy", gate.Policy{}, ok, readers(impact.Low), false, "none of a blocking severity"},
		{"high reader blocks by default", gate.Policy{}, ok, readers(impact.Low, impact.High), true, "breaks 1 reader(s)"},
		{"critical-only policy lets high through", gate.Policy{BlockOn: []impact.Severity{impact.Critical}}, ok, readers(impact.High), false, "none of a blocking severity"},
		{"incompatible blocks", gate.Policy{}, bad, readers(), true, "error_code 40901"},
		{"incompatible allowed", gate.Policy{AllowIncompatible: true}, bad, readers(), false, "allowed by policy"},
		{"unknown lineage blocks by default", gate.Policy{}, ok, &impact.Assessment{Compatible: true, Notes: []string{"no graph"}}, true, "allow_unknown_lineage=true"},
		{"unknown lineage blocks and says how to give the graph", gate.Policy{}, ok, &impact.Assessment{Compatible: true, Notes: []string{"no graph"}}, true, "sync_catalog"},
		{"unknown lineage passes on explicit opt-out", gate.Policy{AllowUnknownLineage: true}, ok, &impact.Assessment{Compatible: true, Notes: []string{"no graph"}}, false, "not blocking"},
	}
	for _, c := range cases {
		d := gate.Decide(c.p, c.res, gate.Registry{}, c.a)
		if d.Failed != c.failed || !strings.Contains(strings.Join(d.Reasons, " | "), c.reason) {
			t.Errorf("%s: failed=%v reasons=%v", c.name, d.Failed, d.Reasons)
		}
	}
}

func TestParseBlockOn(t *testing.T) {
	s, err := gate.ParseBlockOn([]string{"High", "critical"})
	if err != nil || len(s) != 2 || s[0] != impact.High {
		t.Fatal(s, err)
	}
	if _, err := gate.ParseBlockOn([]string{"severe"}); err == nil {
		t.Fatal("want error")
	}
}

func TestGateFailsWhenTheRegistrySaysIncompatible(t *testing.T) {
	ok := compat.Result{Compatible: true, Level: compat.Backward}
	cases := []struct {
		name   string
		p      gate.Policy
		reg    gate.Registry
		failed bool
		reason string
	}{
		{"registry refuses what we accept", gate.Policy{}, gate.Registry{Consulted: true, Compatible: false}, true, "the registry disagrees"},
		{"registry refusal allowed by policy", gate.Policy{AllowIncompatible: true}, gate.Registry{Consulted: true, Compatible: false}, false, "allowed by policy"},
		{"registry agrees", gate.Policy{}, gate.Registry{Consulted: true, Compatible: true}, false, "no reader breaks"},
		{"registry not consulted", gate.Policy{}, gate.Registry{}, false, "no reader breaks"},
	}
	for _, c := range cases {
		d := gate.Decide(c.p, ok, c.reg, readers())
		if d.Failed != c.failed || !strings.Contains(strings.Join(d.Reasons, " | "), c.reason) {
			t.Errorf("%s: failed=%v reasons=%v", c.name, d.Failed, d.Reasons)
		}
		if c.failed && d.Verdict != "incompatible" {
			t.Errorf("%s: verdict = %q", c.name, d.Verdict)
		}
	}
}

// The decision names the rule set that judged it and says when the schema was already registered,
// so a re-run after the rollout reads as the same decision.
func TestDecisionNamesTheRuleSetAndAnAlreadyRegisteredVersion(t *testing.T) {
	res := compat.Result{Compatible: false, Level: compat.Backward, AlreadyRegistered: 12,
		RuleSet:           compat.RuleSet{Format: "AVRO", Level: compat.Backward, Policy: compat.Logical},
		Incompatibilities: []compat.Incompatibility{{Type: "FIELD_DELETED", OldVersion: 11, Message: "FIELD_DELETED (ICEBERG_V2)"}}}
	d := gate.Decide(gate.Policy{}, res, gate.Registry{}, nil)
	if !d.Failed || d.RuleSet.Policy != compat.Logical || !strings.Contains(strings.Join(d.Reasons, " | "), "already registered as version 12") {
		t.Fatalf("%+v", d)
	}
}
