package catalogsync_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/catalogsync"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/graph"
)

// The configured environment and cluster IDs name the cluster whose topics the graph holds: a
// statement running under display names that qualifies a table with those IDs reads the local
// topic; one naming another cluster is not linked to the same-named local topic.
func TestSyncedStatementsDoNotLinkOtherClustersTables(t *testing.T) {
	p := setup(t)
	props := map[string]string{"sql.current-catalog": "Usage Env", "sql.current-database": "usage cluster"}
	p.cloud.SetStatements([]confluenttest.Statement{
		{Name: "local-copy", Phase: "RUNNING", CreatedAt: created, ComputePoolID: confluenttest.Pool, Properties: props,
			SQL: "INSERT INTO `usage-hourly` SELECT account_id FROM `" + confluenttest.Env + "`.`" + confluenttest.Cluster + "`.`api-usage`"},
		{Name: "remote-copy", Phase: "RUNNING", CreatedAt: created, ComputePoolID: confluenttest.Pool, Properties: props,
			SQL: "INSERT INTO `usage-hourly` SELECT account_id FROM `" + confluenttest.Env + "`.`lkc-billing`.`api-usage`"},
	})
	rep := p.sync(t, catalogsync.SystemKafka, catalogsync.SystemRegistry, catalogsync.SystemFlink)
	f := system(rep, catalogsync.SystemFlink)
	if f.Status != "synced" || !strings.Contains(strings.Join(f.Warnings, "\n"), "table "+confluenttest.Env+".lkc-billing.api-usage is in another cluster") {
		t.Fatalf("flink = %+v", f)
	}
	readers := func(stmt string) bool {
		edges, _, err := p.g.Neighbours(context.Background(), graph.FlinkStatementURN(stmt), graph.Upstream)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range edges {
			if e.From.Asset == graph.TopicURN("api-usage") && !e.Stale {
				return true
			}
		}
		return false
	}
	if !readers("local-copy") {
		t.Error("a table qualified with the configured environment and cluster IDs was not linked to the local topic")
	}
	if readers("remote-copy") {
		t.Error("another cluster's table was linked to the same-named local topic")
	}
}
