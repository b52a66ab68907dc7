// Package dbt imports a dbt manifest.json (schema v7–v12, and the older compiled_sql spelling):
// models, seeds, snapshots, sources, exposures and their columns, meta and group owners, tests,
// the warehouse relation each names, and column lineage parsed from compiled SQL. A node without
// compiled SQL (a manifest written by dbt parse, ls or test) keeps the column lineage an earlier
// import found: its absence is no evidence the lineage changed (datahub-project/datahub PR #18823).
package dbt

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// Manifest is the part of manifest.json the importer reads. Unknown keys are ignored: the format
// grows additively.
type Manifest struct {
	Metadata struct {
		SchemaVersion string `json:"dbt_schema_version"`
		DBTVersion    string `json:"dbt_version"`
		GeneratedAt   string `json:"generated_at"`
		ProjectName   string `json:"project_name"`
		ProjectID     string `json:"project_id"`
		AdapterType   string `json:"adapter_type"`
	} `json:"metadata"`
	Nodes     map[string]*Node     `json:"nodes"`
	Sources   map[string]*Node     `json:"sources"`
	Exposures map[string]*Exposure `json:"exposures"`
	Groups    map[string]*Group    `json:"groups"`
}

// Node is a model, seed, snapshot, test, analysis or source.
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
	// Tests only.
	AttachedNode string `json:"attached_node"`
	ColumnName   string `json:"column_name"`
	TestMetadata *struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"test_metadata"`
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

// Parse decodes a manifest.
func Parse(raw []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("dbt manifest: %w", err)
	}
	if m.Nodes == nil && m.Sources == nil {
		return nil, errors.New("dbt manifest: no nodes and no sources: is this a manifest.json (target/manifest.json)?")
	}
	return &m, nil
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

// Import converts a manifest to a batch. engine overrides metadata.adapter_type when not empty.
func Import(m *Manifest, engine string) (graph.Batch, Stats, error) {
	if engine == "" {
		engine = m.Metadata.AdapterType
	}
	if engine == "" {
		engine = "unknown"
	}
	imp := &importer{m: m, engine: strings.ToLower(engine), relIndex: map[string]string{}, b: graph.Batch{Source: Source(m.Metadata.ProjectName)}}
	return imp.run()
}

type importer struct {
	m        *Manifest
	engine   string
	b        graph.Batch
	st       Stats
	relIndex map[string]string // lower-cased relation key (1, 2 or 3 parts) → unique_id; "" when ambiguous
	tests    map[string][]string
	colTests map[string]map[string][]string
}

func (imp *importer) run() (graph.Batch, Stats, error) {
	imp.tests = map[string][]string{}
	imp.colTests = map[string]map[string][]string{}
	ids := sortedKeys(imp.m.Nodes)
	for _, id := range ids {
		n := imp.m.Nodes[id]
		if n == nil {
			continue
		}
		if n.ResourceType == "test" {
			imp.indexTest(n)
		}
	}
	srcIDs := sortedKeys(imp.m.Sources)
	for _, id := range srcIDs {
		if n := imp.m.Sources[id]; n != nil {
			imp.indexRelation(n)
		}
	}
	for _, id := range ids {
		if n := imp.m.Nodes[id]; n != nil && isRelationNode(n) {
			imp.indexRelation(n)
		}
	}
	for _, id := range srcIDs {
		n := imp.m.Sources[id]
		if n == nil || disabled(n) {
			continue
		}
		if n.UniqueID == "" {
			n.UniqueID = id
		}
		imp.node(n, graph.KindDBTSource)
		imp.st.Sources++
		if w := imp.warehouseURN(n); w != "" {
			imp.b.Edges = append(imp.b.Edges, graph.Edge{From: w.Field(""), To: graph.DBTURN(n.UniqueID).Field(""), Kind: graph.EdgeMaterializes,
				Transformation: "dbt source " + n.SourceName + "." + n.Name})
		}
	}
	for _, id := range ids {
		n := imp.m.Nodes[id]
		if n == nil || disabled(n) {
			continue
		}
		if n.UniqueID == "" {
			n.UniqueID = id
		}
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
			continue // tests are attached to what they test; analyses and operations build nothing
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
	for _, id := range sortedKeys(imp.m.Exposures) {
		x := imp.m.Exposures[id]
		if x == nil {
			continue
		}
		if x.UniqueID == "" {
			x.UniqueID = id
		}
		imp.exposure(x)
		imp.st.Exposures++
	}
	return imp.b, imp.st, nil
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

func (imp *importer) indexRelation(n *Node) {
	parts := relationParts(n)
	for k := 1; k <= len(parts) && k <= 3; k++ {
		key := relKey(imp.engine, parts[len(parts)-k:])
		if prev, ok := imp.relIndex[key]; ok && prev != n.UniqueID {
			imp.relIndex[key] = ""
			continue
		}
		imp.relIndex[key] = n.UniqueID
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

func (imp *importer) indexTest(n *Node) {
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
	imp.st.Tests++
	name := n.Name
	if n.TestMetadata != nil && n.TestMetadata.Name != "" {
		name = n.TestMetadata.Name
		if n.TestMetadata.Namespace != "" {
			name = n.TestMetadata.Namespace + "." + name
		}
	}
	if n.ColumnName != "" {
		if imp.colTests[target] == nil {
			imp.colTests[target] = map[string][]string{}
		}
		imp.colTests[target][strings.ToLower(n.ColumnName)] = appendUnique(imp.colTests[target][strings.ToLower(n.ColumnName)], name)
		name += "(" + n.ColumnName + ")"
	}
	imp.tests[target] = appendUnique(imp.tests[target], name)
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
	if t := imp.tests[n.UniqueID]; len(t) > 0 {
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
		for _, g := range imp.m.Groups {
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
		for _, t := range imp.colTests[n.UniqueID][strings.ToLower(path)] {
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
		p := imp.m.Nodes[id]
		if p == nil {
			p = imp.m.Sources[id]
		}
		if p == nil || len(p.Columns) == 0 {
			return nil, false
		}
		var out []string
		for _, k := range sortedKeys(p.Columns) {
			if c := p.Columns[k]; c != nil && c.Name != "" {
				out = append(out, c.Name)
			} else {
				out = append(out, k)
			}
		}
		return out, true
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
	seen := map[graph.EdgeKey]bool{}
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
