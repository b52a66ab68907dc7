package diagnosis

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/connect"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
)

// storyOnset is the first failing point the fixture's history records.
var storyOnset = time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC)

// usageSample is a decoded sample of api-usage: v11 and v12 records with response_bytes null or
// missing at the given rates, v12 earliest at v12First.
func usageSample(v11Null, v12Null float64, v12First time.Time) kafka.Sample {
	return kafka.Sample{Topic: "api-usage", Mode: "range", Records: 200, Framed: 200, Decoded: 200,
		Versions: []kafka.VersionStat{
			{Label: "api-usage-value v11", Subject: "api-usage-value", Version: 11, SchemaID: 11, Records: 160, Share: 0.8, FirstSeen: v12First.Add(-time.Hour)},
			{Label: "api-usage-value v12", Subject: "api-usage-value", Version: 12, SchemaID: 12, Records: 40, Share: 0.2, FirstSeen: v12First},
		},
		Fields: []kafka.FieldStat{{Field: "response_bytes", Records: 200, NullRate: (160*v11Null + 40*v12Null) / 200,
			ByVersion: map[string]float64{"api-usage-value v11": v11Null, "api-usage-value v12": v12Null}}},
		Summary: []string{}}
}

func fixedSample(s kafka.Sample, seen *kafka.SampleOptions) func(context.Context, string, kafka.SampleOptions) (kafka.Sample, error) {
	var mu sync.Mutex
	return func(_ context.Context, topic string, opt kafka.SampleOptions) (kafka.Sample, error) {
		mu.Lock()
		defer mu.Unlock()
		if seen != nil {
			*seen = opt
		}
		s.Topic = topic
		return s, nil
	}
}

// A null rate counts as data only when records written with the new version are nullier than
// older ones: the same 10% in both is not evidence, and says so.
func TestANullRateCountsOnlyWhenTheNewVersionIsNullier(t *testing.T) {
	for _, tc := range []struct {
		name           string
		v11, v12       float64
		data           bool
		uncheckedWants string
	}{
		{"v12 drops the field", 0.1, 1, true, ""},
		{"the same nulls before and after", 0.1, 0.1, false, "10% of v12-or-later records and 10% of older ones"},
		{"fewer nulls after", 0.3, 0, false, "so the data does not show v12 adding nulls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := story(t, scenarioSchema(t, 12))
			inc := f.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes")
			var opt kafka.SampleOptions
			rep := f.diagnose(t, inc, Live{Sample: fixedSample(usageSample(tc.v11, tc.v12, time.Date(2026, 8, 14, 14, 10, 0, 0, time.UTC)), &opt)}, nil)
			var sc SchemaChange
			for _, c := range rep.Input.SchemaChanges {
				if c.Version == 12 {
					sc = c
				}
			}
			if (sc.FieldNullRate >= 0) != tc.data || (sc.OlderNullRate >= 0) != tc.data {
				t.Fatalf("null rates %v / %v, want data %v", sc.FieldNullRate, sc.OlderNullRate, tc.data)
			}
			top := rep.Result.Candidates[0]
			ev := strings.Join(top.Evidence, "\n")
			if got := strings.Contains(ev, "null or missing in"); got != tc.data {
				t.Errorf("null-rate evidence %v, want %v:\n%s", got, tc.data, ev)
			}
			un := strings.Join(rep.Result.Unchecked, "\n")
			if tc.uncheckedWants != "" && !strings.Contains(un, tc.uncheckedWants) {
				t.Errorf("unchecked lacks %q:\n%s", tc.uncheckedWants, un)
			}
			// The sample is asked for the range from the look-back before the onset.
			if want := storyOnset.Add(-24 * time.Hour); !opt.Since.Equal(want) {
				t.Errorf("sampled since %v, want %v", opt.Since, want)
			}
		})
	}
}

