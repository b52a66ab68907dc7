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
	"github.com/dataworkers/dw/pkg/kafka"
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
	// Sample reads a bounded sample of a topic's recent records (kafka.Cluster.SampleTopic with
	// the registry resolving schema ids when schema_registry is configured).
	Sample func(ctx context.Context, topic string) (kafka.Sample, error)
}

// MaxSampledTopics bounds how many topics one diagnosis samples (nearest the failing asset first).
const MaxSampledTopics = 3

// Kinds of ComponentState.
const (
	ComponentConnector = "connector"
	ComponentStatement = "statement"
	ComponentTableflow = "tableflow"
)

// TopicSample is what the bounded sample of one topic on the path showed.
type TopicSample struct {
	Topic   string `json:"topic"`
	Subject string `json:"subject"`
	Records int    `json:"records"`
	// Versions is the schema-version mix: "api-usage-value v12: 20% of the sample, first at 14:10".
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
	// shares and nulls feed the schema changes: subject → version → share; subject → null rate.
	shares map[string]map[int]float64
	nulls  map[string]float64
}

func (g *Gatherer) readLive(ctx context.Context, p path, stored map[string][]storedVersion, in *Input, ev *Evidence) {
	type job func(context.Context) liveResult
	jobs := []job{
		func(ctx context.Context) liveResult { return g.connectors(ctx, p) },
		func(ctx context.Context) liveResult { return g.statements(ctx, p) },
		func(ctx context.Context) liveResult { return g.tableflows(ctx, p) },
		func(ctx context.Context) liveResult { return g.samples(ctx, p, stored) },
	}
	results := make([]liveResult, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bctx, cancel := context.WithTimeout(ctx, g.bounds)
			defer cancel()
			results[i] = j(bctx)
		}()
	}
	wg.Wait()
	for _, r := range results {
		in.Components = append(in.Components, r.components...)
		ev.Live = append(ev.Live, r.components...)
		in.Unchecked = append(in.Unchecked, r.unchecked...)
		ev.Samples = append(ev.Samples, r.samples...)
		for i := range in.SchemaChanges {
			sc := &in.SchemaChanges[i]
			if share, ok := r.shares[sc.Subject][sc.Version]; ok {
				sc.NewVersionShare = share
			}
			if rate, ok := r.nulls[sc.Subject]; ok && len(sc.OnPath) > 0 {
				sc.FieldNullRate = rate
			}
		}
	}
}

// backendErr says why a read failed, naming the bound when it was the bound that stopped it.
func (g *Gatherer) backendErr(ctx context.Context, err error) string {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s: %v", g.bounds, err)
	}
	return err.Error()
}

func (g *Gatherer) connectors(ctx context.Context, p path) liveResult {
	var r liveResult
	if len(p.connectors) == 0 {
		return r
	}
	if g.live.ConnectorStatus == nil {
		r.unchecked = append(r.unchecked, "connector and task state of "+joinURNs(p.connectors)+
			": connect not configured (set connect.url, or confluent_cloud.environment_id and kafka_cluster_id for managed connectors)")
		return r
	}
	for _, u := range p.connectors {
		name := strings.TrimPrefix(u.ID(), "connector/")
		st, err := g.live.ConnectorStatus(ctx, name)
		if err != nil {
			r.unchecked = append(r.unchecked, fmt.Sprintf("connector and task state of %s: %s", u, g.backendErr(ctx, err)))
			continue
		}
		r.components = append(r.components, connectorState(u, p.depth[u], st))
	}
	return r
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
	cs.Detail = strings.Join(details, "; ")
	return cs
}

