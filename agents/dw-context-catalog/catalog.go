package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lineage/catalogfile"
	"github.com/dataworkers/dw/pkg/lineage/dbt"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
	"github.com/dataworkers/dw/pkg/lineage/openlineage"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema/impact"
)

// deps is what the catalog tools share: the env, and the graph on the store opened on first use.
type deps struct{ env *mcpkit.Env }

func (d *deps) now() time.Time {
	if d.env.Now != nil {
		return d.env.Now()
	}
	return time.Now()
}

func (d *deps) graph(ctx context.Context) (*graph.Graph, error) {
	st, err := d.env.Store.Get(ctx)
	if err != nil {
		return nil, err
	}
	return graph.New(st, d.now), nil
}

// resolve turns a URN or name into one URN; an ambiguous name is an error listing the candidates.
func resolve(ctx context.Context, g *graph.Graph, name string) (graph.URN, error) {
	u, err := g.Resolve(ctx, name)
	var amb *graph.AmbiguousError
	if errors.As(err, &amb) {
		return "", err
	}
	return u, err
}

// ---- search_catalog ----

type searchParams struct {
	Query        string   `json:"query" jsonschema:"Words to find in asset URNs, names, descriptions, tags or field names (all must match); empty lists everything"`
	Systems      []string `json:"systems,omitempty" jsonschema:"Only these systems: kafka, schema, flink, tableflow, warehouse, dbt, bi, job, sink, openlineage"`
	Kinds        []string `json:"kinds,omitempty" jsonschema:"Only these kinds, e.g. dbt_model, kafka_topic, bi_workbook, job"`
	Tags         []string `json:"tags,omitempty" jsonschema:"Only assets carrying all these tags, e.g. money, pii"`
	IncludeStale bool     `json:"include_stale,omitempty" jsonschema:"Also return assets their sources stopped reporting"`
	Limit        int      `json:"limit,omitempty" jsonschema:"Maximum results (default 50, at most 500)"`
}

type searchResult struct {
	Results []graph.SearchHit `json:"results"`
	Count   int               `json:"count"`
	// Truncated: more assets matched than were returned; narrow the query or raise limit.
	Truncated bool `json:"truncated,omitempty"`
}

func searchCatalog(d *deps) mcpkit.Tool {
	return mcpkit.Read("search_catalog",
		"Find assets in the context graph (topics, subjects, Flink statements, Tableflow and warehouse tables, dbt nodes, "+
			"workbooks, jobs, sinks) by words in their URN, name, description, tags or field names. "+
			"Use the returned URN with get_asset, trace_cross_platform_lineage or blast_radius_analysis.",
		func(ctx context.Context, p searchParams) (searchResult, error) {
			g, err := d.graph(ctx)
			if err != nil {
				return searchResult{}, err
			}
			found, err := g.Search(ctx, graph.SearchQuery{Text: p.Query, Systems: p.Systems, Kinds: p.Kinds, Tags: p.Tags, IncludeStale: p.IncludeStale, Limit: p.Limit})
			if err != nil {
				return searchResult{}, err
			}
			hits := found.Hits
			if hits == nil {
				hits = []graph.SearchHit{}
			}
			return searchResult{Results: hits, Count: len(hits), Truncated: found.Truncated}, nil
		}, mcpkit.LocalOnly())
}

// ---- get_asset ----

type getAssetParams struct {
	AssetID string `json:"asset_id" jsonschema:"The asset's URN (e.g. dbt:model.sales.fct_orders) or its exact name; an ambiguous name returns the candidates"`
}

// neighbour is one directly connected asset with every edge kind between them.
type neighbour struct {
	URN    graph.URN `json:"urn"`
	Kinds  []string  `json:"kinds"`
	Fields int       `json:"field_edges,omitempty"`
	Stale  bool      `json:"stale,omitempty"`
	Via    []string  `json:"sources"`
}

type assetResult struct {
	Asset      graph.Asset `json:"asset"`
	Upstream   []neighbour `json:"upstream"`
	Downstream []neighbour `json:"downstream"`
	// NeighboursTruncated: the asset has more edges than were read, so the neighbour lists are partial.
	NeighboursTruncated bool `json:"neighbours_truncated,omitempty"`
}

