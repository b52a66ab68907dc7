package flinksql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/lineage/flinksql"
)

// A table in another cluster (catalog.database.table = environment.kafka-cluster.topic) is never
// linked to the same-named local topic: it is reported unresolved. Its own cluster, named by the
// current catalog/database or by an alias, resolves as before.
func TestCrossClusterTablesAreNotLinkedToLocalTopics(t *testing.T) {
	cols := []flinksql.Column{{Name: "account_id", Type: "long"}, {Name: "bytes", Type: "long"}}
	res := flinksql.StaticResolver{
		"orders": {Topic: "orders", ValueSubject: "orders-value", SchemaVersion: 1, Columns: cols},
		"totals": {Topic: "totals", ValueSubject: "totals-value", SchemaVersion: 1, Columns: cols},
	}
	props := map[string]string{"sql.current-catalog": "prod-env", "sql.current-database": "usage-cluster"}
	cases := []struct {
		name, sql   string
		props       map[string]string
		dbAliases   []string
		wantEdges   []string
		noEdgeTo    string
		wantWarning string
	}{
		{"other cluster, same environment", "INSERT INTO totals SELECT account_id, bytes FROM `prod-env`.`billing-cluster`.`orders`", props, nil,
			[]string{"flink:statement/s -> kafka:topic/totals"}, "kafka:topic/orders", "table prod-env.billing-cluster.orders is in another cluster (database billing-cluster"},
		{"other environment", "INSERT INTO totals SELECT account_id, bytes FROM `dev-env`.`usage-cluster`.orders", props, nil,
			[]string{"flink:statement/s -> kafka:topic/totals"}, "kafka:topic/orders", "catalog dev-env is not the statement's environment"},
		{"two-part name of another cluster", "INSERT INTO totals SELECT account_id, bytes FROM `billing-cluster`.orders", props, nil,
			nil, "kafka:topic/orders", "database billing-cluster is not the statement's Kafka cluster"},
		{"sink in another cluster", "INSERT INTO `prod-env`.`billing-cluster`.totals SELECT account_id, bytes FROM orders", props, nil,
			[]string{"kafka:topic/orders -> flink:statement/s", "kafka:topic/orders#bytes -> flink:statement/s#bytes"}, "kafka:topic/totals", "table prod-env.billing-cluster.totals is in another cluster"},
		{"qualified name without a current cluster", "INSERT INTO totals SELECT account_id, bytes FROM `prod-env`.`usage-cluster`.orders", nil, nil,
			nil, "kafka:topic/orders", "the statement has no sql.current-catalog or sql.current-database"},
		{"own cluster, fully qualified", "INSERT INTO totals SELECT account_id, bytes FROM `PROD-ENV`.`usage-cluster`.orders", props, nil,
			[]string{"kafka:topic/orders -> flink:statement/s", "kafka:topic/orders#bytes -> flink:statement/s#bytes"}, "", ""},
		{"own cluster by its ID alias", "INSERT INTO totals SELECT account_id, bytes FROM `prod-env`.`lkc-usage`.orders", props, []string{"lkc-usage"},
			[]string{"kafka:topic/orders -> flink:statement/s"}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := flinksql.Statement{Name: "s", SQL: c.sql, Properties: c.props, DatabaseAliases: c.dbAliases}
			b, err := flinksql.Import(context.Background(), st, res)
			if err != nil {
				t.Fatal(err)
			}
			got := edges(b)
			for _, e := range c.wantEdges {
				if _, ok := got[e]; !ok {
					t.Errorf("edge %s missing: %v", e, got)
				}
			}
			if c.noEdgeTo != "" {
				for k := range got {
					if strings.Contains(k, c.noEdgeTo) {
						t.Errorf("linked to the same-named local topic: %s", k)
					}
				}
				for _, a := range b.Assets {
					if string(a.URN) == c.noEdgeTo {
						t.Errorf("asserted local topic %s", a.URN)
					}
				}
			}
			warn := strings.Join(b.Warnings, "\n")
			if c.wantWarning == "" {
				if strings.Contains(warn, "another cluster") {
					t.Errorf("own cluster reported foreign: %s", warn)
				}
				return
			}
			if !strings.Contains(warn, c.wantWarning) {
				t.Errorf("warnings = %s\nwant %q", warn, c.wantWarning)
			}
			var stmt map[string]string
			for _, a := range b.Assets {
				if a.URN == "flink:statement/s" {
					stmt = a.Attrs
				}
			}
			if stmt["unresolved_tables"] == "" {
				t.Errorf("statement attrs %v lack unresolved_tables", stmt)
			}
		})
	}
}