// The real sample spans the onset: range mode from the look-back, versions labelled by their
// earliest record in the sample.
func TestTheTopicSampleSpansTheOnset(t *testing.T) {
	f := story(t, scenarioSchema(t, 12))
	inc := f.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes")
	kfx := kafkatest.Start(t, "api-usage")
	kfx.SeedUsageSchemas()
	// Records until 15:30, well past the onset at 15:05: a recent-mode sample of 100 per
	// partition would see only the last minutes.
	day := kafkatest.ScenarioDay(storyNow, 900)
	kfx.Produce(t, "api-usage", day)
	var got kafka.Sample
	live := Live{Sample: func(ctx context.Context, topic string, opt kafka.SampleOptions) (kafka.Sample, error) {
		s, err := kafka.SampleFromConfig(ctx, kfx.Kafka, kfx.SchemaRegistry, topic, opt)
		got = s
		return s, err
	}}
	rep := f.diagnose(t, inc, live, nil)
	if got.Mode != "range" || got.Oldest == nil || got.Oldest.After(storyOnset) || !got.Newest.After(storyOnset) {
		t.Fatalf("the sample does not span the onset: mode %s, %v – %v", got.Mode, got.Oldest, got.Newest)
	}
	ts := rep.Evidence.Samples[0]
	if !strings.Contains(strings.Join(ts.Versions, "\n"), "earliest in the sample at 2026-08-14T14:10:00Z") || !ts.Since.Equal(storyOnset.Add(-24*time.Hour)) {
		t.Errorf("%+v", ts)
	}
}

