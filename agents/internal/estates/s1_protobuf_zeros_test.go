package estates

import (
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
)

// S1: a parcel carrier's scans in Protobuf (proto3). v2 removes the scalar weight_grams
// (reserving its tag) and adds weight_kg (double). The Flink statement pinned to v1 reads the
// missing field as 0, not null, and lands each scan in PostgreSQL; a dbt model sums the weights.
// The null-rate check sees nothing; the zero rate and the hourly sum fail.
const (
	s1Subject   = "parcel-scans-value"
	s1Topic     = "parcel-scans"
	s1Sink      = "parcel-weights"
	s1Table     = "parcel_weights"
	s1Statement = "parcel-weights-landing"
	s1Model     = "fct_depot_daily_tonnage"

	s1V1 = `syntax = "proto3";
package logistics;
message ParcelScan {
  string scan_id = 1;
  string depot = 2;
  int64 weight_grams = 3;
}`
	s1V2 = `syntax = "proto3";
package logistics;
message ParcelScan {
  reserved 3;
  reserved "weight_grams";
  string scan_id = 1;
  string depot = 2;
  double weight_kg = 4;
}`
	s1SQL = "INSERT INTO `parcel-weights`\nSELECT scan_id, depot, weight_grams, `$rowtime` AS scanned_at\nFROM `parcel-scans`"
)

var s1Depots = []string{"lisbon", "porto", "faro"}

// s1Scan is one generated scan: its true weight, and the version its scanner writes.
type s1Scan struct {
	ID, Depot string
	At        time.Time
	Grams     int64
	Version   int
}

// s1Scans is a scan per depot every ten minutes; each weighs what its depot and hour of day
// make it, so every day's same hours weigh the same. The faro depot's scanners move to v2 at the
// onset.
func s1Scans(c clock) []s1Scan {
	var out []s1Scan
	for _, at := range c.ticks(10 * time.Minute) {
		for d, depot := range s1Depots {
			s := s1Scan{ID: fmt.Sprintf("%s-%s", depot, at.Format("0102150405")), Depot: depot, At: at.Add(time.Duration(d+1) * time.Second),
				Grams: int64(900 + 137*d + 13*at.Hour() + 7*(at.Minute()/10)), Version: 1}
			if depot == "faro" && !s.At.Before(c.Onset) {
				s.Version = 2
			}
			out = append(out, s)
		}
	}
	return out
}

