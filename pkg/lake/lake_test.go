package lake_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/lake/laketest"
)

// writeEvents builds a table over three snapshots: rows with metrics, a dropped field, then rows
// written with column metrics off.
func writeEvents(t *testing.T) (*lake.Lake, string) {
	t.Helper()
	l := laketest.Open(t, laketest.Config(t.TempDir(), "lkc-test"))
	w := laketest.Create(t, l, "lkc-test", "events-hourly",
		laketest.Long(1, "id"), laketest.String(2, "region"), laketest.Long(3, "bytes"), laketest.String(4, "legacy_code"))
	w.Append(`[{"id":1,"region":"eu","bytes":10,"legacy_code":"a"},{"id":2,"region":"us","bytes":null,"legacy_code":"b"},
 {"id":3,"region":"eu","bytes":30,"legacy_code":null},{"id":4,"region":null,"bytes":40,"legacy_code":"d"}]`)
	w.DropColumn("legacy_code")
	w.Append(`[{"id":5,"region":"eu","bytes":null},{"id":6,"region":"us","bytes":null},{"id":7,"region":"eu","bytes":70},{"id":8,"region":"us","bytes":80}]`)
	w.ColumnMetrics("none")
	w.Append(`[{"id":9,"region":"eu","bytes":null},{"id":10,"region":"eu","bytes":100}]`)
	return l, "tableflow:events-hourly"
}

func TestLoadHistorySchemaHistoryAndColumnStats(t *testing.T) {
	before := time.Now().Add(-time.Second)
	l, asset := writeEvents(t)
	ctx := context.Background()
	tbl, err := l.Load(ctx, asset)
	if err != nil {
		t.Fatal(err)
	}
	loads := lake.LoadHistory(tbl)
	if len(loads) != 3 {
		t.Fatalf("want 3 snapshots, got %+v", loads)
	}
	var added int64
	for _, ld := range loads {
		added += ld.AddedRecords
		if ld.Operation != "append" || ld.AddedFiles < 1 || ld.CommittedAt.Before(before) {
			t.Fatalf("load = %+v", ld)
		}
	}
	if added != 10 || *loads[2].TotalRecords != 10 {
		t.Fatalf("added %d, total %v", added, loads[2].TotalRecords)
	}

	changes := lake.SchemaHistory(tbl)
	if len(changes) != 1 || changes[0].Change != "dropped" || changes[0].Field != "legacy_code" || changes[0].SnapshotID != loads[1].SnapshotID {
		t.Fatalf("schema history = %+v (snapshots %+v)", changes, loads)
	}
	if d := changes[0].Describe("events-hourly"); !strings.Contains(d, "legacy_code") || !strings.Contains(d, "dropped") {
		t.Fatal(d)
	}

	st, err := lake.Stats(ctx, tbl, before, time.Now().Add(time.Second), lake.Want{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 3 || st.Records != 10 || st.ScannedFiles != 1 {
		t.Fatalf("stats = %+v", st)
	}
	byName := map[string]lake.ColumnStats{}
	for _, c := range st.Columns {
		byName[c.Column] = c
	}
	b := byName["bytes"]
	// 1 + 2 nulls from manifests, 1 from the scanned file without metrics.
	if b.Values != 10 || b.Nulls != 4 || b.FromMetadata != 2 || b.Scanned != 1 {
		t.Fatalf("bytes = %+v", b)
	}
	if r := byName["region"]; r.Nulls != 1 || r.Values != 10 {
		t.Fatalf("region = %+v", r)
	}
	if _, dropped := byName["legacy_code"]; dropped {
		t.Fatal("a dropped column is counted")
	}
	// A window after every commit holds nothing.
	empty, err := lake.Stats(ctx, tbl, time.Now().Add(time.Hour), time.Now().Add(2*time.Hour), lake.Want{Columns: []string{"bytes"}})
	if err != nil || empty.Files != 0 || empty.Records != 0 {
		t.Fatalf("empty window = %+v, %v", empty, err)
	}
	if _, err := lake.Stats(ctx, tbl, before, time.Now(), lake.Want{Columns: []string{"legacy_code"}}); err == nil || !strings.Contains(err.Error(), "not in the current schema") {
		t.Fatalf("dropped column err = %v", err)
	}
}

func TestLakeNamesAndErrors(t *testing.T) {
	l, _ := writeEvents(t)
	ctx := context.Background()
	if _, err := l.Load(ctx, "tableflow:nope"); err == nil || !strings.Contains(err.Error(), "no table lkc-test.nope") {
		t.Fatalf("missing table err = %v", err)
	}
	if _, err := l.Load(ctx, "iceberg:lkc-test.events-hourly"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"iceberg:events", "iceberg:a..b", "warehouse:x", "tableflow:"} {
		if _, err := l.Identifier(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	// Tableflow's own naming: usage-hourly lands as usage_hourly.
	laketest.Create(t, l, "lkc-test", "usage_hourly", laketest.Long(1, "id"))
	if tbl, err := l.Load(ctx, "tableflow:usage-hourly"); err != nil || tbl.Identifier()[1] != "usage_hourly" {
		t.Fatalf("tableflow name: %v", err)
	}
	ids, err := l.Tables(ctx, "")
	if err != nil || len(ids) != 2 {
		t.Fatalf("tables = %v, %v", ids, err)
	}
	if err := l.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Open(ctx, nil); err == nil || !strings.Contains(err.Error(), "lake.catalog") {
		t.Fatalf("unconfigured err = %v", err)
	}
}
