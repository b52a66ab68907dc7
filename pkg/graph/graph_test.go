package graph

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store/storetest"
)

func newGraph(t testing.TB, now time.Time) *Graph {
	t.Helper()
	st := storetest.Open(t)
	return New(st, func() time.Time { return now })
}

func mustImport(t testing.TB, g *Graph, b Batch) ImportResult {
	t.Helper()
	r, err := g.Import(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fe(from, to string, kind EdgeKind) Edge {
	f, err := ParseFieldRef(from)
	if err != nil {
		panic(err)
	}
	tt, err := ParseFieldRef(to)
	if err != nil {
		panic(err)
	}
	return Edge{From: f, To: tt, Kind: kind}
}

func TestParseURNAndFieldRef(t *testing.T) {
	for _, ok := range []string{"kafka:topic/usage-events", "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY", "openlineage:s3://b/k"} {
		if _, err := ParseURN(ok); err != nil {
			t.Errorf("ParseURN(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "nocolon", ":x", "Kafka:topic/x", "kafka:", "kafka:a#b", "kafka:a\x00"} {
		if _, err := ParseURN(bad); err == nil {
			t.Errorf("ParseURN(%q) accepted", bad)
		}
	}
	f, err := ParseFieldRef("schema:api-usage-value#payload.response_bytes")
	if err != nil || f.Asset != "schema:api-usage-value" || f.Path != "payload.response_bytes" {
		t.Errorf("ParseFieldRef: %+v %v", f, err)
	}
	if got := WarehouseURN("snowflake", `"Analytics"`, "usage", "usage_hourly"); got != "warehouse:snowflake/Analytics.USAGE.USAGE_HOURLY" {
		t.Errorf("WarehouseURN = %s", got)
	}
	if got := SplitRelation(`"DB"."SCH.EMA"."T"`); len(got) != 3 || got[1] != `"SCH.EMA"` {
		t.Errorf("SplitRelation = %q", got)
	}
}

func TestReimportMarksVanishedStaleAndRevivesReturning(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC))
	b := Batch{Source: "test:a",
		Assets: []Asset{{URN: "kafka:topic/a", Kind: KindKafkaTopic}, {URN: "kafka:topic/b", Kind: KindKafkaTopic}},
		Fields: []Field{{Asset: "kafka:topic/a", Path: "x"}, {Asset: "kafka:topic/a", Path: "y"}},
		Edges:  []Edge{fe("kafka:topic/a#x", "kafka:topic/b#x", EdgeIdentity)}}
	mustImport(t, g, b)
	r := mustImport(t, g, Batch{Source: "test:a", Assets: b.Assets[:1], Fields: b.Fields[:1]})
	if r.Stale != (Counts{Assets: 1, Fields: 1, Edges: 1}) {
		t.Fatalf("stale %+v", r.Stale)
	}
	a, err := g.Get(ctx, "kafka:topic/b")
	if err != nil || !a.Stale {
		t.Fatalf("b should be stale, not deleted: %+v %v", a, err)
	}
	lin, err := g.Downstream(ctx, []FieldRef{{Asset: "kafka:topic/a", Path: "x"}}, 0)
	if err != nil || len(lin.Nodes) != 0 {
		t.Fatalf("stale edge followed: %+v %v", lin.Nodes, err)
	}
	lin, err = g.Traverse(ctx, []FieldRef{{Asset: "kafka:topic/a", Path: "x"}}, TraverseOptions{IncludeStale: true})
	if err != nil || len(lin.Nodes) != 1 {
		t.Fatalf("include_stale should follow it: %+v %v", lin.Nodes, err)
	}
	r = mustImport(t, g, b)
	if a, _ := g.Get(ctx, "kafka:topic/b"); a.Stale {
		t.Error("b came back but is still stale")
	}
	if r.Stale != (Counts{}) {
		t.Errorf("nothing vanished, got %+v", r.Stale)
	}
}

func TestAnotherSourcesClaimsSurviveAReimport(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "dbt", Assets: []Asset{{URN: "dbt:model.p.m", Kind: KindDBTModel, Owners: []string{"a@x"}}}})
	mustImport(t, g, Batch{Source: "catalog", Assets: []Asset{{URN: "dbt:model.p.m", Owners: []string{"b@x"}, Tags: []string{TagMoney}, Criticality: "high"}}})
	mustImport(t, g, Batch{Source: "dbt"}) // the model left dbt
	a, err := g.Get(ctx, "dbt:model.p.m")
	if err != nil {
		t.Fatal(err)
	}
	if a.Stale || len(a.Owners) != 1 || a.Owners[0] != "b@x" || a.Kind != KindDBTModel {
		// The catalog's claim is live; the dbt claim is stale and no longer counts, but the kind
		// is taken from the URN.
		t.Errorf("merged asset %+v", a)
	}
	if len(a.Claims) != 2 {
		t.Errorf("claims %+v", a.Claims)
	}
}

