package scenario

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// ScenarioDir and ExampleCatalog are the fixture paths relative to this package.
var (
	scenarioDir    = filepath.Join("..", "testdata", "scenario")
	exampleCatalog = filepath.Join("..", "..", "..", "configs", "catalog.example.yaml")
)

func load(t *testing.T, now time.Time) *graph.Graph {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t)
	g := graph.New(st, func() time.Time { return now })
	if err := Load(ctx, g, scenarioDir, exampleCatalog); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBlastRadiusOfResponseBytesReachesBillingAndNothingElse(t *testing.T) {
	now := time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC)
	g := load(t, now)
	br, err := g.BlastRadius(context.Background(), graph.BlastRadiusRequest{
		Asset: "schema:api-usage-value", Fields: []string{"response_bytes"}, ChangeType: graph.ChangeColumnDrop})
	if err != nil {
		t.Fatal(err)
	}
	got := map[graph.URN]graph.Impact{}
	for _, im := range append(br.FieldLevel, br.TableLevel...) {
		got[im.URN] = im
	}
	want := map[graph.URN][]string{
		"kafka:topic/api-usage":                                     {"response_bytes"},
		"flink:statement/usage-hourly-rollup":                       {"egress_bytes"},
		"kafka:topic/usage-hourly":                                  {"egress_bytes"},
		"tableflow:usage-hourly":                                    {"egress_bytes"},
		"warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY":          {"egress_bytes"},
		"dbt:source.billing.usage.usage_hourly":                     {"egress_bytes"},
		"dbt:model.billing.fct_billable_egress":                     {"billable_bytes", "billable_gib"},
		"warehouse:snowflake/ANALYTICS.BILLING.FCT_BILLABLE_EGRESS": {"billable_bytes", "billable_gib"},
		"bi:sigma/revenue-today":                                    nil,
		"job:airflow/sync_metered_usage_to_stripe":                  nil,
		"sink:stripe": nil,
	}
	for u, fields := range want {
		im, ok := got[u]
		if !ok {
			t.Errorf("blast radius misses %s", u)
			continue
		}
		if len(fields) == 0 && (!im.TableLevel || len(im.Fields) > 0) {
			t.Errorf("%s: want table-level impact, got fields %v", u, im.Fields)
		}
		if len(fields) > 0 && !equal(im.Fields, fields) {
			t.Errorf("%s: fields %v, want %v", u, im.Fields, fields)
		}
	}
	for u := range got {
		if _, ok := want[u]; !ok {
			t.Errorf("blast radius includes unrelated %s", u)
		}
	}
	if len(br.ScheduledJobs) != 1 || br.ScheduledJobs[0].URN != "job:airflow/sync_metered_usage_to_stripe" {
		t.Fatalf("scheduled jobs %+v", br.ScheduledJobs)
	}
	if next := br.ScheduledJobs[0].NextRun; next == nil || !next.Equal(time.Date(2026, 8, 14, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("next run %v, want 2026-08-14T23:00Z", next)
	}
	if len(br.ExternalSinks) != 1 || br.ExternalSinks[0] != "sink:stripe" {
		t.Errorf("external sinks %v", br.ExternalSinks)
	}
	owners := map[string]bool{}
	for _, o := range br.Owners {
		owners[o.Owner] = true
	}
	for _, o := range []string{"streaming-platform@example.com", "billing-data@example.com", "finance-analytics@example.com", "billing-eng@example.com"} {
		if !owners[o] {
			t.Errorf("owners to notify miss %s (got %v)", o, br.Owners)
		}
	}
	for _, o := range []string{"crm-team@example.com", "product-analytics@example.com"} {
		if owners[o] {
			t.Errorf("owners to notify include unrelated %s", o)
		}
	}
	crit := map[graph.URN]bool{}
	for _, u := range br.Critical {
		crit[u] = true
	}
	for _, u := range []graph.URN{"bi:sigma/revenue-today", "job:airflow/sync_metered_usage_to_stripe", "sink:stripe", "dbt:model.billing.fct_billable_egress"} {
		if !crit[u] {
			t.Errorf("%s not flagged critical", u)
		}
	}
}

func TestBlastRadiusOfStatusCodeStaysOnTheErrorsPath(t *testing.T) {
	g := load(t, time.Date(2026, 8, 14, 15, 5, 0, 0, time.UTC))
	br, err := g.BlastRadius(context.Background(), graph.BlastRadiusRequest{Asset: "schema:api-usage-value", Fields: []string{"status_code"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range append(br.FieldLevel, br.TableLevel...) {
		switch im.URN {
		case "bi:sigma/revenue-today", "job:airflow/sync_metered_usage_to_stripe", "dbt:model.billing.fct_billable_egress", "flink:statement/usage-hourly-rollup":
			t.Errorf("status_code (a filter of api-errors-rollup) reached %s", im.URN)
		}
	}
	found := false
	for _, im := range br.TableLevel {
		if im.URN == "flink:statement/api-errors-rollup" {
			found = true
		}
	}
	if !found {
		t.Errorf("status_code filters api-errors-rollup: want it at table level, got %+v", br.TableLevel)
	}
}

func TestUpstreamOfBillableBytesReachesResponseBytes(t *testing.T) {
	g := load(t, time.Now())
	lin, err := g.Upstream(context.Background(), []graph.FieldRef{{Asset: "dbt:model.billing.fct_billable_egress", Path: "billable_bytes"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range lin.Nodes {
		if n.Node.Asset == "schema:api-usage-value" && n.Node.Path == "response_bytes" {
			found = true
		}
		if n.Node.Path == "status_code" || n.Node.Asset == "dbt:source.billing.crm.accounts" {
			t.Errorf("upstream of billable_bytes includes %s", n.Node)
		}
	}
	if !found {
		t.Errorf("upstream of billable_bytes misses schema:api-usage-value#response_bytes: %+v", lin.Nodes)
	}
	for _, h := range lin.Hops {
		if len(h.Evidence) == 0 || h.Evidence[0].Source == "" {
			t.Errorf("hop %s → %s has no evidence", h.From, h.To)
		}
	}
}

func equal(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
