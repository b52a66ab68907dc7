package lifecycle

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/internal/pgtest"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/plans"
)

// The parcels estate: v1 of parcels-value weighs in grams (a long), v2 in kilograms (a double).
const (
	parcelsAsset = "warehouse:sqlite/parcels_hourly"
	parcelsV1    = `{"type":"record","name":"Parcel","namespace":"com.example.depots","fields":[` +
		`{"name":"parcel_id","type":"string"},{"name":"depot","type":"string"},` +
		`{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},` +
		`{"name":"weight_grams","type":["null","long"],"default":null}]}`
	parcelsV2 = `{"type":"record","name":"Parcel","namespace":"com.example.depots","fields":[` +
		`{"name":"parcel_id","type":"string"},{"name":"depot","type":"string"},` +
		`{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},` +
		`{"name":"weight_kg","type":["null","double"],"default":null}]}`
)

// parcel is one event: grams is its true weight; from switchAt on, producers write v2 in kilograms.
type parcel struct {
	id    string
	depot string
	at    time.Time
	grams int64
}

// parcelsTopic starts kfake and srfake with the parcels topic, produces four hours of parcels
// (v2 from 09:30), and points the estate's config at them.
func parcelsTopic(t *testing.T, e *estate, day time.Time) []parcel {
	t.Helper()
	f := kafkatest.Start(t, "parcels")
	f.Registry.SeedSchema("parcels-value", 1, 101, sr.Schema{Schema: parcelsV1, Type: sr.TypeAvro})
	f.Registry.SeedSchema("parcels-value", 2, 102, sr.Schema{Schema: parcelsV2, Type: sr.TypeAvro})
	switchAt := day.Add(9*time.Hour + 30*time.Minute)
	var ps []parcel
	var recs []*kgo.Record
	for i := 0; i < 96; i++ {
		p := parcel{id: fmt.Sprintf("p-%03d", i), depot: []string{"north", "south"}[i%2], at: day.Add(8*time.Hour + time.Duration(i)*150*time.Second), grams: 1500 + int64(i)*37}
		ps = append(ps, p)
		rec := map[string]any{"parcel_id": p.id, "depot": p.depot, "ts": p.at}
		text, id := parcelsV1, uint32(101)
		if !p.at.Before(switchAt) {
			text, id = parcelsV2, 102
			rec["weight_kg"] = float64(p.grams) / 1000
		} else {
			rec["weight_grams"] = p.grams
		}
		v, err := kafkatest.EncodeWire(text, id, rec)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: "parcels", Key: []byte(p.depot), Value: v, Timestamp: p.at})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.Kafka.BootstrapServers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.cfg.Kafka, e.cfg.SchemaRegistry = f.Kafka, f.SchemaRegistry
	return ps
}

// parcelsWorld is parcelsTopic and a SQLite warehouse holding the empty parcels_hourly_v2.
func parcelsWorld(t *testing.T, e *estate, day time.Time) ([]parcel, *sql.DB) {
	t.Helper()
	ps := parcelsTopic(t, e, day)
	path := filepath.Join(t.TempDir(), "wh.db")
	rw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rw.Close() })
	if _, err := rw.Exec(`CREATE TABLE parcels_hourly_v2 (depot TEXT NOT NULL, hour TEXT NOT NULL, total_grams BIGINT, parcels BIGINT)`); err != nil {
		t.Fatal(err)
	}
	e.cfg.Warehouse = &config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}
	return ps, rw
}

// restore writes parcels_hourly_v2 as a corrected statement would, reading v2's kilograms with
// factor (1000 is right).
func restore(t *testing.T, rw *sql.DB, ps []parcel, day time.Time, factor float64) {
	t.Helper()
	restoreInto(t, rw, "INSERT INTO parcels_hourly_v2 VALUES (?, ?, ?, ?)", ps, day, factor)
}

// restoreInto is restore with the engine's own INSERT.
func restoreInto(t *testing.T, rw *sql.DB, insert string, ps []parcel, day time.Time, factor float64) {
	t.Helper()
	if _, err := rw.Exec(`DELETE FROM parcels_hourly_v2`); err != nil {
		t.Fatal(err)
	}
	sums := map[[2]string]int64{}
	counts := map[[2]string]int64{}
	switchAt := day.Add(9*time.Hour + 30*time.Minute)
	for _, p := range ps {
		k := [2]string{p.depot, p.at.Truncate(time.Hour).Format("2006-01-02 15:04:05")}
		g := p.grams
		if !p.at.Before(switchAt) {
			g = int64(math.Round(float64(p.grams) / 1000 * factor))
		}
		sums[k] += g
		counts[k]++
	}
	for k, v := range sums {
		if _, err := rw.Exec(insert, k[0], k[1], v, counts[k]); err != nil {
			t.Fatal(err)
		}
	}
}

