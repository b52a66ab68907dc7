package diagnosis

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/httpapi"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// Live reads the live state of what lies on the failing path. The agent builds each reader from
// pkg/connect, pkg/confluent and pkg/kafka; a nil reader is a backend that is not configured, and
// is named in Unchecked with the config key to set. A reader that errors is named with its error:
// a backend being down never fails the diagnosis.
type Live struct {
	// ConnectorStatus is GET /connectors/{name}/status (connect.Client.Status).
	ConnectorStatus func(ctx context.Context, name string) (connect.Status, error)
	// Statement reads one Flink statement (confluent.Client.GetStatement).
	Statement func(ctx context.Context, name string) (confluent.Statement, error)
	// Tableflow reads one topic's Tableflow (confluent.Client.GetTableflowTopic).
	Tableflow func(ctx context.Context, topic string) (confluent.TableflowTopic, error)
	// Sample reads a bounded sample of a topic (kafka.SampleFromConfig); the diagnosis asks for a
	// time range from the look-back before the onset, so the sample spans the onset.
	Sample func(ctx context.Context, topic string, opt kafka.SampleOptions) (kafka.Sample, error)
}

// MaxSampledTopics bounds how many topics one diagnosis samples (nearest the failing asset first).
const MaxSampledTopics = 3

// Kinds of ComponentState.
const (
	ComponentConnector = "connector"
	ComponentStatement = "statement"
	ComponentTableflow = "tableflow"
)

// StateNotFound is a component on the path its backend answered 404 for: deleted or renamed,
// which stops whatever it fed.
const StateNotFound = "NOT_FOUND"

// TopicSample is what the bounded sample of one topic on the path showed.
type TopicSample struct {
	Topic   string `json:"topic"`
	Subject string `json:"subject"`
	// Since is the start of the sampled range: the look-back before the onset.
	Since   time.Time `json:"since" jsonschema:"Start of the sampled range: the look-back before the onset"`
	Records int       `json:"records"`
	// Versions is the schema-version mix: "api-usage-value v12: 20% of the sample, earliest in the sample at 14:10".
	Versions []string `json:"versions"`
	// FieldNullRates are the on-path source fields' null-or-missing rates in the decoded records.
	FieldNullRates map[string]float64 `json:"field_null_rates,omitempty"`
	Summary        []string           `json:"summary"`
}

// liveResult is one backend's contribution, merged in a fixed order so output is stable.
type liveResult struct {
	components []ComponentState
	unchecked  []string
	samples    []TopicSample
	// sampled are the samples read, by the subject describing the topic.
	sampled map[string][]kafka.Sample
}

// errBackendBound is the cause of a per-backend context that reached the Gatherer's bound.
var errBackendBound = errors.New("backend bound reached")

func (g *Gatherer) readLive(ctx context.Context, p path, stored map[string][]storedVersion, since time.Time) liveResult {
	jobs := []func(context.Context) liveResult{
		func(ctx context.Context) liveResult {
			return readComponents(ctx, g, p, p.connectors, componentReader[connect.Status]{
				kind: ComponentConnector, what: "connector and task state",
				notConfigured: "connect not configured (set connect.url, or confluent_cloud.environment_id and kafka_cluster_id for managed connectors)",
				read:          g.live.ConnectorStatus, name: func(u graph.URN) string { return strings.TrimPrefix(u.ID(), "connector/") },
				state: connectorState, goneIsFinding: true})
		},
		func(ctx context.Context) liveResult {
			return readComponents(ctx, g, p, p.statements, componentReader[confluent.Statement]{
				kind: ComponentStatement, what: "Flink statement state",
				notConfigured: "confluent_cloud not configured (set confluent_cloud.flink_url, organization_id, environment_id and api_key or flink_api_key)",
				read:          g.live.Statement, name: func(u graph.URN) string { return strings.TrimPrefix(u.ID(), "statement/") },
				state: statementState, goneIsFinding: true})
		},
		func(ctx context.Context) liveResult {
			return readComponents(ctx, g, p, p.tableflows, componentReader[confluent.TableflowTopic]{
				kind: ComponentTableflow, what: "Tableflow status",
				notConfigured: "confluent_cloud not configured (set confluent_cloud.api_key, api_secret, environment_id and kafka_cluster_id)",
				read:          g.live.Tableflow, name: graph.URN.ID, state: tableflowState})
		},
		func(ctx context.Context) liveResult { return g.samples(ctx, p, stored, since) },
	}
	results := make([]liveResult, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bctx, cancel := context.WithTimeoutCause(ctx, g.bounds, errBackendBound)
			defer cancel()
			results[i] = j(bctx)
		}()
	}
	wg.Wait()
	out := liveResult{sampled: map[string][]kafka.Sample{}}
	for _, r := range results {
		for _, c := range r.components {
			c.Detail = g.redact(c.Detail) // URL secrets went part by part where the detail was built
			out.components = append(out.components, c)
		}
		for _, u := range r.unchecked {
			out.unchecked = append(out.unchecked, g.scrub(u))
		}
		out.samples = append(out.samples, r.samples...)
		for subject, ss := range r.sampled {
			out.sampled[subject] = append(out.sampled[subject], ss...)
		}
	}
	return out
}

