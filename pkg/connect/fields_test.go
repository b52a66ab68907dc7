package connect

import (
	"strings"
	"testing"
)

func mapping(ms []FieldMapping) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		out[m.Field] = m.Column
	}
	return out
}

// A JDBC sink into PostgreSQL: nested dimensions flattened with "_", one field renamed, one dropped.
func TestJDBCSinkFieldsThroughFlattenAndReplaceField(t *testing.T) {
	cfg := map[string]string{
		"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "parcel-scans",
		"transforms":                   "flat,names,route",
		"transforms.flat.type":         "org.apache.kafka.connect.transforms.Flatten$Value",
		"transforms.flat.delimiter":    "_",
		"transforms.names.type":        "org.apache.kafka.connect.transforms.ReplaceField$Value",
		"transforms.names.renames":     "weight_g:weight_grams",
		"transforms.names.exclude":     "scanner_serial",
		"transforms.route.type":        "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.route.regex":       "(.*)",
		"transforms.route.replacement": "landing_$1",
	}
	fields := []string{"parcel_id", "weight_g", "dims", "dims.width_mm", "dims.depth_mm", "scanner_serial", "tags[]"}
	cols := []string{"parcel_id", "weight_grams", "dims_width_mm", "dims_depth_mm"}
	got, notes := SinkFields(cfg, fields, cols)
	m := mapping(got)
	want := map[string]string{"parcel_id": "parcel_id", "weight_g": "weight_grams", "dims.width_mm": "dims_width_mm", "dims.depth_mm": "dims_depth_mm"}
	for f, c := range want {
		if m[f] != c {
			t.Errorf("%s → %q, want %q (all %v, notes %v)", f, m[f], c, m, notes)
		}
	}
	if _, ok := m["scanner_serial"]; ok {
		t.Error("an excluded field was mapped")
	}
	for _, g := range got {
		if g.Field == "weight_g" && !strings.Contains(g.How, "transform names renames weight_g to weight_grams") {
			t.Errorf("how %q", g.How)
		}
	}
	// "dims" itself (the struct) has no column after flattening.
	if !strings.Contains(strings.Join(notes, " "), "dims (written as dims) has no column") {
		t.Errorf("notes %v", notes)
	}
}

func TestJDBCSinkWithoutFlattenSkipsNestedAndMatchesFoldedColumns(t *testing.T) {
	cfg := map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "quote.sql.identifiers": "never"}
	got, notes := SinkFields(cfg, []string{"OrderId", "amount_cents", "address.city"}, []string{"orderid", "amount_cents"})
	if m := mapping(got); m["OrderId"] != "orderid" || m["amount_cents"] != "amount_cents" || len(m) != 2 {
		t.Errorf("%v", m)
	}
	if !strings.Contains(strings.Join(notes, " "), "address.city is nested") {
		t.Errorf("notes %v", notes)
	}
}

func TestSnowflakeSinkByNameOrIntoRecordContent(t *testing.T) {
	cfg := map[string]string{"connector.class": "com.snowflake.kafka.connector.SnowflakeSinkConnector"}
	got, _ := SinkFields(cfg, []string{"ride_id", "fare_micros", "route.km"}, []string{"RECORD_METADATA", "RIDE_ID", "FARE_MICROS", "ROUTE"})
	m := mapping(got)
	if m["ride_id"] != "RIDE_ID" || m["fare_micros"] != "FARE_MICROS" {
		t.Errorf("schematized: %v", m)
	}
	if _, ok := m["route.km"]; ok {
		t.Errorf("a nested field has no column of its own: %v", m)
	}
	got, _ = SinkFields(cfg, []string{"ride_id", "route.km"}, []string{"RECORD_METADATA", "RECORD_CONTENT"})
	for _, g := range got {
		if g.Column != "RECORD_CONTENT" || !strings.Contains(g.How, "RECORD_CONTENT:"+g.Field) {
			t.Errorf("classic: %+v", g)
		}
	}
	if len(got) != 2 {
		t.Errorf("classic: %+v", got)
	}
}

func TestUnknownTransformsAndConnectorsAreNotGuessed(t *testing.T) {
	cfg := map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "transforms": "x",
		"transforms.x.type": "com.example.RenameEverything"}
	if got, notes := SinkFields(cfg, []string{"a"}, []string{"a"}); len(got) != 0 || !strings.Contains(notes[0], "may rename or reshape fields") {
		t.Errorf("%v %v", got, notes)
	}
	if got, notes := SinkFields(map[string]string{"connector.class": "io.confluent.connect.s3.S3SinkConnector"}, []string{"a"}, []string{"a"}); len(got) != 0 || len(notes) != 1 {
		t.Errorf("%v %v", got, notes)
	}
}

func FuzzSinkFields(f *testing.F) {
	f.Add("Flatten$Value", "_", "a.b,c", "a_b,c")
	f.Add("ReplaceField$Value", "", "x,y.z", "X")
	f.Fuzz(func(t *testing.T, transform, delim, fields, cols string) {
		cfg := map[string]string{"connector.class": "JdbcSinkConnector", "transforms": "t",
			"transforms.t.type": "org.apache.kafka.connect.transforms." + transform, "transforms.t.delimiter": delim,
			"transforms.t.renames": fields}
		got, _ := SinkFields(cfg, strings.Split(fields, ","), strings.Split(cols, ","))
		for _, g := range got {
			if g.Column == "" || g.Field == "" {
				t.Fatalf("empty mapping %+v", g)
			}
		}
	})
}
