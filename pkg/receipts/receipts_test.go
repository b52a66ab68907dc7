package receipts

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

type body struct {
	Cause   string   `json:"cause"`
	Actions []string `json:"actions"`
}

func newChain(t *testing.T) (*Chain, *store.Store) {
	t.Helper()
	st := storetest.Open(t)
	key, err := LoadOrCreateKey(KeyPath(st.Path()))
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)
	c, err := Open(context.Background(), st, key, func() time.Time { clock = clock.Add(time.Minute); return clock })
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

func appendN(t *testing.T, c *Chain, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := c.Append(context.Background(), int64(i%2+1), body{Cause: "v12 removed response_bytes", Actions: []string{"pause DAG"}}); err != nil {
			t.Fatal(err)
		}
	}
}

func verify(t *testing.T, c *Chain) Verification {
	t.Helper()
	v, err := c.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func exec(t *testing.T, st *store.Store, q string, args ...any) {
	t.Helper()
	if err := st.Write(context.Background(), func(tx *sql.Tx) error { _, err := tx.Exec(q, args...); return err }); err != nil {
		t.Fatal(err)
	}
}

func TestAnUntouchedChainVerifies(t *testing.T) {
	c, _ := newChain(t)
	if v := verify(t, c); !v.OK || v.Receipts != 0 {
		t.Fatalf("empty chain: %+v", v)
	}
	appendN(t, c, 5)
	v := verify(t, c)
	if !v.OK || v.Receipts != 5 {
		t.Fatalf("%+v", v)
	}
	got, err := c.ForIncident(context.Background(), 1)
	if err != nil || len(got) != 3 || !strings.Contains(string(got[0].Body), "response_bytes") {
		t.Fatalf("%d receipts for incident 1: %v", len(got), err)
	}
}

func TestTamperingIsDetected(t *testing.T) {
	cases := []struct {
		name   string
		tamper string
		args   []any
		want   string
	}{
		{"edited body", `UPDATE receipts SET body = replace(body, 'response_bytes', 'response_kib') WHERE seq = 2`, nil, "#2 was edited"},
		{"edited time", `UPDATE receipts SET created_at = '2020-01-01T00:00:00.000000000Z' WHERE seq = 3`, nil, "#3 was edited"},
		{"moved to another incident", `UPDATE receipts SET incident_id = 99 WHERE seq = 1`, nil, "#1 was edited"},
		{"removed from the middle", `DELETE FROM receipts WHERE seq = 2`, nil, "#2 is missing"},
		{"removed newest", `DELETE FROM receipts WHERE seq = 4`, nil, "4 receipts but 3 are stored"},
		{"truncated with the head rolled back", `UPDATE receipt_chain SET count = 3, head_mac = (SELECT mac FROM receipts WHERE seq = 3)`, nil, "head (count 3) was altered"},
		{"wiped", `DELETE FROM receipts`, nil, "4 receipts but 0 are stored"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, st := newChain(t)
			appendN(t, c, 4)
			exec(t, st, tc.tamper, tc.args...)
			if tc.name == "truncated with the head rolled back" {
				exec(t, st, `DELETE FROM receipts WHERE seq = 4`)
			}
			v := verify(t, c)
			if v.OK {
				t.Fatal("tampering went undetected")
			}
			var reasons []string
			for _, p := range v.Problems {
				reasons = append(reasons, p.Reason)
			}
			if !strings.Contains(strings.Join(reasons, "; "), tc.want) {
				t.Fatalf("problems %q lack %q", reasons, tc.want)
			}
		})
	}
}

func TestAnotherKeyCannotVerify(t *testing.T) {
	c, st := newChain(t)
	appendN(t, c, 2)
	other := &Chain{st: st, key: make([]byte, 32), now: time.Now}
	if v := verify(t, other); v.OK {
		t.Fatal("a chain verified with the wrong key")
	}
}

func TestConcurrentKeyCreationYieldsOneKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receipts.key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if string(k) != string(keys[0]) {
			t.Fatal("racing creators ended with different keys")
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	os.WriteFile(path, []byte("short"), 0o600)
	if _, err := LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), "restore it from backup") {
		t.Errorf("corrupt key: %v", err)
	}
}

// The Markdown names what each action ran on: a named approval, or the L3 rule and its record.
func TestMarkdownSaysWhatEachActionRanOn(t *testing.T) {
	at := time.Date(2026, 11, 29, 15, 30, 0, 0, time.UTC)
	b := Body{Incident: IncidentSummary{ID: 1, Asset: "warehouse:sqlite/main.usage_hourly", OpenedAt: at}, PlanID: 4, Cause: "v12 removed response_bytes",
		Proposals: []Proposal{
			{Order: 1, Class: "pause_job", Target: "job:airflow/x", Title: "Pause x", Executor: "data_workers", RequestID: 7, Undo: "unpause x"},
			{Order: 2, Class: "trigger_job", Target: "job:airflow/x", Title: "Re-run x", Executor: "data_workers"},
		},
		Actions: []Action{
			{ID: 10, Class: "pause_job", Target: "job:airflow/x", Status: "succeeded", Undo: "unpause x", Authority: "approval", RequestID: 7, ApprovedBy: "ann"},
			{ID: 11, Class: "trigger_job", Target: "job:airflow/x", Status: "succeeded", Undo: "mark the run failed", Authority: "l3_clean_record", Rule: "L3 clean record: actions #1, #2, #3"},
		}, Outcome: "resolved"}
	md := Markdown(Receipt{Seq: 1, CreatedAt: at}, b)
	for _, want := range []string{"Plan #4.", "| 1 | pause_job | `job:airflow/x` | data_workers | Pause x | #7 | unpause x |", "| 2 | trigger_job | `job:airflow/x` | data_workers | Re-run x | none |",
		"| approval #7 by ann |", "| no new approval (L3): L3 clean record: actions #1, #2, #3 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
