package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/warehouse"
)

type runQualityCheckParams struct {
	Table               string                 `json:"table" jsonschema:"Warehouse table: name, schema.name or database.schema.name (quote a part to keep its case); or a lake table tableflow:<topic> or iceberg:<namespace>.<table>, checked from its Iceberg metadata"`
	Database            string                 `json:"database,omitempty" jsonschema:"Database of a bare table name"`
	Schema              string                 `json:"schema,omitempty" jsonschema:"Schema of a bare table name"`
	TimestampColumn     string                 `json:"timestamp_column,omitempty" jsonschema:"Column the window is read on; default: the table's only timestamp column"`
	Window              string                 `json:"window,omitempty" jsonschema:"today (default), yesterday, this_hour, last_hour, or a duration such as 6h; or use since/until"`
	Since               string                 `json:"since,omitempty" jsonschema:"Window start, RFC 3339 or a date"`
	Until               string                 `json:"until,omitempty" jsonschema:"Window end (exclusive), default now"`
	TimeZone            string                 `json:"time_zone,omitempty" jsonschema:"IANA zone for today/yesterday and seasonal baselines, default UTC"`
	Metrics             []string               `json:"metrics,omitempty" jsonschema:"Checks to run: schema_changes, volume, volume_by_hour, freshness, null_rate, column, dimension, reconciliation, uniqueness, custom; default volume, freshness, null_rate, uniqueness and custom"`
	Columns             []string               `json:"columns,omitempty" jsonschema:"Columns for the null-rate and column checks; default every column"`
	ColumnMetrics       []string               `json:"column_metrics,omitempty" jsonschema:"Column check metrics: zero_rate, negative_rate, sum_per_hour, mean, min, max, stddev, empty_rate, min_length, max_length, mean_length, true_rate, distinct; default all that fit each column's type except distinct"`
	Thresholds          []quality.Threshold    `json:"thresholds,omitempty" jsonschema:"Fixed limits judged instead of the history baseline, e.g. {metric: zero_rate, column: cost_micros, max: 0.01}"`
	Dimension           *quality.DimensionSpec `json:"dimension,omitempty" jsonschema:"For the dimension check: the key column, and optionally a numeric column summed per key"`
	Reconcile           *quality.ReconcileSpec `json:"reconcile,omitempty" jsonschema:"For the reconciliation check: the upstream table, and optionally the column compared by sum"`
	LoadTimestampColumn string                 `json:"load_timestamp_column,omitempty" jsonschema:"Column recording when each row was loaded; freshness then reports load lag apart from event freshness"`
	MaxLoadLag          string                 `json:"max_load_lag,omitempty" jsonschema:"Fail load lag beyond this (e.g. 30m) whatever the history says"`
	KeyColumns          []string               `json:"key_columns,omitempty" jsonschema:"Key that must be unique in the window (one key, may be composite)"`
	Assertions          []quality.Assertion    `json:"assertions,omitempty" jsonschema:"Custom SQL rules: each a SELECT returning the violating rows"`
	MaxFreshnessLag     string                 `json:"max_freshness_lag,omitempty" jsonschema:"Fail freshness beyond this lag (e.g. 2h) whatever the history says"`
	OpenIncident        *bool                  `json:"open_incident,omitempty" jsonschema:"Open or join an incident when a check fails; default: when the table's domain has autonomy L1 or higher"`
}

func runQualityCheck(d *deps) mcpkit.Tool {
	return mcpkit.Write("run_quality_check",
		"Check a warehouse table over a window (default today) for null rate per column, volume (rows per hour), key uniqueness, "+
			"event freshness and load lag, custom SQL rules and, when listed, volume per hour of day, column metrics (zeros, negatives, sum, mean, min, max, spread, distinct, "+
			"empty strings, lengths, true share), a dimension (a metric per key value against that key's history), reconciliation with an upstream "+
			"table and schema changes since the last run, each against a baseline learnt from earlier checks or a fixed threshold. Every result gives "+
			"the value, baseline, expected range, status, a one-sentence why, the SQL that ran and sample offending rows. Records the run; a failure can open an incident.",
		func(ctx context.Context, p runQualityCheckParams) (quality.Report, error) {
			var zero quality.Report
			table, err := qualify(p.Database, p.Schema, p.Table)
			if err != nil {
				return zero, err
			}
			checks, err := quality.ParseChecks(p.Metrics)
			if err != nil {
				return zero, err
			}
			w, err := quality.ParseWindow(quality.WindowSpec{Window: p.Window, Since: p.Since, Until: p.Until, TimeZone: p.TimeZone}, d.now())
			if err != nil {
				return zero, err
			}
			lag, err := optionalDuration("max_freshness_lag", p.MaxFreshnessLag)
			if err != nil {
				return zero, err
			}
			if lake.IsLakeAsset(p.Table) {
				metrics, err := quality.ParseColumnMetrics(p.ColumnMetrics)
				if err != nil {
					return zero, err
				}
				rep, err := d.lakeCheck(ctx, p.Table, quality.Request{Window: w, Checks: checks, Columns: p.Columns, ColumnMetrics: metrics,
					Thresholds: p.Thresholds, KeyColumns: p.KeyColumns, Assertions: p.Assertions, MaxFreshnessLag: lag,
					OpenIncidents: d.incidentPolicy(p.OpenIncident, "")})
				if err != nil {
					return zero, err
				}
				return *rep, nil
			}
			loadLag, err := optionalDuration("max_load_lag", p.MaxLoadLag)
			if err != nil {
				return zero, err
			}
			metrics, err := quality.ParseColumnMetrics(p.ColumnMetrics)
			if err != nil {
				return zero, err
			}
			c, _, err := d.checker(ctx)
			if err != nil {
				return zero, err
			}
			rep, err := c.Run(ctx, quality.Request{
				Table: table, TimestampColumn: p.TimestampColumn, Window: w, Checks: checks,
				Columns: p.Columns, ColumnMetrics: metrics, Thresholds: p.Thresholds, Dimension: p.Dimension, Reconcile: p.Reconcile,
				KeyColumns: p.KeyColumns, Assertions: p.Assertions, MaxFreshnessLag: lag, LoadTimestampColumn: p.LoadTimestampColumn, MaxLoadLag: loadLag,
				OpenIncidents: d.incidentPolicy(p.OpenIncident, ""), Progress: progress(ctx),
			})
			if err != nil {
				return quality.Report{}, err
			}
			return *rep, nil
		})
}