func TestMergeUnitesOwnersAndTagsAndKeepsHighestCriticality(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "s1", Assets: []Asset{{URN: "bi:sigma/w", Kind: KindBIWorkbook, Name: "W", Owners: []string{"a"}, Tags: []string{"money"}, Criticality: "high"}}})
	mustImport(t, g, Batch{Source: "s2", Assets: []Asset{{URN: "bi:sigma/w", Owners: []string{"b"}, Tags: []string{"pii"}, Criticality: "low", Domain: "billing"}}})
	a, err := g.Get(ctx, "bi:sigma/w")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(a.Owners, ",") != "a,b" || strings.Join(a.Tags, ",") != "money,pii" || a.Criticality != "high" || a.Domain != "billing" || a.Name != "W" {
		t.Errorf("merged %+v", a)
	}
}

func TestResolveNeverGuesses(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "s", Assets: []Asset{
		{URN: "dbt:model.p.orders", Name: "orders"}, {URN: "warehouse:snowflake/DB.S.ORDERS", Name: "DB.S.ORDERS"},
		{URN: "dbt:model.p.raw_orders", Name: "raw_orders"}, {URN: "kafka:topic/usage-events", Name: "usage-events"}}})
	_, err := g.Resolve(ctx, "orders")
	var amb *AmbiguousError
	if !errors.As(err, &amb) || len(amb.Candidates) != 2 {
		t.Fatalf("orders: want 2 candidates (not raw_orders), got %v", err)
	}
	if u, err := g.Resolve(ctx, "usage-events"); err != nil || u != "kafka:topic/usage-events" {
		t.Errorf("usage-events: %s %v", u, err)
	}
	if u, err := g.Resolve(ctx, "raw_orders"); err != nil || u != "dbt:model.p.raw_orders" {
		t.Errorf("raw_orders: %s %v", u, err)
	}
	_, err = g.Resolve(ctx, "order")
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Suggestions) == 0 {
		t.Errorf("order: want not found with suggestions, got %v", err)
	}
	if _, err := g.Resolve(ctx, "100%_"); !errors.As(err, &nf) {
		t.Errorf("LIKE metacharacters must not match: %v", err)
	}
}

