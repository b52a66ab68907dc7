package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Monitor is a declared quality check on one warehouse table, run by dw-quality's run_monitors
// when its schedule says it is due (from cron or CI).
type Monitor struct {
	Name string `yaml:"name"`
	// Domain names the entry of domains whose owners and autonomy apply (L1+ opens incidents).
	Domain string `yaml:"domain"`
	// Table is the warehouse table: name, schema.name or database.schema.name.
	Table string `yaml:"table"`
	// TimestampColumn is the column the window is read on.
	TimestampColumn string `yaml:"timestamp_column"`
	// KeyColumns must be unique within the window (one key, possibly composite).
	KeyColumns []string `yaml:"key_columns"`
	// Columns limits the null-rate check; empty means every column.
	Columns []string `yaml:"columns"`
	// Checks is a subset of null_rate, volume, uniqueness, freshness, custom; empty means all.
	Checks []string `yaml:"checks"`
	// Window is today (default), yesterday, or a duration such as 6h, read in TimeZone.
	Window   string `yaml:"window"`
	TimeZone string `yaml:"time_zone"`
	// Schedule is a five-field cron expression (or @hourly, @daily, @every 30m), read in TimeZone.
	Schedule string `yaml:"schedule"`
	// MaxFreshnessLag fails freshness beyond it whatever the history says.
	MaxFreshnessLag time.Duration `yaml:"max_freshness_lag"`
	// Assertions are custom SQL rules: each a SELECT returning the violating rows.
	Assertions []MonitorAssertion `yaml:"assertions"`
}

// MonitorAssertion is one custom SQL rule of a monitor.
type MonitorAssertion struct {
	Name string `yaml:"name"`
	SQL  string `yaml:"sql"`
}

// MonitorChecks are the check names a monitor may list.
var MonitorChecks = []string{"null_rate", "volume", "uniqueness", "freshness", "custom"}

// CronParser is how monitor schedules are read (five fields, plus descriptors like @hourly).
var CronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func (c *Config) validateMonitors(add func(string, ...any)) {
	domains := map[string]bool{}
	for _, d := range c.Domains {
		domains[d.Name] = true
	}
	seen := map[string]bool{}
	for i, m := range c.Monitors {
		key := fmt.Sprintf("monitors[%d]", i)
		switch {
		case m.Name == "":
			add("%s.name: required (it names the monitor in run_monitors and the check history)", key)
		case seen[m.Name]:
			add("%s.name: %q is used twice; monitor names must be unique", key, m.Name)
		}
		seen[m.Name] = true
		if strings.TrimSpace(m.Table) == "" {
			add("%s.table: required, e.g. ANALYTICS.USAGE.USAGE_HOURLY", key)
		}
		if m.Domain != "" && !domains[m.Domain] {
			add("%s.domain: %q is not a name under domains", key, m.Domain)
		}
		for _, ch := range m.Checks {
			ok := false
			for _, k := range MonitorChecks {
				ok = ok || ch == k
			}
			if !ok {
				add("%s.checks: %q is unknown; use %s", key, ch, strings.Join(MonitorChecks, ", "))
			}
		}
		if m.TimeZone != "" {
			if _, err := time.LoadLocation(m.TimeZone); err != nil {
				add("%s.time_zone: %q is not an IANA zone such as UTC or Europe/Berlin", key, m.TimeZone)
			}
		}
		switch w := strings.ToLower(m.Window); w {
		case "", "today", "yesterday":
		default:
			if d, err := time.ParseDuration(w); err != nil || d <= 0 {
				add("%s.window: %q; use today, yesterday or a duration such as 6h", key, m.Window)
			}
		}
		if m.Schedule == "" {
			add("%s.schedule: required, a cron expression such as \"5 * * * *\" (hourly at :05) or @daily", key)
		} else if _, err := CronParser.Parse(m.Schedule); err != nil {
			add("%s.schedule: %q is not a cron expression (%v)", key, m.Schedule, err)
		}
		if m.MaxFreshnessLag < 0 {
			add("%s.max_freshness_lag: must not be negative", key)
		}
		names := map[string]bool{}
		for j, a := range m.Assertions {
			akey := fmt.Sprintf("%s.assertions[%d]", key, j)
			if a.Name == "" || names[a.Name] {
				add("%s.name: required and unique within the monitor", akey)
			}
			names[a.Name] = true
			if strings.TrimSpace(a.SQL) == "" {
				add("%s.sql: required, a SELECT returning the violating rows", akey)
			}
		}
	}
}
