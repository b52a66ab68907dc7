package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/lake/lakewrite"
)

// The demo's lake: Tableflow lands the hourly topic as an Iceberg table in a local warehouse (a
// SQL catalog on SQLite), in the namespace named after the Kafka cluster, as it does in a bucket.
func lakeConfig(dir string) *config.Lake {
	return lakewrite.Config(filepath.Join(dir, "lake"), confluenttest.Cluster)
}

// lakeTable is the Iceberg table Tableflow keeps for the hourly topic; rows append as snapshots.
type lakeTable struct {
	cfg *config.Lake
	cat catalog.Catalog // open while the table is written: commits go through it
	tbl *lakewrite.Table
	// since is the commit time before the latest append: the lake check's window starts there.
	since time.Time
}

// createLakeTable makes the hourly topic's Iceberg table with the rollup's columns.
func createLakeTable(ctx context.Context, cfg *config.Lake) (*lakeTable, error) {
	cat, err := lakewrite.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tbl, err := lakewrite.Create(ctx, cat, cfg.Namespace, lake.TableflowName(HourlyTopic),
		lakewrite.String(1, "account_id"), lakewrite.Timestamp(2, "hour"), lakewrite.Long(3, "egress_bytes"), lakewrite.Long(4, "request_count"))
	if err != nil {
		lakewrite.Close(cat)
		return nil, err
	}
	return &lakeTable{cfg: cfg, cat: cat, tbl: tbl}, nil
}

func (l *lakeTable) close() error { return lakewrite.Close(l.cat) }

// append commits rows as one snapshot, as Tableflow commits what the topic received.
func (l *lakeTable) append(ctx context.Context, rows []Row) error {
	type lakeRow struct {
		AccountID    string `json:"account_id"`
		Hour         string `json:"hour"`
		EgressBytes  *int64 `json:"egress_bytes"`
		RequestCount int64  `json:"request_count"`
	}
	out := make([]lakeRow, len(rows))
	for i, r := range rows {
		out[i] = lakeRow{AccountID: r.AccountID, Hour: r.Hour.UTC().Format(time.RFC3339), EgressBytes: r.EgressBytes, RequestCount: r.RequestCount}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	// Commit times are whole milliseconds; the window starts at the millisecond before.
	l.since = time.Now().Add(-time.Millisecond)
	return l.tbl.AppendJSON(ctx, string(b))
}

// lakeCheck checks the hourly topic where Tableflow landed it, from the Iceberg table's metadata
// alone: the v12 snapshot's egress_bytes nulls, from the manifests, must be the warehouse's.
func (s *story) lakeCheck(ctx context.Context) error {
	asset := "tableflow:" + HourlyTopic
	args := map[string]any{"table": asset, "metrics": []string{"null_rate", "volume", "freshness"}, "columns": []string{"egress_bytes"},
		"since": s.lake.since.UTC().Format(time.RFC3339Nano), "until": time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano),
		"thresholds":    []map[string]any{{"metric": "null_rate", "column": "egress_bytes", "max": 0.01}},
		"open_incident": false}
	var rep qualityReport
	if err := s.call(ctx, "dw-quality", "run_quality_check", args, &rep); err != nil {
		return err
	}
	r, ok := rep.result("null_rate", "egress_bytes")
	if !ok {
		return fmt.Errorf("the lake check of %s has no egress_bytes null_rate result: %+v", asset, rep.Results)
	}
	if r.Status != "fail" || math.Abs(r.Value-s.res.NullShare) > 1e-6 {
		return fmt.Errorf("lake check of %s: egress_bytes null rate %v (%s), want %v failing its limit: %s", asset, r.Value, r.Status, s.res.NullShare, r.Why)
	}
	if len(rep.Incidents) != 0 {
		return fmt.Errorf("the lake check opened an incident although asked not to: %+v", rep.Incidents)
	}
	s.res.LakeNullShare = r.Value
	s.step("dw-quality", "run_quality_check", fmt.Sprintf("%s in the Iceberg table %s.%s, no query: FAIL egress_bytes %s (the warehouse's share, from manifests)",
		asset, s.lake.cfg.Namespace, lake.TableflowName(HourlyTopic), r.Why))
	return nil
}