// parcelsPlan stores the plan a units-derived mapping gives: weight_grams read as
// CAST(ROUND(weight_kg * 1000) AS BIGINT), the hourly rollup rewritten into parcels-hourly-v2.
func parcelsPlan(t *testing.T, e *estate, incident int64, day time.Time, mapped bool) {
	t.Helper()
	stmt := "INSERT INTO `parcels-hourly-v2`\nSELECT depot, window_start AS `hour`, SUM(" + gramsMapping.Expression("") + ") AS total_grams, COUNT(*) AS parcels\n" +
		"FROM TABLE(TUMBLE(TABLE `parcels` /*+ OPTIONS('scan.startup.mode'='timestamp') */, DESCRIPTOR(ts), INTERVAL '1' HOUR))\n" +
		"GROUP BY depot, window_start, window_end"
	parcelsPlanWith(t, e, incident, day, mapped, stmt, "warehouse:sqlite/parcels_hourly_v2")
}

// gramsMapping is the units-derived read of weight_grams from weight_kg.
var gramsMapping = plans.Replacement{Removed: "weight_grams", With: "weight_kg", Factor: "1000", Conversion: "CAST(ROUND(%s * 1000) AS BIGINT)",
	Origin: plans.OriginMappingUnits, Why: "kilograms to grams"}

// parcelsPlanWith stores a plan whose corrected statement is stmt, landing in asset.
func parcelsPlanWith(t *testing.T, e *estate, incident int64, day time.Time, mapped bool, stmt, asset string) {
	t.Helper()
	rep := gramsMapping
	step := plans.Proposal{Order: 1, Class: config.ClassFlinkStatement, Target: "flink:statement/parcels-hourly", Title: "Run parcels-hourly-v2",
		Payload:  map[string]any{"statement_name": "parcels-hourly-v2", "sql": stmt, "start": map[string]any{"from": day.Add(8 * time.Hour).Format(time.RFC3339)}},
		Executor: plans.ExecutorOwner, Mappings: []plans.Replacement{rep}}
	if !mapped {
		step.Mappings, step.NeedsMapping = nil, []string{"weight_grams"}
	}
	_, err := plans.Save(context.Background(), e.st, plans.Plan{IncidentID: incident, CreatedBy: "dw-incidents", Proposals: []plans.Proposal{step},
		Checks: []plans.Check{{Asset: asset, Check: "volume", Supersedes: parcelsAsset, Why: "the data lands in " + asset}}}, e.now())
	if err != nil {
		t.Fatal(err)
	}
}

// parcelsIncident is the parcels world at 12:10 with an incident on parcels_hourly whose plan
// restores weight_grams through the units-derived mapping.
func parcelsIncident(t *testing.T) (*estate, []parcel, *sql.DB, incidents.Opened, time.Time) {
	t.Helper()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	e := newEstate(t)
	ps, rw := parcelsWorld(t, e, day)
	*e.clock = day.Add(12*time.Hour + 10*time.Minute)
	inc, err := e.incs.Open(context.Background(), parcelsAsset, "null_rate", "sev2", "total_grams null since 09:30", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	parcelsPlan(t, e, inc.ID, day, true)
	return e, ps, rw, inc, day
}

// A restore with the right factor matches the sums recomputed from the topic; one with ×100
// instead of ×1000 fails with the rows, the values and the ratio.
func TestValuesCompareRestoredSumsWithTheTopic(t *testing.T) {
	ctx := context.Background()
	e, ps, rw, inc, day := parcelsIncident(t)
	life := e.service(t, nil)

	restore(t, rw, ps, day, 1000)
	got := life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset})
	if got.Status != ValuesPass || got.Compared != 8 || got.Mismatched != 0 || got.Records != 96 {
		t.Fatalf("right factor: %+v", got)
	}
	if got.Column != "total_grams" || strings.Join(got.Key, ",") != "depot,hour" || !strings.Contains(got.Expression, "ROUND(weight_kg * 1000)") {
		t.Errorf("what was compared: %+v", got)
	}

	restore(t, rw, ps, day, 100)
	got = life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset})
	if got.Status != ValuesFail || got.Mismatched != 6 || got.Compared != 8 {
		t.Fatalf("wrong factor: %+v", got)
	}
	// 10:00 and 11:00 are all v2 records: the warehouse holds a tenth of the source.
	for _, want := range []string{"6 of 8 row(s) of warehouse:sqlite/parcels_hourly_v2 differ", "depot, hour = north, 2026-11-29T10:00:00Z", "0.1×"} {
		if !strings.Contains(got.Why, want) {
			t.Errorf("why lacks %q: %s", want, got.Why)
		}
	}
	if g := got.Groups[0]; g.Match || g.Source == nil || g.Warehouse == nil || g.Records == 0 {
		t.Errorf("first group should be a mismatch with both values: %+v", g)
	}

	// A missing row is a mismatch too.
	restore(t, rw, ps, day, 1000)
	if _, err := rw.Exec(`DELETE FROM parcels_hourly_v2 WHERE depot = 'south' AND hour = '2026-11-29 11:00:00'`); err != nil {
		t.Fatal(err)
	}
	got = life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset})
	if got.Status != ValuesFail || got.Mismatched != 1 || !strings.Contains(got.Why, "no row") {
		t.Fatalf("missing row: %+v", got)
	}
}

