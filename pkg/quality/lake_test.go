package quality_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/quality"
)

// TestRunLakeColumnMetrics: a numeric column's min, max, zero and negative rates from lake facts,
// a threshold judged without history, and a metric the metadata cannot answer said to be so.
func TestRunLakeColumnMetrics(t *testing.T) {
	now := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	w, err := quality.ParseWindow(quality.WindowSpec{Window: "today", TimeZone: "UTC"}, now)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := 0.0, 0.0
	zeros, neg := int64(90), int64(0)
	newest := now.Add(-time.Minute)
	f := quality.LakeFacts{Asset: "tableflow:usage", Table: "usage", Newest: &newest, Records: 100, Files: 2,
		Columns: []quality.LakeColumn{
			{Name: "amount", Values: 100, Nulls: 10, Min: &lo, Max: &hi, Zeros: &zeros, Negatives: &neg, FromMetadata: 1, Scanned: 1},
			{Name: "plan", Values: 100, FromMetadata: 2},
		}}
	maxZero := 0.05
	req := quality.Request{Table: "tableflow:usage", Window: w, Checks: []quality.Check{quality.Column},
		ColumnMetrics: []quality.ColumnMetric{quality.ZeroRate, quality.MaxValue, quality.Mean},
		Thresholds:    []quality.Threshold{{Metric: "zero_rate", Column: "amount", Max: &maxZero}}}
	rep, err := quality.NewChecker(nil, nil, func() time.Time { return now }).RunLake(context.Background(), f, req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]quality.Result{}
	for _, r := range rep.Results {
		got[r.Metric+"/"+r.Subject] = r
	}
	if len(rep.Results) != 3 {
		t.Fatalf("results = %+v (a string column has no numeric metrics)", rep.Results)
	}
	z := got["zero_rate/amount"]
	if z.Status != quality.Fail || z.Value != 1 || !strings.Contains(z.Why, "at most 5%") || !strings.Contains(z.SQL, "manifest metrics of 1 data file") || !strings.Contains(z.SQL, "read of 1 file") {
		t.Fatalf("zero rate = %+v", z)
	}
	if m := got["max/amount"]; m.Value != 0 || m.Status != quality.Pass {
		t.Fatalf("max = %+v", m)
	}
	if m := got["mean/amount"]; m.Status != quality.Warn || !strings.Contains(m.Why, "not measured") {
		t.Fatalf("mean = %+v", m)
	}
	if !rep.Failed {
		t.Fatal("a failed column metric fails the report")
	}
}
