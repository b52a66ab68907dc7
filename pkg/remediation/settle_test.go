package remediation

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
)

// A process that dies between dispatch and recording leaves the action running: it blocks its
// approval until a person says what the target system shows, and only then may it run again.
func TestAnInterruptedActionBlocksUntilAPersonSettlesIt(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "L2")
	r := w.approved(t, approvals.Proposal{IncidentID: 3, Class: config.ClassTriggerJob, Target: "job:airflow/sync_metered_usage_to_stripe",
		Title: "Re-send today", Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe"}})
	// The claim a crashed process left behind.
	a := Action{RequestID: r.ID, IncidentID: 3, Class: r.Class, Target: r.Target, Payload: r.Payload, PayloadSHA256: r.PayloadSHA256,
		Status: StatusRunning, Authority: AuthorityApproval, StartedAt: time.Now(), FinishedAt: time.Now()}
	nothing := func(*sql.Tx) (int64, error) { return 0, nil }
	if _, err := w.exec.claim(ctx, &a, nothing); err != nil {
		t.Fatal(err)
	}
	if _, err := w.exec.Run(ctx, r.ID); err == nil || len(w.airflow.Runs()) != 0 {
		t.Fatalf("an approval whose action is still running ran again: err=%v runs=%d", err, len(w.airflow.Runs()))
	}
	stuck, err := w.exec.Interrupted(ctx)
	if err != nil || len(stuck) != 1 || stuck[0].ID != a.ID {
		t.Fatalf("Interrupted = %+v, %v", stuck, err)
	}
	for _, bad := range []struct{ outcome, who, why, want string }{
		{"done", "ann", "checked Airflow", "use succeeded or failed"},
		{StatusFailed, "", "checked Airflow", "who and why"},
		{StatusFailed, "ann", " ", "who and why"},
	} {
		if _, err := w.exec.Settle(ctx, a.ID, bad.outcome, bad.who, bad.why); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("Settle(%q, %q, %q) = %v, want %q", bad.outcome, bad.who, bad.why, err, bad.want)
		}
	}
	settled, err := w.exec.Settle(ctx, a.ID, StatusFailed, "ann", "no run in Airflow's list for this morning")
	if err != nil {
		t.Fatal(err)
	}
	if settled.Status != StatusFailed || !strings.Contains(settled.Error, "settled as failed by ann") || settled.Result["settled"] == nil {
		t.Fatalf("settled = %+v", settled)
	}
	if _, err := w.exec.Settle(ctx, a.ID, StatusSucceeded, "ann", "changed my mind"); err == nil || !strings.Contains(err.Error(), "already recorded") {
		t.Fatalf("a recorded outcome was rewritten: %v", err)
	}
	if _, err := w.exec.Run(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if runs := len(w.airflow.Runs()); runs != 1 {
		t.Fatalf("%d dispatches after settling as failed, want 1", runs)
	}
	if stuck, _ := w.exec.Interrupted(ctx); len(stuck) != 0 {
		t.Fatalf("still interrupted: %+v", stuck)
	}
}
