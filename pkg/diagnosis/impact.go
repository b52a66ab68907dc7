package diagnosis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
)

// SeverityRule is how the blast radius sets an incident's severity, stated in every diagnosis:
//
//	sev1  the failing asset or anything downstream is tagged money or customer_facing, is an
//	      external sink (sink:*, kind external_sink), or is a job that pushes to one
//	sev2  anything else is downstream
//	sev3  nothing is downstream
//
// and a severity a person set (incidents.SetSeverity) is never lowered by it.
const SeverityRule = "sev1 when the failing asset or anything downstream of it is tagged money or customer_facing, " +
	"is an external sink (sink:*, kind external_sink) or is a job that pushes to one; sev2 when anything else is downstream; " +
	"sev3 when nothing is. A severity a person set is never lowered."

// Severities the rule assigns.
const (
	Sev1 = "sev1"
	Sev2 = "sev2"
	Sev3 = "sev3"
)

// Impact is what the failure reaches downstream and the severity that follows from it.
type Impact struct {
	// From is where the blast radius starts: the failing column for a null rate, else the asset.
	From        graph.FieldRef    `json:"from"`
	BlastRadius graph.BlastRadius `json:"blast_radius"`
	// SinkJobs are the jobs that push to an external sink (the failing asset itself when it is one,
	// then the downstream ones), with their next run: what to hold first.
	SinkJobs []SinkJob `json:"sink_jobs" jsonschema:"Jobs that push to an external sink (the failing job itself, or downstream ones), with their next run: hold these first"`
	Severity string    `json:"severity,omitempty" jsonschema:"What the rule gives (sev1, sev2 or sev3), empty when the asset is not in the context graph; the incident keeps a worse one a person set"`
	// Why names the assets that decided the severity.
	Why    string `json:"why" jsonschema:"The assets that decided the severity"`
	Rule   string `json:"rule"`
	Domain string `json:"domain,omitempty" jsonschema:"The config domain whose asset patterns match the failing asset"`
}

// SinkJob is a downstream job that pushes data to an external sink.
type SinkJob struct {
	Job     graph.URN   `json:"job"`
	Sinks   []graph.URN `json:"sinks"`
	NextRun *time.Time  `json:"next_run,omitempty"`
	Note    string      `json:"note,omitempty"`
}

// columnImpact reports whether a failure reaches only the readers of the failing column. The rule
// differs from lineage's (valueMode): nulls in one column hit only what reads that column, but
// duplicate rows (uniqueness) and rows breaking a custom check are wrong for every reader of the
// table, as are staleness and missing volume.
func columnImpact(mode string) bool { return nullLike(mode) }

// impact computes the blast radius of the failure and the severity the rule gives it. A null rate
// starts from the failing column (a model reading other columns is not hit); every other failure
// starts from the whole asset.
func (g *Gatherer) impact(ctx context.Context, inc incidents.Incident, ev Evidence) (Impact, error) {
	asset := graph.URN(inc.Asset)
	imp := Impact{From: graph.FieldRef{Asset: asset}, Rule: SeverityRule, SinkJobs: []SinkJob{}}
	if d, ok := g.cfg.DomainFor(inc.Asset); ok {
		imp.Domain = d.Name
	}
	self, err := g.g.Get(ctx, asset)
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		// Unknown is not "nothing downstream": the severity is left as it is.
		imp.Why = inc.Asset + " is not in the context graph, so nothing is known downstream and the severity is left as it was (run sync_catalog or import_dbt_manifest)"
		imp.BlastRadius = graph.BlastRadius{Start: []graph.FieldRef{imp.From}, FieldLevel: []graph.Impact{}, TableLevel: []graph.Impact{},
			BySystem: []graph.SystemGroup{}, Owners: []graph.OwnerNotice{}, Critical: []graph.URN{}, ExternalSinks: []graph.URN{}, ScheduledJobs: []graph.ScheduledJob{}}
		return imp, nil
	}
	if err != nil {
		return imp, err
	}
	req := graph.BlastRadiusRequest{Asset: asset}
	if columnImpact(inc.FailureMode) {
		f, err := graphField(ctx, g.g, asset, ev.Column)
		if err != nil {
			return imp, err
		}
		if f != "" {
			req.Fields = []string{f}
			imp.From = asset.Field(f)
		}
	}
	br, err := g.g.BlastRadius(ctx, req)
	if err != nil {
		return imp, fmt.Errorf("blast radius of %s: %w", imp.From, err)
	}
	imp.BlastRadius = br
	impacts := append(append([]graph.Impact{}, br.FieldLevel...), br.TableLevel...)
	// The failing asset itself, when a job, is the first thing to hold.
	if isJob(self.System, self.Kind) {
		sinks, err := g.pushesTo(ctx, self.URN, br.ExternalSinks)
		if err != nil {
			return imp, err
		}
		if len(sinks) > 0 {
			imp.SinkJobs = append(imp.SinkJobs, SinkJob{Job: self.URN, Sinks: sinks, Note: "the failing asset itself"})
		}
	}
	for _, im := range impacts {
		if !isJob(im.System, im.Kind) {
			continue
		}
		sinks, err := g.pushesTo(ctx, im.URN, br.ExternalSinks)
		if err != nil {
			return imp, err
		}
		if len(sinks) == 0 {
			continue
		}
		sj := SinkJob{Job: im.URN, Sinks: sinks}
		for _, j := range br.ScheduledJobs {
			if j.URN == im.URN {
				sj.NextRun, sj.Note = j.NextRun, j.Note
			}
		}
		imp.SinkJobs = append(imp.SinkJobs, sj)
	}
	imp.Severity, imp.Why = severity(self, impacts, br, imp.SinkJobs)
	return imp, nil
}

