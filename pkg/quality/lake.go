package quality

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// LakeFacts is what a check on a lake table (tableflow:… or iceberg:…) measures, read by the
// caller from the table's Iceberg metadata: snapshots for freshness and volume, manifest column
// metrics (or a scan of the files without them) for null rates. The window is on commit time,
// the only clock the metadata has.
type LakeFacts struct {
	Asset string
	Table string
	// Newest is the newest snapshot's commit time (nil: no snapshot at all).
	Newest *time.Time
	// Records and Files are the live data files committed in the window.
	Records int64
	Files   int
	Columns []LakeColumn
	// ScannedFiles were read because their manifests lack a metric.
	ScannedFiles int
	// SchemaChanges describe fields added or dropped in the window, one sentence each.
	SchemaChanges []string
}

// LakeColumn is one column's counts over the window's files.
type LakeColumn struct {
	Name   string
	Values int64
	Nulls  int64
	// Min, Max, Zeros and Negatives are over the non-null values of a numeric column, from the
	// manifests' lower and upper bounds where they settle them (nil: not measured).
	Min, Max         *float64
	Zeros, Negatives *int64
	FromMetadata     int
	Scanned          int
}

// LakeColumnMetrics are the column metrics Iceberg metadata can answer: min and max from the
// bounds, zero and negative rates where the bounds settle them (else the files are read).
var LakeColumnMetrics = []ColumnMetric{MinValue, MaxValue, ZeroRate, NegativeRate}

// RunLake judges the facts of a lake table like Run judges a warehouse table — volume, freshness
// and null rate against baselines from earlier runs — and records the run. Uniqueness and custom
// SQL need a query engine over the data, so they are reported as not applicable, not passed.
func (c *Checker) RunLake(ctx context.Context, f LakeFacts, req Request) (*Report, error) {
	if err := ValidateThresholds(req.Thresholds); err != nil {
		return nil, err
	}
	started := c.now()
	checks := req.Checks
	if len(checks) == 0 {
		checks = AllChecks
	}
	rep := &Report{Table: f.Table, Asset: f.Asset, Engine: "iceberg", TimestampColumn: "snapshot commit time", Window: req.Window, Results: []Result{}}
	meta := fmt.Sprintf("-- no query: Iceberg snapshot summaries and manifests of %s", f.Table)
	for _, ch := range checks {
		switch ch {
		case Volume:
			r, err := c.lakeVolume(ctx, f, rep, started, meta)
			if err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, r)
		case Freshness:
			// The warehouse judgement, with the commit time as the "column": one way to judge a lag.
			r, err := c.freshnessResult(ctx, &plan{tsName: "snapshot commit time"}, f.Newest, meta, rep, req, started)
			if err != nil {
				return nil, err
			}
			if f.Newest == nil {
				r.Why = "the table has no snapshot: nothing was ever committed"
			}
			rep.Results = append(rep.Results, r)
		case NullRate:
			for _, col := range f.Columns {
				if len(req.Columns) > 0 && !slices.Contains(req.Columns, col.Name) {
					continue
				}
				r, err := c.lakeNulls(ctx, col, rep, req, started, f.Table)
				if err != nil {
					return nil, err
				}
				rep.Results = append(rep.Results, r)
			}
		case Column:
			for _, col := range f.Columns {
				if col.Zeros == nil || len(req.Columns) > 0 && !slices.Contains(req.Columns, col.Name) {
					continue
				}
				rs, err := c.lakeColumn(ctx, col, rep, req, started, f.Table)
				if err != nil {
					return nil, err
				}
				rep.Results = append(rep.Results, rs...)
			}
		case Uniqueness, Custom:
			if ch == Uniqueness && len(req.KeyColumns) == 0 || ch == Custom && len(req.Assertions) == 0 {
				continue
			}
			rep.Results = append(rep.Results, Result{Check: string(ch), Metric: string(ch), Unit: "rows", Status: Warn, SQL: meta,
				Why: "not measured: Iceberg metadata has no answer for " + string(ch) + "; check the warehouse table that reads this lake table"})
		}
	}
	for _, s := range f.SchemaChanges {
		rep.Results = append(rep.Results, Result{Check: "schema", Metric: "schema_change", Unit: "fields", Value: 1, Status: Warn, SQL: meta, Why: s})
	}
	return c.finish(ctx, req, rep, started, nil)
}