// scrub removes secrets from an error text a backend gave: the userinfo and secret parameters of
// URLs, line by line, then every configured secret.
func (g *Gatherer) scrub(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = connect.RedactURL(l)
	}
	return g.redact(strings.Join(lines, "\n"))
}

// backendErr says why a read failed, naming the bound only when it was the bound that stopped it
// (not the caller cancelling).
func (g *Gatherer) backendErr(ctx context.Context, err error) string {
	switch {
	case errors.Is(context.Cause(ctx), errBackendBound):
		return fmt.Sprintf("no answer within %s: %v", g.bounds, err)
	case ctx.Err() != nil:
		return fmt.Sprintf("not read, the diagnosis was cancelled: %v", err)
	}
	return err.Error()
}

// componentReader is how one kind of component on the path is read and judged.
type componentReader[T any] struct {
	kind, what, notConfigured string
	read                      func(context.Context, string) (T, error)
	name                      func(graph.URN) string
	state                     func(graph.URN, int, T) ComponentState
	// goneIsFinding: a 404 means the component was deleted (connectors, statements). A Tableflow
	// 404 means the topic never had Tableflow enabled here, which the lineage cannot tell apart.
	goneIsFinding bool
}

// readComponents reads each component with r: its state, NOT_FOUND when the backend answers 404
// for a kind that is deleted that way (a deleted component is a finding), or an Unchecked line
// naming the error.
func readComponents[T any](ctx context.Context, g *Gatherer, p path, us []graph.URN, r componentReader[T]) liveResult {
	var out liveResult
	if len(us) == 0 {
		return out
	}
	if r.read == nil {
		out.unchecked = append(out.unchecked, r.what+" of "+joinURNs(us)+": "+r.notConfigured)
		return out
	}
	for _, u := range us {
		v, err := r.read(ctx, r.name(u))
		switch {
		case err != nil && r.goneIsFinding && httpapi.IsNotFound(err):
			out.components = append(out.components, ComponentState{URN: string(u), Kind: r.kind, State: StateNotFound, Distance: p.depth[u],
				Detail: joinDetails([]string{"the lineage has it on the path but its backend does not know it (deleted or renamed): " + err.Error()})})
		case err != nil:
			out.unchecked = append(out.unchecked, fmt.Sprintf("%s of %s: %s", r.what, u, g.backendErr(ctx, err)))
		default:
			out.components = append(out.components, r.state(u, p.depth[u], v))
		}
	}
	return out
}

// connectorState is the connector's own state, or FAILED when it runs but a task failed; the
// detail carries each failed task's exception (the trace's first line and its last cause).
func connectorState(u graph.URN, depth int, st connect.Status) ComponentState {
	cs := ComponentState{URN: string(u), Kind: ComponentConnector, State: st.Connector.State, Distance: depth}
	var details []string
	if st.Connector.Trace != "" {
		details = append(details, "connector "+st.Connector.State+": "+traceHead(st.Connector.Trace))
	}
	failed := 0
	for _, t := range st.Tasks {
		if t.State != "FAILED" {
			continue
		}
		failed++
		d := fmt.Sprintf("task %d FAILED", t.ID)
		if t.Trace != "" {
			d += ": " + traceHead(t.Trace)
		}
		details = append(details, d)
	}
	if failed > 0 && strings.EqualFold(cs.State, "RUNNING") {
		cs.State = "FAILED"
		details = append([]string{fmt.Sprintf("%d of %d tasks FAILED while the connector is RUNNING", failed, len(st.Tasks))}, details...)
	}
	cs.Detail = joinDetails(details)
	return cs
}

// joinDetails joins detail parts, each cleared of URL secrets first: RedactURL reads one value,
// so it runs before the parts share a line.
func joinDetails(parts []string) string {
	for i, p := range parts {
		lines := strings.Split(p, "\n")
		for j, l := range lines {
			lines[j] = connect.RedactURL(l)
		}
		parts[i] = strings.Join(lines, "\n")
	}
	return strings.Join(parts, "; ")
}

