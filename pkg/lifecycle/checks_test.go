package lifecycle

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// parcelDay is the day the shipment events' weight field was removed upstream: from 06:00 the
// Protobuf (proto3) reader decodes it as 0, so weight_grams reads 0 and never null.
var parcelDay = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// parcelsWarehouse is a SQLite warehouse with a week of hourly parcel scans by three carriers up
// to today's noon; today from 06:00 weight_grams is 0.
func (e *estate) parcelsWarehouse(t *testing.T) *sql.DB {
	t.Helper()
	return e.parcelsOn(t, "sqlite", filepath.Join(t.TempDir(), "parcels.db"))
}

// parcelsOn is parcelsWarehouse on engine (sqlite or postgres) at dsn.
func (e *estate) parcelsOn(t *testing.T, engine, dsn string) *sql.DB {
	t.Helper()
	driver, tsType, insert := "sqlite3", "TEXT", `INSERT INTO parcel_scans VALUES (?, ?, ?, ?)`
	if engine == "postgres" {
		driver, tsType, insert = "pgx", "TIMESTAMP", `INSERT INTO parcel_scans VALUES ($1, $2, $3, $4)`
	}
	rw, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rw.Close() })
	if _, err := rw.Exec(`CREATE TABLE parcel_scans (scan_id TEXT NOT NULL, carrier TEXT NOT NULL, scanned_at ` + tsType + ` NOT NULL, weight_grams BIGINT)`); err != nil {
		t.Fatal(err)
	}
	tx, err := rw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for h := parcelDay.Add(-6 * 24 * time.Hour); h.Before(parcelDay.Add(12 * time.Hour)); h = h.Add(time.Hour) {
		for c, carrier := range []string{"northline", "bluepost", "vantrek"} {
			for i := range 4 {
				w := 500 + 250*c + 10*i
				if !h.Before(parcelDay.Add(6 * time.Hour)) {
					w = 0
				}
				if _, err := tx.Exec(insert, fmt.Sprintf("s-%s-%d-%s", carrier, i, h.Format("2006010215")), carrier, h.Format("2006-01-02 15:04:05"), w); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e.cfg.Warehouse = &config.Warehouse{Engine: engine, DSN: dsn, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}
	return rw
}

// monitorParcels runs req on parcel_scans at noon on each of the six days before today and today,
// opening incidents as a monitor at L1 would, and returns today's report.
func (e *estate) monitorParcels(t *testing.T, req quality.Request) *quality.Report {
	t.Helper()
	var rep *quality.Report
	for day := 6; day >= 0; day-- {
		*e.clock = parcelDay.Add(time.Duration(-day)*24*time.Hour + 12*time.Hour)
		rep = e.runParcels(t, req)
	}
	return rep
}

func parcelOptions() CheckOptions { return CheckOptions{TimestampColumn: "scanned_at"} }

// openedBy is the incident today's run opened for mode.
func openedBy(t *testing.T, rep *quality.Report, mode string) int64 {
	t.Helper()
	for _, ref := range rep.Incidents {
		if ref.FailureMode == mode {
			return ref.ID
		}
	}
	t.Fatalf("today's run opened no %s incident: %s (%+v)", mode, rep.Summary, rep.Incidents)
	return 0
}

// A removed proto3 field reads as zeros with no null behind: the column incident re-runs the
// zero rate and the hourly sum of the column that failed, stays open naming them while the zeros
// are there, and resolves with a receipt once the values are back.
func TestVerifyReRunsAColumnMetricIncident(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		e := newEstate(t)
		verifyZeroedColumn(t, e, e.parcelsWarehouse(t))
	})
	t.Run("postgres", func(t *testing.T) {
		e := newEstate(t)
		verifyZeroedColumn(t, e, e.parcelsOn(t, "postgres", pgtest.Start(t).NewDatabase(t)))
	})
}

