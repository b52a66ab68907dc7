package estates

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/orchestrators/orchtest"
)

// S3: a ride-hailing company's trips in Avro. v2 removes the required duration_s (no default)
// and adds duration_ms (default 0), which BACKWARD accepts. The Flink statement pinned to v1 cannot decode the first v2 record (the
// reader field has no default and the writer lacks it): it FAILED right after the change, so the
// PostgreSQL table it lands goes stale. The only consumer is an Airflow task known through
// OpenLineage, whose DAG pushes payouts to an external API.
const (
	s3Subject   = "trip-events-value"
	s3Topic     = "trip-events"
	s3Sink      = "trip-durations"
	s3Table     = "trip_durations"
	s3Statement = "trip-durations-landing"
	s3DAG       = "export_city_payouts"
	s3Task      = s3DAG + ".push_payouts"
	s3Airflow   = "airflow://rides-scheduler:8080"
	s3Payouts   = "sink:city-payouts-api"

	s3V1 = `{"type":"record","name":"Trip","namespace":"com.rides","fields":[` +
		`{"name":"trip_id","type":"string"},{"name":"city","type":"string"},{"name":"duration_s","type":"long"}]}`
	s3V2 = `{"type":"record","name":"Trip","namespace":"com.rides","fields":[` +
		`{"name":"trip_id","type":"string"},{"name":"city","type":"string"},{"name":"duration_ms","type":"long","default":0}]}`
	s3SQL = "INSERT INTO `trip-durations`\nSELECT trip_id, city, duration_s, `$rowtime` AS ended_at\nFROM `trip-events`"
	// s3Failure is how Flink reports a record its reader schema cannot resolve.
	s3Failure = "Failed to deserialize Avro record of topic trip-events: org.apache.avro.AvroTypeException: " +
		"Found com.rides.Trip, expecting com.rides.Trip, missing required field duration_s"
)

var s3Cities = []string{"lyon", "nantes", "lille", "nice"}

type s3Trip struct {
	ID, City string
	At       time.Time
	Seconds  int64
	Version  int
}

// s3Trips is a trip per city every five minutes; every producer moves to v2 at the onset.
func s3Trips(c clock) []s3Trip {
	var out []s3Trip
	for _, at := range c.ticks(5 * time.Minute) {
		for i, city := range s3Cities {
			tr := s3Trip{ID: fmt.Sprintf("%s-%s", city, at.Format("0102150405")), City: city, At: at.Add(time.Duration(i+1) * time.Second),
				Seconds: int64(420 + 60*i + 11*at.Hour()), Version: 1}
			if !tr.At.Before(c.Onset) {
				tr.Version = 2
			}
			out = append(out, tr)
		}
	}
	return out
}