// traceHead keeps what names a Java failure: the first line, and the last "Caused by:" line, each
// cleared of URL secrets (a JDBC URL with its password is a common exception message).
func traceHead(trace string) string {
	lines := strings.Split(strings.TrimSpace(trace), "\n")
	out := connect.RedactURL(strings.TrimSpace(lines[0]))
	for i := len(lines) - 1; i > 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "Caused by:") {
			out += " … " + connect.RedactURL(l)
			break
		}
	}
	if cut := 400; len(out) > cut {
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut-- // never split a character
		}
		out = out[:cut] + "…"
	}
	return out
}

// statementState is the statement's phase. Since is status.end_time when the API gives one, else
// metadata.updated_at for a stopped statement (stopping is a spec change, so it sets updated_at);
// a FAILED phase without end_time has no time we can trust, so none is claimed. A statement is
// streaming unless the API says it is bounded.
func statementState(u graph.URN, depth int, s confluent.Statement) ComponentState {
	cs := ComponentState{URN: string(u), Kind: ComponentStatement, State: s.Phase, Distance: depth, Streaming: s.IsBounded == nil || !*s.IsBounded}
	switch {
	case s.EndTime != nil:
		cs.Since = s.EndTime.UTC()
	case s.Stopped && s.UpdatedAt != nil:
		cs.Since = s.UpdatedAt.UTC()
	}
	var details []string
	if s.Detail != "" {
		details = append(details, s.Detail)
	}
	details = append(details, s.Warnings...)
	cs.Detail = joinDetails(details)
	return cs
}

// tableflowState: SUSPENDED when suspended (since metadata.updated_at: suspension is a spec
// change), the phase when it is not RUNNING, DEGRADED when it runs but a table format or a catalog
// sync fails.
func tableflowState(u graph.URN, depth int, t confluent.TableflowTopic) ComponentState {
	cs := ComponentState{URN: string(u), Kind: ComponentTableflow, State: t.Phase, Distance: depth}
	var details []string
	if t.ErrorMessage != "" {
		details = append(details, t.ErrorMessage)
	}
	for _, f := range t.FailingFormats {
		details = append(details, fmt.Sprintf("%s format failing: %s", f.Format, f.ErrorMessage))
	}
	syncFailed := false
	for _, s := range t.CatalogSync {
		if s.SyncStatus == "FAILED" || s.SyncStatus == "DISCONNECTED" {
			syncFailed = true
			details = append(details, fmt.Sprintf("catalog %s (%s) sync %s: %s", s.CatalogIntegrationID, s.CatalogType, s.SyncStatus, s.ErrorMessage))
		}
	}
	switch {
	case t.Suspended:
		cs.State = "SUSPENDED"
		if t.UpdatedAt != nil {
			cs.Since = t.UpdatedAt.UTC()
		}
	case strings.EqualFold(t.Phase, "RUNNING") && (len(t.FailingFormats) > 0 || syncFailed):
		cs.State = "DEGRADED"
	}
	cs.Detail = joinDetails(details)
	return cs
}

