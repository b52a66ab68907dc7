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
