package quality_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/store"
)

// judged is what a report says, result by result, without its run id.
func judged(rep *quality.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", rep.Status, rep.Summary)
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "%s %s %v %s %q", r.Metric, r.Subject, r.Value, r.Status, r.Why)
		if r.Baseline != nil {
			fmt.Fprintf(&b, " baseline %+v", *r.Baseline)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Runs whose records are written behind their answers judge exactly as runs written before: each
// run's baselines see every earlier run's points (a run reads its history only once what this
// process answered is written), on every engine and store.
func TestRunsWrittenBehindJudgeAsRunsWrittenBefore(t *testing.T) {
	for name, open := range engines() {
		t.Run(name, func(t *testing.T) {
			e := open(t)
			before, behind := quality.NewHistory(openStore(t)), quality.NewHistory(openStore(t)).WriteBehind()
			req := quality.Request{Table: "usage_hourly", Checks: []quality.Check{quality.Volume, quality.Freshness, quality.NullRate}}
			for day := 0; day < 15; day++ {
				want := runAt(t, e.wh, before, at15(day), req)
				got := runAt(t, e.wh, behind, at15(day), req)
				if judged(got) != judged(want) {
					t.Fatalf("day %d written behind judged\n%s\nwritten before judged\n%s", day, judged(got), judged(want))
				}
				if got.RunID == 0 {
					t.Fatalf("day %d: a run written behind answered without its run id", day)
				}
			}
			// The last day's nulls fail against a baseline learnt from the 14 days before it.
			if r := result(t, runAt(t, e.wh, behind, at15(14).Add(time.Minute), req), "null_rate", "egress_bytes"); r.Status != quality.Fail || r.Baseline == nil {
				t.Fatalf("the last day's null rate = %+v, want a fail against a baseline", r)
			}
		})
	}
}

// The run id a run answers with names the run the store then holds, with its points; a history
// read right after the answer, in the same process, sees it.
func TestARunWrittenBehindIsTheRunItsAnswerNames(t *testing.T) {
	e := engines()["sqlite"](t)
	st := openStore(t)
	h := quality.NewHistory(st).WriteBehind()
	req := quality.Request{Table: "usage_hourly", Checks: []quality.Check{quality.Volume, quality.NullRate}}
	var ids []int64
	for day := 0; day < 3; day++ {
		rep := runAt(t, e.wh, h, at15(day), req)
		runs, err := h.Runs(context.Background(), quality.HistoryQuery{Asset: rep.Asset, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].ID != rep.RunID || runs[0].Status != string(rep.Status) || runs[0].Summary != rep.Summary {
			t.Fatalf("day %d answered run %d (%s), the history's newest is %+v", day, rep.RunID, rep.Status, runs)
		}
		for _, r := range rep.Results {
			found := false
			for _, m := range runs[0].Metrics {
				found = found || m.Metric == r.Metric && m.Subject == r.Subject && m.Value == r.Value && m.Status == string(r.Status)
			}
			if !found {
				t.Fatalf("run %d's record lacks %s %s = %v: %+v", rep.RunID, r.Metric, r.Subject, r.Value, runs[0].Metrics)
			}
		}
		ids = append(ids, rep.RunID)
	}
	if !(ids[0] < ids[1] && ids[1] < ids[2]) {
		t.Fatalf("one process's run ids %v do not increase", ids)
	}
}

// A run that fails a check is written before it answers: its failing points are evidence another
// process may read next, and an incident it opens is named in its answer. The store already holds
// the run, its incident and the failing point's link to it, and a failing run that opens no
// incident is there too.
func TestARunThatFailsIsWrittenBeforeItAnswers(t *testing.T) {
	e := engines()["sqlite"](t)
	st := openStore(t)
	h := quality.NewHistory(st).WriteBehind()
	req := quality.Request{Table: "usage_hourly", Checks: []quality.Check{quality.NullRate}}
	for day := 0; day < 14; day++ {
		runAt(t, e.wh, h, at15(day), req)
	}
	req.OpenIncidents = func(string) bool { return true }
	rep := runAt(t, e.wh, h, at15(14), req)
	if len(rep.Incidents) != 1 {
		t.Fatalf("the failing run opened %+v, want one incident", rep.Incidents)
	}
	// Read on the store's pool, without waiting for what is queued behind answers.
	var incident sql.NullInt64
	if err := st.DB.QueryRow(`SELECT incident_id FROM metric_points WHERE run_id = ? AND metric = 'null_rate' AND subject = 'egress_bytes'`, rep.RunID).Scan(&incident); err != nil {
		t.Fatalf("run %d is not in the store when its answer names incident %d: %v", rep.RunID, rep.Incidents[0].ID, err)
	}
	if incident.Int64 != rep.Incidents[0].ID {
		t.Fatalf("the failing point names incident %v, want %d", incident, rep.Incidents[0].ID)
	}
	req.OpenIncidents = nil
	again := runAt(t, e.wh, h, at15(14).Add(time.Minute), req)
	var status string
	if err := st.DB.QueryRow(`SELECT status FROM check_runs WHERE id = ?`, again.RunID).Scan(&status); err != nil || status != "fail" || !again.Failed {
		t.Fatalf("a failing run that opens no incident (run %d, failed %v) is not in the store when it answers: %q, %v", again.RunID, again.Failed, status, err)
	}
}

// A record that cannot be written after its answer is not lost while the process lives: the next
// run is written before its answer and fails with the earlier record's error while the store
// still refuses it, and once the store writes again both are written, in order.
func TestARecordThatFailedBehindItsAnswerFailsTheNextRunUntilItIsWritten(t *testing.T) {
	e := engines()["sqlite"](t)
	path := filepath.Join(t.TempDir(), "dw.db")
	st, err := store.Open(context.Background(), path, store.Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := quality.NewHistory(st).WriteBehind()
	req := quality.Request{Table: "usage_hourly", Checks: []quality.Check{quality.Volume}}
	first := runAt(t, e.wh, h, at15(0), req) // reserves the process's run ids
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Another process holds the store's write lock past the busy timeout.
	other, err := store.Open(context.Background(), path, store.Options{BusyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- other.Write(context.Background(), func(*sql.Tx) error { close(holding); <-release; return nil })
	}()
	<-holding
	answered := runAt(t, e.wh, h, at15(1), req) // answers; its record then fails behind it
	if err := st.AwaitWrites(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.BehindFailure() == nil {
		t.Fatal("the record written behind its answer did not fail while another process held the lock")
	}
	w, err := quality.ParseWindow(quality.WindowSpec{Window: "today", TimeZone: "UTC"}, at15(2))
	if err != nil {
		t.Fatal(err)
	}
	req.Window = w
	_, err = quality.NewChecker(e.wh, h, func() time.Time { return at15(2) }).Run(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "an earlier run's record") {
		t.Fatalf("the next run while the store refuses writes = %v, want the earlier record's error", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	last := runAt(t, e.wh, h, at15(3), req)
	runs, err := h.Runs(context.Background(), quality.HistoryQuery{Asset: first.Asset})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range runs {
		got = append(got, r.ID)
	}
	want := []int64{last.RunID, answered.RunID, first.RunID} // newest first; the refused run was never answered
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the history holds runs %v, want %v", got, want)
	}
}

// A record whose commit landed but whose answer was lost is not written twice, nor does it block
// the queue: its retry finds its own run. A different run holding the id still fails it.
func TestARecordRetriedAfterItsCommitLandedIsNotAFailure(t *testing.T) {
	e := engines()["sqlite"](t)
	st := openStore(t)
	h := quality.NewHistory(st).WriteBehind()
	req := quality.Request{Table: "usage_hourly", Checks: []quality.Check{quality.Volume}}
	first := runAt(t, e.wh, h, at15(0), req)
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	insert := func(id int64, started time.Time) {
		t.Helper()
		if err := st.Write(context.Background(), func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO check_runs (id, asset, started_at, finished_at, status) VALUES (?, ?, ?, ?, 'pass')`,
				id, first.Asset, store.Timestamp(started), store.Timestamp(started))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The next run's id (a block reserved by one process is consecutive on both engines), already
	// written for that run.
	insert(first.RunID+1, at15(1))
	if rep := runAt(t, e.wh, h, at15(1), req); rep.RunID != first.RunID+1 {
		t.Fatalf("run id %d, want %d", rep.RunID, first.RunID+1)
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatalf("the retry of a record already in the store failed: %v", err)
	}
	// Another run holding the next id is a real conflict.
	insert(first.RunID+2, at15(9))
	runAt(t, e.wh, h, at15(2), req)
	if err := st.Flush(context.Background()); !store.IsUniqueViolation(err) {
		t.Fatalf("a record whose id another run holds: Flush = %v, want the conflict", err)
	}
}
