package dbt

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// A manifest large enough for several batches imports through Stream and graph.ImportBatches
// to exactly what Import's one batch records; a re-import without some models marks them stale.
func TestStreamedImportEqualsOneBatch(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	if err := writeManifest(&buf, 400); err != nil {
		t.Fatal(err)
	}
	open := func() *graph.Graph {
		st := storetest.Open(t)
		return graph.New(st, func() time.Time { return time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC) })
	}
	streamed, whole := open(), open()
	importBoth := func(raw []byte) (graph.ImportResult, graph.ImportResult) {
		m, err := Open(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		batches := 0
		var stats Stats
		a, err := streamed.ImportBatches(ctx, m.Source(), time.Time{}, func(put func(graph.Batch) error) error {
			stats, err = m.Stream("", func(b graph.Batch) error { batches++; return put(b) })
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if batches < 3 || stats.Models != strings.Count(string(raw), `"resource_type":"model"`) || stats.ColumnEdges == 0 {
			t.Fatalf("%d batches, stats %+v", batches, stats)
		}
		b1, _, err := Import(m, "")
		if err != nil {
			t.Fatal(err)
		}
		b, err := whole.Import(ctx, b1)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	a, b := importBoth(buf.Bytes())
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("streamed %+v\none batch %+v", a, b)
	}
	lin := func(g *graph.Graph) graph.Lineage {
		l, err := g.Upstream(ctx, []graph.FieldRef{{Asset: "dbt:model.bench.m_000399", Path: "c2"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := lin(streamed); len(l.Nodes) == 0 || !reflect.DeepEqual(l, lin(whole)) {
		t.Fatalf("column lineage differs or is empty: %v", l.Nodes)
	}
	// The next manifest drops the last model (its test and the exposure on it stay, dangling).
	raw := buf.String()
	cut := strings.LastIndex(raw, `"model.bench.m_000399":`)
	end := strings.Index(raw[cut:], `,"test.bench.not_null_m_000399_id"`)
	raw = raw[:cut-1] + raw[cut+end:]
	a, b = importBoth([]byte(raw))
	if !reflect.DeepEqual(a, b) || a.Stale.Assets != 1 || a.Stale.Edges == 0 {
		t.Fatalf("after dropping a model: streamed %+v, one batch %+v", a, b)
	}
}

// Truncated or mistyped input fails with an error naming the section, before anything is written.
func TestOpenRejectsBrokenManifests(t *testing.T) {
	var buf bytes.Buffer
	if err := writeManifest(&buf, 5); err != nil {
		t.Fatal(err)
	}
	raw := buf.String()
	for name, in := range map[string]string{
		"truncated":       raw[:len(raw)/2],
		"trailing data":   raw + `{}`,
		"nodes a list":    `{"nodes": []}`,
		"node a string":   `{"nodes": {"model.a.b": "x"}}`,
		"metadata a list": `{"metadata": [], "nodes": {}}`,
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), "dbt manifest") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// When put fails, Stream stops converting and returns put's error.
func TestStreamStopsWhenPutFails(t *testing.T) {
	var buf bytes.Buffer
	if err := writeManifest(&buf, 400); err != nil {
		t.Fatal(err)
	}
	m, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	full := errors.New("disk full")
	calls := 0
	if _, err := m.Stream("", func(graph.Batch) error { calls++; return full }); !errors.Is(err, full) || calls != 1 {
		t.Fatalf("Stream after a failed put: %v (%d calls)", err, calls)
	}
}

// A node the index reads but conversion cannot (a mistyped field only conversion reads), after
// many good ones, fails Stream with an error naming it, whatever the workers had in flight.
func TestStreamFailsOnANodeItCannotConvert(t *testing.T) {
	var buf bytes.Buffer
	if err := writeManifest(&buf, 400); err != nil {
		t.Fatal(err)
	}
	// Sources come after the nodes: the bad entry arrives with hundreds of models decoded before it.
	raw := strings.Replace(buf.String(), `"sources":{`, `"sources":{"source.p.raw.bad": {"resource_type": "source", "name": "bad", "description": 5},`, 1)
	if raw == buf.String() {
		t.Fatal("the generated manifest has no sources section to add to")
	}
	m, err := Parse([]byte(raw))
	if err != nil {
		t.Fatalf("the index should not read the description: %v", err)
	}
	batches := 0
	_, err = m.Stream("", func(graph.Batch) error { batches++; return nil })
	if err == nil || !strings.Contains(err.Error(), `"source.p.raw.bad"`) {
		t.Fatalf("Stream = %v after %d batches, want the bad node named", err, batches)
	}
}