// samples reads the records of the topics the on-path subjects describe, from since (the
// look-back before the onset) on, in bounded runs spread over the range so the sample spans the
// onset: each version's share and earliest record in the sample, and the on-path source fields'
// null-or-missing rates (missing counts as null: that is how a reader pinned to an older version
// sees a removed field).
func (g *Gatherer) samples(ctx context.Context, p path, stored map[string][]storedVersion, since time.Time) liveResult {
	r := liveResult{sampled: map[string][]kafka.Sample{}}
	type target struct {
		topic    graph.URN
		subject  string
		distance int
	}
	var targets []target
	for _, name := range p.subjectNames() {
		sj := p.subjects[name]
		for t := range sj.topics {
			if t.System() == graph.SystemKafka && strings.HasPrefix(t.ID(), "topic/") {
				targets = append(targets, target{t, name, p.depth[t]})
			}
		}
	}
	if len(targets) == 0 {
		return r
	}
	sort.Slice(targets, func(i, j int) bool {
		if targets[i].distance != targets[j].distance {
			return targets[i].distance < targets[j].distance
		}
		if targets[i].topic != targets[j].topic {
			return targets[i].topic < targets[j].topic
		}
		return targets[i].subject < targets[j].subject
	})
	if g.live.Sample == nil {
		var names []graph.URN
		for _, t := range targets {
			names = append(names, t.topic)
		}
		r.unchecked = append(r.unchecked, "schema-version mix and source null rate of the records in "+joinURNs(names)+
			": kafka not configured (set kafka.bootstrap_servers)")
		return r
	}
	if len(targets) > MaxSampledTopics {
		var skipped []graph.URN
		for _, t := range targets[MaxSampledTopics:] {
			skipped = append(skipped, t.topic)
		}
		r.unchecked = append(r.unchecked, fmt.Sprintf("schema-version mix of %s: not sampled (a diagnosis samples the %d nearest topics; use sample_topic)", joinURNs(skipped), MaxSampledTopics))
		targets = targets[:MaxSampledTopics]
	}
	for _, t := range targets {
		topic := strings.TrimPrefix(t.topic.ID(), "topic/")
		s, err := g.live.Sample(ctx, topic, kafka.SampleOptions{Since: since})
		if err != nil {
			r.unchecked = append(r.unchecked, fmt.Sprintf("schema-version mix of %s: %s", t.topic, g.backendErr(ctx, err)))
			continue
		}
		r.sampled[t.subject] = append(r.sampled[t.subject], s)
		ts := TopicSample{Topic: topic, Subject: t.subject, Since: since.UTC(), Records: s.Records, Versions: []string{}, Summary: s.Summary}
		named := false
		latestStored := 0
		if vs := stored[t.subject]; len(vs) > 0 {
			latestStored = vs[len(vs)-1].version
		}
		for _, v := range s.Versions {
			ts.Versions = append(ts.Versions, fmt.Sprintf("%s: %.0f%% of the sample, earliest in the sample at %s", v.Label, 100*v.Share, v.FirstSeen.UTC().Format(time.RFC3339)))
			if v.Subject != t.subject {
				continue
			}
			named = true
			if v.Version > latestStored {
				r.unchecked = append(r.unchecked, fmt.Sprintf("%s v%d is in the records of %s (earliest in the sample at %s) but not in the store, so it was not diffed (record the subject's versions with dw-schema and diagnose again)",
					t.subject, v.Version, topic, v.FirstSeen.UTC().Format(time.RFC3339)))
			}
		}
		if s.Framed > 0 && !named {
			r.unchecked = append(r.unchecked, fmt.Sprintf("schema-version mix of %s: schema ids could not be named (set schema_registry.url)", topic))
		}
		if s.Decoded > 0 {
			ts.FieldNullRates = map[string]float64{}
			for f := range p.subjects[t.subject].fields {
				ts.FieldNullRates[f] = overallNullRate(s, f)
			}
		}
		r.samples = append(r.samples, ts)
	}
	return r
}

// overallNullRate is field's null-or-missing rate over a sample's decoded records: 1 when no decoded
// record carries it (every reader expecting it sees null).
func overallNullRate(s kafka.Sample, field string) float64 {
	for _, fs := range s.Fields {
		if fs.Field == field {
			return fs.NullRate
		}
	}
	return 1
}

// named reports whether any sample named a version of subject (the registry resolved its ids).
func named(samples []kafka.Sample, subject string) bool {
	for _, s := range samples {
		for _, v := range s.Versions {
			if v.Subject == subject {
				return true
			}
		}
	}
	return false
}

// versionShare is version's largest share of a sample of subject's topics: 0 when named samples
// hold none of it, -1 when no sample named the subject's versions.
func versionShare(samples []kafka.Sample, subject string, version int) float64 {
	if !named(samples, subject) {
		return -1
	}
	share := 0.0
	for _, s := range samples {
		for _, v := range s.Versions {
			if v.Subject == subject && v.Version == version {
				share = max(share, v.Share)
			}
		}
	}
	return share
}

// earliestInSample is the earliest record of subject's version in the samples.
func earliestInSample(samples []kafka.Sample, subject string, version int) (time.Time, bool) {
	var first time.Time
	for _, s := range samples {
		for _, v := range s.Versions {
			if v.Subject == subject && v.Version == version && (first.IsZero() || v.FirstSeen.Before(first)) {
				first = v.FirstSeen
			}
		}
	}
	return first, !first.IsZero()
}

