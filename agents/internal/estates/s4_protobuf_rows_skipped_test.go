package estates

import (
	"database/sql"
	"fmt"
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

// S4: a grocery chain's orders in Protobuf (proto2). v2 drops the required total_usd_cents and
// carries the total in euro cents with the day's rate instead. The Flink statement pinned to v1
// reads its topic with error-handling.mode log, so each v2 record that fails to parse is skipped:
// rows vanish from the SQLite table, the dbt model's sums shrink, the volume check fails. No
// conversion between two currencies is certain, so the plan needs a mapping from the client.
const (
	s4Subject   = "store-orders-value"
	s4Topic     = "store-orders"
	s4Sink      = "orders-landed"
	s4Table     = "orders_landed"
	s4Statement = "orders-landing"
	s4Model     = "fct_store_revenue"
	s4Mapping   = "CAST(ROUND(total_eur_cents * usd_per_eur) AS BIGINT)"

	s4V1 = `syntax = "proto2";
package grocery;
message StoreOrder {
  required string order_id = 1;
  required string store = 2;
  required int64 total_usd_cents = 3;
}`
	s4V2 = `syntax = "proto2";
package grocery;
message StoreOrder {
  required string order_id = 1;
  required string store = 2;
  optional int64 total_eur_cents = 4;
  optional double usd_per_eur = 5;
}`
	s4SQL = "INSERT INTO `orders-landed`\nSELECT order_id, store, total_usd_cents, `$rowtime` AS ordered_at\nFROM `store-orders`"
	// s4Rate is the rate v2 producers carry.
	s4Rate = 1.08
)

var s4Stores = []string{"madrid", "sevilla", "bilbao", "valencia"}

type s4Order struct {
	ID, Store string
	At        time.Time
	USDCents  int64
	Version   int
}

// s4Orders is an order per store every five minutes; every store but valencia moves to v2 at the onset.
func s4Orders(c clock) []s4Order {
	var out []s4Order
	for _, at := range c.ticks(5 * time.Minute) {
		for i, store := range s4Stores {
			o := s4Order{ID: fmt.Sprintf("%s-%s", store, at.Format("0102150405")), Store: store, At: at.Add(time.Duration(i+1) * time.Second),
				USDCents: int64(2400 + 350*i + 40*at.Hour()), Version: 1}
			if i < 3 && !o.At.Before(c.Onset) {
				o.Version = 2
			}
			out = append(out, o)
		}
	}
	return out
}

func TestS4ProtobufRowsSkippedNeedAClientMapping(t *testing.T) {
	created := newClock().HistStart.Add(-24 * time.Hour)
	e := newEstate(t, []confluenttest.Statement{{Name: s4Statement, SQL: s4SQL, Phase: "RUNNING", CreatedAt: created,
		Properties: map[string]string{"sql.current-catalog": "grocery-prod", "sql.current-database": "grocery-cluster"}}}, s4Topic, s4Sink)
	e.seedSchema(s4Subject, 1, 401, sr.TypeProtobuf, s4V1)
	md1, md2 := protoMessage(t, s4V1), protoMessage(t, s4V2)
	wh := e.sqlite()
	if _, err := wh.Exec(`CREATE TABLE orders_landed (order_id TEXT NOT NULL, store TEXT NOT NULL, total_usd_cents INTEGER, ordered_at TIMESTAMP NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	tableURN := "warehouse:sqlite/main." + s4Table
	// The source table's error-handling mode is set in Flink (ALTER TABLE … SET), which no API
	// the catalog reads reports: the team declares it.
	e.catalogFiles = []string{e.writeFile("landing.yaml", fmt.Sprintf(`version: 1
assets:
  - {urn: "kafka:topic/%s", kind: kafka_topic, name: %s, attrs: {error-handling.mode: log}}
edges:
  - {from: "kafka:topic/%s", to: %q, kind: materializes, transformation: "JDBC sink into SQLite"}
`, s4Topic, s4Topic, s4Sink, tableURN))}
	e.writeDBT("grocery", "sqlite", "", "main",
		dbtSource{Source: "landing", Table: s4Table, Relation: `"main"."` + s4Table + `"`, Columns: []string{"order_id", "store", "total_usd_cents", "ordered_at"}},
		dbtModel{Name: s4Model, Columns: []string{"store", "revenue_usd_cents"},
			SQL: "select store, sum(total_usd_cents) as revenue_usd_cents\nfrom \"main\".\"" + s4Table + "\"\ngroup by store"})
	e.start()

	orders := s4Orders(e.clock)
	var recs []*kgo.Record
	for _, o := range orders {
		if o.Version == 1 {
			m := dynamicpb.NewMessage(md1)
			s4Set(m, "order_id", protoreflect.ValueOfString(o.ID), "store", protoreflect.ValueOfString(o.Store), "total_usd_cents", protoreflect.ValueOfInt64(o.USDCents))
			recs = append(recs, protoRecord(t, s4Topic, 401, m, o.At))
		}
	}
	e.produce(recs)
	e.syncGraph()

	e.seedSchema(s4Subject, 2, 402, sr.TypeProtobuf, s4V2)
	recs = nil
	for _, o := range orders {
		if o.Version == 2 {
			m := dynamicpb.NewMessage(md2)
			s4Set(m, "order_id", protoreflect.ValueOfString(o.ID), "store", protoreflect.ValueOfString(o.Store),
				"total_eur_cents", protoreflect.ValueOfInt64(int64(float64(o.USDCents)/s4Rate+0.5)), "usd_per_eur", protoreflect.ValueOfFloat64(s4Rate))
			recs = append(recs, protoRecord(t, s4Topic, 402, m, o.At))
		}
	}
	e.produce(recs)
	if landed, skipped := s4Land(t, wh, s4Table, e.consume(s4Topic, len(orders)), md1, time.Time{}); skipped == 0 || landed == 0 {
		t.Fatalf("the pinned reader landed %d and skipped %d records", landed, skipped)
	}
	e.syncGraph()

	args := map[string]any{"table": s4Table, "timestamp_column": "ordered_at", "metrics": []string{"volume", "freshness", "null_rate"}}
	e.checkBaselines(args)
	rep := e.checkToday(args)
	if s := rep.status("rows_per_hour", ""); s != "fail" {
		t.Fatalf("volume is %q, want fail: %+v", s, rep.Results)
	}
	if s := rep.status("null_rate", "total_usd_cents"); s != "pass" {
		t.Errorf("null_rate of total_usd_cents is %q: skipped rows leave no null behind", s)
	}
	incident := rep.incident(t, "volume")

	// The diagnosis: v2 first, rows missing predicted by the error-handling mode and observed.
	d, raw := e.diagnose(incident)
	top := d.Diagnosis.Candidates[0]
	mustContain(t, "the top cause", top.Cause+"\n"+top.Source+"\n"+strings.Join(top.Evidence, "\n"), s4Subject, "v2", "total_usd_cents", s4Statement)
	mustContain(t, "the diagnosis", raw, `"symptom":"rows_missing"`, "error-handling.mode log", "skipped")

	impRaw := e.call("dw-schema", "assess_impact", map[string]any{"subject": s4Subject, "version": 2}, nil)
	mustContain(t, "assess_impact", string(impRaw), `"symptom":"rows_missing"`, "dbt:model.grocery."+s4Model,
		"`SUM(total_usd_cents)` is computed without them: the records that cannot be decoded are skipped")

	// Without a mapping the plan is whole: the statement step waits for one, and so does its
	// approval.
	var p plan
	e.call("dw-incidents", "propose_remediation", map[string]any{"incident_id": incident, "from": e.clock.Start.Format(time.RFC3339)}, &p)
	p.step(t, "register_schema")
	waiting := p.step(t, "flink_statement")
	if len(waiting.NeedsMapping) != 1 || waiting.NeedsMapping[0] != "total_usd_cents" {
		t.Errorf("the statement step needs %v, want a mapping for total_usd_cents", waiting.NeedsMapping)
	}
	mustContain(t, "the waiting step", waiting.Title+"\n"+waiting.Why, "Needs a mapping for total_usd_cents", "currenc")
	var routed struct {
		Requests []struct {
			Class string `json:"class"`
		} `json:"requests"`
		Waiting []string `json:"waiting"`
	}
	e.call("dw-incidents", "request_approval", map[string]any{"incident_id": incident, "plan_id": p.Plan.ID}, &routed)
	for _, r := range routed.Requests {
		if r.Class == "flink_statement" {
			t.Errorf("the statement that needs a mapping was routed for approval: %+v", routed)
		}
	}
	mustContain(t, "request_approval's waiting steps", strings.Join(routed.Waiting, "\n"), "total_usd_cents", "field_mappings")

	// A mapping that reads a field v2 does not have is refused, and nothing is stored.
	if _, errText := e.try("dw-incidents", "propose_remediation", map[string]any{"incident_id": incident,
		"field_mappings": map[string]any{"total_usd_cents": "CAST(ROUND(total_eur_cents * fx_rate) AS BIGINT)"}}); !strings.Contains(errText, "fx_rate") {
		t.Errorf("a mapping over an unknown field: %q", errText)
	}
	// The client's mapping: validated against v2 and credited to the client.
	p = plan{}
	e.call("dw-incidents", "propose_remediation", map[string]any{"incident_id": incident, "from": e.clock.Start.Format(time.RFC3339),
		"field_mappings": map[string]any{"total_usd_cents": s4Mapping}}, &p)
	st := p.step(t, "flink_statement")
	sqlText, _ := st.Payload["sql"].(string)
	mustContain(t, "the corrected statement", sqlText, s4Mapping, "`orders-landed-v2`")
	if len(st.NeedsMapping) != 0 || len(st.Mappings) != 1 || st.Mappings[0].Origin != "given by the client in field_mappings" {
		t.Errorf("the statement with the client's mapping: needs %v, mappings %+v", st.NeedsMapping, st.Mappings)
	}
	p.step(t, "dbt_code")

	e.requireOpen(incident, "ordered_at", s4Table+"_v2")
	if _, err := wh.Exec(`CREATE TABLE orders_landed_v2 (order_id TEXT NOT NULL, store TEXT NOT NULL, total_usd_cents INTEGER, ordered_at TIMESTAMP NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	s4Land(t, wh, s4Table+"_v2", e.consume(s4Topic, len(orders)), md1, e.clock.Start)
	e.requireResolved(incident, "ordered_at", "pass")
}

func s4Set(m *dynamicpb.Message, kv ...any) {
	for i := 0; i < len(kv); i += 2 {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(kv[i].(string))), kv[i+1].(protoreflect.Value))
	}
}

// s4Land replaces table with one row per order. With a zero from it is the pinned statement:
// each record parsed with the v1 descriptor, and one that fails (a v2 record lacks the required
// total) skipped, as error-handling.mode log does. Otherwise it is the corrected statement from
// that time on, reading a v2 total through the client's mapping.
func s4Land(t *testing.T, wh *sql.DB, table string, recs []*kgo.Record, md1 protoreflect.MessageDescriptor, from time.Time) (landed, skipped int) {
	t.Helper()
	md2 := protoMessage(t, s4V2)
	tx, err := wh.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM ` + table); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if !from.IsZero() && r.Timestamp.Before(from) {
			continue
		}
		payload := r.Value[6:]
		m := dynamicpb.NewMessage(md1)
		var id, store string
		var cents int64
		if err := proto.Unmarshal(payload, m); err == nil {
			id, store, cents = m.Get(md1.Fields().ByName("order_id")).String(), m.Get(md1.Fields().ByName("store")).String(), m.Get(md1.Fields().ByName("total_usd_cents")).Int()
		} else if from.IsZero() {
			skipped++
			continue
		} else {
			m2 := dynamicpb.NewMessage(md2)
			if err := proto.Unmarshal(payload, m2); err != nil {
				t.Fatal(err)
			}
			f := md2.Fields()
			id, store = m2.Get(f.ByName("order_id")).String(), m2.Get(f.ByName("store")).String()
			cents = int64(float64(m2.Get(f.ByName("total_eur_cents")).Int())*m2.Get(f.ByName("usd_per_eur")).Float() + 0.5)
		}
		if _, err := tx.Exec(`INSERT INTO `+table+` VALUES (?, ?, ?, ?)`, id, store, cents, r.Timestamp.UTC().Format("2006-01-02 15:04:05")); err != nil {
			t.Fatal(err)
		}
		landed++
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return landed, skipped
}