// A version dw-schema stored only after the onset is dated by its earliest record in the sample
// when that is before the onset; otherwise it is named as unknown, and "nothing changed" is not said.
func TestAVersionRecordedAfterTheOnset(t *testing.T) {
	late := func(t *testing.T) fixture {
		f := story(t, "")
		v11 := registry.SubjectVersion{Subject: "api-usage-value", Version: 11, ID: 100011, Type: schema.Avro, Schema: scenarioSchema(t, 11)}
		v12 := registry.SubjectVersion{Subject: "api-usage-value", Version: 12, ID: 100012, Type: schema.Avro, Schema: scenarioSchema(t, 12)}
		if _, err := registry.RecordVersions(context.Background(), f.st, time.Date(2026, 8, 14, 15, 20, 0, 0, time.UTC), []registry.SubjectVersion{v11, v12}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	t.Run("dated by the sample", func(t *testing.T) {
		f := late(t)
		inc := f.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes")
		rep := f.diagnose(t, inc, Live{Sample: fixedSample(usageSample(0.1, 1, time.Date(2026, 8, 14, 14, 10, 0, 0, time.UTC)), nil)}, nil)
		top := rep.Result.Candidates[0]
		if top.Source != "schema:api-usage-value v12" || !has(top.Supports, KindTiming) ||
			!strings.Contains(strings.Join(top.Evidence, "\n"), "v12 is earliest in the topic sample at 14:10 UTC, 55m0s before the onset") {
			t.Fatalf("%+v", rep.Result)
		}
		if len(rep.Evidence.Versions) != 1 || !strings.Contains(rep.Evidence.Versions[0].Note, "after the onset") {
			t.Errorf("%+v", rep.Evidence.Versions)
		}
	})
	t.Run("undated", func(t *testing.T) {
		f := late(t)
		inc := f.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes")
		rep := f.diagnose(t, inc, Live{}, nil)
		un := strings.Join(rep.Result.Unchecked, "\n")
		if !strings.Contains(un, "api-usage-value v12 first recorded at 2026-08-14T15:20:00Z, after the onset; its registration time is unknown") {
			t.Errorf("unchecked: %s", un)
		}
		if strings.Contains(rep.Result.Conclusion, "Nothing upstream changed") || len(rep.Result.Candidates) != 0 ||
			!strings.Contains(rep.Result.Conclusion, "registration time is unknown") {
			t.Errorf("conclusion: %q %+v", rep.Result.Conclusion, rep.Result.Candidates)
		}
	})
}

// A sample whose schema ids the registry could not name, and one holding a version the store
// lacks, are both named in Unchecked.
func TestSampleVersionsTheStoreCannotPlace(t *testing.T) {
	f := story(t, scenarioSchema(t, 12))
	inc := f.history(t, usageHourly, ModeNullRate, "null_rate", "egress_bytes")
	byID := kafka.Sample{Records: 10, Framed: 10, Versions: []kafka.VersionStat{{Label: "schema id 7", SchemaID: 7, Records: 10, Share: 1}}}
	rep := f.diagnose(t, inc, Live{Sample: fixedSample(byID, nil)}, nil)
	if un := strings.Join(rep.Result.Unchecked, "\n"); !strings.Contains(un, "schema ids could not be named (set schema_registry.url)") {
		t.Errorf("unnamed ids: %s", un)
	}

	v13 := usageSample(0.1, 1, time.Date(2026, 8, 14, 14, 10, 0, 0, time.UTC))
	v13.Versions = append(v13.Versions, kafka.VersionStat{Label: "api-usage-value v13", Subject: "api-usage-value", Version: 13, SchemaID: 13, Records: 1,
		FirstSeen: time.Date(2026, 8, 14, 14, 50, 0, 0, time.UTC)})
	rep = f.diagnose(t, inc, Live{Sample: fixedSample(v13, nil)}, nil)
	if un := strings.Join(rep.Result.Unchecked, "\n"); !strings.Contains(un, "api-usage-value v13 is in the records of api-usage (earliest in the sample at 2026-08-14T14:50:00Z) but not in the store") {
		t.Errorf("version not in the store: %s", un)
	}
}

// MaxSampledTopics: the nearest topics are sampled, the rest are named.
func TestOnlyTheNearestTopicsAreSampled(t *testing.T) {
	f := newFixture(t)
	p := path{subjects: map[string]*subjectOnPath{}, depth: map[graph.URN]int{}}
	sj := &subjectOnPath{fields: map[string]bool{}, topics: map[graph.URN]bool{}}
	p.subjects["events-value"] = sj
	for i := range MaxSampledTopics + 2 {
		u := graph.TopicURN(fmt.Sprintf("events-%d", i))
		sj.topics[u] = true
		p.depth[u] = 10 - i // the last topics are the nearest
	}
	var mu sync.Mutex
	var sampled []string
	g := NewGatherer(f.st, f.g, nil, nil, Live{Sample: func(_ context.Context, topic string, _ kafka.SampleOptions) (kafka.Sample, error) {
		mu.Lock()
		defer mu.Unlock()
		sampled = append(sampled, topic)
		return kafka.Sample{Topic: topic}, nil
	}}, nil, 0)
	r := g.samples(context.Background(), p, nil, storyOnset)
	if want := []string{"events-4", "events-3", "events-2"}; strings.Join(sampled, ",") != strings.Join(want, ",") {
		t.Errorf("sampled %v, want the %d nearest %v", sampled, MaxSampledTopics, want)
	}
	if un := strings.Join(r.unchecked, "\n"); !strings.Contains(un, "kafka:topic/events-1, kafka:topic/events-0: not sampled") {
		t.Errorf("unchecked: %s", un)
	}
}

// The bound is named only when it was the bound that stopped a read: a loopback Connect worker
// that never answers (it waits for the request to go away) meets a 50ms bound.
func TestABackendBoundIsNamedOnlyWhenItStoppedTheRead(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	f, inc := connectorStory(t)
	cl, err := connect.New(&config.Connect{URL: hang.URL})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewGatherer(f.st, f.g, nil, f.now, Live{ConnectorStatus: cl.Status}, nil, 50*time.Millisecond).Diagnose(context.Background(), inc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if un := strings.Join(rep.Result.Unchecked, "\n"); !strings.Contains(un, "connector and task state of connect:connector/orders-snowflake-sink: no answer within 50ms") {
		t.Errorf("unchecked: %s", un)
	}

	// The caller cancelling is not the bound.
	g := NewGatherer(f.st, f.g, nil, f.now, Live{}, nil, time.Hour)
	parent, cancel := context.WithCancel(context.Background())
	bctx, cancelB := context.WithTimeoutCause(parent, time.Hour, errBackendBound)
	defer cancelB()
	cancel()
	if msg := g.backendErr(bctx, bctx.Err()); strings.Contains(msg, "no answer within") || !strings.Contains(msg, "cancelled") {
		t.Errorf("cancelled read: %q", msg)
	}
	if msg := g.backendErr(context.Background(), fmt.Errorf("kafka connect: 500: boom")); msg != "kafka connect: 500: boom" {
		t.Errorf("plain error: %q", msg)
	}
}

// A connector or statement the lineage puts on the path but its backend answers 404 for is a
// deleted component: a failure, not something unchecked.
func TestADeletedComponentOnThePathIsAFinding(t *testing.T) {
	f, inc := connectorStory(t)
	cl, err := connect.New(&config.Connect{URL: connecttest.New(t).URL})
	if err != nil {
		t.Fatal(err)
	}
	rep := f.diagnose(t, inc, Live{ConnectorStatus: cl.Status}, nil)
	top := rep.Result.Candidates[0]
	if top.Kind != "component_failure" || !strings.Contains(top.Cause, "orders-snowflake-sink is gone") || !has(top.Supports, KindMode) {
		t.Fatalf("%+v\nunchecked %v", rep.Result.Candidates, rep.Result.Unchecked)
	}
	if len(rep.Result.Unchecked) != 0 || rep.Evidence.Live[0].State != StateNotFound {
		t.Errorf("unchecked %v live %+v", rep.Result.Unchecked, rep.Evidence.Live)
	}

	s := story(t, "")
	sinc := s.history(t, usageHourly, ModeFreshness, "freshness_lag_seconds", "HOUR")
	live := confluentLive(t, confluenttest.New(t, nil, []confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING"}}))
	rep = s.diagnose(t, sinc, live, nil)
	if top := rep.Result.Candidates[0]; top.Source != "flink:statement/usage-hourly-rollup" || !strings.Contains(top.Cause, "is gone") {
		t.Fatalf("%+v", rep.Result.Candidates)
	}
}

// A streaming statement in any phase but RUNNING produces no rows; a bounded one that completed is fine.
func TestAStreamingStatementNotRunningStopsRows(t *testing.T) {
	bounded := true
	for _, tc := range []struct {
		phase     string
		bounded   *bool
		candidate bool
	}{
		{"PENDING", nil, true}, {"STOPPING", nil, true}, {"COMPLETED", nil, true}, {"STOPPED", nil, true}, {"FAILED", nil, true},
		{"RUNNING", nil, false}, {"COMPLETED", &bounded, false}, {"FAILED", &bounded, true},
	} {
		t.Run(fmt.Sprintf("%s bounded=%v", tc.phase, tc.bounded != nil), func(t *testing.T) {
			cs := statementState("flink:statement/s", 2, confluent.Statement{Phase: tc.phase, IsBounded: tc.bounded})
			c, ok := judgeComponent(Input{FailureMode: ModeFreshness, Onset: t0, LookBack: 24 * time.Hour}, cs)
			if ok != tc.candidate {
				t.Fatalf("candidate %v, want %v", ok, tc.candidate)
			}
			if ok && !has(c.Supports, KindMode) {
				t.Errorf("a %s statement stops rows: %+v", tc.phase, c)
			}
		})
	}
	if c, ok := judgeComponent(Input{FailureMode: ModeVolume, Onset: t0}, ComponentState{URN: "flink:statement/s", Kind: ComponentStatement, State: "DEGRADED", Streaming: true}); !ok || has(c.Supports, KindMode) {
		t.Errorf("a degraded statement still runs: %+v", c)
	}
}

// Duplicates and custom-check failures hit every reader of the table, not only the column's.
func TestUniquenessBlastRadiusStartsFromTheWholeAsset(t *testing.T) {
	for _, mode := range []string{ModeUniqueness, ModeCustom} {
		t.Run(mode, func(t *testing.T) {
			f := story(t, "")
			inc := f.history(t, usageHourly, mode, map[string]string{ModeUniqueness: "duplicate_rows", ModeCustom: "violating_rows"}[mode], "egress_bytes")
			rep := f.diagnose(t, inc, Live{}, nil)
			reached := map[graph.URN]bool{}
			for _, im := range append(rep.Impact.BlastRadius.FieldLevel, rep.Impact.BlastRadius.TableLevel...) {
				reached[im.URN] = true
			}
			if rep.Impact.From.Path != "" || !reached["dbt:model.billing.fct_request_counts"] {
				t.Errorf("from %v reached %v", rep.Impact.From, reached)
			}
			// The lineage still follows the column.
			if len(rep.Evidence.Path) == 0 || !strings.Contains(strings.Join(rep.Evidence.Path, "\n"), "egress_bytes") {
				t.Errorf("path %v", rep.Evidence.Path)
			}
		})
	}
}

// SeverityRule: the failing asset itself being an external sink, or a job pushing to one, is sev1.
func TestTheFailingAssetItselfCanMakeItSev1(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	job, sink := graph.URN("job:airflow/push_invoices"), graph.URN("sink:stripe")
	_, err := f.g.Import(ctx, graph.Batch{Source: "test:sinks", Assets: []graph.Asset{
		{URN: job, Kind: graph.KindJob}, {URN: sink, Kind: graph.KindExternalSink},
	}, Edges: []graph.Edge{{From: job.Field(""), To: sink.Field(""), Kind: graph.EdgeSyncsTo}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		asset graph.URN
		why   string
	}{
		{sink, "sink:stripe itself is an external sink"},
		{job, "job:airflow/push_invoices pushes to sink:stripe"},
	} {
		o, err := f.inc.Open(ctx, string(tc.asset), ModeVolume, "sev2", "x", "dw-quality")
		if err != nil {
			t.Fatal(err)
		}
		inc, _ := f.inc.Get(ctx, o.ID)
		rep := f.diagnose(t, inc, Live{}, nil)
		if rep.Impact.Severity != Sev1 || !strings.Contains(rep.Impact.Why, tc.why) {
			t.Errorf("%s: %s %q", tc.asset, rep.Impact.Severity, rep.Impact.Why)
		}
	}
}

// Connector traces, statement details and backend errors reach the report without URL passwords
// or configured secrets.
func TestSecretsAreScrubbedFromEverythingABackendSays(t *testing.T) {
	const secret = "c0nfigured-s3cret"
	cfg := &config.Config{Connect: &config.Connect{URL: "http://x", Password: secret}}
	f, inc := connectorStory(t)
	trace := "org.apache.kafka.connect.errors.ConnectException: connect to jdbc:postgresql://user:secret@host:5432/db failed\n\tat x\n" +
		"Caused by: java.sql.SQLException: login with " + secret + " refused"
	live := Live{ConnectorStatus: func(context.Context, string) (connect.Status, error) {
		return connect.Status{Connector: connect.ConnectorState{State: "RUNNING"}, Tasks: []connect.TaskState{{ID: 0, State: "FAILED", Trace: trace}}}, nil
	}}
	rep, err := NewGatherer(f.st, f.g, cfg, f.now, live, cfg.Redactor(), time.Second).Diagnose(context.Background(), inc, 0)
	if err != nil {
		t.Fatal(err)
	}
	detail := rep.Evidence.Live[0].Detail
	if strings.Contains(detail, "user:secret") || strings.Contains(detail, secret) || !strings.Contains(detail, "@host:5432/db") {
		t.Errorf("detail: %s", detail)
	}
	// An error text, as an Unchecked line.
	live.ConnectorStatus = func(context.Context, string) (connect.Status, error) {
		return connect.Status{}, fmt.Errorf("dial jdbc:postgresql://user:secret@host/db: password %s rejected", secret)
	}
	rep, err = NewGatherer(f.st, f.g, cfg, f.now, live, cfg.Redactor(), time.Second).Diagnose(context.Background(), inc, 0)
	if err != nil {
		t.Fatal(err)
	}
	un := strings.Join(rep.Result.Unchecked, "\n") + rep.Result.Conclusion
	if strings.Contains(un, "user:secret") || strings.Contains(un, secret) || !strings.Contains(un, "rejected") {
		t.Errorf("unchecked: %s", un)
	}
	// Statement detail and warnings.
	cs := statementState("flink:statement/s", 1, confluent.Statement{Phase: "FAILED", Detail: "sink jdbc:mysql://root:pw123@db/x unreachable",
		Warnings: []string{"see https://admin:hunter2@ops.example/runbook"}})
	if strings.Contains(cs.Detail, "pw123") || strings.Contains(cs.Detail, "hunter2") {
		t.Errorf("statement detail: %s", cs.Detail)
	}
}

// A nil clock is the wall clock, not a panic.
func TestANilClockIsTheWallClock(t *testing.T) {
	f := newFixture(t)
	o, err := f.inc.Open(context.Background(), "warehouse:sqlite/main.nowhere", ModeVolume, "sev2", "no rows", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	inc, _ := f.inc.Get(context.Background(), o.ID)
	rep, err := NewGatherer(f.st, f.g, nil, nil, Live{}, nil, 0).Diagnose(context.Background(), inc, 0)
	if err != nil || rep.At.IsZero() {
		t.Fatalf("%v %v", rep.At, err)
	}
}