// A table-level reader of an asset whose field-level lineage is known elsewhere is not reached
// from an unrelated field; one with no field-level knowledge is reached as a whole.
func TestFieldTraversalRules(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "s", Edges: []Edge{
		fe("schema:s", "kafka:topic/t", EdgeSchemaOf),
		fe("kafka:topic/t#a", "flink:statement/q#a2", EdgeAggregation),
		fe("kafka:topic/t#b", "flink:statement/q#b2", EdgeIdentity),
		fe("kafka:topic/t", "flink:statement/q", EdgeReads),
		fe("kafka:topic/t", "connect:connector/sink", EdgeReads), // table-level only
		fe("flink:statement/q#a2", "kafka:topic/out#a2", EdgeIdentity),
		fe("flink:statement/q#b2", "kafka:topic/out#b2", EdgeIdentity),
		fe("kafka:topic/out", "tableflow:out", EdgeMaterializes),
		fe("tableflow:out#B2", "dbt:model.p.m#bee", EdgeTransformation),
	}})
	lin, err := g.Downstream(ctx, []FieldRef{{Asset: "schema:s", Path: "a"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range lin.Nodes {
		got[n.Node.String()] = true
	}
	for _, want := range []string{"kafka:topic/t#a", "flink:statement/q#a2", "kafka:topic/out#a2", "tableflow:out#a2", "connect:connector/sink"} {
		if !got[want] {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	for _, not := range []string{"flink:statement/q", "kafka:topic/out#b2", "dbt:model.p.m#bee"} {
		if got[not] {
			t.Errorf("reached %s from field a", not)
		}
	}
	// b reaches the model through a case-insensitive materialized field.
	lin, _ = g.Downstream(ctx, []FieldRef{{Asset: "schema:s", Path: "b"}}, 0)
	found := false
	for _, n := range lin.Nodes {
		found = found || n.Node.String() == "dbt:model.p.m#bee"
	}
	if !found {
		t.Errorf("b should reach dbt:model.p.m#bee: %+v", lin.Nodes)
	}
	// Depth limits are reported.
	lin, _ = g.Downstream(ctx, []FieldRef{{Asset: "schema:s", Path: "b"}}, 2)
	if !lin.Truncated {
		t.Error("depth 2 should truncate")
	}
	// From a, the walk ends at tableflow:out#a2 (depth 4): the edge leaving it carries only B2,
	// which the rules do not follow, so a depth of 4 is complete, not truncated.
	lin, err = g.Downstream(ctx, []FieldRef{{Asset: "schema:s", Path: "a"}}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if lin.Truncated {
		t.Errorf("depth 4 from a reported truncated; nodes %+v", lin.Nodes)
	}
	lin, _ = g.Downstream(ctx, []FieldRef{{Asset: "schema:s", Path: "a"}}, 3)
	if !lin.Truncated {
		t.Error("depth 3 from a should truncate (tableflow:out#a2 lies beyond)")
	}
}

func TestBlastRadiusNextRunUsesTheCronAndTheClock(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 8, 14, 23, 30, 0, 0, time.UTC)
	g := newGraph(t, now)
	mustImport(t, g, Batch{Source: "s",
		Assets: []Asset{{URN: "job:airflow/a", Schedule: "0 23 * * *", Tags: []string{TagExternal}},
			{URN: "job:airflow/b", Schedule: "CRON_TZ=Europe/Berlin 0 6 * * *"},
			{URN: "job:airflow/c", Schedule: "@hourly", Attrs: map[string]string{"paused": "true"}}},
		Edges: []Edge{fe("dbt:model.p.m", "job:airflow/a", EdgeReads), fe("dbt:model.p.m", "job:airflow/b", EdgeReads), fe("dbt:model.p.m", "job:airflow/c", EdgeReads)}})
	br, err := g.BlastRadius(ctx, BlastRadiusRequest{Asset: "dbt:model.p.m", ChangeType: ChangeTableDrop})
	if err != nil {
		t.Fatal(err)
	}
	next := map[URN]string{}
	for _, j := range br.ScheduledJobs {
		if j.NextRun != nil {
			next[j.URN] = j.NextRun.UTC().Format(time.RFC3339)
		} else {
			next[j.URN] = j.Note
		}
	}
	if next["job:airflow/a"] != "2026-08-15T23:00:00Z" || next["job:airflow/b"] != "2026-08-15T04:00:00Z" || !strings.HasPrefix(next["job:airflow/c"], "paused") {
		t.Errorf("next runs %v", next)
	}
	if len(br.Critical) != 1 || br.Critical[0] != "job:airflow/a" {
		t.Errorf("critical %v", br.Critical)
	}
	if _, err := g.BlastRadius(ctx, BlastRadiusRequest{Asset: "dbt:model.p.m", ChangeType: ChangeColumnDrop}); err == nil {
		t.Error("column_drop without a column accepted")
	}
}

func TestBatchValidation(t *testing.T) {
	g := newGraph(t, time.Now())
	for _, b := range []Batch{
		{},
		{Source: "s", Assets: []Asset{{URN: "bad"}}},
		{Source: "s", Assets: []Asset{{URN: "job:a/b", Schedule: "every day"}}},
		{Source: "s", Assets: []Asset{{URN: "job:a/b", Criticality: "urgent"}}},
		{Source: "s", Edges: []Edge{{From: FieldRef{Asset: "a:b"}, To: FieldRef{Asset: "a:c"}}}},
		{Source: "s", Edges: []Edge{fe("a:b", "a:b", EdgeReads)}},
		{Source: "s", Fields: []Field{{Asset: "a:b"}}},
	} {
		if _, err := g.Import(context.Background(), b); err == nil {
			t.Errorf("accepted %+v", b)
		}
	}
}

func TestSearch(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "s",
		Assets: []Asset{{URN: "bi:sigma/revenue-today", Name: "Revenue today", Tags: []string{"money"}}, {URN: "dbt:model.p.revenue_daily", Name: "revenue_daily"}},
		Fields: []Field{{Asset: "dbt:model.p.revenue_daily", Path: "egress_bytes"}}})
	found, err := g.Search(ctx, SearchQuery{Text: "revenue"})
	if err != nil || len(found.Hits) != 2 || found.Truncated {
		t.Fatalf("%+v %v", found, err)
	}
	found, _ = g.Search(ctx, SearchQuery{Text: "egress"})
	if len(found.Hits) != 1 || found.Hits[0].MatchedFields[0] != "egress_bytes" {
		t.Errorf("field search %+v", found)
	}
	found, _ = g.Search(ctx, SearchQuery{Tags: []string{"money"}})
	if len(found.Hits) != 1 || found.Hits[0].URN != "bi:sigma/revenue-today" {
		t.Errorf("tag search %+v", found)
	}
	found, _ = g.Search(ctx, SearchQuery{Text: "revenue", Limit: 1})
	if len(found.Hits) != 1 || !found.Truncated {
		t.Errorf("limit 1 of 2 should be truncated: %+v", found)
	}
}

// The kind, tag and stale filters run before the scan cap, so a small cap still finds every match
// they keep, and they agree with the merged view Get shows.
func TestSearchFiltersBeforeTheScanCap(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	var filler []Asset
	for i := 0; i < 20; i++ {
		filler = append(filler, Asset{URN: URN(fmt.Sprintf("bi:sigma/a%02d", i))}) // sorts first, no tags
	}
	mustImport(t, g, Batch{Source: "fill", Assets: filler})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// old: claims a kind and a tag, then stops reporting x; live: a newer source says x is a job.
	mustImport(t, g, Batch{Source: "old", ObservedAt: t0, Assets: []Asset{
		{URN: "job:x", Kind: KindDBTModel, Tags: []string{"gone"}},
		{URN: "job:only-stale", Tags: []string{"pii"}},
	}})
	mustImport(t, g, Batch{Source: "old", ObservedAt: t0.Add(time.Hour)})
	mustImport(t, g, Batch{Source: "live", ObservedAt: t0.Add(2 * time.Hour), Assets: []Asset{
		{URN: "job:x", Tags: []string{"pii"}},
		{URN: "warehouse:snowflake/A.B.C", Kind: KindKafkaTopic, Tags: []string{"pii", "money"}},
	}})
	// Referenced only (no claim): kind from the URN, never stale.
	mustImport(t, g, Batch{Source: "edges", Edges: []Edge{fe("kafka:topic/t", "dbt:model.p.m", EdgeReads)}})
	g.scanCap = 3

	cases := []struct {
		q    SearchQuery
		want []URN
	}{
		{SearchQuery{Kinds: []string{KindJob}}, []URN{"job:x"}},
		{SearchQuery{Kinds: []string{KindJob}, IncludeStale: true}, []URN{"job:only-stale", "job:x"}},
		{SearchQuery{Kinds: []string{KindDBTModel}}, []URN{"dbt:model.p.m"}},
		{SearchQuery{Kinds: []string{KindKafkaTopic}}, []URN{"kafka:topic/t", "warehouse:snowflake/A.B.C"}},
		{SearchQuery{Kinds: []string{KindWarehouseTable}}, nil},
		{SearchQuery{Tags: []string{"pii"}}, []URN{"job:x", "warehouse:snowflake/A.B.C"}},
		{SearchQuery{Tags: []string{"pii"}, IncludeStale: true}, []URN{"job:only-stale", "job:x", "warehouse:snowflake/A.B.C"}},
		{SearchQuery{Tags: []string{"gone"}, IncludeStale: true}, nil},
		{SearchQuery{Tags: []string{"pii", "money"}}, []URN{"warehouse:snowflake/A.B.C"}},
		{SearchQuery{Tags: []string{"pii"}, Kinds: []string{KindJob, KindKafkaTopic}}, []URN{"job:x", "warehouse:snowflake/A.B.C"}},
	}
	for _, c := range cases {
		found, err := g.Search(ctx, c.q)
		if err != nil {
			t.Fatal(err)
		}
		var got []URN
		for _, h := range found.Hits {
			got = append(got, h.URN)
			a, err := g.Get(ctx, h.URN)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.q.Kinds) > 0 && !slices.Contains(c.q.Kinds, a.Kind) || (a.Stale && !c.q.IncludeStale) {
				t.Errorf("%+v: hit %s disagrees with Get: kind %q stale %t", c.q, h.URN, a.Kind, a.Stale)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) || found.Truncated {
			t.Errorf("%+v: got %v truncated %t, want %v", c.q, got, found.Truncated, c.want)
		}
	}
	// Unfiltered, the 20 fillers pass the cap of 3: the result says so.
	found, err := g.Search(ctx, SearchQuery{})
	if err != nil || len(found.Hits) != 3 || !found.Truncated {
		t.Errorf("cap not reported: %+v %v", found, err)
	}
}

func TestNeighboursReportsTheCap(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "s", Edges: []Edge{
		fe("kafka:topic/t", "job:a", EdgeReads), fe("kafka:topic/t", "job:b", EdgeReads), fe("kafka:topic/t", "job:c", EdgeReads)}})
	g.scanCap = 3
	edges, truncated, err := g.Neighbours(ctx, "kafka:topic/t", Downstream)
	if err != nil || len(edges) != 3 || truncated {
		t.Fatalf("%v %t %v", edges, truncated, err)
	}
	g.scanCap = 2
	edges, truncated, _ = g.Neighbours(ctx, "kafka:topic/t", Downstream)
	if len(edges) != 2 || !truncated {
		t.Errorf("cap 2 of 3: %v truncated %t", edges, truncated)
	}
}

