package diagnosis

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/lake/laketest"
	"github.com/dataworkers/dw/pkg/metrics"
	"github.com/dataworkers/dw/pkg/store"
)

// TestSinkLagThroughTheOnsetIsEvidence reads the sink connector's consumer group lag from Datadog
// (a loopback fixture of its v2 timeseries query API) and reports it normal through the onset.
func TestSinkLagThroughTheOnsetIsEvidence(t *testing.T) {
	f, inc := connectorStory(t)
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Data struct {
				Attributes struct {
					Queries []struct {
						Query string `json:"query"`
					} `json:"queries"`
				} `json:"attributes"`
			} `json:"data"`
		}
		if r.URL.Path != "/api/v2/query/timeseries" || json.NewDecoder(r.Body).Decode(&body) != nil || len(body.Data.Attributes.Queries) != 1 {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"errors":["want a timeseries_request"]}`))
			return
		}
		asked = body.Data.Attributes.Queries[0].Query
		before, after := time.Date(2026, 8, 14, 14, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 8, 14, 15, 30, 0, 0, time.UTC).UnixMilli()
		w.Write([]byte(`{"data":{"type":"timeseries_response","attributes":{"series":[{"group_tags":["consumer_group:connect-orders-snowflake-sink","topic:orders"]}],
 "times":[` + itoa(before) + `,` + itoa(after) + `],"values":[[40,55]]}}}`))
	}))
	defer srv.Close()
	dd, err := metrics.NewDatadog(&config.Datadog{URL: srv.URL, APIKey: "k-123456", ApplicationKey: "a-123456", LagMetric: "kafka.consumer_lag",
		GroupTag: "consumer_group", TopicTag: "topic", PartitionTag: "partition", Timeout: 5 * time.Second}, f.now)
	if err != nil {
		t.Fatal(err)
	}
	watch := Watch{Lag: func(ctx context.Context, group string, from, to time.Time) ([]metrics.Series, error) {
		res, err := dd.Lag(ctx, metrics.Query{Group: group, Start: from, End: to, Step: 5 * time.Minute})
		return res.Series, err
	}}
	rep, err := NewGatherer(f.st, f.g, nil, f.now, Live{}, nil, 10*time.Second).WithWatch(watch).Diagnose(context.Background(), inc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(asked, "consumer_group:connect-orders-snowflake-sink") {
		t.Fatalf("query = %s", asked)
	}
	if len(rep.Evidence.Lag) != 1 || rep.Evidence.Lag[0].Verdict != "normal" || !strings.Contains(rep.Evidence.Lag[0].Summary, "load lag of connect-orders-snowflake-sink on orders was normal through the onset") {
		t.Fatalf("lag evidence = %+v", rep.Evidence.Lag)
	}
	// Without a lag reader, the gap is named rather than skipped.
	rep, err = NewGatherer(f.st, f.g, nil, f.now, Live{}, nil, 10*time.Second).WithWatch(Watch{}).Diagnose(context.Background(), inc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Input.Unchecked, "\n"), "metrics.prometheus") {
		t.Fatalf("unchecked = %v", rep.Input.Unchecked)
	}
}

// TestAFieldDroppedInTheLakeTableIsACause writes a real Iceberg table whose second snapshot drops
// a field, and diagnoses a null-rate failure of that field in the warehouse table it feeds.
func TestAFieldDroppedInTheLakeTableIsACause(t *testing.T) {
	cfg := laketest.Config(t.TempDir(), "lkc-d")
	l := laketest.Open(t, cfg)
	w := laketest.Create(t, l, "lkc-d", "events-hourly", laketest.Long(1, "id"), laketest.String(2, "region"))
	w.Append(`[{"id":1,"region":"eu"}]`)
	w.DropColumn("region")
	w.Append(`[{"id":2}]`)

	f := newFixture(t)
	now := time.Now().Add(2 * time.Minute)
	f.now = func() time.Time { return now }
	ctx := context.Background()
	tf := graph.TableflowURN("events-hourly")
	wh := graph.URN("warehouse:sqlite/events_hourly")
	b := graph.Batch{Source: "test:lake-story", Assets: []graph.Asset{
		{URN: tf, Kind: graph.KindTableflowTable, Fields: []graph.Field{{Path: "id"}, {Path: "region"}}},
		{URN: wh, Kind: graph.KindWarehouseTable, Fields: []graph.Field{{Path: "id"}, {Path: "region"}}},
	}, Edges: []graph.Edge{
		{From: tf.Field(""), To: wh.Field(""), Kind: graph.EdgeMaterializes},
		{From: tf.Field("region"), To: wh.Field("region"), Kind: graph.EdgeMaterializes},
	}}
	if _, err := f.g.Import(ctx, b); err != nil {
		t.Fatal(err)
	}
	inc := failingNow(t, f, wh, ModeNullRate, "null_rate", "region", now.Add(-time.Minute))
	watch := Watch{LakeSchema: func(ctx context.Context, asset string) ([]LakeSchemaChange, error) {
		tbl, err := l.Load(ctx, asset)
		if err != nil {
			return nil, err
		}
		var out []LakeSchemaChange
		for _, c := range lake.SchemaHistory(tbl) {
			out = append(out, LakeSchemaChange{Field: c.Field, Change: c.Change, Type: c.Type, SnapshotID: c.SnapshotID, At: c.At, ToSchema: c.ToSchema})
		}
		return out, nil
	}}
	rep, err := NewGatherer(f.st, f.g, nil, f.now, Live{}, nil, 10*time.Second).WithWatch(watch).Diagnose(ctx, inc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Evidence.LakeSchema) != 1 || !strings.Contains(rep.Evidence.LakeSchema[0], "field region dropped in tableflow:events-hourly") {
		t.Fatalf("lake evidence = %v (unchecked %v)", rep.Evidence.LakeSchema, rep.Input.Unchecked)
	}
	if len(rep.Result.Candidates) == 0 {
		t.Fatalf("no candidates: %+v", rep.Result)
	}
	top := rep.Result.Candidates[0]
	if top.Kind != "schema_change" || !strings.Contains(top.Source, string(tf)) || !strings.Contains(top.Cause, "region") {
		t.Fatalf("top = %+v", rep.Result.Candidates)
	}
}

// failingNow records passing check runs hourly up to failAt, where the metric fails, and opens the
// incident, so the onset is failAt.
func failingNow(t *testing.T, f fixture, asset graph.URN, mode, metric, subject string, failAt time.Time) incidents.Incident {
	t.Helper()
	ctx := context.Background()
	err := f.st.Write(ctx, func(tx *sql.Tx) error {
		for h := 4; h >= 0; h-- {
			status, at := "pass", store.Timestamp(failAt.Add(-time.Duration(h)*time.Hour))
			if h == 0 {
				status = "fail"
			}
			var run int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO check_runs (asset, monitor, started_at, finished_at, window_label, status, summary)
VALUES (?, 'm', ?, ?, 'last hour', ?, '') RETURNING id`, string(asset), at, at, status).Scan(&run); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO metric_points (run_id, asset, metric, subject, at, value, status)
VALUES (?, ?, ?, ?, ?, 1, ?)`, run, string(asset), metric, subject, at, status); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.inc.Open(ctx, string(asset), mode, "sev2", mode+" failed", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	inc, err := f.inc.Get(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	return inc
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
