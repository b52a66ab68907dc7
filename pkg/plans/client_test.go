package plans

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
)

// jobSources has the Stripe sync, a sandbox DAG and a job whose dag_id attr names the Stripe DAG
// in the context graph.
func jobSources(t *testing.T) Sources {
	t.Helper()
	src := storySources(t, false)
	if _, err := src.Graph.Import(context.Background(), graph.Batch{Source: "test:jobs", Assets: []graph.Asset{
		{URN: "job:airflow/sync_metered_usage_to_stripe", Kind: graph.KindJob},
		{URN: "job:airflow/sandbox_x", Kind: graph.KindJob},
		// What register_catalog's inline YAML lets a caller write: a target whose attr names another DAG.
		{URN: "job:airflow/sandbox_redirect", Kind: graph.KindJob, Attrs: map[string]string{"dag_id": "sync_metered_usage_to_stripe"}},
		// What an OpenLineage import names a task: the URN does not name its DAG.
		{URN: "job:airflow-prod/sync.push_task", Kind: graph.KindJob, Attrs: map[string]string{"orchestrator": "airflow", "dag_id": "sync"}},
	}}); err != nil {
		t.Fatal(err)
	}
	return src
}

func TestCheckTargetTiesThePayloadToItsTarget(t *testing.T) {
	stripe := map[string]any{"dag_id": "sync_metered_usage_to_stripe"}
	for _, tc := range []struct {
		name, class, target string
		payload             map[string]any
		want                string // "" means accepted
	}{
		{"the job's own DAG", config.ClassPauseJob, "job:airflow/sync_metered_usage_to_stripe", stripe, ""},
		{"trigger_job with conf", config.ClassTriggerJob, "job:airflow/sync_metered_usage_to_stripe",
			map[string]any{"dag_id": "sync_metered_usage_to_stripe", "conf": map[string]any{"date": "2026-11-29"}}, ""},
		{"case folds as domain patterns do", config.ClassUnpauseJob, "JOB:AIRFLOW/SYNC_METERED_USAGE_TO_STRIPE", stripe, ""},
		{"another job's DAG", config.ClassPauseJob, "job:airflow/sandbox_x", stripe, `payload.dag_id "sync_metered_usage_to_stripe" is not the DAG job:airflow/sandbox_x names`},
		{"a DAG under a longer name", config.ClassPauseJob, "job:airflow/sync_metered_usage_to_stripe_v2", stripe, "is not the DAG"},
		{"no dag_id", config.ClassTriggerJob, "job:airflow/sandbox_x", map[string]any{}, `payload.dag_id ""`},
		{"a dag_id that is not a string", config.ClassTriggerJob, "job:airflow/sandbox_x", map[string]any{"dag_id": 7}, `payload.dag_id ""`},
		{"no DAG in the target", config.ClassPauseJob, "job:airflow", stripe, "is not the DAG job:airflow names"},
		{"a Dagster job", config.ClassPauseJob, "job:dagster/refresh", map[string]any{"dag_id": "refresh"}, "not an Airflow DAG"},
		{"not a job", config.ClassPauseJob, "warehouse:snowflake/A.B.C", stripe, "not an orchestrator job"},
		{"an empty target", config.ClassPauseJob, "", stripe, "not an orchestrator job"},
		{"a dbt run on a model", config.ClassTriggerDBTRun, "dbt:model.billing.fct_billable_egress", map[string]any{"job_id": 55}, ""},
		{"a dbt run on a job", config.ClassTriggerDBTRun, "job:airflow/sandbox_x", map[string]any{"job_id": 55}, "targets the dbt asset"},
		{"owner-only classes are not dispatched", config.ClassRestartConnector, "connect:x", map[string]any{"steps": []any{"restart"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckTarget(tc.class, tc.target, tc.payload)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrTargetMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrTargetMismatch mentioning %q", err, tc.want)
			}
		})
	}
}

func TestValidateProposalsChecksWhatBuildChecks(t *testing.T) {
	ctx := context.Background()
	src := jobSources(t)
	got, err := ValidateProposals(ctx, src, []ClientProposal{
		{Class: config.ClassPauseJob, Target: "job:airflow/sync_metered_usage_to_stripe", Title: "Pause", Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}},
		{Class: config.ClassRegisterSchema, Target: "schema:api-usage-value", Title: "Register",
			Payload: map[string]any{"subject": "api-usage-value", "schema_type": "avro", "schema": `{"type":"record","name":"U","fields":[]}`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Order != 1 || got[1].Order != 2 || got[0].Origin != OriginClient || got[1].Payload["schema_type"] != "AVRO" {
		t.Fatalf("%+v", got)
	}
	for _, tc := range []struct {
		name string
		cp   ClientProposal
		want string
	}{
		{"another job's DAG", ClientProposal{Class: config.ClassPauseJob, Target: "job:airflow/sandbox_x", Title: "x",
			Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}}, "is not the DAG of job:airflow/sandbox_x"},
		{"a graph attr pointing the target at another DAG", ClientProposal{Class: config.ClassPauseJob, Target: "job:airflow/sandbox_redirect", Title: "x",
			Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}}, "is not the DAG job:airflow/sandbox_redirect names"},
		{"a case-folded DAG id is still wrong for Airflow", ClientProposal{Class: config.ClassPauseJob, Target: "job:airflow/sandbox_x", Title: "x",
			Payload: map[string]any{"dag_id": "SANDBOX_X"}}, "is not the DAG of job:airflow/sandbox_x"},
		{"an OpenLineage task of an Airflow DAG", ClientProposal{Class: config.ClassPauseJob, Target: "job:airflow-prod/sync.push_task", Title: "x",
			Payload: map[string]any{"dag_id": "sync"}}, "hold job:airflow-prod/sync.push_task by hand: its URN does not name the DAG it runs in"},
		{"a dbt run on a job", ClientProposal{Class: config.ClassTriggerDBTRun, Target: "job:airflow/sandbox_x", Title: "x",
			Payload: map[string]any{"job_id": 55}}, "targets the dbt asset"},
		{"a schema for another subject", ClientProposal{Class: config.ClassRegisterSchema, Target: "schema:sandbox-value", Title: "x",
			Payload: map[string]any{"subject": "api-usage-value", "schema_type": "AVRO", "schema": `"string"`}}, "does not match payload.subject"},
		{"an extra key", ClientProposal{Class: config.ClassPauseJob, Target: "job:airflow/sandbox_x", Title: "x",
			Payload: map[string]any{"dag_id": "sandbox_x", "is_paused": true}}, "is_paused would not be executed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ValidateProposals(ctx, src, []ClientProposal{tc.cp})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "proposals[0]") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	many := make([]ClientProposal, MaxClientProposals+1)
	if _, err := ValidateProposals(ctx, src, many); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("err = %v", err)
	}
}