func getAsset(d *deps) mcpkit.Tool {
	return mcpkit.Read("get_asset",
		"Show one asset of the context graph: kind, owners, domain, tags, criticality, schedule, fields, which sources "+
			"asserted it and when, and its direct upstream and downstream neighbours.",
		func(ctx context.Context, p getAssetParams) (assetResult, error) {
			g, err := d.graph(ctx)
			if err != nil {
				return assetResult{}, err
			}
			u, err := resolve(ctx, g, p.AssetID)
			if err != nil {
				return assetResult{}, err
			}
			a, err := g.Get(ctx, u)
			if err != nil {
				return assetResult{}, err
			}
			res := assetResult{Asset: a}
			for _, dir := range []graph.Direction{graph.Upstream, graph.Downstream} {
				edges, truncated, err := g.Neighbours(ctx, u, dir)
				if err != nil {
					return assetResult{}, err
				}
				res.NeighboursTruncated = res.NeighboursTruncated || truncated
				ns := groupNeighbours(u, edges, dir)
				if dir == graph.Upstream {
					res.Upstream = ns
				} else {
					res.Downstream = ns
				}
			}
			return res, nil
		}, mcpkit.LocalOnly())
}

func groupNeighbours(self graph.URN, edges []graph.Edge, dir graph.Direction) []neighbour {
	by := map[graph.URN]*neighbour{}
	var order []graph.URN
	for _, e := range edges {
		other := e.To.Asset
		if dir == graph.Upstream {
			other = e.From.Asset
		}
		n := by[other]
		if n == nil {
			n = &neighbour{URN: other, Stale: true}
			by[other] = n
			order = append(order, other)
		}
		if !slices.Contains(n.Kinds, string(e.Kind)) {
			n.Kinds = append(n.Kinds, string(e.Kind))
		}
		if e.FieldLevel() {
			n.Fields++
		}
		if !e.Stale {
			n.Stale = false
		}
		if !slices.Contains(n.Via, e.Source) {
			n.Via = append(n.Via, e.Source)
		}
	}
	out := make([]neighbour, 0, len(order))
	for _, u := range order {
		n := by[u]
		sort.Strings(n.Kinds)
		sort.Strings(n.Via)
		out = append(out, *n)
	}
	return out
}

// ---- trace_cross_platform_lineage ----

type traceParams struct {
	AssetID              string   `json:"asset_id" jsonschema:"URN or exact name of the asset to trace from"`
	ColumnName           string   `json:"column_name,omitempty" jsonschema:"Trace one field/column of the asset instead of the whole asset"`
	Direction            string   `json:"direction,omitempty" jsonschema:"upstream, downstream or both (default both)"`
	MaxDepth             int      `json:"max_depth,omitempty" jsonschema:"Hops to follow (default 10, at most 200)"`
	IncludeColumnLineage *bool    `json:"include_column_lineage,omitempty" jsonschema:"Follow field-level edges (default true); false traces the whole asset"`
	Platforms            []string `json:"platforms,omitempty" jsonschema:"Only report hops into these systems (kafka, schema, flink, tableflow, warehouse, dbt, bi, job, sink); the walk still passes through others"`
	IncludeStale         bool     `json:"include_stale,omitempty" jsonschema:"Also follow edges their sources stopped reporting"`
}

type traceResult struct {
	Start      graph.FieldRef `json:"start"`
	Upstream   *graph.Lineage `json:"upstream,omitempty"`
	Downstream *graph.Lineage `json:"downstream,omitempty"`
}

