package diagnosis

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/schema/impact"
)

// relevantPredictions are the predictions of the relevant changes (all of them when the change
// is linked only at table level). They describe readers pinned to the version before, so they
// count only when such a reader is on the path, or when the failure is staleness or missing
// volume, which only a reader that stopped or skipped records produces.
func relevantPredictions(in Input, sc SchemaChange, relevant []FieldChange) []impact.View {
	pinned := slices.ContainsFunc(sc.Readers, func(r Reader) bool { return r.PinnedVersion > 0 && r.PinnedVersion < sc.Version })
	if !pinned && in.FailureMode != ModeFreshness && in.FailureMode != ModeVolume {
		return nil
	}
	var out []impact.View
	for _, p := range sc.Predicted {
		for _, ch := range relevant {
			if strings.EqualFold(ch.Path, p.Field) || slices.Contains(sc.readFields, p.Field) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// symptomsFor are the predicted symptoms each failure mode can observe.
var symptomsFor = map[string][]impact.Symptom{
	ModeNullRate:  {impact.SymptomNulls},
	ModeCustom:    {impact.SymptomNulls, impact.SymptomZeros, impact.SymptomDefault, impact.SymptomConverted},
	ModeVolume:    {impact.SymptomRowsMissing, impact.SymptomStatementFailed},
	ModeFreshness: {impact.SymptomStatementFailed},
}

// symptomCheck compares the observed failure mode with what the change predicts for readers
// pinned to the version before, and says so in one sentence.
func symptomCheck(mode string, predicted []impact.View) (string, bool) {
	if len(predicted) == 0 {
		return "", false
	}
	var parts []string
	for _, p := range predicted {
		if slices.Contains(symptomsFor[mode], p.Symptom) {
			return fmt.Sprintf("the observed %s failure matches the prediction for %s: a reader pinned to the version before sees %s (%s)", mode, p.Field, p.Sees, p.Why), true
		}
		parts = append(parts, fmt.Sprintf("%s → %s", p.Field, p.Symptom))
	}
	return fmt.Sprintf("the change predicts %s for pinned readers, which a %s check would not see first: look for those symptoms too (checks that would: %s)",
		strings.Join(parts, ", "), mode, strings.Join(predicted[0].Checks, ", ")), false
}

// deserializationRE matches a reader's error about records it could not decode.
var deserializationRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)deserializ|could not be resolved|cannot be resolved|missing required field|AvroTypeException|` +
		`SchemaParseException|InvalidProtocolBuffer|does not match (the )?(reader|writer)|no default|unknown magic byte|Failed to (decode|read|parse) (record|message|value)`)
})

// tieToChange makes a failed statement or connector the evidence of the schema change that
// explains it: its error is a failure to decode, it failed after the version appeared, and the
// error names a changed field or it is a known reader of the change. The change gets the failure
// as evidence (reader, data, mode); the component is marked as its effect.
func tieToChange(in Input, cs ComponentState, comp *Candidate, schemaCands []Candidate) {
	if cs.Detail == "" || !deserializationRE().MatchString(cs.Detail) {
		return
	}
	best := -1
	named := ""
	for i, sc := range in.SchemaChanges {
		if !cs.Since.IsZero() && sc.FirstSeen.After(cs.Since) {
			continue // it failed before the version appeared
		}
		field := namedField(cs.Detail, sc)
		reads := slices.ContainsFunc(sc.Readers, func(r Reader) bool { return r.URN == cs.URN })
		if field == "" && !reads && !strings.Contains(cs.Detail, sc.Subject) {
			continue
		}
		if best < 0 || sc.FirstSeen.After(in.SchemaChanges[best].FirstSeen) {
			best, named = i, field
		}
	}
	if best < 0 {
		return
	}
	sc, c := in.SchemaChanges[best], &schemaCands[best]
	when := ""
	if !cs.Since.IsZero() {
		when = fmt.Sprintf(" at %s, %s after v%d appeared", cs.Since.UTC().Format("15:04 MST"), cs.Since.Sub(sc.FirstSeen).Round(time.Minute), sc.Version)
	}
	what := "its error is a failure to decode records"
	if named != "" {
		what = fmt.Sprintf("its error names %s, which v%d changed", named, sc.Version)
	}
	line := fmt.Sprintf("%s %s %s%s: %s (%q) — it cannot read v%d records, so the failure is this change's effect, not a rival cause",
		cs.Kind, cs.URN, strings.ToUpper(cs.State), when, what, cs.Detail, sc.Version)
	if pred := failurePrediction(sc); pred != "" {
		line += "; " + pred
	}
	c.Evidence = append(c.Evidence, line)
	for _, k := range []string{KindReader, KindData, KindMode} {
		if !has(c.Supports, k) {
			c.Supports = append(c.Supports, k)
		}
	}
	if !has(c.Supports, KindLineage) {
		c.Supports = append(c.Supports, KindLineage)
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s, which reads %s, is on the upstream path (%d hops)", cs.URN, sc.Subject, cs.Distance))
	}
	c.Score = len(c.Supports)
	comp.EffectOf = c.Source
	comp.Cause += fmt.Sprintf(" — the effect of %s", c.Cause)
}

// namedField is the changed field (old or new name) the error mentions as a word, "" if none.
func namedField(detail string, sc SchemaChange) string {
	for _, ch := range sc.Changes {
		if ch.Change == "added" {
			continue
		}
		names := append([]string{ch.Path}, sc.readFields...)
		for _, n := range names {
			if n == "" {
				continue
			}
			if regexp.MustCompile(`(?i)(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(n) + `($|[^A-Za-z0-9_])`).MatchString(detail) {
				return n
			}
		}
	}
	return ""
}

// failurePrediction is the format rule that predicted the failure, when one did.
func failurePrediction(sc SchemaChange) string {
	for _, p := range sc.Predicted {
		if p.Symptom == impact.SymptomStatementFailed || p.Symptom == impact.SymptomRowsMissing {
			return "predicted: " + p.Why
		}
	}
	return ""
}

// effectsAfterCauses moves every candidate that is another's effect to right after its cause.
func effectsAfterCauses(cands []Candidate) []Candidate {
	var effects []Candidate
	out := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if c.EffectOf != "" {
			effects = append(effects, c)
		} else {
			out = append(out, c)
		}
	}
	for _, e := range effects {
		at := len(out)
		for i, c := range out {
			if c.Source == e.EffectOf {
				at = i + 1
				for at < len(out) && out[at].EffectOf == e.EffectOf {
					at++
				}
			}
		}
		out = slices.Insert(out, at, e)
	}
	return out
}
