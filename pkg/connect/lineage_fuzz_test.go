package connect

import (
	"strings"
	"testing"
)

// FuzzConfigLineage feeds arbitrary topic lists and topic2table maps: never a panic, never an
// empty topic or table, and every mapped topic listed.
func FuzzConfigLineage(f *testing.F) {
	f.Add("usage-hourly,api-usage", "usage-hourly:USAGE_HOURLY", "com.snowflake.kafka.connector.SnowflakeSinkConnector", "ANALYTICS", "USAGE")
	f.Add(" , ,", ":,a:,:b,,c:d:e", "io.confluent.connect.jdbc.JdbcSinkConnector", "", "")
	f.Add("ä-topic", "ä-topic:\"Quoted\".T", "snowflake", "DB", "")
	f.Fuzz(func(t *testing.T, topics, m, class, db, schema string) {
		l := ConfigLineage(map[string]string{"topics": topics, "snowflake.topic2table.map": m, "connector.class": class,
			"snowflake.database.name": db, "snowflake.schema.name": schema, "table.name.format": "raw_${topic}"})
		for _, tp := range l.Topics {
			if strings.TrimSpace(tp) == "" {
				t.Fatalf("empty topic from %q / %q", topics, m)
			}
		}
		for tp, table := range l.Tables {
			if tp == "" || table == "" {
				t.Fatalf("empty mapping %q → %q", tp, table)
			}
			found := false
			for _, x := range l.Topics {
				found = found || x == tp
			}
			if !found {
				t.Fatalf("mapped topic %q not listed in %v", tp, l.Topics)
			}
		}
	})
}

// TestJavaHashCodeKnownValues pins the hash to values Java prints.
func TestJavaHashCodeKnownValues(t *testing.T) {
	for s, want := range map[string]int32{"": 0, "hello": 99162322, "Hello World": -862545276, "polygenelubricants": -2147483648} {
		if got := javaHashCode(s); got != want {
			t.Errorf("hashCode(%q) = %d, want %d", s, got, want)
		}
	}
	if javaAbs(-2147483648) != -2147483648 || javaAbs(-5) != 5 {
		t.Error("javaAbs differs from Math.abs")
	}
}

// FuzzRedactURL: never a panic, and a password parameter or userinfo never survives.
func FuzzRedactURL(f *testing.F) {
	f.Add("jdbc:postgresql://h:5432/db", "sslmode=require")
	f.Add("mongodb://u:p@h", "")
	f.Add("jdbc:oracle:thin:", "@")
	f.Add("://@;?&=", "==")
	f.Fuzz(func(t *testing.T, base, param string) {
		if strings.Contains(base+param, "Zq9") {
			return
		}
		_ = RedactURL(base)
		if got := RedactURL(base + "?" + param + "&password=Zq9"); strings.Contains(got, "Zq9") {
			t.Fatalf("password survived: %q", got)
		}
		if got := RedactURL("mysql://dw:Zq9@" + param); strings.Contains(got, "Zq9") {
			t.Fatalf("userinfo survived: %q", got)
		}
	})
}
