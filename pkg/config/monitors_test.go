package config

import (
	"strings"
	"testing"
	"time"
)

func TestMonitorsParseWithDefaultsLeftToTheRunner(t *testing.T) {
	cfg, err := Parse([]byte(`
domains:
  - {name: billing, assets: ["warehouse:*"], autonomy: L1}
monitors:
  - name: usage-hourly
    domain: billing
    table: ANALYTICS.USAGE.USAGE_HOURLY
    timestamp_column: HOUR
    key_columns: [USAGE_ID]
    checks: [null_rate, volume, uniqueness, freshness, custom]
    time_zone: America/New_York
    schedule: "5 * * * *"
    max_freshness_lag: 2h
    assertions:
      - {name: egress_not_negative, sql: "SELECT * FROM USAGE_HOURLY WHERE EGRESS_BYTES < 0"}
`), env(map[string]string{"HOME": "/h"}))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Monitors[0]
	if m.Name != "usage-hourly" || m.KeyColumns[0] != "USAGE_ID" || m.MaxFreshnessLag != 2*time.Hour || m.Assertions[0].Name != "egress_not_negative" {
		t.Errorf("monitor = %+v", m)
	}
}

func TestMonitorProblemsNameTheirKeys(t *testing.T) {
	_, err := Parse([]byte(`
monitors:
  - name: a
    table: t
    domain: nowhere
    checks: [nulls]
    time_zone: Mars/Olympus
    window: fortnight
    schedule: "every hour"
    assertions: [{name: x}]
  - name: a
    schedule: "@daily"
`), env(nil))
	if err == nil {
		t.Fatal("invalid monitors accepted")
	}
	for _, want := range []string{"monitors[0].domain", "monitors[0].checks", "monitors[0].time_zone", "monitors[0].window",
		"monitors[0].schedule", "monitors[0].assertions[0].sql", "monitors[1].name", "monitors[1].table"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func TestUnknownMonitorKeyIsAnErrorWithItsLine(t *testing.T) {
	_, err := Parse([]byte("monitors:\n  - name: a\n    tabel: t\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), `"tabel"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestMonitorSelectsColumnDimensionReconciliationAndSchemaChecks(t *testing.T) {
	cfg, err := Parse([]byte(`
monitors:
  - name: api-costs
    table: ANALYTICS.BILLING.API_COSTS
    timestamp_column: EVENT_AT
    load_timestamp_column: LOADED_AT
    max_load_lag: 30m
    checks: [schema_changes, volume, freshness, null_rate, column, dimension, reconciliation]
    columns: [COST_MICROS]
    column_metrics: [zero_rate, sum_per_hour, mean]
    thresholds:
      - {metric: zero_rate, column: COST_MICROS, max: 0.01}
    dimension: {column: ACCOUNT_ID, measure: COST_MICROS, max_keys: 5000, top: 20}
    reconcile: {upstream: ANALYTICS.RAW.API_CALLS, column: COST_MICROS}
    schedule: "@hourly"
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Monitors[0]
	if m.Dimension.MaxKeys != 5000 || m.Reconcile.Upstream != "ANALYTICS.RAW.API_CALLS" || *m.Thresholds[0].Max != 0.01 || m.MaxLoadLag != 30*time.Minute || m.ColumnMetrics[1] != "sum_per_hour" {
		t.Errorf("monitor = %+v", m)
	}
}

func TestMonitorCheckOptionsAreValidated(t *testing.T) {
	_, err := Parse([]byte(`
monitors:
  - name: a
    table: t
    schedule: "@daily"
    checks: [dimension, reconciliation]
    column_metrics: [median]
    thresholds: [{metric: zeros, max: 1}, {metric: mean}, {metric: min, min: 5, max: 1}]
    max_load_lag: 1h
  - name: b
    table: t
    schedule: "@daily"
    dimension: {column: k}
    reconcile: {upstream: u}
`), env(nil))
	if err == nil {
		t.Fatal("invalid monitor options accepted")
	}
	for _, want := range []string{`monitors[0].column_metrics: "median" is unknown`, `monitors[0].thresholds[0].metric: "zeros"`, "monitors[0].thresholds[1]: give min, max or both",
		"monitors[0].thresholds[2]: min 5 is above max 1", "monitors[0].dimension.column: required", "monitors[0].reconcile.upstream: required",
		"monitors[0].max_load_lag: needs load_timestamp_column", "monitors[1].dimension: set but checks does not list dimension", "monitors[1].reconcile: set but checks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func FuzzMonitors(f *testing.F) {
	f.Add("monitors: [{name: a, table: t, schedule: '@daily', checks: [column, dimension], dimension: {column: k, max_keys: 5}}]")
	f.Add("monitors: [{name: a, table: t, schedule: '@daily', thresholds: [{metric: zero_rate, max: 0.1, min: 0.2}]}]")
	f.Add("monitors: [{name: a, table: t, schedule: '@daily', checks: [reconciliation], reconcile: {upstream: u, column: c}, max_load_lag: -1h}]")
	f.Add("monitors: [{name: a, table: t, schedule: '@daily', column_metrics: [mean, ~, 3]}]")
	f.Fuzz(func(t *testing.T, doc string) {
		_, _ = Parse([]byte(doc), env(nil)) // must not panic
	})
}