// traceHead keeps what names a Java failure: the first line, and the last "Caused by:" line.
func traceHead(trace string) string {
	lines := strings.Split(strings.TrimSpace(trace), "\n")
	out := strings.TrimSpace(lines[0])
	for i := len(lines) - 1; i > 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "Caused by:") {
			out += " … " + l
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

func (g *Gatherer) statements(ctx context.Context, p path) liveResult {
	var r liveResult
	if len(p.statements) == 0 {
		return r
	}
	if g.live.Statement == nil {
		r.unchecked = append(r.unchecked, "Flink statement state of "+joinURNs(p.statements)+
			": confluent_cloud not configured (set confluent_cloud.flink_url, organization_id, environment_id and api_key or flink_api_key)")
		return r
	}
	for _, u := range p.statements {
		s, err := g.live.Statement(ctx, strings.TrimPrefix(u.ID(), "statement/"))
		if err != nil {
			r.unchecked = append(r.unchecked, fmt.Sprintf("Flink statement state of %s: %s", u, g.backendErr(ctx, err)))
			continue
		}
		r.components = append(r.components, statementState(u, p.depth[u], s))
	}
	return r
}

// statementState is the statement's phase. Since is status.end_time when the API gives one, else
// metadata.updated_at for a stopped statement (stopping is a spec change, so it sets updated_at);
// a FAILED phase without end_time has no time we can trust, so none is claimed.
func statementState(u graph.URN, depth int, s confluent.Statement) ComponentState {
	cs := ComponentState{URN: string(u), Kind: ComponentStatement, State: s.Phase, Distance: depth}
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
	cs.Detail = strings.Join(details, "; ")
	return cs
}

func (g *Gatherer) tableflows(ctx context.Context, p path) liveResult {
	var r liveResult
	if len(p.tableflows) == 0 {
		return r
	}
	if g.live.Tableflow == nil {
		r.unchecked = append(r.unchecked, "Tableflow status of "+joinURNs(p.tableflows)+
			": confluent_cloud not configured (set confluent_cloud.api_key, api_secret, environment_id and kafka_cluster_id)")
		return r
	}
	for _, u := range p.tableflows {
		t, err := g.live.Tableflow(ctx, u.ID())
		if err != nil {
			r.unchecked = append(r.unchecked, fmt.Sprintf("Tableflow status of %s: %s", u, g.backendErr(ctx, err)))
			continue
		}
		r.components = append(r.components, tableflowState(u, p.depth[u], t))
	}
	return r
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
	cs.Detail = strings.Join(details, "; ")
	return cs
}

// samples reads the recent records of the topics the on-path subjects describe: each version's
// share of the sample, and the null-or-missing rate of the failing field's source fields (missing
// counts as null: that is how a reader pinned to an older version sees a removed field).
func (g *Gatherer) samples(ctx context.Context, p path, stored map[string][]storedVersion) liveResult {
	r := liveResult{shares: map[string]map[int]float64{}, nulls: map[string]float64{}}
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
		return targets[i].topic < targets[j].topic
	})
	if g.live.Sample == nil {
		var names []graph.URN
		for _, t := range targets {
			names = append(names, t.topic)
		}
		r.unchecked = append(r.unchecked, "schema-version mix and source null rate of recent records in "+joinURNs(names)+
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
		s, err := g.live.Sample(ctx, topic)
		if err != nil {
			r.unchecked = append(r.unchecked, fmt.Sprintf("schema-version mix of %s: %s", t.topic, g.backendErr(ctx, err)))
			continue
		}
		ts := TopicSample{Topic: topic, Subject: t.subject, Records: s.Records, Versions: []string{}, Summary: s.Summary}
		named := false
		latestStored := 0
		if vs := stored[t.subject]; len(vs) > 0 {
			latestStored = vs[len(vs)-1].version
		}
		for _, v := range s.Versions {
			ts.Versions = append(ts.Versions, fmt.Sprintf("%s: %.0f%% of the sample, first at %s", v.Label, 100*v.Share, v.FirstSeen.UTC().Format(time.RFC3339)))
			if v.Subject != t.subject {
				continue
			}
			named = true
			if r.shares[t.subject] == nil {
				r.shares[t.subject] = map[int]float64{}
			}
			r.shares[t.subject][v.Version] = max(r.shares[t.subject][v.Version], v.Share)
			if v.Version > latestStored {
				r.unchecked = append(r.unchecked, fmt.Sprintf("%s v%d is in recent records of %s but not in the store, so it was not diffed (record the subject's versions with dw-schema and diagnose again)",
					t.subject, v.Version, topic))
			}
		}
		switch {
		case s.Framed > 0 && !named:
			r.unchecked = append(r.unchecked, fmt.Sprintf("schema-version mix of %s: schema ids could not be named (set schema_registry.url)", topic))
		case named:
			// Versions the sample decoded but that never wrote this subject's version: a share of 0 is measured.
			for _, vs := range stored[t.subject] {
				if _, ok := r.shares[t.subject][vs.version]; !ok {
					r.shares[t.subject][vs.version] = 0
				}
			}
		}
		if s.Decoded > 0 {
			ts.FieldNullRates = map[string]float64{}
			for f := range p.subjects[t.subject].fields {
				rate := 1.0 // no decoded record carries the field: every reader expecting it sees null
				for _, fs := range s.Fields {
					if fs.Field == f {
						rate = fs.NullRate
					}
				}
				ts.FieldNullRates[f] = rate
				r.nulls[t.subject] = max(r.nulls[t.subject], rate)
			}
		}
		r.samples = append(r.samples, ts)
	}
	return r
}