// verify_incident carries the comparison, and a wrong factor keeps the incident open whatever
// the presence checks say.
func TestVerifyFailsOnAWrongFactor(t *testing.T) {
	ctx := context.Background()
	e, ps, rw, inc, day := parcelsIncident(t)
	restore(t, rw, ps, day, 100)
	got, err := e.service(t, nil).Verify(ctx, VerifyInput{IncidentID: inc.ID, Checks: CheckOptions{TimestampColumn: "hour"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Resolved || !got.Failed || got.Values.Status != ValuesFail {
		t.Fatalf("a wrong factor did not fail verification: %+v", got)
	}
	last := got.Incident.Events[len(got.Incident.Events)-1]
	if !strings.Contains(last.Detail, "restored values on warehouse:sqlite/parcels_hourly_v2") || !strings.Contains(last.Detail, "0.1×") {
		t.Errorf("timeline: %s", last.Detail)
	}
}

// Where nothing can be recomputed, the comparison says so and what was missing.
func TestValuesNotPossibleSaysWhy(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	e := newEstate(t)
	*e.clock = day.Add(12*time.Hour + 10*time.Minute)
	inc, err := e.incs.Open(ctx, parcelsAsset, "null_rate", "sev2", "total_grams null", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	life := e.service(t, nil)
	if got := life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset}); got.Status != ValuesNotPossible || !strings.Contains(got.Why, "value comparison not possible: incident #1 has no remediation plan") {
		t.Errorf("no plan: %+v", got)
	}
	parcelsPlan(t, e, inc.ID, day, false)
	if got := life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset}); !strings.Contains(got.Why, "one that waits for a mapping") {
		t.Errorf("mapping missing: %+v", got)
	}
	parcelsPlan(t, e, inc.ID, day, true)
	e.cfg.Kafka = nil
	if got := life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset}); got.Status != ValuesNotPossible || !strings.Contains(got.Why, "kafka.bootstrap_servers") || got.Column != "total_grams" {
		t.Errorf("kafka not configured: %+v", got)
	}
}

func TestReadShapeRefusesWhatItCannotRecompute(t *testing.T) {
	maps := []plans.Replacement{{Removed: "weight_grams"}}
	for sqlText, want := range map[string]string{
		"INSERT INTO s SELECT depot, SUM(weight_grams) AS g FROM a JOIN b ON a.x = b.x GROUP BY depot":                                                             "only a plain topic or a TUMBLE window",
		"INSERT INTO s SELECT SUM(weight_grams) AS g FROM parcels":                                                                                                 "no key or time column",
		"INSERT INTO s SELECT depot, weight_kg, weight_grams_total FROM parcels":                                                                                   "no output column reads a mapped field",
		"INSERT INTO s SELECT depot, SUM(weight_grams) AS g FROM TABLE(HOP(TABLE parcels, DESCRIPTOR(ts), INTERVAL '5' MINUTE, INTERVAL '1' HOUR)) GROUP BY depot": "HOP",
	} {
		if _, why := readShape(sqlText, maps, nil); !strings.Contains(why, want) {
			t.Errorf("%s: %q, want %q", sqlText, why, want)
		}
	}
	sh, why := readShape("INSERT INTO s SELECT parcel_id, ts, COALESCE(weight_kg * 1000, weight_grams) AS grams FROM parcels WHERE depot IN ('north')", maps, nil)
	if why != "" || sh.agg != "" || len(sh.keys) != 2 || sh.column != "grams" {
		t.Errorf("per-record statement: %+v %s", sh, why)
	}
}

