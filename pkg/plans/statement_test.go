package plans

import (
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// The story's statement, as Confluent Cloud returns it (pkg/lineage/testdata/scenario).
const rollupSQL = "INSERT INTO `usage-hourly`\nSELECT\n  account_id,\n  window_start AS `hour`,\n  SUM(response_bytes) AS egress_bytes,\n  COUNT(*) AS request_count\nFROM TABLE(\n  TUMBLE(TABLE `api-usage`, DESCRIPTOR(event_time), INTERVAL '1' HOUR))\nGROUP BY account_id, window_start, window_end;"

func TestDeriveReplacementByUnitSuffix(t *testing.T) {
	ints := map[string]string{"response_bytes": "long", "response_kib": "int", "response_mb": "int", "latency_ms": "long", "latency_s": "int",
		"weight_grams": "long", "weight_kg": "double", "size_kib": "int"}
	cases := []struct {
		removed string
		added   []string
		renamed string
		with    string
		factor  string
		expr    string
		reason  string
	}{
		{"response_bytes", []string{"response_kib"}, "", "response_kib", "1024", "COALESCE(CAST(response_kib AS BIGINT) * 1024, response_bytes)", ""},
		{"response_bytes", []string{"status", "response_mb"}, "", "response_mb", "1000000", "", ""},
		{"latency_ms", []string{"latency_s"}, "", "latency_s", "1000", "", ""},
		// A double in kilograms read into whole grams is rounded, never truncated.
		{"weight_grams", []string{"weight_kg"}, "", "weight_kg", "1000", "COALESCE(CAST(ROUND(weight_kg * 1000) AS BIGINT), weight_grams)", ""},
		// Scaling down is certain too; the rounding is stated.
		{"response_kib", []string{"response_bytes"}, "", "response_bytes", "1/1024", "COALESCE(CAST(ROUND(CAST(response_bytes AS DOUBLE) * 0.0009765625) AS BIGINT), response_kib)", ""},
		{"response_bytes", []string{"latency_ms"}, "", "", "", "", "no field added"},
		{"response_bytes", []string{"response_kib", "response_mib"}, "", "", "", "", "several added fields"},
		{"size", []string{"size_kib"}, "", "", "", "", "ends in no known unit"},
		{"weight_grams", []string{"weight_kb"}, "", "", "", "", "measure different things"},
		{"user_name", nil, "username", "username", "1", "COALESCE(username, user_name)", ""},
	}
	for _, c := range cases {
		r, why := deriveReplacement(c.removed, c.added, c.renamed, ints)
		if c.reason != "" {
			if !strings.Contains(why, c.reason) {
				t.Errorf("%s from %v: want a reason with %q, got %q (%+v)", c.removed, c.added, c.reason, why, r)
			}
			continue
		}
		if why != "" || r.With != c.with || r.Factor != c.factor {
			t.Errorf("%s from %v: got %+v, %q; want %s × %s", c.removed, c.added, r, why, c.with, c.factor)
		}
		if c.expr != "" && r.Expression("") != c.expr {
			t.Errorf("%s: expression %s, want %s", c.removed, r.Expression(""), c.expr)
		}
	}
	r, _ := deriveReplacement("weight_grams", []string{"weight_kg"}, "", ints)
	if r.Exact || !strings.Contains(r.Why, "rounded to the nearest") || r.Readable() != "COALESCE(CAST(ROUND(weight_kg * 1000) AS BIGINT), weight_grams)" {
		t.Errorf("the rounding is not stated: %+v / %s", r, r.Readable())
	}
}

func TestRewriteStatementReadsBothFieldsIntoV2FromOffsets(t *testing.T) {
	rep := Replacement{Removed: "response_bytes", With: "response_kib", Factor: "1024"}
	hint := optionsHint([][2]string{{"scan.startup.mode", "specific-offsets"}, {"scan.startup.specific-offsets", "partition:0,offset:4;partition:1,offset:7"}})
	d, err := rewriteStatement(rollupSQL, []Replacement{rep}, "api-usage", "usage-hourly-v2", hint, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(d.SQL)
	for _, want := range []string{"INSERT INTO `usage-hourly-v2`", "SUM(COALESCE(CAST(response_kib AS BIGINT) * 1024, response_bytes)) AS egress_bytes",
		"TABLE `api-usage` /*+ OPTIONS('scan.startup.mode'='specific-offsets', 'scan.startup.specific-offsets'='partition:0,offset:4;partition:1,offset:7') */"} {
		if !strings.Contains(d.SQL, want) {
			t.Errorf("draft lacks %q", want)
		}
	}
	v13 := []string{"usage_id", "account_id", "event_time", "endpoint", "status_code", "response_kib", "response_bytes"}
	rc, err := checkStatement(d.SQL, map[string][]string{"api-usage": v13})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rc.Target, ".") != "usage-hourly-v2" {
		t.Errorf("target %v", rc.Target)
	}
	// Against v12 (no response_bytes) the same draft is refused.
	if _, err := checkStatement(d.SQL, map[string][]string{"api-usage": v13[:6]}); err == nil || !strings.Contains(err.Error(), "response_bytes") {
		t.Errorf("v12 check: %v", err)
	}
	stmt, _ := sqlparse.Parse(d.SQL)
	key, timeCol := groupKey(stmt)
	if strings.Join(key, ",") != "account_id,hour" || timeCol != "hour" {
		t.Errorf("key %v time %q", key, timeCol)
	}
}

func TestRewriteStatementQualifiedReads(t *testing.T) {
	sql := "INSERT INTO sink SELECT u.account_id, SUM(u.response_bytes) AS b FROM `api-usage` AS u WHERE u.response_bytes > 0 GROUP BY u.account_id"
	d, err := rewriteStatement(sql, []Replacement{{Removed: "response_bytes", With: "response_kib", Factor: "1024"}}, "api-usage", "sink-v2", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rewritten != 2 || !strings.Contains(d.SQL, "SUM(COALESCE(CAST(u.response_kib AS BIGINT) * 1024, u.response_bytes))") || !strings.Contains(d.SQL, "INSERT INTO `sink-v2`") {
		t.Errorf("%d rewrites: %s", d.Rewritten, d.SQL)
	}
	if _, err := sqlparse.Parse(d.SQL); err != nil {
		t.Error(err)
	}
}

func TestCheckStatementRefusesUnknownFieldsAndBadSQL(t *testing.T) {
	known := map[string][]string{"api-usage": {"account_id", "event_time", "response_kib"}}
	if _, err := checkStatement("INSERT INTO s SELECT account_id, SUM(response_bytes) FROM `api-usage` GROUP BY account_id", known); err == nil || !strings.Contains(err.Error(), "response_bytes") {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := checkStatement("INSERT INTO s SELEC account_id FROM `api-usage`", known); err == nil {
		t.Error("unparsable SQL accepted")
	}
}

var kibRep = Replacement{Removed: "response_bytes", With: "response_kib", Factor: "1024"}

// Only reads of the source table's column are rewritten: a joined table's column of the same
// name, a nested field and a CTE's output column are left as written.
func TestRewriteStatementRewritesOnlyTheSourceTablesColumn(t *testing.T) {
	v13 := []string{"account_id", "event_time", "response_kib", "response_bytes", "payload"}
	cases := []struct {
		name, sql string
		want      []string
		keep      []string
	}{
		{"joined table", "INSERT INTO s SELECT u.account_id, SUM(u.response_bytes) AS b, MAX(l.response_bytes) AS lim FROM `api-usage` AS u " +
			"JOIN limits l ON l.account_id = u.account_id GROUP BY u.account_id",
			[]string{"SUM(COALESCE(CAST(u.response_kib AS BIGINT) * 1024, u.response_bytes)) AS b"}, []string{"MAX(l.response_bytes) AS lim"}},
		{"unqualified beside a join", "INSERT INTO s SELECT SUM(response_bytes) AS b FROM `api-usage` JOIN limits ON limits.k = `api-usage`.account_id",
			[]string{"SUM(COALESCE(CAST(response_kib AS BIGINT) * 1024, response_bytes)) AS b"}, nil},
		{"nested field", "INSERT INTO s SELECT u.payload.response_bytes AS nested, SUM(u.response_bytes) AS b FROM `api-usage` u GROUP BY u.payload.response_bytes",
			[]string{"SUM(COALESCE(CAST(u.response_kib AS BIGINT) * 1024, u.response_bytes)) AS b"}, []string{"u.payload.response_bytes AS nested", "GROUP BY u.payload.response_bytes"}},
		{"bare select item keeps its name", "INSERT INTO s SELECT account_id, response_bytes FROM `api-usage`",
			[]string{"SELECT account_id, COALESCE(CAST(response_kib AS BIGINT) * 1024, response_bytes) AS response_bytes FROM"}, nil},
		{"aliased item", "INSERT INTO s SELECT response_bytes AS rb FROM `api-usage`",
			[]string{"SELECT COALESCE(CAST(response_kib AS BIGINT) * 1024, response_bytes) AS rb FROM"}, nil},
		{"CTE output", "INSERT INTO s WITH x AS (SELECT response_bytes FROM `api-usage`) SELECT SUM(response_bytes) AS b FROM x",
			[]string{"(SELECT COALESCE(CAST(response_kib AS BIGINT) * 1024, response_bytes) AS response_bytes FROM"}, []string{"SELECT SUM(response_bytes) AS b FROM x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := rewriteStatement(c.sql, []Replacement{kibRep}, "api-usage", "s-v2", "", v13)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(d.SQL, w) {
					t.Errorf("draft lacks %q:\n%s", w, d.SQL)
				}
			}
			for _, k := range c.keep {
				if !strings.Contains(d.SQL, k) {
					t.Errorf("draft changed %q:\n%s", k, d.SQL)
				}
			}
			if strings.Contains(d.SQL, ".COALESCE") || strings.Contains(d.SQL, "l.COALESCE") {
				t.Errorf("a qualifier was put before the expression:\n%s", d.SQL)
			}
		})
	}
	// Nothing of the source to rewrite (only a joined table has the name): refused, not drafted.
	if _, err := rewriteStatement("INSERT INTO s SELECT l.response_bytes FROM `api-usage` u JOIN limits l ON l.k = u.account_id", []Replacement{kibRep}, "api-usage", "s-v2", "", v13); err == nil {
		t.Error("a statement reading only limits.response_bytes was rewritten")
	}
}

// The executed SQL casts before multiplying (an INT of KiB times 1024 can overflow); what the
// approver reads states the intent without the cast.
func TestReplacementExpressionCastsAndReadableStatesTheIntent(t *testing.T) {
	if got := kibRep.Expression("u."); got != "COALESCE(CAST(u.response_kib AS BIGINT) * 1024, u.response_bytes)" {
		t.Errorf("expression %s", got)
	}
	if got := kibRep.Readable(); got != "COALESCE(response_kib * 1024, response_bytes)" {
		t.Errorf("readable %s", got)
	}
	rename := Replacement{Removed: "user_name", With: "username", Factor: "1"}
	if got := rename.Expression(""); got != "COALESCE(username, user_name)" {
		t.Errorf("rename %s", got)
	}
}

// A depot's statement summed whole grams; the new version carries kilograms as a double. The
// corrected statement rounds into grams and still parses and reads only fields the schema has.
func TestRewriteStatementConvertsKilogramsBackIntoGrams(t *testing.T) {
	sql := "INSERT INTO `depot-load` SELECT depot, SUM(weight_grams) AS total_grams FROM `parcel-scans` GROUP BY depot"
	r, why := deriveReplacement("weight_grams", []string{"weight_kg"}, "", map[string]string{"weight_grams": "long", "weight_kg": "double"})
	if why != "" {
		t.Fatal(why)
	}
	d, err := rewriteStatement(sql, []Replacement{r}, "parcel-scans", "depot-load-v2", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.SQL, "SUM(COALESCE(CAST(ROUND(weight_kg * 1000) AS BIGINT), weight_grams)) AS total_grams") {
		t.Fatalf("draft %s", d.SQL)
	}
	if _, err := checkStatement(d.SQL, map[string][]string{"parcel-scans": {"parcel_id", "depot", "weight_kg", "weight_grams"}}); err != nil {
		t.Fatal(err)
	}
}

// Whatever a client gives as a mapping, one that is accepted reads only the new schema's fields
// and, placed in the corrected statement, still parses there as one expression.
func FuzzCheckMapping(f *testing.F) {
	for _, s := range []string{"weight_kg * 1000", "CAST(ROUND(weight_kg * 1000) AS BIGINT)", "CAST(label AS BIGINT)", "weight_kg) AS x FROM t UNION (weight_kg",
		"(SELECT 1)", "weight_kg; DROP", "label", "1", "weight_kg -- c", "CASE WHEN weight_kg > 0 THEN weight_kg END", "'%s' || label"} {
		f.Add(s)
	}
	next := &schema.Schema{Format: schema.Protobuf, Fields: []schema.Field{{Path: "weight_kg", Type: "double"}, {Path: "label", Type: "string"}, {Path: "dims", Type: "message acme.Dims"}}}
	f.Fuzz(func(t *testing.T, expr string) {
		reads, err := checkMapping(expr, "parcels", next, "weight_grams", "int64")
		if err != nil {
			return
		}
		for _, r := range reads {
			if !strings.EqualFold(r, "weight_kg") && !strings.EqualFold(r, "label") {
				t.Fatalf("%q accepted reading %s", expr, r)
			}
		}
		rep := Replacement{Removed: "weight_grams", With: expr, Conversion: "(" + expr + ")", Origin: OriginMappingClient}
		sql := "INSERT INTO out SELECT " + rep.Expression("") + " AS w FROM parcels"
		if _, err := checkStatement(sql, nil); err != nil {
			t.Fatalf("%q accepted but the statement does not parse: %v\n%s", expr, err, sql)
		}
	})
}
