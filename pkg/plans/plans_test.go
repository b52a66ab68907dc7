package plans

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func TestSaveAndLatest(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	now := time.Date(2026, 11, 29, 15, 5, 0, 0, time.UTC)
	inc, err := incidents.New(st, func() time.Time { return now }).Open(ctx, "warehouse:sqlite/main.usage_hourly", "null_rate", "sev2", "nulls", "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Latest(ctx, st, inc.ID); !errors.Is(err, ErrNoPlan) {
		t.Fatalf("Latest before any plan = %v, want ErrNoPlan", err)
	}
	first, err := Save(ctx, st, Plan{IncidentID: inc.ID, CreatedBy: "dw-incidents", Proposals: []Proposal{{Order: 1, Class: "pause_job", Target: "job:airflow/x", Payload: map[string]any{"dag_id": "x", "is_paused": true}}}}, now)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Save(ctx, st, Plan{IncidentID: inc.ID, CreatedBy: "dw-incidents", Checks: []Check{{Asset: "warehouse:sqlite/main.usage_hourly", Check: "null_rate", Columns: []string{"egress_bytes"}}}}, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Latest(ctx, st, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != second.ID || len(got.Checks) != 1 || got.Checks[0].Columns[0] != "egress_bytes" || !got.CreatedAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("Latest = %+v, want the second plan", got)
	}
	old, err := Get(ctx, st, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if old.Proposals[0].Payload["dag_id"] != "x" || old.IncidentID != inc.ID {
		t.Fatalf("Get(first) = %+v", old)
	}
}
