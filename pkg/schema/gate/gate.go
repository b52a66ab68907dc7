// Package gate is the CI decision on a schema change: it blocks when the registry's rule would
// refuse the change, or when the change is accepted but breaks downstream readers whose severity
// the policy says must block (by default high and critical: money, external sinks, customer-facing).
package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// Policy says what blocks.
type Policy struct {
	// BlockOn lists the severities of broken readers that block; empty means high and critical.
	BlockOn []impact.Severity
	// AllowIncompatible lets an incompatible change pass (only for levels set to NONE on purpose).
	AllowIncompatible bool
	// AllowUnknownLineage lets a change pass when the context graph does not know the subject. By
	// default it blocks: a producer's CI without the graph must not let a breaking change through
	// just because it cannot see the readers.
	AllowUnknownLineage bool
}

// Registry is the registry's own verdict, when it was asked the same question.
type Registry struct {
	Consulted  bool
	Compatible bool
}

// UnknownLineageHelp says how to give the gate the context graph, or how to opt out.
const UnknownLineageHelp = "give the job the context graph (the team's store via DW_HOME/store.path, restored from the nightly sync_catalog, " +
	"or built in the job with import_dbt_manifest, import_flink_statement and register_assets), or pass allow_unknown_lineage=true to accept the risk"

// DefaultBlockOn is what blocks when the policy names nothing.
var DefaultBlockOn = []impact.Severity{impact.High, impact.Critical}

// Decision is the gate's answer; Failed makes `dw-schema call check_schema_change` exit 1.
type Decision struct {
	Failed bool `json:"failed"`
	// Verdict: "incompatible", "compatible but breaks N readers" or "compatible and safe".
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"`
	// Blocking are the broken readers whose severity blocks.
	Blocking []impact.Reader   `json:"blocking_readers"`
	BlockOn  []impact.Severity `json:"block_on"`
	// RuleSet names the registry rules that judged the compatibility part.
	RuleSet compat.RuleSet `json:"rule_set"`
}

// Decide applies p to a compatibility verdict, the registry's own verdict when it was consulted
// (it wins when it refuses: the registry is what registration will ask), and, when available, an
// impact assessment.
func Decide(p Policy, res compat.Result, reg Registry, a *impact.Assessment) Decision {
	blockOn := p.BlockOn
	if len(blockOn) == 0 {
		blockOn = DefaultBlockOn
	}
	d := Decision{Reasons: []string{}, Blocking: []impact.Reader{}, BlockOn: blockOn, RuleSet: res.RuleSet}
	if reg.Consulted && !reg.Compatible && res.Compatible {
		d.Verdict = "incompatible"
		if p.AllowIncompatible {
			d.Reasons = append(d.Reasons, "the registry disagrees: it says incompatible under "+string(res.Level)+" where Data Workers found it compatible — allowed by policy")
		} else {
			d.Failed = true
			d.Reasons = append(d.Reasons, "the registry disagrees: it says incompatible under "+string(res.Level)+
				" where Data Workers found it compatible; registration would be refused with error_code 40901 (see registry.messages)")
		}
	}
	if !res.Compatible {
		d.Verdict = "incompatible"
		first := ""
		if len(res.Incompatibilities) > 0 {
			in := res.Incompatibilities[0]
			first = fmt.Sprintf(": %s against version %d (%s)", in.Type, in.OldVersion, in.Message)
		}
		if p.AllowIncompatible {
			d.Reasons = append(d.Reasons, "incompatible under "+string(res.Level)+first+" — allowed by policy")
		} else {
			d.Failed = true
			d.Reasons = append(d.Reasons, fmt.Sprintf("incompatible under %s%s; the registry would refuse it with error_code 40901", res.Level, first))
		}
	}
	if a != nil {
		if d.Verdict == "" {
			d.Verdict = a.Verdict
		}
		if !a.LineageKnown {
			msg := "downstream readers unknown: " + strings.Join(a.Notes, "; ")
			if p.AllowUnknownLineage {
				d.Reasons = append(d.Reasons, msg+" (not blocking: allow_unknown_lineage)")
			} else {
				d.Failed = true
				d.Reasons = append(d.Reasons, msg+". The gate blocks a change it cannot assess: "+UnknownLineageHelp)
			}
		}
		for _, r := range a.Readers {
			if r.Breaks && slices.Contains(blockOn, r.Severity) {
				d.Blocking = append(d.Blocking, r)
			}
		}
		if len(d.Blocking) > 0 {
			d.Failed = true
			d.Reasons = append(d.Reasons, causes(a)...)
			var names []string
			for _, r := range d.Blocking {
				names = append(names, fmt.Sprintf("%s (%s: %s)", r.Name, r.Severity, r.SeverityReason))
			}
			d.Reasons = append(d.Reasons, fmt.Sprintf("breaks %d reader(s) whose severity blocks: %s", len(d.Blocking), strings.Join(names, "; ")))
		} else if a.Broken > 0 {
			d.Reasons = append(d.Reasons, fmt.Sprintf("breaks %d reader(s), none of a blocking severity", a.Broken))
		}
	}
	if d.Verdict == "" {
		d.Verdict = "compatible"
	}
	if !d.Failed && len(d.Reasons) == 0 {
		d.Reasons = append(d.Reasons, "compatible under "+string(res.Level)+" and no reader breaks")
	}
	if res.AlreadyRegistered > 0 {
		// Re-running the gate after the rollout must keep the answer it gave before it.
		d.Reasons = append(d.Reasons, fmt.Sprintf("already registered as version %d: judged against the versions before it, as the registry judged it at registration, so the gate gives the answer it gave then", res.AlreadyRegistered))
	}
	return d
}

// causes names, per changed field, the nearest broken readers: where the damage starts.
func causes(a *impact.Assessment) []string {
	var out []string
	nearest := map[string]int{}
	for _, r := range a.Readers {
		if r.Breaks {
			if d, ok := nearest[r.Field]; !ok || r.Depth < d {
				nearest[r.Field] = r.Depth
			}
		}
	}
	for _, r := range a.Readers {
		if r.Breaks && r.Depth == nearest[r.Field] {
			out = append(out, fmt.Sprintf("%s %s: %s", r.Change, r.Field, r.Name+" "+r.Effect))
		}
	}
	return out
}

// ParseBlockOn reads severity names.
func ParseBlockOn(names []string) ([]impact.Severity, error) {
	var out []impact.Severity
	for _, n := range names {
		s, err := impact.ParseSeverity(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