func verifyZeroedColumn(t *testing.T, e *estate, rw *sql.DB) {
	ctx := context.Background()
	rep := e.monitorParcels(t, quality.Request{Checks: []quality.Check{quality.NullRate, quality.Column}, Columns: []string{"weight_grams"},
		ColumnMetrics: []quality.ColumnMetric{quality.ZeroRate, quality.SumPerHour}})
	id := openedBy(t, rep, "column")
	life := e.service(t, nil)

	*e.clock = parcelDay.Add(12*time.Hour + 10*time.Minute)
	got, err := life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Resolved || !got.Failed || got.ReceiptSeq != 0 {
		t.Fatalf("zeros still there, yet: %+v", got)
	}
	if st := statusOf(got); st["zero_rate"] != "fail" || st["sum_per_hour"] != "fail" || len(got.Checks) != 2 {
		t.Fatalf("want zero_rate and sum_per_hour of weight_grams failing: %+v", got.Checks)
	}
	last := got.Incident.Events[len(got.Incident.Events)-1]
	if !strings.Contains(last.Detail, "zero_rate (weight_grams)") {
		t.Errorf("timeline does not name the failing metric: %q", last.Detail)
	}

	restoreWeights(t, rw, "parcel_scans")
	*e.clock = e.clock.Add(10 * time.Minute)
	if got, err = life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()}); err != nil {
		t.Fatal(err)
	}
	if !got.Resolved || got.Failed || got.ReceiptSeq == 0 {
		t.Fatalf("values restored but not resolved: %+v", got.Checks)
	}
	for _, want := range []string{"zero_rate", "weight_grams", "## Checks before"} {
		if !strings.Contains(got.Receipt, want) {
			t.Errorf("receipt lacks %q:\n%s", want, got.Receipt)
		}
	}
}

// One carrier's rows vanish: the dimension incident re-runs the grouping by the key its failing
// run recorded, and resolves once that carrier's rows are loaded again.
func TestVerifyReRunsADimensionIncident(t *testing.T) {
	ctx := context.Background()
	e := newEstate(t)
	rw := e.parcelsWarehouse(t)
	if _, err := rw.Exec(`UPDATE parcel_scans SET weight_grams = 600`); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`CREATE TABLE held_back AS SELECT * FROM parcel_scans WHERE carrier = 'vantrek' AND scanned_at >= ?`, parcelDay.Format("2006-01-02 15:04:05")); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`DELETE FROM parcel_scans WHERE carrier = 'vantrek' AND scanned_at >= ?`, parcelDay.Format("2006-01-02 15:04:05")); err != nil {
		t.Fatal(err)
	}
	rep := e.monitorParcels(t, quality.Request{Checks: []quality.Check{quality.Dimension}, Dimension: &quality.DimensionSpec{Column: "carrier"}})
	id := openedBy(t, rep, "dimension")
	life := e.service(t, nil)

	*e.clock = parcelDay.Add(12*time.Hour + 10*time.Minute)
	got, err := life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Resolved || len(got.Checks) != 1 || got.Checks[0].Metric != "keys_moved" || got.Checks[0].Subject != "carrier" || got.Checks[0].Status != "fail" ||
		!strings.Contains(got.Checks[0].Why, "vantrek") {
		t.Fatalf("the missing carrier is not failing the re-run: %+v", got.Checks)
	}
	if _, err := rw.Exec(`INSERT INTO parcel_scans SELECT * FROM held_back`); err != nil {
		t.Fatal(err)
	}
	*e.clock = e.clock.Add(10 * time.Minute)
	if got, err = life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()}); err != nil {
		t.Fatal(err)
	}
	if !got.Resolved || got.ReceiptSeq == 0 {
		t.Fatalf("the carrier's rows are back but not resolved: %+v", got.Checks)
	}
}

