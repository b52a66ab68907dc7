// Package dbt imports a dbt manifest.json (schema v7–v12, and the older compiled_sql spelling):
// models, seeds, snapshots, sources, exposures and their columns, meta and group owners, tests,
// the warehouse relation each names, and column lineage parsed from compiled SQL. A node without
// compiled SQL (a manifest written by dbt parse, ls or test) keeps the column lineage an earlier
// import found: its absence is no evidence the lineage changed (datahub-project/datahub PR #18823).
package dbt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// Metadata is the manifest's metadata block.
type Metadata struct {
	SchemaVersion string `json:"dbt_schema_version"`
	DBTVersion    string `json:"dbt_version"`
	GeneratedAt   string `json:"generated_at"`
	ProjectName   string `json:"project_name"`
	ProjectID     string `json:"project_id"`
	AdapterType   string `json:"adapter_type"`
}

// Manifest is what the importer keeps of a manifest.json between its two reads: the metadata, the
// groups, every test's target, and each relation's name and column names. Nodes with their SQL and
// documentation are read again one at a time by Convert, so memory grows with the number of
// relations and columns, never with compiled SQL or descriptions. Unknown keys are ignored: the
// format grows additively.
type Manifest struct {
	Metadata Metadata
	r        io.ReadSeeker
	groups   map[string]*Group
	rels     []relation       // relation-building nodes (models, seeds, snapshots) and sources
	relByID  map[string]int32 // unique_id → index into rels
	tests    map[string][]string
	colTests map[string]map[string][]string
	nTests   int
}

// relation is what compiled SQL of another node may need of a node: how the warehouse names it,
// and its documented columns (to expand select *).
type relation struct {
	id      string
	parts   []string
	columns []string
}

