package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// egressModelCode is fct_billable_egress as it sits in the dbt project: the scenario manifest's
// compiled SQL with the source reference dbt compiled away.
const egressModelCode = `with usage as (
    select account_id, hour, egress_bytes
    from {{ source('usage', 'usage_hourly') }}
    where hour >= dateadd(day, -35, current_date)
)
select
    account_id,
    date_trunc('day', hour) as usage_day,
    sum(coalesce(egress_bytes, 0)) as billable_bytes,
    sum(coalesce(egress_bytes, 0)) / power(1024, 3) as billable_gib
from usage
group by 1, 2
`

// diagnosedStory is the story diagnosed, with a dbt project (the scenario manifest in target/ and
// the model file beside it) and a billing domain with a named approver.
func diagnosedStory(t *testing.T) (*mcpkit.Env, int64) {
	t.Helper()
	return diagnosedStoryWith(t, scenarioSchema(t, 12))
}

// diagnosedStoryWith is diagnosedStory with another v12.
func diagnosedStoryWith(t *testing.T, v12 string) (*mcpkit.Env, int64) {
	t.Helper()
	env, _, id := story(t, v12)
	if e := mcpkittest.Call(t, diagnoseIncident(env), map[string]any{"incident_id": id}, nil); e != "" {
		t.Fatal(e)
	}
	project := t.TempDir()
	manifest, err := os.ReadFile("../../pkg/lineage/testdata/scenario/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]string{"target/manifest.json": string(manifest), "models/marts/fct_billable_egress.sql": egressModelCode} {
		p := filepath.Join(project, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env.Config.DBT = &config.DBT{ManifestPath: filepath.Join(project, "target", "manifest.json")}
	env.Config.Domains = []config.Domain{{Name: "billing", Assets: []string{"*"}, Owners: []string{"billing-data@example.com"}, Autonomy: "L2",
		Approvers: []config.Approver{{Name: "streaming-platform-owner", TokenSHA256: strings.Repeat("ab", 32)}}}}
	return env, id
}

func propose(t *testing.T, env *mcpkit.Env, args map[string]any) proposeResult {
	t.Helper()
	var out proposeResult
	if e := mcpkittest.Call(t, proposeRemediation(env), args, &out); e != "" {
		t.Fatal(e)
	}
	return out
}

func TestProposeRemediationWritesTheStorysFourProposals(t *testing.T) {
	env, id := diagnosedStory(t)
	out := propose(t, env, map[string]any{"incident_id": id})
	p := out.Plan
	for _, pr := range p.Proposals {
		t.Logf("%d %s %s: %s [%s]", pr.Order, pr.Class, pr.Target, pr.Title, pr.Validation)
	}
	t.Logf("notes: %v", p.Notes)
	if len(p.Proposals) != 4 {
		t.Fatalf("want 4 proposals, got %d", len(p.Proposals))
	}
	hold, restore, stmt, dbt := p.Proposals[0], p.Proposals[1], p.Proposals[2], p.Proposals[3]

	if hold.Class != config.ClassPauseJob || hold.Target != "job:airflow/sync_metered_usage_to_stripe" || hold.Payload["dag_id"] != "sync_metered_usage_to_stripe" ||
		len(hold.Payload) != 1 || hold.Executor != plans.ExecutorDataWorkers || !hold.Reversible || !strings.Contains(hold.Why, "2026-08-14 23:00 UTC") ||
		!strings.Contains(strings.Join(hold.BlastRadius, ","), "sink:stripe") {
		t.Errorf("first proposal must pause the 23:00 Stripe DAG: %+v", hold)
	}

	if restore.Class != config.ClassRegisterSchema || restore.Target != "schema:api-usage-value" || !strings.Contains(restore.Title, "v13") ||
		restore.Payload["subject"] != "api-usage-value" || restore.Payload["schema_type"] != "AVRO" {
		t.Errorf("second proposal must register v13: %+v", restore)
	}
	text, _ := restore.Payload["schema"].(string)
	if !strings.Contains(text, `"response_bytes"`) || !strings.Contains(text, `"response_kib"`) {
		t.Errorf("v13 must carry response_bytes beside response_kib:\n%s", text)
	}

	sql, _ := stmt.Payload["sql"].(string)
	if stmt.Class != config.ClassFlinkStatement || stmt.Executor != plans.ExecutorOwner || stmt.Target != "flink:statement/usage-hourly-rollup" ||
		!strings.Contains(sql, "COALESCE(CAST(response_kib AS BIGINT) * 1024, response_bytes)") || !strings.Contains(sql, "INSERT INTO `usage-hourly-v2`") ||
		!strings.Contains(stmt.Title, "COALESCE(response_kib * 1024, response_bytes)") || !strings.Contains(stmt.Why, "reads response_bytes as COALESCE(response_kib * 1024, response_bytes)") ||
		!strings.Contains(stmt.Why, "is expected to land in the warehouse as warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY_V2") ||
		!strings.Contains(sql, "'scan.startup.mode'='timestamp'") || !strings.Contains(sql, "'scan.startup.timestamp-millis'='1786665600000'") {
		t.Errorf("third proposal must be the corrected statement from 00:00 (timestamp mode without kafka): %+v\n%s", stmt, sql)
	}
	if _, err := sqlparse.Parse(sql); err != nil {
		t.Errorf("the statement draft does not parse: %v", err)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "kafka not configured (set kafka.bootstrap_servers)") {
		t.Errorf("notes must say kafka is not configured: %v", p.Notes)
	}

	diff, _ := dbt.Payload["diff"].(string)
	if dbt.Class != config.ClassDBTCode || dbt.Target != "dbt:model.billing.fct_billable_egress" || dbt.Executor != plans.ExecutorOwner {
		t.Errorf("fourth proposal must be the dbt diff: %+v", dbt)
	}
	patched, path, err := plans.ApplyDiff(egressModelCode, diff)
	if err != nil || path != "models/marts/fct_billable_egress.sql" {
		t.Fatalf("the dbt diff must apply to the model: %v (%s)\n%s", err, path, diff)
	}
	for _, want := range []string{"from ANALYTICS.USAGE.USAGE_HOURLY_V2 where hour >= cast('2026-08-14 00:00:00' as timestamp)",
		"from {{ source('usage', 'usage_hourly') }} where hour < cast('2026-08-14 00:00:00' as timestamp)"} {
		if !strings.Contains(patched, want) {
			t.Errorf("patched model lacks %q:\n%s", want, patched)
		}
	}

	if !strings.Contains(strings.Join(p.Notes, "\n"), "dbt:model.billing.fct_request_counts also read") {
		t.Errorf("notes must name the other reader of the table: %v", p.Notes)
	}

	v2 := "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY_V2"
	var checks []string
	for _, c := range p.Checks {
		if c.Asset != v2 || c.Supersedes != string(usageHourly) || c.Window != "today" {
			t.Errorf("check %+v must run today on %s superseding %s", c, v2, usageHourly)
		}
		checks = append(checks, c.Check+"("+strings.Join(append(c.Columns, c.KeyColumns...), ",")+")")
	}
	if strings.Join(checks, " ") != "null_rate(egress_bytes) uniqueness(account_id,hour) volume() freshness()" {
		t.Errorf("checks: %v", checks)
	}

	// Stored as the incident's latest plan, with a "proposed" event.
	st, _ := env.Store.Get(context.Background())
	latest, err := plans.Latest(context.Background(), st, id)
	if err != nil || latest.ID != p.ID || len(latest.Proposals) != 4 {
		t.Errorf("latest plan: %v %+v", err, latest)
	}
	inc, _ := incidents.New(st, env.Now).Get(context.Background(), id)
	found := false
	for _, e := range inc.Events {
		found = found || e.Kind == "proposed"
	}
	if !found {
		t.Errorf("no proposed event: %+v", inc.Events)
	}
}

func TestProposeRemediationStartsFromKafkaOffsetsWhenConfigured(t *testing.T) {
	env, id := diagnosedStory(t)
	fx := kafkatest.Start(t, "api-usage")
	// Yesterday's records, then today's: today's 00:00 starts where yesterday's end.
	var yesterday []kafkatest.Usage
	for i, u := range kafkatest.ScenarioDay(time.Date(2026, 8, 13, 0, 0, 0, 0, time.UTC), 20) {
		u.Version, u.ResponseKiB = 11, nil
		if i%2 == 0 {
			b := int64(i)
			u.ResponseBytes = &b
		}
		yesterday = append(yesterday, u)
	}
	fx.Produce(t, "api-usage", yesterday)
	cl, err := kgo.NewClient(kgo.SeedBrokers(fx.Kafka.BootstrapServers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "api-usage")
	if err != nil {
		t.Fatal(err)
	}
	fx.Produce(t, "api-usage", kafkatest.ScenarioDay(time.Date(2026, 8, 14, 0, 0, 0, 0, time.UTC), 20))
	var want []string
	for p := int32(0); p < 3; p++ {
		o, _ := ends.Lookup("api-usage", p)
		want = append(want, "partition:"+strconv.Itoa(int(p))+",offset:"+strconv.FormatInt(o.Offset, 10))
	}
	env.Config.Kafka = fx.Kafka
	out := propose(t, env, map[string]any{"incident_id": id, "from": "2026-08-14T00:00:00Z"})
	stmt := out.Plan.Proposals[2]
	sql, _ := stmt.Payload["sql"].(string)
	hint := "'scan.startup.mode'='specific-offsets', 'scan.startup.specific-offsets'='" + strings.Join(want, ";") + "'"
	if !strings.Contains(sql, hint) {
		t.Errorf("the draft must start from today's offsets %s:\n%s", hint, sql)
	}
	if _, err := sqlparse.Parse(sql); err != nil {
		t.Error(err)
	}
	if strings.Contains(strings.Join(out.Plan.Notes, "\n"), "kafka not configured") {
		t.Errorf("notes: %v", out.Plan.Notes)
	}
}

func TestProposeRemediationValidatesClientProposals(t *testing.T) {
	env, id := diagnosedStory(t)
	good := map[string]any{"class": "flink_statement", "target": "flink:statement/usage-hourly-rollup", "title": "Sum KiB only",
		"sql": "INSERT INTO `usage-hourly-v2` SELECT account_id, window_start AS `hour`, SUM(response_kib * 1024) AS egress_bytes, COUNT(*) AS request_count " +
			"FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR(event_time), INTERVAL '1' HOUR)) GROUP BY account_id, window_start, window_end"}
	out := propose(t, env, map[string]any{"incident_id": id, "proposals": []any{good}})
	last := out.Plan.Proposals[len(out.Plan.Proposals)-1]
	if len(out.Plan.Proposals) != 5 || last.Origin != plans.OriginClient || last.Payload["sql"] != good["sql"] || !strings.Contains(last.Validation, "parses") {
		t.Errorf("the valid client proposal must follow the four generated ones: %+v", last)
	}
	// A diff and a schema written by the client are accepted when they apply and are compatible.
	diff := "--- a/models/marts/fct_billable_egress.sql\n+++ b/models/marts/fct_billable_egress.sql\n@@ -1,3 +1,3 @@\n with usage as (\n-    select account_id, hour, egress_bytes\n+    select account_id, hour, coalesce(egress_bytes, 0) as egress_bytes\n     from {{ source('usage', 'usage_hourly') }}\n"
	more := []any{
		map[string]any{"class": "dbt_code", "target": "dbt:model.billing.fct_billable_egress", "title": "Default missing bytes early", "diff": diff},
		map[string]any{"class": "register_schema", "target": "schema:api-usage-value", "title": "Register v13",
			"payload": map[string]any{"subject": "api-usage-value", "schema_type": "AVRO", "schema": scenarioSchema(t, 13)}},
	}
	out = propose(t, env, map[string]any{"incident_id": id, "proposals": more, "replace_generated": true})
	if len(out.Plan.Proposals) != 2 || out.Plan.Proposals[0].Payload["path"] != "models/marts/fct_billable_egress.sql" ||
		!strings.Contains(out.Plan.Proposals[1].Validation, "compatible under BACKWARD") {
		t.Errorf("client diff and schema: %+v", out.Plan.Proposals)
	}
	out = propose(t, env, map[string]any{"incident_id": id, "proposals": []any{good}, "replace_generated": true})
	if len(out.Plan.Proposals) != 1 || out.Plan.Proposals[0].Order != 1 || len(out.Plan.Checks) == 0 {
		t.Errorf("replace_generated: %+v", out.Plan)
	}

	v12 := scenarioSchema(t, 12)
	cases := []struct {
		name     string
		proposal map[string]any
		want     string
	}{
		{"unparsable SQL", map[string]any{"class": "flink_statement", "target": "flink:statement/usage-hourly-rollup", "title": "x",
			"sql": "INSERT INTO `usage-hourly-v2` SELEC account_id FROM `api-usage`"}, "proposals[0] (flink_statement on flink:statement/usage-hourly-rollup): the SQL does not parse"},
		{"unknown field", map[string]any{"class": "flink_statement", "target": "flink:statement/usage-hourly-rollup", "title": "x",
			"sql": "INSERT INTO s SELECT account_id, SUM(response_mib) AS b FROM `api-usage` GROUP BY account_id"}, "reads api-usage.response_mib, which the pinned schema does not have"},
		{"diff that does not apply", map[string]any{"class": "dbt_code", "target": "dbt:model.billing.fct_billable_egress", "title": "x",
			"diff": "--- a/models/marts/fct_billable_egress.sql\n+++ b/models/marts/fct_billable_egress.sql\n@@ -1,2 +1,2 @@\n with usage as (\n-    select account_id, hour\n+    select account_id\n"},
			"proposals[0] (dbt_code on dbt:model.billing.fct_billable_egress): the diff does not apply"},
		{"incompatible schema", map[string]any{"class": "register_schema", "target": "schema:api-usage-value", "title": "x",
			"payload": map[string]any{"subject": "api-usage-value", "schema_type": "AVRO",
				"schema": strings.Replace(v12, `{"name": "status_code", "type": "int"},`, `{"name": "status_code", "type": "int"}, {"name": "region", "type": "string"},`, 1)}},
			"proposals[0] (register_schema on schema:api-usage-value): the schema is not compatible under BACKWARD"},
		{"unknown job", map[string]any{"class": "pause_job", "target": "job:airflow/nope", "title": "x", "payload": map[string]any{"dag_id": "nope"}},
			"job:airflow/nope is not a known job"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := mcpkittest.Call(t, proposeRemediation(env), map[string]any{"incident_id": id, "proposals": []any{c.proposal}}, nil)
			if !strings.Contains(e, c.want) {
				t.Errorf("want an error with %q, got %q", c.want, e)
			}
		})
	}
}

func TestRequestApprovalRoutesAStoredPlan(t *testing.T) {
	env, id := diagnosedStory(t)
	plan := propose(t, env, map[string]any{"incident_id": id}).Plan
	var out approvalsResult
	if e := mcpkittest.Call(t, requestApproval(env), map[string]any{"plan_id": plan.ID}, &out); e != "" {
		t.Fatal(e)
	}
	if len(out.Requests) != len(plan.Proposals) {
		t.Fatalf("%d requests for %d proposals", len(out.Requests), len(plan.Proposals))
	}
	for i, r := range out.Requests {
		_, hash, err := approvals.Canonical(plan.Proposals[i].Payload)
		if err != nil {
			t.Fatal(err)
		}
		if r.PayloadSHA256 != hash || r.Class != plan.Proposals[i].Class || r.IncidentID != id {
			t.Errorf("request %d: %+v does not match proposal %+v", i, r, plan.Proposals[i])
		}
		if !strings.Contains(strings.Join(r.Copied, ","), "billing-eng@example.com") && i == 0 {
			t.Errorf("the Stripe DAG's owners must be copied: %v", r.Copied)
		}
	}
	if e := mcpkittest.Call(t, requestApproval(env), map[string]any{"plan_id": 999}, nil); !strings.Contains(e, "no remediation plan #999") {
		t.Errorf("unknown plan: %q", e)
	}
}

// rollupReadingBytes is the story's statement still summing response_bytes: it is right only
// when the plan registers a version with response_bytes back.
const rollupReadingBytes = "INSERT INTO `usage-hourly-v2` SELECT account_id, window_start AS `hour`, SUM(response_bytes) AS egress_bytes " +
	"FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR(event_time), INTERVAL '1' HOUR)) GROUP BY account_id, window_start, window_end"

// Client SQL is checked against the schemas the final plan registers: with replace_generated the
// generated v13 restore is gone, so a statement reading response_bytes is refused unless the
// client's own proposals register it, in whatever order they come.
func TestProposeRemediationChecksClientSQLAgainstTheFinalPlan(t *testing.T) {
	env, id := diagnosedStory(t)
	stmt := map[string]any{"class": "flink_statement", "target": "flink:statement/usage-hourly-rollup", "title": "Sum bytes", "sql": rollupReadingBytes}
	e := mcpkittest.Call(t, proposeRemediation(env), map[string]any{"incident_id": id, "proposals": []any{stmt}, "replace_generated": true}, nil)
	if !strings.Contains(e, "reads response_bytes, which the pinned schema does not have") {
		t.Errorf("without the restore the statement must be refused, got %q", e)
	}
	register := map[string]any{"class": "register_schema", "target": "schema:api-usage-value", "title": "Register v13",
		"payload": map[string]any{"subject": "api-usage-value", "schema_type": "AVRO", "schema": scenarioSchema(t, 13)}}
	out := propose(t, env, map[string]any{"incident_id": id, "proposals": []any{stmt, register}, "replace_generated": true})
	if len(out.Plan.Proposals) != 2 || out.Plan.Proposals[0].Class != "flink_statement" ||
		!strings.Contains(out.Plan.Proposals[0].Validation, "api-usage-value as this plan's client proposal 2 registers it") {
		t.Errorf("the statement must be judged by the client's register_schema: %+v", out.Plan.Proposals)
	}
	// Kept generated proposals still count: the generated restore carries response_bytes.
	out = propose(t, env, map[string]any{"incident_id": id, "proposals": []any{stmt}})
	if last := out.Plan.Proposals[len(out.Plan.Proposals)-1]; !strings.Contains(last.Validation, "the restoring version this plan registers first") {
		t.Errorf("with the generated restore: %+v", last)
	}
}

func TestProposeRemediationRefusesPayloadsTheExecutorWouldNotRun(t *testing.T) {
	env, id := diagnosedStory(t)
	st, _ := env.Store.Get(context.Background())
	dagster := graph.URN("job:dagster/refresh_usage")
	if _, err := graph.New(st, env.Now).Import(context.Background(), graph.Batch{Source: "test:dagster", Assets: []graph.Asset{
		{URN: dagster, Kind: graph.KindJob, Attrs: map[string]string{"orchestrator": "dagster"}}}}); err != nil {
		t.Fatal(err)
	}
	model := "models/marts/fct_billable_egress.sql"
	hunk := "@@ -1,3 +1,3 @@\n with usage as (\n-    select account_id, hour, egress_bytes\n+    select account_id, hour, coalesce(egress_bytes, 0) as egress_bytes\n     from {{ source('usage', 'usage_hourly') }}\n"
	dbt := func(diff string) map[string]any {
		return map[string]any{"class": "dbt_code", "target": "dbt:model.billing.fct_billable_egress", "title": "x", "diff": diff}
	}
	cases := []struct {
		name     string
		proposal map[string]any
		want     string
	}{
		{"register_schema with an extra key", map[string]any{"class": "register_schema", "target": "schema:api-usage-value", "title": "x",
			"payload": map[string]any{"subject": "api-usage-value", "schema_type": "AVRO", "schema": scenarioSchema(t, 13), "normalize": true}},
			"a register_schema payload has only subject, schema_type, schema; normalize would not be executed"},
		{"trigger_dbt_run without job_id", map[string]any{"class": "trigger_dbt_run", "target": "dbt:model.billing.fct_billable_egress", "title": "x",
			"payload": map[string]any{"model": "fct_billable_egress"}}, `payload needs "job_id"`},
		{"pause of a job that is not an Airflow DAG", map[string]any{"class": "pause_job", "target": string(dagster), "title": "x",
			"payload": map[string]any{"dag_id": "refresh_usage"}}, "is a dagster job, not an Airflow DAG"},
		{"pause with a key the dispatch ignores", map[string]any{"class": "pause_job", "target": "job:airflow/sync_metered_usage_to_stripe", "title": "x",
			"payload": map[string]any{"dag_id": "sync_metered_usage_to_stripe", "until": "tomorrow"}}, "until would not be executed"},
		{"diff deleting the model", dbt("--- a/" + model + "\n+++ /dev/null\n" + hunk), "creates or deletes a file (/dev/null)"},
		{"diff of another file", dbt("--- a/" + model + "\n+++ b/models/other.sql\n" + hunk), "the diff names models/other.sql"},
		{"diff from another file", dbt("--- a/models/other.sql\n+++ b/" + model + "\n" + hunk), "the diff names models/other.sql"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := mcpkittest.Call(t, proposeRemediation(env), map[string]any{"incident_id": id, "proposals": []any{c.proposal}}, nil)
			if !strings.Contains(e, c.want) {
				t.Errorf("want an error with %q, got %q", c.want, e)
			}
		})
	}
	run := map[string]any{"class": "trigger_dbt_run", "target": "dbt:model.billing.fct_billable_egress", "title": "Rebuild today", "payload": map[string]any{"job_id": 55}}
	out := propose(t, env, map[string]any{"incident_id": id, "proposals": []any{run, dbt("--- a/" + model + "\n+++ b/" + model + "\n" + hunk)}, "replace_generated": true})
	if len(out.Plan.Proposals) != 2 || !strings.Contains(out.Plan.Proposals[0].Validation, "job_id 55") {
		t.Errorf("a trigger_dbt_run with job_id and a diff of the model itself are accepted: %+v", out.Plan.Proposals)
	}
}

func TestProposeRemediationBoundsClientProposalsAndNamesUncheckedTables(t *testing.T) {
	env, id := diagnosedStory(t)
	many := make([]any, plans.MaxClientProposals+1)
	for i := range many {
		many[i] = map[string]any{"class": "pause_job", "target": "job:airflow/sync_metered_usage_to_stripe", "title": "x", "payload": map[string]any{"dag_id": "sync_metered_usage_to_stripe"}}
	}
	if e := mcpkittest.Call(t, proposeRemediation(env), map[string]any{"incident_id": id, "proposals": many}, nil); !strings.Contains(e, "51 proposals given; at most 50") {
		t.Errorf("too many proposals: %q", e)
	}
	joined := map[string]any{"class": "flink_statement", "target": "flink:statement/usage-hourly-rollup", "title": "Join limits",
		"sql": "INSERT INTO `usage-hourly-v2` SELECT u.account_id, SUM(u.response_kib) AS kib, MAX(l.quota) AS quota FROM `api-usage` u JOIN limits l ON l.account_id = u.account_id GROUP BY u.account_id"}
	out := propose(t, env, map[string]any{"incident_id": id, "proposals": []any{joined}, "replace_generated": true})
	if v := out.Plan.Proposals[0].Validation; !strings.Contains(v, "the columns read from limits were NOT checked") {
		t.Errorf("validation must name the table it did not check: %s", v)
	}
}