// The plan moves the data to parcel_scans_v2 (written correctly since 08:00) with the checks the
// predicted symptom calls for: zero_rate and sum_per_hour, judged against parcel_scans's history
// (fewer zeros is fine; a smaller sum is not), the sum counted over the hours the new table has rows.
func TestVerifyJudgesColumnMetricsOnASupersedingTable(t *testing.T) {
	ctx := context.Background()
	e := newEstate(t)
	rw := e.parcelsWarehouse(t)
	rep := e.monitorParcels(t, quality.Request{Checks: []quality.Check{quality.Column}, Columns: []string{"weight_grams"},
		ColumnMetrics: []quality.ColumnMetric{quality.ZeroRate, quality.SumPerHour}})
	id := openedBy(t, rep, "column")
	if _, err := rw.Exec(`CREATE TABLE parcel_scans_v2 (scan_id TEXT NOT NULL, carrier TEXT NOT NULL, scanned_at TEXT NOT NULL, weight_grams BIGINT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`INSERT INTO parcel_scans_v2 SELECT * FROM parcel_scans WHERE scanned_at >= ?`, parcelDay.Add(8*time.Hour).Format("2006-01-02 15:04:05")); err != nil {
		t.Fatal(err)
	}
	v2 := strings.Replace(rep.Asset, "parcel_scans", "parcel_scans_v2", 1)
	var checks []plans.Check
	for _, name := range []string{"zero_rate", "sum_per_hour"} {
		checks = append(checks, plans.Check{Asset: v2, Check: name, Columns: []string{"weight_grams"}, Supersedes: rep.Asset, Why: "the corrected job writes parcel_scans_v2"})
	}
	if _, err := plans.Save(ctx, e.st, plans.Plan{IncidentID: id, CreatedBy: "dw-incidents", Checks: checks}, e.now()); err != nil {
		t.Fatal(err)
	}
	life := e.service(t, nil)

	// Zeros on the new table (the corrected job still lacks the field): both fail.
	*e.clock = parcelDay.Add(12*time.Hour + 10*time.Minute)
	got, err := life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if st := statusOf(got); got.Resolved || st["zero_rate"] != "fail" || st["sum_per_hour"] != "fail" {
		t.Fatalf("zeros on the new table: %+v", got.Checks)
	}
	for _, c := range got.Checks {
		if c.Asset != v2 || !strings.Contains(c.Why, "the table it supersedes") {
			t.Errorf("check %+v: want it judged on %s by the old table's history", c, v2)
		}
	}
	restoreWeights(t, rw, "parcel_scans_v2")
	*e.clock = e.clock.Add(10 * time.Minute)
	if got, err = life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()}); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(got); !got.Resolved || st["zero_rate"] != "pass" || st["sum_per_hour"] != "pass" || len(got.Checks) != 2 {
		t.Fatalf("restored values on the new table did not resolve: %+v", got.Checks)
	}
	for _, c := range got.Checks {
		if c.Metric == "sum_per_hour" && !strings.Contains(c.Why, "since its first row in the window") {
			t.Errorf("the new table's sum is not counted over its own hours: %s", c.Why)
		}
	}
}

// A column dropped from the warehouse table opens a schema_changes incident. Re-running the check
// right after sees nothing new since the last run, so the incident is judged by its change: it
// stays open while the column is missing and resolves once the column is back with its type.
func TestVerifyJudgesAWarehouseSchemaIncidentByItsChange(t *testing.T) {
	ctx := context.Background()
	e := newEstate(t)
	rw := e.parcelsWarehouse(t)
	e.monitorParcels(t, quality.Request{Checks: []quality.Check{quality.SchemaChanges}})
	if _, err := rw.Exec(`ALTER TABLE parcel_scans DROP COLUMN weight_grams`); err != nil {
		t.Fatal(err)
	}
	*e.clock = e.clock.Add(5 * time.Minute)
	rep := e.runParcels(t, quality.Request{Checks: []quality.Check{quality.SchemaChanges}})
	id := openedBy(t, rep, "schema_changes")
	life := e.service(t, nil)

	*e.clock = e.clock.Add(10 * time.Minute)
	got, err := life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Resolved || len(got.Checks) != 1 || got.Checks[0].Subject != "weight_grams" || got.Checks[0].Status != "fail" ||
		!strings.Contains(got.Checks[0].Why, "weight_grams removed (was BIGINT)") {
		t.Fatalf("the dropped column passed: %+v", got.Checks)
	}
	if _, err := rw.Exec(`ALTER TABLE parcel_scans ADD COLUMN weight_grams BIGINT`); err != nil {
		t.Fatal(err)
	}
	*e.clock = e.clock.Add(10 * time.Minute)
	if got, err = life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()}); err != nil {
		t.Fatal(err)
	}
	if !got.Resolved || got.Checks[0].Status != "pass" || !strings.Contains(got.Checks[0].Why, "reverted") {
		t.Fatalf("the column is back but not resolved: %+v", got.Checks)
	}
}

// runParcels runs req on parcel_scans once, at the clock, opening incidents.
func (e *estate) runParcels(t *testing.T, req quality.Request) *quality.Report {
	t.Helper()
	wh, err := warehouse.Connect(e.cfg.Warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	if req.Window, err = quality.ParseWindow(quality.WindowSpec{}, *e.clock); err != nil {
		t.Fatal(err)
	}
	req.Table, req.TimestampColumn = "parcel_scans", "scanned_at"
	req.OpenIncidents = func(string) bool { return true }
	rep, err := quality.NewChecker(wh, quality.NewHistory(e.st), e.now).Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// restoreWeights is the UPDATE that gives table's zeroed weights their values back.
func restoreWeights(t *testing.T, rw *sql.DB, table string) {
	t.Helper()
	if _, err := rw.Exec(`UPDATE ` + table + ` SET weight_grams = 500 + 10 * CAST(substr(scan_id, length(scan_id) - 11, 1) AS INTEGER) + CASE carrier WHEN 'bluepost' THEN 250 WHEN 'vantrek' THEN 500 ELSE 0 END WHERE weight_grams = 0`); err != nil {
		t.Fatal(err)
	}
}

// The model's summed weight falls out of step with the raw table it is built from: the
// reconciliation incident re-runs the comparison with the upstream and column its failing run
// recorded ("<upstream>.<column>", read as a table first, then as a table and a column).
func TestVerifyReRunsAReconciliationIncident(t *testing.T) {
	ctx := context.Background()
	e := newEstate(t)
	rw := e.parcelsWarehouse(t)
	if _, err := rw.Exec(`CREATE TABLE raw_scans (scan_id TEXT NOT NULL, carrier TEXT NOT NULL, scanned_at TEXT NOT NULL, weight_grams BIGINT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Exec(`INSERT INTO raw_scans SELECT * FROM parcel_scans`); err != nil {
		t.Fatal(err)
	}
	restoreWeights(t, rw, "raw_scans")
	rep := e.monitorParcels(t, quality.Request{Checks: []quality.Check{quality.Reconcile}, Reconcile: &quality.ReconcileSpec{Upstream: "raw_scans", Column: "weight_grams"}})
	id := openedBy(t, rep, "reconciliation")
	life := e.service(t, nil)

	*e.clock = parcelDay.Add(12*time.Hour + 10*time.Minute)
	got, err := life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if got.Resolved || len(got.Checks) != 1 || got.Checks[0].Metric != "reconcile_ratio" || !strings.HasSuffix(got.Checks[0].Subject, "raw_scans.weight_grams") || got.Checks[0].Status != "fail" {
		t.Fatalf("the model out of step passed: %+v", got.Checks)
	}
	restoreWeights(t, rw, "parcel_scans")
	*e.clock = e.clock.Add(10 * time.Minute)
	if got, err = life.Verify(ctx, VerifyInput{IncidentID: id, Checks: parcelOptions()}); err != nil {
		t.Fatal(err)
	}
	if !got.Resolved || got.Checks[0].Status != "pass" {
		t.Fatalf("the model is back in step but not resolved: %+v", got.Checks)
	}
}