// nullSplit is field's null-or-missing rate among the decoded records written with version or a
// later one, and among those written with an earlier one, each weighted by the version's records.
// n counts the records behind each rate (0: no such records were decoded).
func nullSplit(samples []kafka.Sample, subject string, version int, field string) (newer, older float64, nNew, nOld int) {
	var sumNew, sumOld float64
	for _, s := range samples {
		if s.Decoded == 0 {
			continue
		}
		var fs *kafka.FieldStat
		for i := range s.Fields {
			if s.Fields[i].Field == field {
				fs = &s.Fields[i]
			}
		}
		for _, v := range s.Versions {
			if v.Subject != subject {
				continue
			}
			rate := 1.0 // no decoded record carries the field
			if fs != nil {
				r, ok := fs.ByVersion[v.Label]
				if !ok {
					continue // none of this version's records were decoded
				}
				rate = r
			}
			if v.Version >= version {
				sumNew += rate * float64(v.Records)
				nNew += v.Records
			} else {
				sumOld += rate * float64(v.Records)
				nOld += v.Records
			}
		}
	}
	if nNew > 0 {
		newer = sumNew / float64(nNew)
	}
	if nOld > 0 {
		older = sumOld / float64(nOld)
	}
	return newer, older, nNew, nOld
}

// measure sets what the samples show about sc: the version's share, and the on-path fields' null
// rate among its records against older ones. Data counts only when the newer records are nullier;
// otherwise the rates stay -1 and the reason is returned for Unchecked.
func measure(sc *SchemaChange, samples []kafka.Sample) []string {
	sc.NewValues = newValues(sc, samples)
	for _, nv := range sc.NewValues {
		vc := impact.ValueChange{Field: nv.Field, NewValues: nv.Values, Source: "topic sample"}
		for i := range sc.Readers {
			if r := &sc.Readers[i]; r.sql != "" {
				r.Reads = append(r.Reads, impact.ReadsOf(r.sql, r.table, nv.Field, impact.View{}, &vc)...)
			}
		}
	}
	if len(samples) == 0 {
		return nil // the sample's own line in Unchecked says why
	}
	sc.NewVersionShare = versionShare(samples, sc.Subject, sc.Version)
	if len(sc.readFields) == 0 || sc.NewVersionShare < 0 {
		return nil
	}
	name := fmt.Sprintf("%s v%d", sc.Subject, sc.Version)
	best, bestGap := "", 0.0
	var why []string
	for _, f := range sc.readFields {
		newer, older, nNew, nOld := nullSplit(samples, sc.Subject, sc.Version, f)
		switch {
		case nNew == 0:
			why = append(why, fmt.Sprintf("%s: null rate of %s not compared, the sample holds no decoded v%d-or-later records", name, f, sc.Version))
		case nOld == 0:
			why = append(why, fmt.Sprintf("%s: null rate of %s not compared, the sample holds no decoded records older than v%d", name, f, sc.Version))
		case newer <= older:
			why = append(why, fmt.Sprintf("%s: %s is null or missing in %.0f%% of v%d-or-later records and %.0f%% of older ones in the sample, so the data does not show v%d adding nulls",
				name, f, 100*newer, sc.Version, 100*older, sc.Version))
		case newer-older > bestGap:
			best, bestGap = f, newer-older
			sc.FieldNullRate, sc.OlderNullRate = newer, older
		}
	}
	if best != "" {
		sc.NullField = best
		return nil
	}
	return why
}

// newValues are the new values of the change's on-path fields (its changed fields when only
// table-level lineage links the subject, as for a volume incident): the enum symbols the version
// declares (known before any record carries them) and the values that, in the sample, only
// records of this version or later carry (a new code that readers comparing values may drop).
func newValues(sc *SchemaChange, samples []kafka.Sample) []ValuesSeen {
	var out []ValuesSeen
	isNew := func(v kafka.VersionStat) bool { return v.Subject == sc.Subject && v.Version >= sc.Version }
	fields := sc.OnPath
	if len(fields) == 0 && sc.SubjectUpstream {
		for _, ch := range sc.Changes {
			fields = append(fields, ch.Path)
		}
	}
	for _, field := range fields {
		seen := map[string]bool{}
		var vals []string
		for _, ch := range sc.Changes {
			if ch.Path == field && ch.Change == "enum_symbols_added" {
				for _, v := range ch.SymbolsAdded {
					if !seen[v] {
						seen[v] = true
						vals = append(vals, v)
					}
				}
			}
		}
		declared, inSample := len(vals) > 0, false
		for _, s := range samples {
			for _, v := range s.NewValues(field, isNew) {
				inSample = true
				if !seen[v] {
					seen[v] = true
					vals = append(vals, v)
				}
			}
		}
		from := ValuesFromSample
		switch {
		case declared && inSample:
			from = ValuesFromBoth
		case declared:
			from = ValuesFromSchema
		}
		if len(vals) > 0 {
			out = append(out, ValuesSeen{Field: field, Values: vals, From: from})
		}
	}
	return out
}
