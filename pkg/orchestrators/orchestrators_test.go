package orchestrators

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/orchestrators/orchtest"
)

func TestAirflow3PauseTriggerAndUnpause(t *testing.T) {
	f := orchtest.NewAirflow("v2", map[string]bool{"sync_metered_usage_to_stripe": false})
	defer f.Close()
	a, err := NewAirflow(&config.Airflow{URL: f.URL, APIVersion: "v2", Username: "admin", Password: "pw", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := a.GetDAG(ctx, "sync_metered_usage_to_stripe")
	if err != nil || d.IsPaused || d.NextRun == nil || d.NextRun.Hour() != 23 || d.Schedule != "0 23 * * *" {
		t.Fatalf("dag = %+v, %v", d, err)
	}
	if d, err = a.SetPaused(ctx, "sync_metered_usage_to_stripe", true); err != nil || !d.IsPaused || !f.Paused("sync_metered_usage_to_stripe") {
		t.Fatalf("pause: %+v %v", d, err)
	}
	run, err := a.Trigger(ctx, "sync_metered_usage_to_stripe", "", map[string]any{"reason": "rerun"}, "approved by ann")
	if err != nil || run.DagRunID == "" || run.State != "queued" || len(f.Runs()) != 1 {
		t.Fatalf("trigger: %+v %v", run, err)
	}
	if _, err = a.SetPaused(ctx, "sync_metered_usage_to_stripe", false); err != nil {
		t.Fatal(err)
	}
	if f.Logins() != 1 {
		t.Errorf("logged in %d times, want once", f.Logins())
	}
}

func TestAirflow2UsesBasicAuthAndUpdateMask(t *testing.T) {
	f := orchtest.NewAirflow("v1", map[string]bool{"nightly": false})
	defer f.Close()
	a, _ := NewAirflow(&config.Airflow{URL: f.URL, APIVersion: "v1", Username: "admin", Password: "pw", Timeout: 5 * time.Second})
	d, err := a.SetPaused(context.Background(), "nightly", true)
	if err != nil || !d.IsPaused || d.Schedule != "0 23 * * *" || d.NextRun == nil {
		t.Fatalf("%+v %v", d, err)
	}
	if _, err := a.Trigger(context.Background(), "nightly", "rerun-1", nil, "n"); err != nil {
		t.Fatal(err)
	}
}

func TestAirflowErrorsSayWhatWentWrong(t *testing.T) {
	f := orchtest.NewAirflow("v2", map[string]bool{})
	defer f.Close()
	bad, _ := NewAirflow(&config.Airflow{URL: f.URL, APIVersion: "v2", Username: "admin", Password: "wrong", Timeout: 5 * time.Second})
	if _, err := bad.GetDAG(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "Invalid credentials") {
		t.Errorf("login error = %v", err)
	}
	good, _ := NewAirflow(&config.Airflow{URL: f.URL, APIVersion: "v2", Token: "jwt-123", Timeout: 5 * time.Second})
	if _, err := good.GetDAG(context.Background(), "no/such dag"); err == nil || !strings.Contains(err.Error(), "was not found") {
		t.Errorf("404 error = %v", err)
	}
	if _, err := NewAirflow(nil); err != ErrAirflowNotConfigured {
		t.Errorf("nil config: %v", err)
	}
}

func TestDBTCloudTriggersAndWaitsForARun(t *testing.T) {
	f := orchtest.NewDBTCloud(7, "svc-token", 55)
	defer f.Close()
	d, err := NewDBTCloud(&config.DBT{Cloud: &config.DBTCloud{URL: f.URL, AccountID: 7, Token: "svc-token", Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := d.TriggerJob(context.Background(), 55, strings.Repeat("x", 300))
	if err != nil || run.ID == 0 || run.Terminal() {
		t.Fatalf("%+v %v", run, err)
	}
	done, err := d.WaitRun(context.Background(), run.ID, time.Millisecond)
	if err != nil || !done.Succeeded() {
		t.Fatalf("%+v %v", done, err)
	}
}

func TestDBTCloudErrorsCarryTheUserMessage(t *testing.T) {
	f := orchtest.NewDBTCloud(7, "svc-token", 55)
	defer f.Close()
	d, _ := NewDBTCloud(&config.DBT{Cloud: &config.DBTCloud{URL: f.URL, AccountID: 7, Token: "svc-token", Timeout: 5 * time.Second}})
	if _, err := d.TriggerJob(context.Background(), 99, "c"); err == nil || !strings.Contains(err.Error(), "Requested resource not found") {
		t.Errorf("404: %v", err)
	}
	bad, _ := NewDBTCloud(&config.DBT{Cloud: &config.DBTCloud{URL: f.URL, AccountID: 7, Token: "nope", Timeout: 5 * time.Second}})
	if _, err := bad.TriggerJob(context.Background(), 55, "c"); err == nil || !strings.Contains(err.Error(), "Invalid token") || !strings.Contains(err.Error(), "dbt.cloud") {
		t.Errorf("401: %v", err)
	}
	if _, err := NewDBTCloud(&config.DBT{}); err != ErrDBTCloudNotConfigured {
		t.Errorf("unconfigured: %v", err)
	}
}
