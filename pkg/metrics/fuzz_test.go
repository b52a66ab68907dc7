package metrics

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
)

// FuzzPromSample: any bytes decode to a sample or an error, never a panic, and a decoded sample
// keeps the value it was given.
func FuzzPromSample(f *testing.F) {
	for _, s := range []string{`[1796155514.291,"15"]`, `[1,"NaN"]`, `[1,"+Inf"]`, `[1]`, `["x","1"]`, `[1,2]`, `{}`, `null`, `[1e300,"1"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s promSample
		if err := json.Unmarshal(b, &s); err != nil {
			return
		}
		if !s.Set {
			t.Fatalf("%s decoded without setting the sample", b)
		}
	})
}

// FuzzConfluentRow: a data row of any shape is a point or an error naming what is missing.
func FuzzConfluentRow(f *testing.F) {
	for _, s := range []string{`{"timestamp":"2026-11-29T14:00:00Z","value":12,"metric.topic":"t"}`, `{"timestamp":1,"value":"x"}`, `{"value":1}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var row map[string]any
		if json.Unmarshal(b, &row) != nil {
			return
		}
		p, labels, err := confluentPoint(row)
		if err != nil {
			return
		}
		if p.At.IsZero() && row["timestamp"] != "0001-01-01T00:00:00Z" || labels == nil {
			t.Fatalf("%s: point %+v labels %v", b, p, labels)
		}
	})
}

// FuzzWindow: any window either errors or yields a step that keeps a series within MaxPoints.
func FuzzWindow(f *testing.F) {
	f.Add(int64(3600), int64(60), int64(0))
	f.Add(int64(86400*30), int64(1), int64(10))
	f.Add(int64(-5), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, spanS, stepS, _ int64) {
		end := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
		if spanS > 1<<40 || spanS < -(1<<40) || stepS > 1<<40 || stepS < -(1<<40) {
			return
		}
		q := Query{Start: end.Add(-time.Duration(spanS) * time.Second), End: end, Step: time.Duration(stepS) * time.Second}
		got, _, err := window(q, end, time.Second)
		if err != nil {
			return
		}
		if got.Step <= 0 || got.End.Sub(got.Start)/got.Step > MaxPoints {
			t.Fatalf("span %ds step %ds → step %s", spanS, stepS, got.Step)
		}
	})
}

// FuzzDatadogV2: any v2 answer gives series whose points each come from one of its times, or an
// error; never a panic.
func FuzzDatadogV2(f *testing.F) {
	for _, s := range []string{
		`{"data":{"attributes":{"series":[{"group_tags":["consumer_group:g","topic:t"]}],"times":[1,2],"values":[[1.5,null]]}}}`,
		`{"data":{"attributes":{"series":[{}],"times":[1],"values":[]}}}`,
		`{"data":{"attributes":{"series":[{}],"times":[1],"values":[[1,2]]}}}`,
		`{"errors":"query failed"}`, `{"errors":["x"]}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	d := &Datadog{cfg: config.Datadog{GroupTag: "consumer_group", TopicTag: "topic"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ans datadogV2Answer
		if json.Unmarshal(b, &ans) != nil {
			return
		}
		series, err := d.seriesV2("q", ans)
		if err != nil {
			return
		}
		for _, s := range series {
			if ans.Data == nil || len(s.Points) > len(ans.Data.Attributes.Times) {
				t.Fatalf("%s: %d points from %d times", b, len(s.Points), len(ans.Data.Attributes.Times))
			}
		}
	})
}