// A per-record statement is compared row by row on its pass-through key, read with an IN list.
func TestValuesComparePerRecordRows(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	e := newEstate(t)
	ps, rw := parcelsWorld(t, e, day)
	*e.clock = day.Add(12*time.Hour + 10*time.Minute)
	if _, err := rw.Exec(`CREATE TABLE parcels_v2 (parcel_id TEXT, depot TEXT, weight_grams BIGINT)`); err != nil {
		t.Fatal(err)
	}
	fill := func(factor float64) {
		if _, err := rw.Exec(`DELETE FROM parcels_v2`); err != nil {
			t.Fatal(err)
		}
		for i, p := range ps {
			g := p.grams
			if i%2 == 0 && p.at.After(day.Add(9*time.Hour+30*time.Minute)) {
				g = int64(math.Round(float64(p.grams) / 1000 * factor))
			}
			if _, err := rw.Exec(`INSERT INTO parcels_v2 VALUES (?, ?, ?)`, p.id, p.depot, g); err != nil {
				t.Fatal(err)
			}
		}
	}
	inc, err := e.incs.Open(ctx, parcelsAsset, "null_rate", "sev2", "weight_grams null", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	stmt := "INSERT INTO `parcels-v2` SELECT parcel_id, depot, " + gramsMapping.Expression("") + " AS weight_grams FROM `parcels`"
	parcelsPlanWith(t, e, inc.ID, day, true, stmt, "warehouse:sqlite/parcels_v2")
	life := e.service(t, nil)
	fill(1000)
	got := life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset})
	if got.Status != ValuesPass || got.Compared != 96 || strings.Join(got.Key, ",") != "parcel_id,depot" {
		t.Fatalf("right factor: %+v", got)
	}
	fill(100)
	got = life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset})
	if got.Status != ValuesFail || got.Mismatched != 29 || !strings.Contains(got.Why, "0.1× the source") {
		t.Fatalf("wrong factor on the even v2 parcels: %+v", got)
	}
}

// On PostgreSQL the compared windows are read by a range on the timestamp column; a row outside
// them is not read.
func TestValuesCompareOnPostgres(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	e := newEstate(t)
	ps := parcelsTopic(t, e, day)
	dsn := pgtest.Start(t).NewDatabase(t)
	rw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Exec(`CREATE TABLE parcels_hourly_v2 (depot TEXT NOT NULL, hour TIMESTAMP NOT NULL, total_grams BIGINT, parcels BIGINT)`); err != nil {
		t.Fatal(err)
	}
	e.cfg.Warehouse = &config.Warehouse{Engine: "postgres", DSN: dsn, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}
	*e.clock = day.Add(12*time.Hour + 10*time.Minute)
	inc, err := e.incs.Open(ctx, parcelsAsset, "null_rate", "sev2", "total_grams null", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	stmt := "INSERT INTO `parcels-hourly-v2` SELECT depot, window_start AS `hour`, SUM(" + gramsMapping.Expression("") + ") AS total_grams " +
		"FROM TABLE(TUMBLE(TABLE `parcels`, DESCRIPTOR(ts), INTERVAL '1' HOUR)) GROUP BY depot, window_start, window_end"
	parcelsPlanWith(t, e, inc.ID, day, true, stmt, "warehouse:postgres/parcels_hourly_v2")
	life := e.service(t, nil)
	insert := "INSERT INTO parcels_hourly_v2 VALUES ($1, $2::timestamp, $3, $4)"
	restoreInto(t, rw, insert, ps, day, 1000)
	// A row of an hour before the restore started, which no window compares.
	if _, err := rw.Exec(insert, "north", "2026-11-29 06:00:00", 1, 1); err != nil {
		t.Fatal(err)
	}
	if got := life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset}); got.Status != ValuesPass || got.Compared != 8 {
		t.Fatalf("right factor: %+v", got)
	}
	restoreInto(t, rw, insert, ps, day, 100)
	if got := life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: parcelsAsset}); got.Status != ValuesFail || got.Mismatched != 6 {
		t.Fatalf("wrong factor: %+v", got)
	}
}