func TestS3AvroStatementFailedLeavesTheTableStale(t *testing.T) {
	created := newClock().HistStart.Add(-24 * time.Hour)
	running := confluenttest.Statement{Name: s3Statement, SQL: s3SQL, Phase: "RUNNING", CreatedAt: created,
		Properties: map[string]string{"sql.current-catalog": "rides-prod", "sql.current-database": "rides-cluster"}}
	e := newEstate(t, []confluenttest.Statement{running}, s3Topic, s3Sink)
	e.seedSchema(s3Subject, 1, 301, sr.TypeAvro, s3V1)
	wh, db := e.postgres()
	if _, err := wh.Exec(`CREATE TABLE trip_durations (trip_id TEXT NOT NULL, city TEXT NOT NULL, duration_s BIGINT, ended_at TIMESTAMP NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	tableURN := "warehouse:postgres/" + db + ".public." + s3Table
	e.airflow = orchtest.NewAirflow("v2", map[string]bool{s3DAG: false})
	t.Cleanup(e.airflow.Close)
	next := e.clock.End.Truncate(time.Hour).Add(3 * time.Hour)
	e.airflow.NextRun = next.Format(time.RFC3339)
	// The payouts task is known only through its OpenLineage events; where it pushes is what the
	// team declares in a catalog file (no API reports an outside HTTP endpoint).
	dsn, err := url.Parse(e.warehouse.DSN)
	if err != nil {
		t.Fatal(err)
	}
	pg := "postgres://" + dsn.Host // the dataset namespace OpenLineage gives a PostgreSQL server
	e.writeOpenLineage("openlineage/payouts.ndjson", olRun{Namespace: s3Airflow, Job: s3Task, Parent: s3DAG, Integration: "AIRFLOW",
		Owner: "payouts-eng@example.com", Inputs: [][2]string{{pg, db + ".public." + s3Table}}, At: e.clock.Start.Add(-2 * time.Hour)})
	e.catalogFiles = []string{e.writeFile("landing.yaml", fmt.Sprintf(`version: 1
assets:
  - {urn: %q, kind: external_sink, name: "City payouts API"}
edges:
  - {from: "kafka:topic/%s", to: %q, kind: materializes, transformation: "JDBC sink into PostgreSQL"}
  - {from: "job:%s/%s", to: %q, kind: syncs_to, transformation: "POST /v1/city-payouts"}
`, s3Payouts, s3Sink, tableURN, s3Airflow, s3Task, s3Payouts))}
	e.start()

	trips := s3Trips(e.clock)
	v1, err := avro.Parse(s3V1)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for _, tr := range trips {
		if tr.Version == 1 {
			recs = append(recs, s3Record(t, 301, s3V1, map[string]any{"trip_id": tr.ID, "city": tr.City, "duration_s": tr.Seconds}, tr.At))
		}
	}
	e.produce(recs)
	e.syncGraph()
	// The week of clean checks ran while the table was current: each saw every trip landed.
	s3LandTrips(t, wh, trips)
	args := map[string]any{"table": s3Table, "timestamp_column": "ended_at", "metrics": []string{"volume", "freshness", "null_rate"}}
	e.checkBaselines(args)

	// The release: v2 registered, every producer on it; the pinned statement fails on the first
	// v2 record and lands nothing after it.
	e.seedSchema(s3Subject, 2, 302, sr.TypeAvro, s3V2)
	recs = nil
	for _, tr := range trips {
		if tr.Version == 2 {
			recs = append(recs, s3Record(t, 302, s3V2, map[string]any{"trip_id": tr.ID, "city": tr.City, "duration_ms": tr.Seconds * 1000}, tr.At))
		}
	}
	e.produce(recs)
	failed := running
	failed.Phase, failed.Detail = "FAILED", s3Failure
	e.confluent.SetStatements([]confluenttest.Statement{failed})
	if n := s3Land(t, wh, s3Table, e.consume(s3Topic, len(trips)), v1, time.Time{}); n == 0 {
		t.Fatal("the pinned statement landed nothing before the change")
	}
	e.syncGraph()

	rep := e.checkToday(args)
	if s := rep.status("freshness_lag_seconds", "ended_at"); s != "fail" {
		t.Errorf("freshness is %q, want fail: the table stopped at the onset: %+v", s, rep.Results)
	}
	incident := rep.incident(t, "freshness")

	// The diagnosis ranks the change first; the statement's failure is its evidence, not a rival.
	d, raw := e.diagnose(incident)
	top := d.Diagnosis.Candidates[0]
	topText := top.Cause + "\n" + top.Source + "\n" + strings.Join(top.Evidence, "\n")
	mustContain(t, "the top cause", topText, s3Subject, "v2", "duration_s", s3Statement)
	if top.Kind != "schema_change" {
		t.Errorf("the top cause is a %s (%s), want the schema change", top.Kind, top.Cause)
	}
	mustContain(t, "the diagnosis", raw, `"symptom":"statement_failed"`, "is FAILED — the effect of "+s3Subject+" v2", "not a rival cause", "missing required field duration_s")
	if len(d.Diagnosis.Candidates) < 2 || d.Diagnosis.Candidates[1].Source != "flink:statement/"+s3Statement {
		t.Errorf("the failed statement must follow the change as its effect: %+v", d.Diagnosis.Candidates)
	}

	// What the pinned reader does: it cannot decode v2.
	impRaw := e.call("dw-schema", "assess_impact", map[string]any{"subject": s3Subject, "version": 2}, nil)
	mustContain(t, "assess_impact", string(impRaw), "flink:statement/"+s3Statement, `"symptom":"statement_failed"`, "v2 records cannot be read with its frozen schema", "job:"+s3Airflow+"/"+s3Task)

	// The plan follows from the change: hold the DAG, restore, the corrected statement.
	var p plan
	planRaw := e.call("dw-incidents", "propose_remediation", map[string]any{"incident_id": incident, "from": e.clock.Start.Format(time.RFC3339)}, &p)
	hold := p.step(t, "pause_job")
	if hold.Target != "job:airflow/"+s3DAG || hold.Payload["dag_id"] != s3DAG {
		t.Errorf("the hold is %s %v, want DAG %s", hold.Target, hold.Payload, s3DAG)
	}
	mustContain(t, "the hold's reason", hold.Why, "its parent run is DAG "+s3DAG, s3Payouts)
	restore := p.step(t, "register_schema")
	mustContain(t, "the schema restore", fmt.Sprint(restore.Payload["schema"]), "duration_s", "duration_ms")
	st := p.step(t, "flink_statement")
	sqlText, _ := st.Payload["sql"].(string)
	// duration_ms reads 0 (its default) in v1 records, so the restored duration_s comes first.
	mustContain(t, "the corrected statement", sqlText, "COALESCE(duration_s, CAST(ROUND(CAST(duration_ms AS DOUBLE) * 0.001) AS BIGINT)) AS duration_s", "`trip-durations-v2`")
	mustContain(t, "the statement's reason", st.Why, "1 ms = 1/1000 s", "rounded", "read first")
	if p.Plan.Proposals[0].Class != "pause_job" {
		t.Errorf("the plan starts with %s, want the hold", p.Plan.Proposals[0].Class)
	}
	mustContain(t, "the plan's checks", string(planRaw), `"check":"freshness"`, `"check":"volume"`)

	// The hold goes to the approver, who approves it at the terminal; remediate pauses the DAG.
	var routed struct {
		Requests []struct {
			ID            int64  `json:"id"`
			Class         string `json:"class"`
			PayloadSHA256 string `json:"payload_sha256"`
		} `json:"requests"`
	}
	e.call("dw-incidents", "request_approval", map[string]any{"incident_id": incident, "plan_id": p.Plan.ID}, &routed)
	for _, r := range routed.Requests {
		if r.Class == "pause_job" {
			e.human("approvals", "approve", fmt.Sprint(r.ID), "--as", approver, "--sha256", r.PayloadSHA256, "--comment", "hold the payouts")
		}
	}
	e.call("dw-incidents", "remediate", map[string]any{"incident_id": incident, "timestamp_column": "ended_at", "window": "today", "time_zone": e.clock.zone()}, nil)
	if !e.airflow.Paused(s3DAG) {
		t.Errorf("remediate did not pause %s after its approval", s3DAG)
	}

	e.requireOpen(incident, "ended_at", s3Table+"_v2")

	// The fix's effect: the corrected statement lands every trip from the plan's start, v2
	// durations read back in seconds.
	if _, err := wh.Exec(`CREATE TABLE ` + s3Table + `_v2 (LIKE ` + s3Table + `)`); err != nil {
		t.Fatal(err)
	}
	s3Land(t, wh, s3Table+"_v2", e.consume(s3Topic, len(trips)), v1, e.clock.Start)
	e.requireResolved(incident, "ended_at", "pass")
}

// s3LandTrips writes every trip as it happened, the table each earlier check saw.
func s3LandTrips(t *testing.T, wh *sql.DB, trips []s3Trip) {
	t.Helper()
	tx, err := wh.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, tr := range trips {
		if _, err := tx.Exec(`INSERT INTO `+s3Table+` VALUES ($1, $2, $3, $4)`, tr.ID, tr.City, tr.Seconds, tr.At.UTC()); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func s3Record(t *testing.T, id int, text string, rec map[string]any, at time.Time) *kgo.Record {
	t.Helper()
	b, err := kafkatest.EncodeWire(text, uint32(id), rec)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: s3Topic, Value: b, Timestamp: at}
}

// s3Land replaces table with one row per trip. With a zero from it is the pinned statement:
// records decoded with the v1 schema until the first one written with another schema, where it
// fails. Otherwise it is the corrected statement from that time on: a v2 duration_ms read back
// in seconds.
func s3Land(t *testing.T, wh *sql.DB, table string, recs []*kgo.Record, v1 avro.Schema, from time.Time) int {
	t.Helper()
	v2, err := avro.Parse(s3V2)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := wh.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM ` + table); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if !from.IsZero() && r.Timestamp.Before(from) {
			continue
		}
		id := int(r.Value[1])<<24 | int(r.Value[2])<<16 | int(r.Value[3])<<8 | int(r.Value[4])
		var row struct {
			TripID     string `avro:"trip_id"`
			City       string `avro:"city"`
			DurationS  int64  `avro:"duration_s"`
			DurationMS int64  `avro:"duration_ms"`
		}
		switch {
		case id == 301:
			err = avro.Unmarshal(v1, r.Value[5:], &row)
		case from.IsZero():
			continue // the pinned reader fails here: nothing after it lands
		default:
			err = avro.Unmarshal(v2, r.Value[5:], &row)
			row.DurationS = (row.DurationMS + 500) / 1000
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO `+table+` VALUES ($1, $2, $3, $4)`, row.TripID, row.City, row.DurationS, r.Timestamp.UTC()); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return n
}