func TestS1ProtobufZerosLandInPostgres(t *testing.T) {
	created := newClock().HistStart.Add(-24 * time.Hour)
	e := newEstate(t, []confluenttest.Statement{{Name: s1Statement, SQL: s1SQL, Phase: "RUNNING", CreatedAt: created,
		Properties: map[string]string{"sql.current-catalog": "logistics-prod", "sql.current-database": "logistics-cluster"}}},
		s1Topic, s1Sink)
	e.seedSchema(s1Subject, 1, 201, sr.TypeProtobuf, s1V1)
	md1, md2 := protoMessage(t, s1V1), protoMessage(t, s1V2)

	wh, db := e.postgres()
	if _, err := wh.Exec(`CREATE TABLE parcel_weights (scan_id TEXT NOT NULL, depot TEXT NOT NULL, weight_grams BIGINT, scanned_at TIMESTAMP NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	tableURN := "warehouse:postgres/" + db + ".public." + s1Table
	e.catalogFiles = []string{e.writeFile("landing.yaml", fmt.Sprintf(`version: 1
edges:
  - {from: "kafka:topic/%s", to: %q, kind: materializes, transformation: "JDBC sink into PostgreSQL"}
`, s1Sink, tableURN))}
	e.writeDBT("logistics", "postgres", db, "public",
		dbtSource{Source: "landing", Table: s1Table, Relation: fmt.Sprintf(`"%s"."public"."%s"`, db, s1Table), Columns: []string{"scan_id", "depot", "weight_grams", "scanned_at"}},
		dbtModel{Name: s1Model, Columns: []string{"depot", "scan_day", "total_grams"},
			SQL: fmt.Sprintf("select depot, date_trunc('day', scanned_at) as scan_day, sum(weight_grams) as total_grams\nfrom \"%s\".\"public\".\"%s\"\ngroup by 1, 2", db, s1Table)})
	e.start()

	// The week before: every scanner on v1, landed as the pinned statement computes it.
	scans := s1Scans(e.clock)
	var recs []*kgo.Record
	for _, s := range scans {
		if s.Version != 1 {
			continue
		}
		m := dynamicpb.NewMessage(md1)
		m.Set(md1.Fields().ByName("scan_id"), protoreflect.ValueOfString(s.ID))
		m.Set(md1.Fields().ByName("depot"), protoreflect.ValueOfString(s.Depot))
		m.Set(md1.Fields().ByName("weight_grams"), protoreflect.ValueOfInt64(s.Grams))
		recs = append(recs, protoRecord(t, s1Topic, 201, m, s.At))
	}
	e.produce(recs)
	e.syncGraph()

	// The change: v2 registered, the faro depot's scanners move to it at the onset.
	e.seedSchema(s1Subject, 2, 202, sr.TypeProtobuf, s1V2)
	recs = nil
	for _, s := range scans {
		if s.Version != 2 {
			continue
		}
		m := dynamicpb.NewMessage(md2)
		m.Set(md2.Fields().ByName("scan_id"), protoreflect.ValueOfString(s.ID))
		m.Set(md2.Fields().ByName("depot"), protoreflect.ValueOfString(s.Depot))
		m.Set(md2.Fields().ByName("weight_kg"), protoreflect.ValueOfFloat64(float64(s.Grams)/1000))
		recs = append(recs, protoRecord(t, s1Topic, 202, m, s.At))
	}
	e.produce(recs)
	// The pinned statement decodes every record back from the broker with the v1 descriptor.
	landed := s1Land(t, wh, s1Table, e.consume(s1Topic, len(scans)), md1, time.Time{})
	if landed.zeros == 0 {
		t.Fatal("the v1 reader read no zero totals from the v2 records")
	}
	e.syncGraph()

	args := map[string]any{"table": s1Table, "timestamp_column": "scanned_at", "metrics": []string{"volume", "freshness", "null_rate", "column"},
		"columns": []string{"weight_grams"}, "column_metrics": []string{"zero_rate", "sum_per_hour"}}
	e.checkBaselines(args)
	rep := e.checkToday(args)
	if s := rep.status("null_rate", "weight_grams"); s != "pass" {
		t.Errorf("null_rate of weight_grams is %q: a proto3 zero is never null", s)
	}
	for _, m := range []string{"zero_rate", "sum_per_hour"} {
		if s := rep.status(m, "weight_grams"); s != "fail" {
			t.Errorf("%s of weight_grams is %q, want fail: %+v", m, s, rep.Results)
		}
	}
	incident := rep.incident(t, "column")

	// The diagnosis: v2 ranked first, the zeros predicted by proto3's rule and seen.
	d, raw := e.diagnose(incident)
	top := d.Diagnosis.Candidates[0]
	mustContain(t, "the top cause", top.Cause+"\n"+strings.Join(top.Evidence, "\n"), s1Subject, "v2", "weight_grams", s1Statement)
	mustContain(t, "the diagnosis", raw, "zero")

	// What each reader sees and does with it, quoted.
	impRaw := e.call("dw-schema", "assess_impact", map[string]any{"subject": s1Subject, "version": 2}, nil)
	mustContain(t, "assess_impact", string(impRaw), "flink:statement/"+s1Statement, "passes weight_grams on as weight_grams: 0 for new records",
		"dbt:model.logistics."+s1Model, "`SUM(weight_grams)` adds zeros: sums drop toward zero and no null check sees it (into total_grams)", `"symptom":"zeros"`)

	blastRaw := e.call("dw-context-catalog", "blast_radius_analysis", map[string]any{"asset_id": "schema:" + s1Subject, "change_type": "column_drop", "column_name": "weight_grams"}, nil)
	// blast_radius_analysis reads the subject's format from the graph: a dropped proto3 scalar
	// arrives as its zero, so the reader's SUM adds zeros rather than skipping nulls.
	mustContain(t, "blast_radius_analysis", string(blastRaw), "dbt:model.logistics."+s1Model, "`SUM(weight_grams)` adds zeros: sums drop toward zero", `"arrives_as"`)
	if strings.Contains(string(blastRaw), "skips nulls") {
		t.Errorf("blast_radius_analysis reads a dropped proto3 scalar as NULL: %s", blastRaw)
	}

	// The plan: the unit is mass, the factor derived, rounding instead of a truncating cast.
	var p plan
	planRaw := e.call("dw-incidents", "propose_remediation", map[string]any{"incident_id": incident, "from": e.clock.Start.Format(time.RFC3339)}, &p)
	st := p.step(t, "flink_statement")
	sqlText, _ := st.Payload["sql"].(string)
	// weight_kg has no presence: old records read it as 0, so the restored weight_grams is read
	// first and the converted kilograms only where it is missing.
	mustContain(t, "the corrected statement", sqlText, "COALESCE(weight_grams, CAST(ROUND(weight_kg * 1000) AS BIGINT)) AS weight_grams", "`parcel-weights-v2`", "specific-offsets")
	if len(st.Mappings) != 1 || st.Mappings[0].Origin != "derived by pkg/units from the fields' units and types" {
		t.Errorf("the statement's mappings = %+v, want one derived by pkg/units", st.Mappings)
	}
	mustContain(t, "the statement's reason", st.Why, "1 kg = 1000 grams", "rounded", "no presence")
	restore := p.step(t, "register_schema")
	mustContain(t, "the schema restore", fmt.Sprint(restore.Payload["schema"]), "int64 weight_grams = 3")
	dbtStep := p.step(t, "dbt_code")
	mustContain(t, "the dbt diff", fmt.Sprint(dbtStep.Payload["diff"]), s1Table+"_v2", "scanned_at")
	mustContain(t, "the plan", string(planRaw), "zero_rate", "sum_per_hour")
	if o := []string{p.Plan.Proposals[0].Class, p.Plan.Proposals[1].Class}; o[0] != "register_schema" || o[1] != "flink_statement" {
		t.Errorf("the plan's first steps are %v, want the restore then the statement", o)
	}

	// Verification stays open until the corrected statement has written its table.
	v2 := s1Table + "_v2"
	for _, c := range p.Plan.Checks {
		if !strings.HasSuffix(c.Asset, "."+v2) || !strings.HasSuffix(c.Supersedes, "."+s1Table) {
			t.Errorf("plan check %s on %s supersedes %q, want %s superseding %s", c.Check, c.Asset, c.Supersedes, v2, s1Table)
		}
	}
	e.requireOpen(incident, "scanned_at", v2)

	// The fix's effect: the corrected statement's totals from the plan's start, each v2 weight
	// read back in grams.
	if _, err := wh.Exec(`CREATE TABLE ` + v2 + ` (LIKE ` + s1Table + `)`); err != nil {
		t.Fatal(err)
	}
	s1Land(t, wh, v2, e.consume(s1Topic, len(scans)), md1, e.clock.Start)
	e.requireResolved(incident, "scanned_at", "pass")
}

type s1Landed struct{ rows, zeros int }

// s1Land replaces table with one row per record. With a zero from, each record is decoded with
// the v1 descriptor, as the pinned statement does, and a missing weight reads as 0; otherwise it
// is the corrected statement from that time on: a record written with v2 lands
// round(weight_kg * 1000) grams.
func s1Land(t *testing.T, wh *sql.DB, table string, recs []*kgo.Record, md1 protoreflect.MessageDescriptor, from time.Time) s1Landed {
	t.Helper()
	md2 := protoMessage(t, s1V2)
	tx, err := wh.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM ` + table); err != nil {
		t.Fatal(err)
	}
	var out s1Landed
	for _, r := range recs {
		if !from.IsZero() && r.Timestamp.Before(from) {
			continue
		}
		id := int(r.Value[1])<<24 | int(r.Value[2])<<16 | int(r.Value[3])<<8 | int(r.Value[4])
		payload := r.Value[6:]
		m := dynamicpb.NewMessage(md1)
		if err := proto.Unmarshal(payload, m); err != nil {
			t.Fatal(err)
		}
		grams := m.Get(md1.Fields().ByName("weight_grams")).Int()
		if !from.IsZero() && id == 202 {
			m2 := dynamicpb.NewMessage(md2)
			if err := proto.Unmarshal(payload, m2); err != nil {
				t.Fatal(err)
			}
			grams = int64(math.Round(m2.Get(md2.Fields().ByName("weight_kg")).Float() * 1000))
		}
		if _, err := tx.Exec(`INSERT INTO `+table+` VALUES ($1, $2, $3, $4)`, m.Get(md1.Fields().ByName("scan_id")).String(),
			m.Get(md1.Fields().ByName("depot")).String(), grams, r.Timestamp.UTC()); err != nil {
			t.Fatal(err)
		}
		out.rows++
		if grams == 0 {
			out.zeros++
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return out
}
