package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

// A local store with incidents, an approval and signed receipts moves into an empty team store
// with `store copy`: the chain verifies there with the same key, a second copy is refused, and
// --replace overwrites. The password given in the URL never shows.
func TestStoreCopyMovesTheLocalStoreIntoTheTeamStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	run := approvalWorldIn(t, dir)
	code, out, errOut := run("", "", "call", "request_approval", `{"incident_id":7,"proposals":[{"class":"pause_job","target":"job:airflow/sync_metered_usage_to_stripe","title":"Pause the sync","payload":{"dag_id":"sync_metered_usage_to_stripe"}}]}`)
	if code != 0 {
		t.Fatalf("request_approval: %d %s %s", code, out, errOut)
	}
	local, err := store.Open(ctx, dir+"/dw.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inc, err := incidents.New(local, time.Now).Open(ctx, "warehouse:snowflake/a.b.c", "volume", "sev2", "rows dropped", "test")
	if err != nil {
		t.Fatal(err)
	}
	key, err := receipts.LoadOrCreateKey(receipts.KeyPath(local.Path()))
	if err != nil {
		t.Fatal(err)
	}
	chain, err := receipts.Open(ctx, local, key, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := chain.Append(ctx, inc.ID, map[string]any{"step": i}); err != nil {
			t.Fatal(err)
		}
	}
	local.Close()

	_, opts := storetest.LocationOn(t, store.PostgreSQL)
	team := strings.Replace(opts.URL, "postgres@", "postgres:not-a-real-pw-1234@", 1) // trust auth ignores it
	code, out, errOut = run("", "", "store", "copy", "--to", team)
	if code != 0 || !strings.Contains(out, "receipts: 3 verified in the team store") || !strings.Contains(out, "approval_requests") {
		t.Fatalf("store copy: %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "not-a-real-pw-1234") {
		t.Fatalf("the password was shown:\n%s%s", out, errOut)
	}
	// The team store stands on its own: a fresh handle verifies the chain.
	st, err := store.Open(ctx, dir+"/dw.db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c2, err := receipts.Open(ctx, st, key, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c2.Verify(ctx); err != nil || !v.OK || v.Receipts != 3 {
		t.Fatalf("team chain = %+v, %v", v, err)
	}
	code, _, errOut = run("", "", "store", "copy", "--to", team)
	if code != 2 || !strings.Contains(errOut, "already holds data") || !strings.Contains(errOut, "--replace") || strings.Contains(errOut, "not-a-real-pw-1234") {
		t.Fatalf("second copy: %d %s", code, errOut)
	}
	if code, out, errOut = run("", "", "store", "copy", "--to", team, "--replace"); code != 0 {
		t.Fatalf("copy --replace: %d %s %s", code, out, errOut)
	}
	if code, _, errOut = run("", "", "store", "copy"); code != 2 || !strings.Contains(errOut, "DW_STORE_URL") {
		t.Fatalf("copy without a target: %d %s", code, errOut)
	}
}