type profileTableParams struct {
	Table           string   `json:"table" jsonschema:"Warehouse table: name, schema.name or database.schema.name"`
	Database        string   `json:"database,omitempty" jsonschema:"Database of a bare table name"`
	Schema          string   `json:"schema,omitempty" jsonschema:"Schema of a bare table name"`
	Columns         []string `json:"columns,omitempty" jsonschema:"Columns to profile; default every column"`
	TimestampColumn string   `json:"timestamp_column,omitempty" jsonschema:"Restrict to a window read on this column (with window or since/until)"`
	Window          string   `json:"window,omitempty" jsonschema:"today, yesterday, this_hour, last_hour or a duration such as 6h; default the whole table"`
	Since           string   `json:"since,omitempty" jsonschema:"Window start, RFC 3339 or a date"`
	Until           string   `json:"until,omitempty" jsonschema:"Window end (exclusive), default now"`
	TimeZone        string   `json:"time_zone,omitempty" jsonschema:"IANA zone for today/yesterday, default UTC"`
	Distinct        bool     `json:"distinct,omitempty" jsonschema:"Also count distinct values per column (exact, approximate on Snowflake; the expensive part)"`
}

func profileTable(d *deps) mcpkit.Tool {
	return mcpkit.Read("profile_table",
		"Profile a warehouse table in one pass: rows, and per column nulls, null rate, min, max, mean and every column-check metric its type "+
			"allows (zeros, negatives, sum, standard deviation; empty strings and lengths; true/false counts), optionally distinct counts "+
			"(approximate on Snowflake). Use it to see what a table holds before choosing checks and thresholds; it records nothing.",
		func(ctx context.Context, p profileTableParams) (quality.Profile, error) {
			var zero quality.Profile
			table, err := qualify(p.Database, p.Schema, p.Table)
			if err != nil {
				return zero, err
			}
			req := quality.ProfileRequest{Table: table, Columns: p.Columns, TimestampColumn: p.TimestampColumn, Distinct: p.Distinct}
			if p.Window != "" || p.Since != "" || p.Until != "" || p.TimestampColumn != "" {
				w, err := quality.ParseWindow(quality.WindowSpec{Window: p.Window, Since: p.Since, Until: p.Until, TimeZone: p.TimeZone}, d.now())
				if err != nil {
					return zero, err
				}
				req.Window = &w
			}
			wh, err := d.warehouse()
			if err != nil {
				return zero, err
			}
			mcpkit.ReportProgress(ctx, 0, 1, "profiling "+table)
			prof, err := quality.NewChecker(wh, nil, d.now).ProfileTable(ctx, req)
			if err != nil {
				return quality.Profile{}, err
			}
			return *prof, nil
		})
}

// qualify joins database/schema arguments (the reference product's shape) with a bare table name.
func qualify(database, schema, table string) (string, error) {
	if database == "" && schema == "" {
		return table, nil
	}
	if strings.ContainsAny(table, `."`) {
		return "", fmt.Errorf("table %q is already qualified or quoted: pass it alone, without database/schema", table)
	}
	if database != "" && schema == "" {
		return "", fmt.Errorf("database %q needs schema too", database)
	}
	return warehouse.TableRef{Database: database, Schema: schema, Name: table}.String(), nil
}

func optionalDuration(key, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s: %q is not a duration such as 90m or 2h", key, s)
	}
	return v, nil
}