func traceLineage(d *deps) mcpkit.Tool {
	return mcpkit.Read("trace_cross_platform_lineage",
		"Trace lineage across Kafka, Schema Registry, Flink, Tableflow, the warehouse, dbt, BI and jobs, upstream or downstream, "+
			"at field level where known. Every hop names its system, edge kind (identity, aggregation, filter, reads…) and the "+
			"evidence: which source asserted it, when, and the expression.",
		func(ctx context.Context, p traceParams) (traceResult, error) {
			g, err := d.graph(ctx)
			if err != nil {
				return traceResult{}, err
			}
			u, err := resolve(ctx, g, p.AssetID)
			if err != nil {
				return traceResult{}, err
			}
			start := graph.FieldRef{Asset: u}
			if p.IncludeColumnLineage == nil || *p.IncludeColumnLineage {
				start.Path = p.ColumnName
			} else if p.ColumnName != "" {
				return traceResult{}, errors.New("column_name needs include_column_lineage (leave it unset or true)")
			}
			if start.Path != "" {
				if err := checkField(ctx, g, u, start.Path); err != nil {
					return traceResult{}, err
				}
			}
			depth := p.MaxDepth
			if depth == 0 {
				depth = 10
			}
			res := traceResult{Start: start}
			dirs := map[string][]graph.Direction{"": {graph.Upstream, graph.Downstream}, "both": {graph.Upstream, graph.Downstream},
				"upstream": {graph.Upstream}, "downstream": {graph.Downstream}}[strings.ToLower(p.Direction)]
			if dirs == nil {
				return traceResult{}, fmt.Errorf("direction %q: want upstream, downstream or both", p.Direction)
			}
			for _, dir := range dirs {
				lin, err := g.Traverse(ctx, []graph.FieldRef{start}, graph.TraverseOptions{Direction: dir, MaxDepth: depth, IncludeStale: p.IncludeStale, Systems: p.Platforms})
				if err != nil {
					return traceResult{}, err
				}
				if lin.Nodes == nil {
					lin.Nodes = []graph.Reached{}
				}
				if dir == graph.Upstream {
					res.Upstream = &lin
				} else {
					res.Downstream = &lin
				}
			}
			return res, nil
		}, mcpkit.LocalOnly())
}

// checkField refuses a field the asset is known not to have, naming the ones it has; an asset whose
// fields are unknown accepts any (lineage may still name it).
func checkField(ctx context.Context, g *graph.Graph, u graph.URN, path string) error {
	fields, err := g.Fields(ctx, u)
	if err != nil || len(fields) == 0 {
		return err
	}
	var names []string
	for _, f := range fields {
		if strings.EqualFold(f.Path, path) {
			return nil
		}
		names = append(names, f.Path)
	}
	if len(names) > 20 {
		names = append(names[:20], "…")
	}
	return fmt.Errorf("%s has no field %q; its fields are: %s", u, path, strings.Join(names, ", "))
}

// ---- blast_radius_analysis ----

type blastParams struct {
	AssetID      string   `json:"asset_id" jsonschema:"URN or exact name of the asset that changes (e.g. schema:orders-value)"`
	ChangeType   string   `json:"change_type,omitempty" jsonschema:"column_drop, column_rename, column_type_change, table_drop or model_refactor"`
	ColumnName   string   `json:"column_name,omitempty" jsonschema:"The field/column that changes (for column changes)"`
	Columns      []string `json:"columns,omitempty" jsonschema:"Several fields of the asset that change together"`
	MaxDepth     int      `json:"max_depth,omitempty" jsonschema:"Hops to follow (default 50)"`
	IncludeStale bool     `json:"include_stale,omitempty" jsonschema:"Also follow edges their sources stopped reporting"`
}

type blastResult struct {
	graph.BlastRadius
	// Reads say, per field-level reader with SQL (Flink statements, dbt models, jobs), what its
	// SQL does with the reached column if the value arrives NULL, the expression quoted.
	Reads []assetReads `json:"reads,omitempty"`
	// ArrivesAs is, for dropped fields of a schema subject, what readers pinned to the old schema
	// see instead (a proto3 scalar reads as its zero, not NULL); the reads follow it.
	ArrivesAs *impact.View `json:"arrives_as,omitempty"`
	Summary   string       `json:"summary"`
}

type assetReads struct {
	URN    graph.URN        `json:"urn"`
	Column string           `json:"column"`
	Reads  []impact.SQLRead `json:"reads"`
}

