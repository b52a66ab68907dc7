package incidents

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

func newStore(t *testing.T) (*Store, *time.Time) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 11, 29, 15, 5, 0, 0, time.UTC)
	return New(st, func() time.Time { return now }), &now
}

const usage = "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY"

func TestASecondFailureOfTheSameKindJoinsTheOpenIncident(t *testing.T) {
	s, now := newStore(t)
	ctx := context.Background()
	first, err := s.Open(ctx, usage, "null_rate", "sev2", "egress_bytes 18% null", "dw-quality")
	if err != nil || !first.Opened {
		t.Fatalf("%+v %v", first, err)
	}
	*now = now.Add(time.Hour)
	second, _ := s.Open(ctx, usage, "null_rate", "sev2", "egress_bytes 21% null", "dw-quality")
	if second.Opened || second.ID != first.ID {
		t.Fatalf("second failure opened a new incident: %+v", second)
	}
	other, _ := s.Open(ctx, usage, "volume", "sev2", "rows low", "dw-quality")
	if !other.Opened || other.ID == first.ID {
		t.Fatalf("another failure mode must open its own incident: %+v", other)
	}
	inc, err := s.Get(ctx, first.ID)
	if err != nil || inc.Occurrences != 2 || inc.Summary != "egress_bytes 21% null" || len(inc.Events) != 2 || inc.Events[1].Kind != "joined" {
		t.Fatalf("%+v %v", inc, err)
	}
}

func TestConcurrentFailuresOpenExactlyOneIncident(t *testing.T) {
	s, _ := newStore(t)
	var wg sync.WaitGroup
	ids := make([]int64, 10)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.Open(context.Background(), usage, "null_rate", "sev2", "x", "dw-quality")
			if err != nil {
				t.Error(err)
			}
			ids[i] = o.ID
		}()
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("ids %v", ids)
		}
	}
}

func TestStatusLifecycleAndHistory(t *testing.T) {
	s, now := newStore(t)
	ctx := context.Background()
	o, _ := s.Open(ctx, usage, "null_rate", "sev2", "egress_bytes 18% null", "dw-quality")
	if err := s.RecordDiagnosis(ctx, o.ID, `{"cause":"v12"}`, "v12 of api-usage-value removed response_bytes", "dw-incidents"); err != nil {
		t.Fatal(err)
	}
	inc, _ := s.Get(ctx, o.ID)
	if inc.Status != StatusInvestigating || inc.Cause == "" {
		t.Fatalf("diagnosis did not move the incident: %+v", inc)
	}
	if _, err := s.SetStatus(ctx, o.ID, "closed", "x", ""); err == nil || !strings.Contains(err.Error(), "use one of") {
		t.Fatalf("bad status: %v", err)
	}
	*now = now.Add(8 * time.Hour)
	inc, err := s.SetStatus(ctx, o.ID, StatusResolved, "dw-incidents", "v13 registered; usage-hourly-v2 verified")
	if err != nil || inc.ResolvedAt == nil || inc.Resolution == "" {
		t.Fatalf("%+v %v", inc, err)
	}
	if _, err := s.SetStatus(ctx, o.ID, StatusOpen, "x", ""); err == nil {
		t.Fatal("a resolved incident was reopened")
	}
	// A new failure after resolution opens a new incident; history shows both with cause and resolution.
	again, _ := s.Open(ctx, usage, "null_rate", "sev2", "again", "dw-quality")
	if !again.Opened {
		t.Fatal("a failure after resolution joined the closed incident")
	}
	hist, err := s.History(ctx, Query{Assets: []string{usage, "dbt:model.billing.fct_billable_egress"}})
	if err != nil || len(hist) != 2 || hist[0].ID != again.ID || hist[1].Cause == "" || hist[1].Resolution == "" {
		t.Fatalf("%+v %v", hist, err)
	}
	closed, _ := s.History(ctx, Query{Status: "closed"})
	if len(closed) != 1 || closed[0].ID != o.ID {
		t.Fatalf("closed: %+v", closed)
	}
}
