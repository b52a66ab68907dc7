package config

import (
	"strings"
	"testing"
	"time"
)

func TestMatchPattern(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"warehouse:snowflake/ANALYTICS.USAGE.*", "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY", true},
		{"warehouse:snowflake/ANALYTICS.USAGE.*", "warehouse:snowflake/ANALYTICS.SALES.X", false},
		{"dbt:model.billing.*", "dbt:model.billing.fct_billable_egress", true},
		{"*stripe*", "job:airflow/sync_metered_usage_to_stripe", true},
		{"job:airflow/x", "job:airflow/x", true},
		{"job:airflow/x", "job:airflow/xy", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "acb", false},
		{"*", "", true},
		{"warehouse:snowflake/ANALYTICS.USAGE.*", "warehouse:snowflake/analytics.usage.usage_hourly", true},
		{"warehouse:*USAGE*", "warehouse:postgres/dw.public.usage_hourly", true},
		{"warehouse:*", "dbt:model.x", false},
		{"a*b*a", "aba", true},
		{"a*a", "a", false},
	}
	for _, c := range cases {
		if got := MatchPattern(c.p, c.s); got != c.want {
			t.Errorf("MatchPattern(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

func TestActionClassDefaultsAndOverrides(t *testing.T) {
	c := &Config{ActionClasses: map[string]ActionClass{ClassPauseJob: {Expiry: 5 * time.Minute}}}
	ac, ok := c.Class(ClassPauseJob)
	if !ok || ac.Executor != ExecutorDataWorkers || ac.Expiry != 5*time.Minute {
		t.Errorf("pause_job = %+v", ac)
	}
	if ac, _ := c.Class(ClassFlinkStatement); ac.Executor != ExecutorOwner {
		t.Errorf("flink_statement = %+v", ac)
	}
	if _, ok := c.Class("drop_table"); ok {
		t.Error("unknown class accepted")
	}
}

func TestOwnerOnlyClassesCannotBeHandedToDataWorkers(t *testing.T) {
	_, err := Parse([]byte("action_classes:\n  reset_offsets: {executor: data_workers}\n  drop_table: {expiry: 1h}\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "reset_offsets is owner-only") || !strings.Contains(err.Error(), "action_classes.drop_table: unknown action class") {
		t.Fatalf("err = %v", err)
	}
}

func TestFindDomainByNameOrAssetAndItsLevel(t *testing.T) {
	ds := []Domain{{Name: "a", Assets: []string{"kafka:*"}, Autonomy: "L1"}, {Name: "b", Assets: []string{"warehouse:*"}, Autonomy: "L3"}}
	if d, ok := FindDomain(ds, "", "warehouse:sqlite/main.t"); !ok || d.Name != "b" || d.Level() != 3 {
		t.Errorf("by asset: %+v %v", d, ok)
	}
	if d, ok := FindDomain(ds, "a", "warehouse:sqlite/main.t"); !ok || d.Name != "a" {
		t.Errorf("by name: %+v %v", d, ok)
	}
	if _, ok := FindDomain(ds, "", "dbt:model.x"); ok {
		t.Error("matched an uncovered asset")
	}
	if (Domain{Autonomy: "L9"}).Level() != -1 {
		t.Error("invalid level")
	}
}

func TestL3EligibleClassesAndEveryMatchingDomain(t *testing.T) {
	for _, c := range ActionClassNames() {
		want := c == ClassPauseJob || c == ClassUnpauseJob || c == ClassTriggerJob || c == ClassTriggerDBTRun
		if L3Eligible(c) != want {
			t.Errorf("L3Eligible(%s) = %v", c, !want)
		}
		if L3Eligible(c) && IsOwnerOnly(c) {
			t.Errorf("%s is both L3-eligible and owner-only", c)
		}
	}
	cfg := &Config{Domains: []Domain{{Name: "a", Assets: []string{"airflow:*"}, Autonomy: "L3"},
		{Name: "b", Assets: []string{"kafka:*"}}, {Name: "c", Assets: []string{"AIRFLOW:dag.x"}, Autonomy: "L1"}}}
	ds := cfg.DomainsFor("airflow:dag.x")
	if len(ds) != 2 || ds[0].Name != "a" || ds[1].Name != "c" {
		t.Errorf("DomainsFor = %+v", ds)
	}
}