// nodeHead is the part of a node the index reads, tests' fields included.
type nodeHead struct {
	UniqueID     string  `json:"unique_id"`
	ResourceType string  `json:"resource_type"`
	Name         string  `json:"name"`
	Database     *string `json:"database"`
	Schema       string  `json:"schema"`
	Alias        string  `json:"alias"`
	Identifier   string  `json:"identifier"`
	RelationName *string `json:"relation_name"`
	Config       struct {
		Enabled      *bool  `json:"enabled"`
		Materialized string `json:"materialized"`
	} `json:"config"`
	Columns map[string]*struct {
		Name string `json:"name"`
	} `json:"columns"`
	DependsOn struct {
		Nodes []string `json:"nodes"`
	} `json:"depends_on"`
	AttachedNode string `json:"attached_node"`
	ColumnName   string `json:"column_name"`
	TestMetadata *struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"test_metadata"`
}

// Node is a model, seed, snapshot or source as Convert reads it (tests are read by the index only:
// see nodeHead).
type Node struct {
	UniqueID     string             `json:"unique_id"`
	ResourceType string             `json:"resource_type"`
	Name         string             `json:"name"`
	PackageName  string             `json:"package_name"`
	Database     *string            `json:"database"`
	Schema       string             `json:"schema"`
	Alias        string             `json:"alias"`
	Identifier   string             `json:"identifier"` // sources
	SourceName   string             `json:"source_name"`
	RelationName *string            `json:"relation_name"`
	Description  string             `json:"description"`
	Tags         []string           `json:"tags"`
	Meta         map[string]any     `json:"meta"`
	Group        *string            `json:"group"`
	Config       Config             `json:"config"`
	Columns      map[string]*Column `json:"columns"`
	DependsOn    struct {
		Nodes []string `json:"nodes"`
	} `json:"depends_on"`
	CompiledCode *string `json:"compiled_code"`
	CompiledSQL  *string `json:"compiled_sql"` // manifests before v7
	Language     string  `json:"language"`
}

// Config is node config.
type Config struct {
	Enabled      *bool          `json:"enabled"`
	Materialized string         `json:"materialized"`
	Tags         any            `json:"tags"` // a string or a list
	Meta         map[string]any `json:"meta"`
	Group        *string        `json:"group"`
}

// Column is a documented column.
type Column struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	DataType    *string        `json:"data_type"`
	Meta        map[string]any `json:"meta"`
	Tags        []string       `json:"tags"`
}

// Exposure is a dashboard, notebook or application reading dbt nodes.
type Exposure struct {
	UniqueID    string         `json:"unique_id"`
	Name        string         `json:"name"`
	Label       string         `json:"label"`
	Type        string         `json:"type"`
	Description string         `json:"description"`
	URL         *string        `json:"url"`
	Maturity    *string        `json:"maturity"`
	Tags        []string       `json:"tags"`
	Meta        map[string]any `json:"meta"`
	Owner       struct {
		Name  *string `json:"name"`
		Email any     `json:"email"` // a string or a list
	} `json:"owner"`
	DependsOn struct {
		Nodes []string `json:"nodes"`
	} `json:"depends_on"`
}

// Group owns nodes (dbt ≥ 1.5).
type Group struct {
	Name  string `json:"name"`
	Owner struct {
		Name  *string `json:"name"`
		Email any     `json:"email"`
	} `json:"owner"`
}

// Parse reads a manifest held in memory (see Open).
func Parse(raw []byte) (*Manifest, error) {
	return Open(bytes.NewReader(raw))
}

// Open reads r once to index the manifest (see Manifest); Convert reads it again from the start.
// r must not change in between: pass an open file, not a path that may be rewritten.
func Open(r io.ReadSeeker) (*Manifest, error) {
	m := &Manifest{r: r, groups: map[string]*Group{}, relByID: map[string]int32{},
		tests: map[string][]string{}, colTests: map[string]map[string][]string{}}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("dbt manifest: %w", err)
	}
	seen, err := walkManifest(r, map[string]bool{"nodes": true, "sources": true},
		func(section, key string, dec *jsontext.Decoder) error {
			var h *nodeHead
			if err := decode(dec, &h); err != nil {
				return fmt.Errorf("dbt manifest: %s %q: %w", section, key, err)
			}
			if h == nil {
				return nil
			}
			if h.UniqueID == "" {
				h.UniqueID = key
			}
			m.index(h, section == "sources")
			return nil
		},
		func(key string, dec *jsontext.Decoder) error {
			switch key {
			case "metadata":
				if err := decode(dec, &m.Metadata); err != nil {
					return fmt.Errorf("dbt manifest: metadata: %w", err)
				}
			case "groups":
				if err := decode(dec, &m.groups); err != nil {
					return fmt.Errorf("dbt manifest: groups: %w", err)
				}
			default:
				return skipValue(dec)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	if !seen["nodes"] && !seen["sources"] {
		return nil, errors.New("dbt manifest: no nodes and no sources: is this a manifest.json (target/manifest.json)?")
	}
	return m, nil
}

// index records what other nodes need of h: a test's target, a relation's name and columns.
func (m *Manifest) index(h *nodeHead, source bool) {
	if !source && h.ResourceType == "test" {
		m.indexTest(h)
		return
	}
	n := &Node{UniqueID: h.UniqueID, ResourceType: h.ResourceType, Name: h.Name, Database: h.Database, Schema: h.Schema,
		Alias: h.Alias, Identifier: h.Identifier, RelationName: h.RelationName, Config: Config{Materialized: h.Config.Materialized}}
	if !source && !isRelationNode(n) {
		return
	}
	rel := relation{id: h.UniqueID, parts: relationParts(n)}
	for _, k := range sortedKeys(h.Columns) {
		if c := h.Columns[k]; c != nil && c.Name != "" {
			rel.columns = append(rel.columns, c.Name)
		} else {
			rel.columns = append(rel.columns, k)
		}
	}
	if i, dup := m.relByID[h.UniqueID]; dup {
		m.rels[i] = rel
		return
	}
	m.relByID[h.UniqueID] = int32(len(m.rels))
	m.rels = append(m.rels, rel)
}

// Source names a project's manifest in the graph.
func Source(project string) string {
	if project == "" {
		return "dbt:manifest"
	}
	return "dbt:manifest/" + project
}

// Stats says what an import found.
type Stats struct {
	Models, Seeds, Snapshots, Sources, Exposures, Tests int
	ColumnEdges                                         int
	// WithoutCompiledSQL lists models whose column lineage was kept from earlier imports.
	WithoutCompiledSQL []string
}

// batchSize is how many assets, fields and edges Convert gathers before handing them on.
const batchSize = 5000

// Import converts a manifest to one batch (for manifests small enough to hold as one; Convert
// streams). engine overrides metadata.adapter_type when not empty.
func Import(m *Manifest, engine string) (graph.Batch, Stats, error) {
	all := graph.Batch{Source: m.Source()}
	st, err := m.Convert(engine, func(b graph.Batch) error {
		appendBatch(&all, b)
		return nil
	})
	return all, st, err
}

// Source is the graph source the manifest's project imports as.
func (m *Manifest) Source() string { return Source(m.Metadata.ProjectName) }

// Convert reads the manifest again, node by node, and hands put its assets, fields and edges in
// batches of about batchSize (each of m.Source()), so memory holds one batch, not the manifest.
// engine overrides metadata.adapter_type when not empty.
func (m *Manifest) Convert(engine string, put func(graph.Batch) error) (Stats, error) {
	if engine == "" {
		engine = m.Metadata.AdapterType
	}
	if engine == "" {
		engine = "unknown"
	}
	imp := &importer{m: m, engine: strings.ToLower(engine), relIndex: map[string]string{}, put: put}
	imp.b.Source = m.Source()
	imp.st.Tests = m.nTests
	for _, r := range m.rels {
		imp.indexRelation(r)
	}
	if _, err := m.r.Seek(0, io.SeekStart); err != nil {
		return Stats{}, fmt.Errorf("dbt manifest: %w", err)
	}
	p := imp.startPipeline(convertWorkers())
	_, err := walkManifest(m.r, map[string]bool{"nodes": true, "sources": true, "exposures": true},
		func(section, key string, dec *jsontext.Decoder) error {
			if section == "exposures" {
				var x *Exposure
				if err := decode(dec, &x); err != nil {
					return fmt.Errorf("dbt manifest: exposure %q: %w", key, err)
				}
				if x == nil {
					return nil
				}
				if x.UniqueID == "" {
					x.UniqueID = key
				}
				return p.submit(convertJob{exposure: x})
			}
			if section == "nodes" && buildsNothing(key) {
				return skipValue(dec) // read by the index already
			}
			var n *Node
			if err := decode(dec, &n); err != nil {
				return fmt.Errorf("dbt manifest: %s %q: %w", section, key, err)
			}
			if n == nil || disabled(n) {
				return nil
			}
			if n.UniqueID == "" {
				n.UniqueID = key
			}
			return p.submit(convertJob{node: n, source: section == "sources"})
		}, nil)
	if putErr := p.wait(); putErr != nil {
		return Stats{}, putErr // the consumer's error stopped the walk
	}
	if err != nil {
		return Stats{}, err
	}
	if err := imp.flush(true); err != nil {
		return Stats{}, err
	}
	return imp.st, nil
}

// buildsNothing says a node's unique_id (its key in nodes) names a resource Convert does not turn
// into an asset: tests (the index attached them), analyses and operations.
func buildsNothing(id string) bool {
	for _, p := range []string{"test.", "analysis.", "operation.", "sql_operation.", "unit_test."} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

type importer struct {
	m        *Manifest
	engine   string
	b        graph.Batch
	put      func(graph.Batch) error
	st       Stats
	relIndex map[string]string // lower-cased relation key (1, 2 or 3 parts) → unique_id; "" when ambiguous
}

// flush hands the gathered batch on when it is full, or when last.
func (imp *importer) flush(last bool) error {
	b := &imp.b
	size := len(b.Assets) + len(b.Fields) + len(b.Edges)
	if size == 0 && len(b.KeepFieldEdgesInto) == 0 && len(b.Warnings) == 0 || !last && size < batchSize {
		return nil
	}
	if err := imp.put(*b); err != nil {
		return err
	}
	if last {
		imp.b = graph.Batch{Source: b.Source}
		return nil
	}
	// The next batch will be about as large as this one: sized so, merging entries into it does
	// not grow (and copy) its slices again and again.
	imp.b = graph.Batch{Source: b.Source, Assets: make([]graph.Asset, 0, room(len(b.Assets))),
		Fields: make([]graph.Field, 0, room(len(b.Fields))), Edges: make([]graph.Edge, 0, room(len(b.Edges)))}
	return nil
}

// room is the capacity for a batch's rows of one kind when the last batch had n: n and an eighth,
// since a batch is handed on only once it passes batchSize rows, by up to one entry's rows.
func room(n int) int { return n + n/8 }

func (imp *importer) source(n *Node) {
	imp.node(n, graph.KindDBTSource)
	imp.st.Sources++
	if w := imp.warehouseURN(n); w != "" {
		imp.b.Edges = append(imp.b.Edges, graph.Edge{From: w.Field(""), To: graph.DBTURN(n.UniqueID).Field(""), Kind: graph.EdgeMaterializes,
			Transformation: "dbt source " + n.SourceName + "." + n.Name})
	}
}

func (imp *importer) model(n *Node) {
	var kind string
	switch n.ResourceType {
	case "model":
		kind = graph.KindDBTModel
		imp.st.Models++
	case "seed":
		kind = graph.KindDBTSeed
		imp.st.Seeds++
	case "snapshot":
		kind = graph.KindDBTSnapshot
		imp.st.Snapshots++
	default:
		return // tests are attached to what they test; analyses and operations build nothing
	}
	urn := graph.DBTURN(n.UniqueID)
	imp.node(n, kind)
	for _, p := range n.DependsOn.Nodes {
		if strings.HasPrefix(p, "test.") || strings.HasPrefix(p, "macro.") {
			continue
		}
		imp.b.Edges = append(imp.b.Edges, graph.Edge{From: graph.DBTURN(p).Field(""), To: urn.Field(""), Kind: graph.EdgeDependsOn})
	}
	if w := imp.warehouseURN(n); w != "" && n.Config.Materialized != "ephemeral" {
		imp.b.Edges = append(imp.b.Edges, graph.Edge{From: urn.Field(""), To: w.Field(""), Kind: graph.EdgeMaterializes,
			Transformation: "dbt " + n.ResourceType + " materialized as " + materialization(n)})
	}
	if n.ResourceType == "model" || n.ResourceType == "snapshot" {
		imp.columnLineage(n)
	}
}

func isRelationNode(n *Node) bool {
	switch n.ResourceType {
	case "model", "seed", "snapshot":
		return n.Config.Materialized != "ephemeral"
	}
	return false
}

func disabled(n *Node) bool { return n.Config.Enabled != nil && !*n.Config.Enabled }

func materialization(n *Node) string {
	if n.Config.Materialized == "" {
		return n.ResourceType
	}
	return n.Config.Materialized
}

// relationParts is the node's database, schema and table as the warehouse names them.
func relationParts(n *Node) []string {
	if n.RelationName != nil && *n.RelationName != "" {
		return graph.SplitRelation(*n.RelationName)
	}
	table := n.Alias
	if n.ResourceType == "source" {
		table = n.Identifier
	}
	if table == "" {
		table = n.Name
	}
	var parts []string
	if n.Database != nil && *n.Database != "" {
		parts = append(parts, *n.Database)
	}
	if n.Schema != "" {
		parts = append(parts, n.Schema)
	}
	return append(parts, table)
}

func (imp *importer) warehouseURN(n *Node) graph.URN {
	parts := relationParts(n)
	if len(parts) == 0 || parts[len(parts)-1] == "" {
		return ""
	}
	return graph.WarehouseURN(imp.engine, parts...)
}

func relKey(engine string, parts []string) string {
	norm := make([]string, len(parts))
	for i, p := range parts {
		norm[i] = strings.ToLower(graph.NormalizeIdent(engine, p))
	}
	return strings.Join(norm, ".")
}

func (imp *importer) indexRelation(r relation) {
	for k := 1; k <= len(r.parts) && k <= 3; k++ {
		key := relKey(imp.engine, r.parts[len(r.parts)-k:])
		if prev, ok := imp.relIndex[key]; ok && prev != r.id {
			imp.relIndex[key] = ""
			continue
		}
		imp.relIndex[key] = r.id
	}
}

// lookupRelation maps a table name from compiled SQL to the dbt node that builds or names it.
func (imp *importer) lookupRelation(name []string) (string, bool) {
	parts := make([]string, len(name))
	for i, p := range name {
		parts[i] = p
	}
	id, ok := imp.relIndex[relKey(imp.engine, parts)]
	return id, ok && id != ""
}

func (m *Manifest) indexTest(n *nodeHead) {
	target := n.AttachedNode
	if target == "" {
		for _, p := range n.DependsOn.Nodes {
			if !strings.HasPrefix(p, "macro.") {
				target = p
				break
			}
		}
	}
	if target == "" {
		return
	}
	m.nTests++
	name := n.Name
	if n.TestMetadata != nil && n.TestMetadata.Name != "" {
		name = n.TestMetadata.Name
		if n.TestMetadata.Namespace != "" {
			name = n.TestMetadata.Namespace + "." + name
		}
	}
	if n.ColumnName != "" {
		if m.colTests[target] == nil {
			m.colTests[target] = map[string][]string{}
		}
		m.colTests[target][strings.ToLower(n.ColumnName)] = appendUnique(m.colTests[target][strings.ToLower(n.ColumnName)], name)
		name += "(" + n.ColumnName + ")"
	}
	m.tests[target] = appendUnique(m.tests[target], name)
}

func (imp *importer) node(n *Node, kind string) {
	urn := graph.DBTURN(n.UniqueID)
	attrs := map[string]string{"resource_type": n.ResourceType, "package": n.PackageName}
	// The compiled SQL, so impact analysis can say what the model does with a changed value.
	if code := n.CompiledCode; code != nil && strings.TrimSpace(*code) != "" && (n.Language == "" || n.Language == "sql") {
		attrs["sql"] = *code
	} else if code := n.CompiledSQL; code != nil && strings.TrimSpace(*code) != "" {
		attrs["sql"] = *code
	}
	if w := imp.warehouseURN(n); w != "" {
		attrs["relation"] = string(w)
	}
	if n.Config.Materialized != "" {
		attrs["materialized"] = n.Config.Materialized
	}
	if t := imp.m.tests[n.UniqueID]; len(t) > 0 {
		attrs["tests"] = strings.Join(t, ", ")
	}
	name := n.Name
	if n.ResourceType == "source" && n.SourceName != "" {
		name = n.SourceName + "." + n.Name
	}
	meta := mergeMeta(n.Config.Meta, n.Meta)
	a := graph.Asset{URN: urn, Kind: kind, Name: name, Description: n.Description, Attrs: attrs,
		Tags: appendUnique(append([]string(nil), n.Tags...), stringList(n.Config.Tags)...)}
	a.Owners = owners(meta["owner"])
	group := n.Group
	if group == nil {
		group = n.Config.Group
	}
	if group != nil && *group != "" {
		attrs["group"] = *group
		for _, g := range imp.m.groups {
			if g != nil && g.Name == *group {
				a.Owners = appendUnique(a.Owners, groupOwner(g.Owner.Name, g.Owner.Email)...)
			}
		}
	}
	if d, ok := meta["domain"].(string); ok {
		a.Domain = d
	}
	if c, ok := meta["criticality"].(string); ok && graph.ValidCriticality(strings.ToLower(c)) {
		a.Criticality = strings.ToLower(c)
	}
	a.Tags = appendUnique(a.Tags, stringList(meta["tags"])...)
	sort.Strings(a.Tags)
	imp.b.Assets = append(imp.b.Assets, a)
	for i, cname := range sortedKeys(n.Columns) {
		c := n.Columns[cname]
		if c == nil {
			continue
		}
		path := c.Name
		if path == "" {
			path = cname
		}
		f := graph.Field{Asset: urn, Path: path, Description: c.Description, Tags: c.Tags, Nullable: true, Ordinal: i + 1}
		if c.DataType != nil {
			f.Type = *c.DataType
		}
		for _, t := range imp.m.colTests[n.UniqueID][strings.ToLower(path)] {
			f.Tags = appendUnique(f.Tags, "test:"+t)
			if t == "not_null" {
				f.Nullable = false
			}
		}
		imp.b.Fields = append(imp.b.Fields, f)
	}
}

func (imp *importer) exposure(x *Exposure) {
	urn := graph.DBTURN(x.UniqueID)
	attrs := map[string]string{"type": x.Type}
	if x.URL != nil && *x.URL != "" {
		attrs["url"] = *x.URL
	}
	if x.Maturity != nil && *x.Maturity != "" {
		attrs["maturity"] = *x.Maturity
	}
	name := x.Label
	if name == "" {
		name = x.Name
	}
	a := graph.Asset{URN: urn, Kind: graph.KindDBTExposure, Name: name, Description: x.Description, Tags: x.Tags, Attrs: attrs,
		Owners: groupOwner(x.Owner.Name, x.Owner.Email)}
	a.Owners = appendUnique(a.Owners, owners(x.Meta["owner"])...)
	imp.b.Assets = append(imp.b.Assets, a)
	for _, p := range x.DependsOn.Nodes {
		imp.b.Edges = append(imp.b.Edges, graph.Edge{From: graph.DBTURN(p).Field(""), To: urn.Field(""), Kind: graph.EdgeExposes})
	}
}

func (imp *importer) columnLineage(n *Node) {
	urn := graph.DBTURN(n.UniqueID)
	code := n.CompiledCode
	if code == nil {
		code = n.CompiledSQL
	}
	if n.Language != "" && n.Language != "sql" {
		imp.b.KeepFieldEdgesInto = append(imp.b.KeepFieldEdgesInto, urn)
		return
	}
	if code == nil || strings.TrimSpace(*code) == "" {
		imp.b.KeepFieldEdgesInto = append(imp.b.KeepFieldEdgesInto, urn)
		imp.st.WithoutCompiledSQL = append(imp.st.WithoutCompiledSQL, n.UniqueID)
		return
	}
	stmts, _, err := sqlparse.ParseScript(*code)
	if err == nil && len(stmts) != 1 {
		err = fmt.Errorf("%d statements", len(stmts))
	}
	if err != nil {
		imp.b.KeepFieldEdgesInto = append(imp.b.KeepFieldEdgesInto, urn)
		imp.b.Warnings = append(imp.b.Warnings, fmt.Sprintf("%s: compiled SQL not parsed (%v): column lineage kept from earlier imports, table-level lineage from depends_on", n.UniqueID, err))
		return
	}
	cols := func(name []string) ([]string, bool) {
		id, ok := imp.lookupRelation(name)
		if !ok {
			return nil, false
		}
		i, ok := imp.m.relByID[id]
		if !ok || len(imp.m.rels[i].columns) == 0 {
			return nil, false
		}
		return imp.m.rels[i].columns, true
	}
	lin := sqlparse.Analyze(stmts[0], cols)
	for _, w := range lin.Warnings {
		imp.b.Warnings = append(imp.b.Warnings, n.UniqueID+": "+w)
	}
	from := func(table []string) graph.URN {
		if id, ok := imp.lookupRelation(table); ok {
			return graph.DBTURN(id)
		}
		if id, ok := parentNamed(n, table[len(table)-1]); ok {
			return graph.DBTURN(id)
		}
		return graph.WarehouseURN(imp.engine, table...)
	}
	// At most one edge per source of each column and per indirect source: room for them up front.
	most := len(lin.Indirect)
	for _, c := range lin.Columns {
		most += len(c.Sources)
	}
	imp.b.Edges = slices.Grow(imp.b.Edges, most)
	seen := make(map[graph.EdgeKey]bool, most)
	add := func(e graph.Edge) {
		if e.From.Asset == e.To.Asset || seen[e.Key()] {
			return
		}
		seen[e.Key()] = true
		imp.b.Edges = append(imp.b.Edges, e)
		imp.st.ColumnEdges++
	}
	for _, c := range lin.Columns {
		if c.Name == "*" {
			continue
		}
		for _, s := range c.Sources {
			if s.Column == "*" {
				continue
			}
			add(graph.Edge{From: from(s.Table).Field(s.Column), To: urn.Field(c.Name), Kind: graph.EdgeKind(s.Kind), Transformation: c.Expr})
		}
	}
	for _, s := range lin.Indirect {
		if s.Column == "*" {
			continue
		}
		add(graph.Edge{From: from(s.Table).Field(s.Column), To: urn.Field(""), Kind: graph.EdgeKind(s.Kind)})
	}
}

// parentNamed finds, among the node's depends_on, the one parent whose name is table (a manifest
// trimmed of its parents, or a relation the index could not place); several or none is no match.
func parentNamed(n *Node, table string) (string, bool) {
	table = strings.Trim(table, "`\"")
	found := ""
	for _, p := range n.DependsOn.Nodes {
		parts := strings.Split(p, ".")
		name := parts[len(parts)-1]
		if strings.HasPrefix(p, "model.") && len(parts) == 4 && strings.HasPrefix(name, "v") {
			name = parts[2] // versioned model: model.pkg.name.v2
		}
		if strings.EqualFold(name, table) {
			if found != "" && found != p {
				return "", false
			}
			found = p
		}
	}
	return found, found != ""
}

func mergeMeta(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range b {
		out[k] = v
	}
	for k, v := range a { // config.meta wins: it is where dbt ≥ 1.10 puts it
		out[k] = v
	}
	return out
}

// owners reads meta.owner: a string, a list of strings, or {email|name}.
func owners(v any) []string {
	switch v := v.(type) {
	case string:
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, owners(x)...)
		}
		return out
	case map[string]any:
		if e, ok := v["email"].(string); ok && e != "" {
			return []string{e}
		}
		if n, ok := v["name"].(string); ok && n != "" {
			return []string{n}
		}
	}
	return nil
}

func groupOwner(name *string, email any) []string {
	if out := stringList(email); len(out) > 0 {
		return out
	}
	if name != nil && *name != "" {
		return []string{*name}
	}
	return nil
}

func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		if v != "" {
			return []string{v}
		}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func appendUnique(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, x := range list {
			if x == it {
				found = true
				break
			}
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