// A plan that widens a Flink filter for a new value (no mapping) is checked the same way: the
// widened statement's sums, recomputed from JSON Schema records in $rowtime windows, against the
// -v2 table. A table still written by the old filter misses the new state's amounts and fails.
func TestValuesCompareAWidenedFilterOverJSONRecords(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	e := newEstate(t)
	f := kafkatest.Start(t, "payouts")
	f.Registry.SeedSchema("payouts-value", 4, 204, sr.Schema{Type: sr.TypeJSON,
		Schema: `{"type":"object","properties":{"merchant":{"type":"string"},"payout_state":{"enum":["SETTLED","PAID","FAILED","SETTLED_PARTIAL"]},"amount_cents":{"type":"integer"}}}`})
	states := []string{"SETTLED", "PAID", "FAILED", "SETTLED_PARTIAL"}
	type payout struct {
		merchant, state string
		hour            time.Time
		cents           int64
	}
	var pays []payout
	var recs []*kgo.Record
	for i := 0; i < 48; i++ {
		p := payout{merchant: []string{"m-1", "m-2"}[i%2], state: states[i%4], cents: int64(1000 + 10*i)}
		at := day.Add(9*time.Hour + time.Duration(i)*5*time.Minute)
		p.hour = at.Truncate(time.Hour)
		pays = append(pays, p)
		body := fmt.Sprintf(`{"merchant":%q,"payout_state":%q,"amount_cents":%d}`, p.merchant, p.state, p.cents)
		recs = append(recs, &kgo.Record{Topic: "payouts", Value: append([]byte{0, 0, 0, 0, 204}, body...), Timestamp: at})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.Kafka.BootstrapServers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wh.db")
	rw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Exec(`CREATE TABLE settled_payouts_v2 (merchant TEXT, hour TEXT, settled_cents BIGINT)`); err != nil {
		t.Fatal(err)
	}
	write := func(kept ...string) {
		if _, err := rw.Exec(`DELETE FROM settled_payouts_v2`); err != nil {
			t.Fatal(err)
		}
		sums := map[[2]string]int64{}
		for _, p := range pays {
			if slices.Contains(kept, p.state) {
				sums[[2]string{p.merchant, p.hour.Format("2006-01-02T15:04:05Z")}] += p.cents
			}
		}
		for k, v := range sums {
			if _, err := rw.Exec(`INSERT INTO settled_payouts_v2 VALUES (?, ?, ?)`, k[0], k[1], v); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.cfg.Kafka, e.cfg.SchemaRegistry = f.Kafka, f.SchemaRegistry
	e.cfg.Warehouse = &config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}
	*e.clock = day.Add(13*time.Hour + 5*time.Minute)
	inc, err := e.incs.Open(ctx, "warehouse:sqlite/settled_payouts", "volume", "sev2", "settled payouts 25% low", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	stmt := "INSERT INTO `settled-payouts-v2` SELECT merchant, window_start AS `hour`, SUM(amount_cents) AS settled_cents " +
		"FROM TABLE(TUMBLE(TABLE `payouts`, DESCRIPTOR($rowtime), INTERVAL '1' HOUR)) WHERE payout_state IN ('SETTLED', 'PAID', 'SETTLED_PARTIAL') " +
		"GROUP BY merchant, window_start, window_end"
	_, err = plans.Save(ctx, e.st, plans.Plan{IncidentID: inc.ID, CreatedBy: "dw-incidents",
		Proposals: []plans.Proposal{{Order: 1, Class: config.ClassFlinkStatement, Target: "flink:statement/settled-payouts", Title: "Run settled-payouts-v2",
			Payload:  map[string]any{"sql": stmt, "start": map[string]any{"from": day.Add(9 * time.Hour).Format(time.RFC3339)}, "new_values": []string{"SETTLED_PARTIAL"}},
			Executor: plans.ExecutorOwner}},
		Checks: []plans.Check{{Asset: "warehouse:sqlite/settled_payouts_v2", Check: "volume", Supersedes: "warehouse:sqlite/settled_payouts", Why: "the data lands in settled_payouts_v2"}}}, e.now())
	if err != nil {
		t.Fatal(err)
	}
	life := e.service(t, nil)
	write("SETTLED", "PAID", "SETTLED_PARTIAL")
	got := life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: "warehouse:sqlite/settled_payouts"})
	if got.Status != ValuesPass || got.Compared != 8 || got.Column != "settled_cents" || got.Records != 48 {
		t.Fatalf("widened: %+v", got)
	}
	write("SETTLED", "PAID")
	got = life.compareValues(ctx, incidents.Incident{ID: inc.ID, Asset: "warehouse:sqlite/settled_payouts"})
	if got.Status != ValuesFail || got.Mismatched != 4 || !strings.Contains(got.Why, "merchant, hour = m-2") {
		t.Fatalf("the old filter's sums passed: %+v", got)
	}
}