func isJob(system, kind string) bool { return system == graph.SystemJob || kind == graph.KindJob }

// pushesTo lists the external sinks job syncs to (current syncs_to edges): those in the blast
// radius's list, or any asset of the sink system or kind external_sink.
func (g *Gatherer) pushesTo(ctx context.Context, job graph.URN, known []graph.URN) ([]graph.URN, error) {
	edges, _, err := g.g.Neighbours(ctx, job, graph.Downstream)
	if err != nil {
		return nil, err
	}
	var sinks []graph.URN
	for _, e := range edges {
		to := e.To.Asset
		if e.Kind != graph.EdgeSyncsTo || e.Stale || slices.Contains(sinks, to) {
			continue
		}
		sink := slices.Contains(known, to) || to.System() == graph.SystemSink
		if !sink {
			a, err := g.g.Get(ctx, to)
			sink = err == nil && a.Kind == graph.KindExternalSink
		}
		if sink {
			sinks = append(sinks, to)
		}
	}
	return sinks, nil
}

// severity applies SeverityRule.
func severity(self graph.Asset, impacts []graph.Impact, br graph.BlastRadius, jobs []SinkJob) (string, string) {
	var reasons []string
	if t := moneyTags(self.Tags); t != "" {
		reasons = append(reasons, fmt.Sprintf("%s itself is tagged %s", self.URN, t))
	}
	if self.Kind == graph.KindExternalSink || self.URN.System() == graph.SystemSink {
		reasons = append(reasons, fmt.Sprintf("%s itself is an external sink", self.URN))
	}
	for _, im := range impacts {
		if t := moneyTags(im.Tags); t != "" {
			reasons = append(reasons, fmt.Sprintf("%s is tagged %s", im.URN, t))
		}
	}
	for _, s := range br.ExternalSinks {
		reasons = append(reasons, fmt.Sprintf("%s is an external sink", s))
	}
	for _, j := range jobs {
		r := fmt.Sprintf("%s pushes to %s", j.Job, joinURNs(j.Sinks))
		if j.NextRun != nil {
			r += " next at " + j.NextRun.UTC().Format("2006-01-02 15:04 MST")
		}
		reasons = append(reasons, r)
	}
	switch {
	case len(reasons) > 0:
		return Sev1, strings.Join(dedupe(reasons), "; ")
	case br.Total > 0:
		return Sev2, fmt.Sprintf("%d downstream assets, none tagged money or customer_facing and no external sink", br.Total)
	}
	return Sev3, "nothing is downstream of " + string(self.URN) + " in the context graph"
}

func moneyTags(tags []string) string {
	var out []string
	for _, t := range tags {
		if t == graph.TagMoney || t == graph.TagCustomerFacing {
			out = append(out, t)
		}
	}
	return strings.Join(out, " and ")
}

func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Record stores the report on the incident in one transaction: the report as JSON and its cause,
// then the domain and the rule's severity, which never lowers a severity a person set
// (incidents.RecordDiagnosisAndSeverity). It returns the severity the incident now has.
func Record(ctx context.Context, s *incidents.Store, r Report, actor string) (string, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode the diagnosis of incident %d: %w", r.Incident.ID, err)
	}
	domain := r.Impact.Domain
	if domain == "" {
		domain = r.Incident.Domain
	}
	// Severity "" (no blast radius could be computed) keeps the incident's.
	return s.RecordDiagnosisAndSeverity(ctx, r.Incident.ID, string(raw), r.Cause, domain, r.Impact.Severity, actor, "blast radius: "+r.Impact.Why)
}
