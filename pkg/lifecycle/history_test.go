package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/lineage/scenario"
)

// History along a lineage path finds incidents on the asset and on everything upstream or
// downstream of it, and none off the path.
func TestHistoryAlongALineagePathFindsIncidentsOnThePathOnly(t *testing.T) {
	ctx := context.Background()
	e := newEstate(t)
	if err := scenario.Load(ctx, graph.New(e.st, e.now), "../lineage/testdata/scenario", "../../configs/catalog.example.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY", "dbt:model.billing.fct_billable_egress", "dbt:model.billing.dim_accounts"} {
		if _, err := e.incs.Open(ctx, a, "volume", "sev2", "rows dropped", "test"); err != nil {
			t.Fatal(err)
		}
	}
	life := e.service(t, nil)
	list, err := life.History(ctx, incidents.Query{}, "flink:statement/usage-hourly-rollup")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range list {
		got = append(got, i.Asset)
	}
	slices.Sort(got)
	if want := []string{"dbt:model.billing.fct_billable_egress", "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY"}; !slices.Equal(got, want) {
		t.Fatalf("incidents on the path = %v, want %v", got, want)
	}
	if _, err := life.History(ctx, incidents.Query{}, "kafka:topic/nowhere"); err == nil || !strings.Contains(err.Error(), "not in the context graph") {
		t.Fatalf("unknown asset: %v", err)
	}
}
