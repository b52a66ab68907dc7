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