func blastRadius(d *deps) mcpkit.Tool {
	return mcpkit.Read("blast_radius_analysis",
		"Everything downstream of a change to an asset or some of its fields: assets grouped by system and kind, field-level "+
			"impact kept apart from table-level, owners to notify, critical assets (money, customer_facing, pii, external), "+
			"external sinks, scheduled jobs with their next run time, and per reader with SQL what it does with the value if it arrives NULL "+
			"(COALESCE, SUM, COUNT, filters, joins, CASE, the expression quoted) — or, for a column_drop on a schema subject, as the format "+
			"delivers it (a proto3 scalar arrives as its zero: arrives_as); a table a dbt model builds counts as that model.",
		func(ctx context.Context, p blastParams) (blastResult, error) {
			g, err := d.graph(ctx)
			if err != nil {
				return blastResult{}, err
			}
			u, err := resolve(ctx, g, p.AssetID)
			if err != nil {
				return blastResult{}, err
			}
			fields := append([]string(nil), p.Columns...)
			if p.ColumnName != "" {
				fields = append(fields, p.ColumnName)
			}
			for _, f := range fields {
				if err := checkField(ctx, g, u, f); err != nil {
					return blastResult{}, err
				}
			}
			br, err := g.BlastRadius(ctx, graph.BlastRadiusRequest{Asset: u, Fields: fields, ChangeType: p.ChangeType, MaxDepth: p.MaxDepth, IncludeStale: p.IncludeStale})
			if err != nil {
				return blastResult{}, err
			}
			arrives, err := dropView(ctx, g, u, p.ChangeType, fields)
			if err != nil {
				return blastResult{}, err
			}
			reads, err := sqlReads(ctx, g, br, arrives)
			if err != nil {
				return blastResult{}, err
			}
			out := blastResult{BlastRadius: br, Reads: reads, Summary: summarize(br)}
			if arrives.Symptom != "" {
				out.ArrivesAs = &arrives
			}
			return out, nil
		}, mcpkit.LocalOnly())
}

// maxReadAssets bounds how many readers' SQL a blast radius reads.
const maxReadAssets = 200

// dropView is what readers see of fields a schema subject's new version drops (see
// impact.DropView); the zero View (NULL assumed) for any other change or asset.
func dropView(ctx context.Context, g *graph.Graph, u graph.URN, changeType string, fields []string) (impact.View, error) {
	if changeType != graph.ChangeColumnDrop || len(fields) == 0 {
		return impact.View{}, nil
	}
	a, err := g.Get(ctx, u)
	if err != nil {
		return impact.View{}, err
	}
	if a.Kind != graph.KindSchemaSubject {
		return impact.View{}, nil
	}
	var dropped []graph.Field
	for _, f := range a.Fields {
		if slices.Contains(fields, f.Path) {
			dropped = append(dropped, f)
		}
	}
	v, ok := impact.DropView(a, dropped)
	if !ok {
		return impact.View{}, nil
	}
	return v, nil
}

// sqlReads reads the SQL of the field-level readers and says what each does with the column it
// reads from the asset it was reached from, when the value arrives as arrives says (NULL when
// arrives is the zero View).
func sqlReads(ctx context.Context, g *graph.Graph, br graph.BlastRadius, arrives impact.View) ([]assetReads, error) {
	impacts := br.FieldLevel[:min(len(br.FieldLevel), maxReadAssets)]
	// Every reader and the asset it reads from, in one read of the graph.
	var urns []graph.URN
	for _, im := range impacts {
		if im.Via.Path != "" {
			urns = append(urns, im.URN, im.Via.Asset)
		}
	}
	assets, err := g.GetMany(ctx, urns)
	if err != nil {
		return nil, err
	}
	var out []assetReads
	for _, im := range impacts {
		if im.Via.Path == "" {
			continue
		}
		a, ok := assets[im.URN]
		if !ok {
			return nil, &graph.NotFoundError{Name: string(im.URN)}
		}
		if a.Attrs[impact.SQLAttr] == "" {
			continue
		}
		via, ok := assets[im.Via.Asset]
		if !ok {
			return nil, &graph.NotFoundError{Name: string(im.Via.Asset)}
		}
		rs := impact.NullReads(a, via.Name, im.Via.Path)
		if arrives.Symptom != "" {
			rs = impact.ReadsAs(a, via.Name, im.Via.Path, arrives)
		}
		if len(rs) > 0 {
			out = append(out, assetReads{URN: im.URN, Column: im.Via.String(), Reads: rs})
		}
	}
	return out, nil
}