func (c *Checker) lakeVolume(ctx context.Context, f LakeFacts, rep *Report, now time.Time, meta string) (Result, error) {
	rate := float64(f.Records) / rep.Window.Hours(now)
	rows := f.Records
	r := Result{Check: string(Volume), Metric: "rows_per_hour", Value: round(rate, 4), Unit: "rows/hour", SQL: meta, Rows: &rows, recorded: true, Status: Pass}
	head := fmt.Sprintf("%s committed %s in %d data %s (%s per hour)", countRows(f.Records), rep.Window.Label, f.Files, plural(int64(f.Files), "file", "files"), num(rate))
	b, ok, err := c.baseline(ctx, rep, r.Metric, "", now, volumePolicy)
	switch {
	case err != nil:
		return r, err
	case !ok:
		r.Why = head + "; " + tooFew(b.Points, volumePolicy.MinPoints)
		if f.Records == 0 {
			r.Status = Warn
		}
	default:
		r.setBaseline(b, 0, math.Inf(1))
		r.Status = b.Judge(rate, volumePolicy.Direction)
		if f.Records == 0 && b.Median > 0 {
			r.Status = Fail
		}
		r.Why = head + " against " + describe(*r.Baseline, num, " per hour")
	}
	return r, nil
}

func (c *Checker) lakeNulls(ctx context.Context, col LakeColumn, rep *Report, req Request, now time.Time, tableName string) (Result, error) {
	src := fmt.Sprintf("-- no query: null counts of %s from the manifest metrics of %d data %s", col.Name, col.FromMetadata, plural(int64(col.FromMetadata), "file", "files"))
	if col.Scanned > 0 {
		src += fmt.Sprintf(", and a read of %d %s of %s without them", col.Scanned, plural(int64(col.Scanned), "file", "files"), tableName)
	}
	r := Result{Check: string(NullRate), Metric: "null_rate", Subject: col.Name, Unit: "ratio", Status: Pass, SQL: src}
	if col.Values == 0 {
		r.Why = "no values committed " + rep.Window.Label + " to measure nulls in"
		return r, nil
	}
	rate := float64(col.Nulls) / float64(col.Values)
	r.Value, r.recorded = round(rate, 6), true
	head := fmt.Sprintf("%s null (%s of %s %s) %s", pct(rate), num(float64(col.Nulls)), num(float64(col.Values)), plural(col.Values, "value", "values"), rep.Window.Label)
	if t := thresholdFor(req.Thresholds, string(NullRate), col.Name); t != nil {
		r.judgeThreshold(t, rate, head, pct)
		return r, nil
	}
	b, ok, err := c.baseline(ctx, rep, r.Metric, r.Subject, now, nullPolicy)
	if err != nil {
		return r, err
	}
	if !ok {
		r.Why = pct(rate) + " null " + rep.Window.Label + "; " + tooFew(b.Points, nullPolicy.MinPoints)
		return r, nil
	}
	r.setBaseline(b, 0, 1)
	r.Status = b.Judge(rate, nullPolicy.Direction)
	r.Why = pct(rate) + " null " + rep.Window.Label + " against " + describe(*r.Baseline, pct, "")
	return r, nil
}

// lakeColumn judges a numeric column's metrics that the metadata answers; a metric asked for that
// it cannot answer (mean, sum, spread, …) is reported as not measured.
func (c *Checker) lakeColumn(ctx context.Context, col LakeColumn, rep *Report, req Request, now time.Time, tableName string) ([]Result, error) {
	src := fmt.Sprintf("-- no query: bounds and counts of %s from the manifest metrics of %d data %s", col.Name, col.FromMetadata, plural(int64(col.FromMetadata), "file", "files"))
	if col.Scanned > 0 {
		src += fmt.Sprintf(", and a read of %d %s of %s they do not settle", col.Scanned, plural(int64(col.Scanned), "file", "files"), tableName)
	}
	metrics := req.ColumnMetrics
	if len(metrics) == 0 {
		metrics = LakeColumnMetrics
	}
	acc := &colAcc{count: col.Values - col.Nulls, zeros: *col.Zeros, negatives: *col.Negatives, min: col.Min, max: col.Max}
	var out []Result
	for _, m := range metrics {
		r := Result{Check: string(Column), Metric: string(m), Subject: col.Name, Unit: metricUnit(m), Status: Pass, SQL: src}
		if !slices.Contains(LakeColumnMetrics, m) {
			r.Status, r.Why = Warn, "not measured: Iceberg metadata answers only "+lakeMetricNames()+" for a lake table; check the warehouse table that reads it for "+string(m)
			out = append(out, r)
			continue
		}
		v, ok := acc.value(m, rep.Window.Hours(now))
		if !ok {
			r.Why = "no values " + rep.Window.Label + " to measure " + string(m) + " on"
			out = append(out, r)
			continue
		}
		r, err := c.judgeColumnMetric(ctx, r, m, v, acc, rep, req, now)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func lakeMetricNames() string {
	names := make([]string, len(LakeColumnMetrics))
	for i, m := range LakeColumnMetrics {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}