func TestAssetsClaimedBy(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "s", Assets: []Asset{{URN: "job:b"}, {URN: "job:a"}, {URN: "job:c"}}})
	mustImport(t, g, Batch{Source: "s", Assets: []Asset{{URN: "job:b"}, {URN: "job:a"}}})
	mustImport(t, g, Batch{Source: "other", Assets: []Asset{{URN: "job:d"}}})
	got, err := g.AssetsClaimedBy(ctx, "s")
	if err != nil || !slices.Equal(got, []URN{"job:a", "job:b"}) {
		t.Errorf("got %v %v", got, err)
	}
}

// GetMany answers as Get does for each asset it holds (merged claims, fields, staleness), leaves
// out what it does not hold, and takes each URN once however often it is named.
func TestGetManyAnswersAsGetDoesForEachAsset(t *testing.T) {
	ctx := context.Background()
	g := newGraph(t, time.Now())
	mustImport(t, g, Batch{Source: "s1", Assets: []Asset{
		{URN: "bi:sigma/w", Kind: KindBIWorkbook, Name: "W", Owners: []string{"a"}, Tags: []string{"money"}},
		{URN: "kafka:topic/orders", Kind: KindKafkaTopic, Fields: []Field{{Path: "id", Type: "string"}, {Path: "amount_cents", Type: "long"}}},
	}})
	mustImport(t, g, Batch{Source: "s2", Assets: []Asset{{URN: "bi:sigma/w", Owners: []string{"b"}, Domain: "billing"}, {URN: "dbt:model.p.gone", Kind: KindDBTModel}}})
	mustImport(t, g, Batch{Source: "s2", Assets: []Asset{{URN: "bi:sigma/w", Owners: []string{"b"}, Domain: "billing"}}}) // the model left s2: stale
	urns := []URN{"bi:sigma/w", "kafka:topic/orders", "dbt:model.p.gone", "kafka:topic/never", "bi:sigma/w"}
	got, err := g.GetMany(ctx, urns)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("GetMany held %d assets, want 3: %+v", len(got), got)
	}
	for _, u := range urns[:3] {
		want, err := g.Get(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[u], want) {
			t.Errorf("%s\nGetMany %+v\n    Get %+v", u, got[u], want)
		}
	}
	if _, ok := got["kafka:topic/never"]; ok {
		t.Error("an asset the graph does not hold was returned")
	}
	if empty, err := g.GetMany(ctx, nil); err != nil || len(empty) != 0 {
		t.Errorf("no URNs: %v %v", empty, err)
	}
}