func summarize(br graph.BlastRadius) string {
	var start []string
	for _, s := range br.Start {
		start = append(start, s.String())
	}
	if br.Total == 0 {
		return fmt.Sprintf("Nothing downstream of %s is known to the context graph.", strings.Join(start, ", "))
	}
	s := fmt.Sprintf("%d downstream assets of %s (%d through field-level lineage, %d table-level only)",
		br.Total, strings.Join(start, ", "), len(br.FieldLevel), len(br.TableLevel))
	if len(br.Critical) > 0 {
		s += fmt.Sprintf("; %d critical", len(br.Critical))
	}
	if len(br.ExternalSinks) > 0 {
		var sinks []string
		for _, u := range br.ExternalSinks {
			sinks = append(sinks, string(u))
		}
		s += "; external sinks: " + strings.Join(sinks, ", ")
	}
	for _, j := range br.ScheduledJobs {
		if j.NextRun != nil {
			s += fmt.Sprintf("; %s next runs %s", j.Name, j.NextRun.UTC().Format(time.RFC3339))
		}
	}
	if br.Truncated {
		s += "; the walk hit max_depth, raise it to see more"
	}
	return s + "."
}

// ---- import_dbt_manifest ----

// maxManifest bounds a dbt manifest's size; it is streamed, never held in memory whole.
const maxManifest = 8 << 30

type importDBTParams struct {
	Path   string `json:"path,omitempty" jsonschema:"Path to target/manifest.json (default: dbt.manifest_path from the config)"`
	Engine string `json:"engine,omitempty" jsonschema:"Warehouse engine the manifest's relations live in (default: the manifest's adapter_type)"`
}

type importResult struct {
	graph.ImportResult
	Details map[string]any `json:"details,omitempty"`
}

func importDBTManifest(d *deps) mcpkit.Tool {
	return mcpkit.Write("import_dbt_manifest",
		"Import a dbt manifest.json (v7–v12) into the context graph: models, sources, seeds, snapshots, exposures, columns, "+
			"owners, tests, and column lineage parsed from compiled SQL. Re-importing updates; what vanished is marked stale. "+
			"A manifest without compiled_code keeps the column lineage known before.",
		func(ctx context.Context, p importDBTParams) (importResult, error) {
			path := p.Path
			if path == "" && d.env.Config.DBT != nil {
				path = d.env.Config.DBT.ManifestPath
			}
			if path == "" {
				return importResult{}, fmt.Errorf("no manifest: pass path, or set dbt.manifest_path in %s", d.env.Config.Source)
			}
			f, err := d.env.OpenFile(path, maxManifest)
			if err != nil {
				return importResult{}, fmt.Errorf("read dbt manifest: %w (run dbt compile or dbt build to write target/manifest.json)", err)
			}
			defer f.Close()
			// Streamed: indexed in one read, then converted and written batch by batch in a second.
			m, err := dbt.Open(f)
			if err != nil {
				return importResult{}, mcpkit.ContentError(err, path, nil)
			}
			g, err := d.graph(ctx)
			if err != nil {
				return importResult{}, err
			}
			var stats dbt.Stats
			res, err := g.ImportBatches(ctx, m.Source(), time.Time{}, func(put func(graph.Batch) error) error {
				var putErr error
				stats, err = m.Stream(p.Engine, func(b graph.Batch) error { putErr = put(b); return putErr })
				if err != nil && err != putErr {
					return mcpkit.ContentError(err, path, nil) // the manifest's, not the store's
				}
				return err
			})
			if err != nil {
				return importResult{}, err
			}
			if len(stats.WithoutCompiledSQL) > 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%d models have no compiled_code (manifest written by dbt parse/ls/test?): their column lineage was kept from earlier imports; run dbt compile for fresh column lineage", len(stats.WithoutCompiledSQL)))
			}
			return importResult{ImportResult: res, Details: map[string]any{
				"dbt_version": m.Metadata.DBTVersion, "schema_version": m.Metadata.SchemaVersion,
				"models": stats.Models, "sources": stats.Sources, "seeds": stats.Seeds, "snapshots": stats.Snapshots,
				"exposures": stats.Exposures, "tests": stats.Tests, "column_edges": stats.ColumnEdges,
				"models_without_compiled_code": append([]string{}, stats.WithoutCompiledSQL...)}}, nil
		}, mcpkit.LocalOnly())
}

// ---- import_openlineage_events ----

