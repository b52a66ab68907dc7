package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/lake/laketest"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/quality"
)

// TestQualityCheckOnALakeTable checks a real Iceberg table (written with iceberg-go into a SQL
// catalog on SQLite) from its metadata: freshness and volume from snapshots, null rates from
// manifests plus a read of the file written without column metrics, and the dropped field.
func TestQualityCheckOnALakeTable(t *testing.T) {
	e := mcpkittest.Env(t, "dw-quality")
	e.Now = time.Now
	cfg := laketest.Config(t.TempDir(), "lkc-q")
	e.Config.Lake = cfg
	l := laketest.Open(t, cfg)
	w := laketest.Create(t, l, "lkc-q", "usage-hourly", laketest.Long(1, "id"), laketest.Long(2, "bytes"), laketest.String(3, "plan"))
	w.Append(`[{"id":1,"bytes":5,"plan":"a"},{"id":2,"bytes":6,"plan":"b"}]`)
	w.DropColumn("plan")
	w.ColumnMetrics("none")
	w.Append(`[{"id":3,"bytes":null},{"id":4,"bytes":null}]`)

	var rep quality.Report
	args := map[string]any{"table": "tableflow:usage-hourly", "window": "1h", "max_freshness_lag": "1h"}
	if msg := mcpkittest.Call(t, tool(t, e, "run_quality_check"), args, &rep); msg != "" {
		t.Fatal(msg)
	}
	got := map[string]quality.Result{}
	for _, r := range rep.Results {
		got[r.Check+"/"+r.Subject] = r
	}
	if v := got["volume/"]; v.Rows == nil || *v.Rows != 4 {
		t.Fatalf("volume = %+v", v)
	}
	if f := got["freshness/snapshot commit time"]; f.Status != quality.Pass || f.Newest == nil {
		t.Fatalf("freshness = %+v", f)
	}
	if n := got["null_rate/bytes"]; n.Value != 0.5 || !strings.Contains(n.SQL, "manifest metrics of 1 data file") || !strings.Contains(n.SQL, "read of 1 file") {
		t.Fatalf("null rate = %+v", n)
	}
	if s := got["schema/"]; s.Status != quality.Warn || !strings.Contains(s.Why, "plan") || !strings.Contains(s.Why, "dropped") {
		t.Fatalf("schema change = %+v (all %+v)", s, rep.Results)
	}
	if rep.Engine != "iceberg" || rep.RunID == 0 {
		t.Fatalf("report = %+v", rep)
	}

	// Fixed limits and the column check reach the lake check: bounds answer max and zero rate.
	var lim quality.Report
	limArgs := map[string]any{"table": "tableflow:usage-hourly", "window": "1h", "metrics": []string{"null_rate", "column"}, "columns": []string{"bytes"},
		"column_metrics": []string{"max", "zero_rate"}, "thresholds": []map[string]any{{"metric": "null_rate", "column": "bytes", "max": 0.1}}, "open_incident": false}
	if msg := mcpkittest.Call(t, tool(t, e, "run_quality_check"), limArgs, &lim); msg != "" {
		t.Fatal(msg)
	}
	byMetric := map[string]quality.Result{}
	for _, r := range lim.Results {
		byMetric[r.Metric] = r
	}
	if n := byMetric["null_rate"]; n.Status != quality.Fail || !strings.Contains(n.Why, "at most 10") {
		t.Fatalf("null rate against its limit = %+v", n)
	}
	if m := byMetric["max"]; m.Value != 6 || !strings.Contains(m.SQL, "bounds and counts of bytes") {
		t.Fatalf("max from bounds = %+v", m)
	}
	if z := byMetric["zero_rate"]; z.Value != 0 {
		t.Fatalf("zero rate = %+v", z)
	}

	e.Config.Lake = nil
	if msg := mcpkittest.Call(t, tool(t, e, "run_quality_check"), args, nil); !strings.Contains(msg, "lake.catalog") {
		t.Fatalf("unconfigured lake message = %q", msg)
	}
}
