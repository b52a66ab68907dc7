package main

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/dataworkers/dw/pkg/catalogsync"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/mcpkittest"
)

func TestSyncCatalogToolSurface(t *testing.T) {
	mcpkittest.CheckInvariants(t, "dw-context-catalog", []mcpkit.Tool{syncCatalog(mcpkittest.Env(t, "dw-context-catalog"))})
}

func TestSyncCatalogHarvestsLivePeersAndReportsChanges(t *testing.T) {
	f := kafkatest.Start(t, "api-usage", "usage-hourly")
	f.Registry.SeedSchema(kafkatest.Subject, 11, 11, sr.Schema{Schema: kafkatest.SchemaV11, Type: sr.TypeAvro})
	cloud := confluenttest.New(t, []confluenttest.Statement{{Name: "usage-hourly-rollup", Phase: "RUNNING", ComputePoolID: confluenttest.Pool,
		CreatedAt: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC),
		SQL:       "INSERT INTO `usage-hourly` SELECT account_id, SUM(response_bytes) AS egress_bytes FROM `api-usage` GROUP BY account_id"}},
		[]confluenttest.Tableflow{{Topic: "usage-hourly", Phase: "RUNNING"}})
	env := mcpkittest.Env(t, "dw-context-catalog")
	env.Config.Kafka, env.Config.SchemaRegistry, env.Config.ConfluentCloud = f.Kafka, f.SchemaRegistry, cloud.Config()
	env.Config.Warehouse = nil // the embedded config's SQLite warehouse file does not exist in a test home
	tool := syncCatalog(env)

	var rep catalogsync.Report
	if msg := mcpkittest.Call(t, tool, nil, &rep); msg != "" {
		t.Fatal(msg)
	}
	if rep.Added == 0 || len(rep.Failed) != 0 || strings.Join(rep.Skipped, ",") != "warehouse,catalog_files" {
		t.Fatalf("first sync = %+v", rep)
	}
	f.Registry.SeedSchema(kafkatest.Subject, 12, 12, sr.Schema{Schema: kafkatest.SchemaV12, Type: sr.TypeAvro})
	if msg := mcpkittest.Call(t, tool, map[string]any{"systems": []string{"schema_registry"}}, &rep); msg != "" {
		t.Fatal(msg)
	}
	if len(rep.Systems) != 1 || rep.Changed != 1 || rep.MarkedStale.Fields != 1 {
		t.Fatalf("after v12: %+v", rep.Systems)
	}
	if msg := mcpkittest.Call(t, tool, map[string]any{"systems": []string{"mainframe"}}, nil); !strings.Contains(msg, "unknown system") {
		t.Fatalf("unknown system: %q", msg)
	}
	env.Config.Kafka, env.Config.SchemaRegistry, env.Config.ConfluentCloud = nil, nil, nil
	env.Config.Catalog.Files = nil
	if msg := mcpkittest.Call(t, tool, nil, nil); !strings.Contains(msg, "nothing was synced") || !strings.Contains(msg, "kafka.bootstrap_servers") {
		t.Fatalf("nothing configured: %q", msg)
	}
}