type importOLParams struct {
	Path string `json:"path,omitempty" jsonschema:"A JSON, JSON array or NDJSON file of OpenLineage events, or a directory of them (default: every catalog.openlineage path in the config)"`
}

type importOLResult struct {
	Imports []graph.ImportResult `json:"imports"`
	// Failed: some locations were not imported (see errors); the imports listed were written.
	Failed bool        `json:"failed,omitempty"`
	Errors []pathError `json:"errors,omitempty"`
}

// pathError is why one location of a multi-location import was not imported.
type pathError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// importPaths imports each path in turn, going on past a failing one: every location is its own
// source, so what the others wrote stands. It is an error only when nothing was written.
func importPaths(paths []string, one func(path string) (graph.ImportResult, error)) ([]graph.ImportResult, []pathError, error) {
	imports, failures := []graph.ImportResult{}, []pathError(nil)
	var errs []error
	for _, path := range paths {
		res, err := one(path)
		if err != nil {
			failures = append(failures, pathError{Path: path, Error: err.Error()})
			errs = append(errs, err)
			continue
		}
		imports = append(imports, res)
	}
	if len(imports) == 0 && len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return imports, failures, nil
}

// checkTree refuses a path that is, or a directory whose event files include, one of the store's
// private files, so an events directory cannot carry a link to the receipts key.
func (d *deps) checkTree(path string) error {
	if err := d.env.CheckPath(path); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return nil // readEvents reports what is wrong with it
	}
	files, err := openlineage.Files(path) // the bounded walk: files, entries, bytes, time
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := d.env.CheckPath(f); err != nil {
			return err
		}
	}
	return nil
}

// maxEventsFile bounds one OpenLineage events file read into memory.
const maxEventsFile = 256 << 20

// readEvents reads the events in a file or, recursively, a directory, every file through
// Env.ReadFile: regular files only (a device or FIFO is refused, not read or waited on), bounded,
// and checked again once opened. Parse errors quote only short excerpts of the file.
func (d *deps) readEvents(path string) ([]openlineage.Event, error) {
	files, err := openlineage.Files(path)
	if err != nil {
		return nil, err
	}
	var all []openlineage.Event
	for _, f := range files {
		raw, err := d.env.ReadFile(f, maxEventsFile)
		if err != nil {
			return nil, fmt.Errorf("openlineage events: %w", err)
		}
		evs, err := openlineage.Parse(f, raw)
		if err != nil {
			return nil, mcpkit.ContentError(err, f, raw)
		}
		all = append(all, evs...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("openlineage events: %s holds no OpenLineage events (looked for run, job or dataset events in %d file(s))", path, len(files))
	}
	return all, nil
}

func importOpenLineage(d *deps) mcpkit.Tool {
	return mcpkit.Write("import_openlineage_events",
		"Import OpenLineage run events (Airflow, Spark, Flink, dbt emit them) from a file or directory: datasets, jobs, "+
			"schema facets and the columnLineage facet. Each job (namespace and name) is one source: a later run's events update it and mark what vanished stale, whichever file they come from. "+
			"A location that fails is listed under errors (failed: true); the others are still imported.",
		func(ctx context.Context, p importOLParams) (importOLResult, error) {
			paths := d.env.Config.Catalog.OpenLineage
			if p.Path != "" {
				paths = []string{p.Path}
			}
			if len(paths) == 0 {
				return importOLResult{}, fmt.Errorf("no events: pass path, or list files or directories under catalog.openlineage in %s", d.env.Config.Source)
			}
			g, err := d.graph(ctx)
			if err != nil {
				return importOLResult{}, err
			}
			imports, failures, err := importPaths(paths, func(path string) (graph.ImportResult, error) {
				if err := d.checkTree(path); err != nil {
					return graph.ImportResult{}, err
				}
				evs, err := d.readEvents(path)
				if err != nil {
					return graph.ImportResult{}, err
				}
				batches, err := openlineage.ImportJobs(evs)
				if err != nil {
					return graph.ImportResult{}, fmt.Errorf("%s: %w", path, err)
				}
				// One source per job (namespace and name), so the next run of a job marks what its
				// outputs lost stale, whichever file the events came from.
				total := graph.ImportResult{Source: path}
				for _, b := range batches {
					res, err := g.Import(ctx, b)
					if err != nil {
						return total, fmt.Errorf("%s: %s: %w", path, b.Source, err)
					}
					total.Assets, total.Fields, total.Edges = total.Assets+res.Assets, total.Fields+res.Fields, total.Edges+res.Edges
					total.Stale.Assets, total.Stale.Fields, total.Stale.Edges = total.Stale.Assets+res.Stale.Assets, total.Stale.Fields+res.Stale.Fields, total.Stale.Edges+res.Stale.Edges
					total.Warnings = append(total.Warnings, res.Warnings...)
				}
				return total, nil
			})
			if err != nil {
				return importOLResult{}, err
			}
			return importOLResult{Imports: imports, Failed: len(failures) > 0, Errors: failures}, nil
		}, mcpkit.LocalOnly())
}

// ---- import_flink_statement ----

type importFlinkParams struct {
	StatementJSON  string            `json:"statement_json,omitempty" jsonschema:"The statement object as the Confluent Cloud Flink API returns it (name, metadata.created_at, spec.statement, spec.properties)"`
	Name           string            `json:"name,omitempty" jsonschema:"Statement name, when passing sql instead of statement_json"`
	SQL            string            `json:"sql,omitempty" jsonschema:"The statement SQL (spec.statement), when not passing statement_json"`
	CreatedAt      string            `json:"created_at,omitempty" jsonschema:"RFC 3339 creation time, when passing sql"`
	SchemaVersions map[string]int    `json:"schema_versions,omitempty" jsonschema:"Subject → version the statement was created against (e.g. {\"orders-value\": 11}); default: an earlier import's pin, else the version first seen by created_at, else inferred from the SQL"`
	Properties     map[string]string `json:"properties,omitempty" jsonschema:"spec.properties (sql.current-catalog, sql.current-database), when passing sql"`
}

type importFlinkResult struct {
	graph.ImportResult
	Statement graph.URN `json:"statement"`
}

func importFlinkStatement(d *deps) mcpkit.Tool {
	return mcpkit.Write("import_flink_statement",
		"Parse a Flink SQL statement (INSERT INTO … SELECT, CREATE TABLE … AS SELECT, windowing TVFs, joins, aggregations) into "+
			"column-level lineage from source topic fields to sink columns, resolving columns against Schema Registry at the "+
			"pinned versions; SELECT * is expanded and flagged. Re-importing replaces the statement's earlier lineage.",
		func(ctx context.Context, p importFlinkParams) (importFlinkResult, error) {
			var st flinksql.Statement
			switch {
			case p.StatementJSON != "":
				var err error
				if st, err = flinksql.ParseAPIStatement([]byte(p.StatementJSON)); err != nil {
					return importFlinkResult{}, err
				}
			case p.SQL != "" && p.Name != "":
				st = flinksql.Statement{Name: p.Name, SQL: p.SQL, Properties: p.Properties}
				if p.CreatedAt != "" {
					t, err := time.Parse(time.RFC3339, p.CreatedAt)
					if err != nil {
						return importFlinkResult{}, fmt.Errorf("created_at %q: want RFC 3339, e.g. 2026-03-02T09:14:07Z", p.CreatedAt)
					}
					st.CreatedAt = t
				}
			default:
				return importFlinkResult{}, errors.New("pass statement_json (the Confluent Cloud statement object), or name and sql")
			}
			var res flinksql.Resolver
			var notes []string
			if d.env.Config.SchemaRegistry != nil {
				c, err := registry.New(d.env.Config.SchemaRegistry)
				if err != nil {
					return importFlinkResult{}, err
				}
				g, err := d.graph(ctx)
				if err != nil {
					return importFlinkResult{}, err
				}
				st0, err := d.env.Store.Get(ctx)
				if err != nil {
					return importFlinkResult{}, err
				}
				// Given versions first; else what an earlier import recorded (a recorded or given
				// pin holds, an inferred one is tried first when inferring again).
				pins := map[string]flinksql.Pin{}
				if prev, err := g.Get(ctx, graph.FlinkStatementURN(st.Name)); err == nil {
					pins = flinksql.PreviousPins(prev, st.CreatedAt)
				}
				for subj, v := range p.SchemaVersions {
					if v <= 0 {
						return importFlinkResult{}, fmt.Errorf("schema_versions[%q] = %d: want a registered version number (1 or more)", subj, v)
					}
					if pins == nil {
						pins = map[string]flinksql.Pin{}
					}
					pins[subj] = flinksql.Pin{Version: v, Source: flinksql.PinGiven}
				}
				res = flinksql.RegistryResolver{Client: c, Pins: pins, Store: st0, Now: d.now()}
			} else {
				notes = append(notes, "schema_registry is not configured: table columns are unknown, so SELECT * stays table-level; set schema_registry.url to resolve them")
			}
			b, err := flinksql.Import(ctx, st, res)
			if err != nil {
				return importFlinkResult{}, err
			}
			b.Warnings = append(notes, b.Warnings...)
			g, err := d.graph(ctx)
			if err != nil {
				return importFlinkResult{}, err
			}
			out, err := g.Import(ctx, b)
			if err != nil {
				return importFlinkResult{}, err
			}
			return importFlinkResult{ImportResult: out, Statement: graph.FlinkStatementURN(st.Name)}, nil
		}) // not LocalOnly: it reads Schema Registry
}

// ---- register_assets ----

// maxCatalogFile bounds a hand-written catalog file read into memory.
const maxCatalogFile = 64 << 20

type registerParams struct {
	Path string `json:"path,omitempty" jsonschema:"A catalog file (YAML, format of configs/catalog.example.yaml); default: every catalog.files entry in the config"`
	YAML string `json:"yaml,omitempty" jsonschema:"Catalog file content to register directly (needs source_name)"`
	// SourceName names inline YAML as a source, so registering it again replaces what it said.
	SourceName string `json:"source_name,omitempty" jsonschema:"Name for inline yaml as a source (re-registering the same name replaces what it said before)"`
}

type registerResult struct {
	Imports []graph.ImportResult `json:"imports"`
	// Failed: some files were not registered (see errors); the imports listed were written.
	Failed bool        `json:"failed,omitempty"`
	Errors []pathError `json:"errors,omitempty"`
}

func registerAssets(d *deps) mcpkit.Tool {
	return mcpkit.Write("register_assets",
		"Register what no API describes from a declarative catalog file: BI workbooks, jobs with cron schedules, external sinks, "+
			"owners, tags (money, customer_facing, pii, external), criticality and hand-declared lineage. Each file is one source: "+
			"entries removed from it are marked stale. A file that fails is listed under errors (failed: true); the others are still registered.",
		func(ctx context.Context, p registerParams) (registerResult, error) {
			if p.YAML != "" {
				if p.SourceName == "" {
					return registerResult{}, errors.New("inline yaml needs source_name, so registering it again replaces what it said")
				}
				b, err := catalogfile.Parse(p.SourceName, []byte(p.YAML))
				if err != nil {
					return registerResult{}, err
				}
				g, err := d.graph(ctx)
				if err != nil {
					return registerResult{}, err
				}
				res, err := g.Import(ctx, b)
				if err != nil {
					return registerResult{}, err
				}
				return registerResult{Imports: []graph.ImportResult{res}}, nil
			}
			paths := d.env.Config.Catalog.Files
			if p.Path != "" {
				paths = []string{p.Path}
			}
			if len(paths) == 0 {
				return registerResult{}, fmt.Errorf("no catalog file: pass path or yaml, or list files under catalog.files in %s (example: configs/catalog.example.yaml)", d.env.Config.Source)
			}
			g, err := d.graph(ctx)
			if err != nil {
				return registerResult{}, err
			}
			imports, failures, err := importPaths(paths, func(path string) (graph.ImportResult, error) {
				raw, err := d.env.ReadFile(path, maxCatalogFile)
				if err != nil {
					return graph.ImportResult{}, fmt.Errorf("catalog file: %w", err)
				}
				name := catalogfile.SourcePath(path)
				b, err := catalogfile.Parse(name, raw)
				if err != nil {
					return graph.ImportResult{}, mcpkit.ContentError(err, name, raw)
				}
				return g.Import(ctx, b)
			})
			if err != nil {
				return registerResult{}, err
			}
			return registerResult{Imports: imports, Failed: len(failures) > 0, Errors: failures}, nil
		}, mcpkit.LocalOnly())
}
