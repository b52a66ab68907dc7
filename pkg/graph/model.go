package graph

import (
	"time"
)

// Asset kinds (node kinds). Kinds are an open set: an importer may use another lower-case word.
const (
	KindKafkaTopic     = "kafka_topic"
	KindSchemaSubject  = "schema_subject"
	KindFlinkStatement = "flink_statement"
	KindTableflowTable = "tableflow_table"
	KindWarehouseTable = "warehouse_table"
	KindDBTModel       = "dbt_model"
	KindDBTSource      = "dbt_source"
	KindDBTSeed        = "dbt_seed"
	KindDBTSnapshot    = "dbt_snapshot"
	KindDBTExposure    = "dbt_exposure"
	KindDBTTest        = "dbt_test"
	KindBIWorkbook     = "bi_workbook"
	KindJob            = "job"
	KindExternalSink   = "external_sink"
	KindDataset        = "dataset" // an OpenLineage dataset we cannot map to a known system
	KindConnector      = "connector"
)

// EdgeKind says how data moves along an edge. Field-level kinds follow OpenLineage's column
// lineage subtypes (DIRECT: identity, transformation, aggregation; INDIRECT: join, group_by,
// filter, sort, window, conditional). Table-level kinds say how two assets relate.
type EdgeKind string

// Field-level edge kinds.
const (
	EdgeIdentity       EdgeKind = "identity"
	EdgeTransformation EdgeKind = "transformation"
	EdgeAggregation    EdgeKind = "aggregation"
	EdgeJoin           EdgeKind = "join"
	EdgeGroupBy        EdgeKind = "group_by"
	EdgeFilter         EdgeKind = "filter"
	EdgeSort           EdgeKind = "sort"
	EdgeWindow         EdgeKind = "window"
	EdgeConditional    EdgeKind = "conditional"
)

// Table-level edge kinds.
const (
	// EdgeReads: the target (a statement, model, job, workbook) reads the source asset.
	EdgeReads EdgeKind = "reads"
	// EdgeWrites: the source (a statement or job) writes the target asset.
	EdgeWrites EdgeKind = "writes"
	// EdgeDependsOn: a dbt node depends on its parent (parent → child).
	EdgeDependsOn EdgeKind = "depends_on"
	// EdgeExposes: a dbt model is shown by an exposure or BI workbook.
	EdgeExposes EdgeKind = "exposes"
	// EdgeSyncsTo: a job or connector pushes data to an external sink.
	EdgeSyncsTo EdgeKind = "syncs_to"
	// EdgeOrchestrates: an orchestrator job runs another asset's computation.
	EdgeOrchestrates EdgeKind = "orchestrates"
	// EdgeSchemaOf: a subject is the value schema of a topic (subject → topic). Field paths carry
	// over unchanged: field f of the subject is column f of the topic.
	EdgeSchemaOf EdgeKind = "schema_of"
	// EdgeMaterializes: the target holds the same rows as the source (topic → Tableflow table →
	// warehouse table, dbt model → its warehouse relation, warehouse table → the dbt source that
	// names it). Field paths carry over, matched case-insensitively.
	EdgeMaterializes EdgeKind = "materializes"
)

// FieldPreserving reports whether a table-level edge of this kind maps every field of its source
// to the field of the same name in its target (so field-level traversal continues through it).
func (k EdgeKind) FieldPreserving() bool {
	return k == EdgeSchemaOf || k == EdgeMaterializes
}

// Criticality levels, lowest first.
var criticalityRank = map[string]int{"": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}

// ValidCriticality reports whether c is "", low, medium, high or critical.
func ValidCriticality(c string) bool { _, ok := criticalityRank[c]; return ok }

// Tags that mark an asset whose breakage matters beyond the data team.
const (
	TagMoney          = "money"
	TagCustomerFacing = "customer_facing"
	TagPII            = "pii"
	TagExternal       = "external"
)

// Asset is one node. In a Batch it is one source's claim; read back from the graph it is the merge
// of every source's claims (owners and tags united, the latest non-empty value for the rest).
type Asset struct {
	URN         URN      `json:"urn"`
	System      string   `json:"system"`
	Kind        string   `json:"kind,omitempty"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Owners      []string `json:"owners,omitempty"`
	Domain      string   `json:"domain,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Criticality string   `json:"criticality,omitempty"`
	// Schedule is a cron expression for jobs (5 fields, descriptors such as @daily, optional
	// CRON_TZ= prefix; UTC otherwise).
	Schedule string            `json:"schedule,omitempty"`
	Attrs    map[string]string `json:"attrs,omitempty"`

	// Read-only, filled when read from the graph.
	Fields    []Field   `json:"fields,omitempty"`
	Claims    []Claim   `json:"claims,omitempty"`
	FirstSeen time.Time `json:"first_seen,omitzero"`
	LastSeen  time.Time `json:"last_seen,omitzero"`
	// Stale: every source that asserted this asset has stopped reporting it.
	Stale bool `json:"stale,omitempty"`
	// Referenced: no source described this asset; it is known only as the end of an edge.
	Referenced bool `json:"referenced_only,omitempty"`
}

// Claim is what one source said about an asset, and when.
type Claim struct {
	Source     string    `json:"source"`
	ObservedAt time.Time `json:"observed_at"`
	Stale      bool      `json:"stale,omitempty"`
}

// Field is a column or (nested) record field of an asset.
type Field struct {
	Asset       URN      `json:"-"`
	Path        string   `json:"path"`
	Type        string   `json:"type,omitempty"`
	Nullable    bool     `json:"nullable"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Ordinal     int      `json:"ordinal,omitempty"`

	// Read-only.
	Sources []string `json:"sources,omitempty"`
	Stale   bool     `json:"stale,omitempty"`
}

// Edge says data flows From → To. A field-level edge names the field on one or both ends.
type Edge struct {
	From FieldRef `json:"from"`
	To   FieldRef `json:"to"`
	Kind EdgeKind `json:"kind"`
	// Transformation is the evidence in the source's own words: the SQL expression, the OpenLineage
	// transformation description, the catalog file line.
	Transformation string `json:"transformation,omitempty"`

	// Read-only.
	Source     string    `json:"source,omitempty"`
	ObservedAt time.Time `json:"observed_at,omitzero"`
	Stale      bool      `json:"stale,omitempty"`
}

// FieldLevel reports whether either end names a field.
func (e Edge) FieldLevel() bool { return e.From.Path != "" || e.To.Path != "" }

// Batch is what one source reports in one import or sync.
type Batch struct {
	// Source names who asserts this, stable across re-imports: "dbt:manifest/billing",
	// "flink:statement/usage-hourly-rollup", "catalog:configs/catalog.yaml", "sync:kafka".
	Source string
	// ObservedAt defaults to the graph's clock.
	ObservedAt time.Time
	Assets     []Asset
	Fields     []Field
	Edges      []Edge
	// KeepFieldEdgesInto lists assets whose field-level edges from this source must be kept as they
	// were: the artifact lacked what would re-derive them (a dbt manifest without compiled_code), so
	// their absence is no evidence they vanished.
	KeepFieldEdgesInto []URN
	// Warnings the importer wants the caller to see (unparsable SQL, unresolved tables…).
	Warnings []string
}

// Seen is what a source reported in its latest complete pass; MarkStale marks the rest stale.
type Seen struct {
	Assets             map[URN]bool
	Fields             map[FieldRef]bool
	Edges              map[EdgeKey]bool
	KeepFieldEdgesInto map[URN]bool
}

// EdgeKey identifies one source's edge.
type EdgeKey struct {
	From, To FieldRef
	Kind     EdgeKind
}

// Key is the edge's identity within its source.
func (e Edge) Key() EdgeKey { return EdgeKey{From: e.From, To: e.To, Kind: e.Kind} }

// SeenOf is everything b asserts.
func SeenOf(b Batch) Seen {
	s := Seen{Assets: map[URN]bool{}, Fields: map[FieldRef]bool{}, Edges: map[EdgeKey]bool{}, KeepFieldEdgesInto: map[URN]bool{}}
	for _, a := range b.Assets {
		s.Assets[a.URN] = true
	}
	for _, f := range b.Fields {
		s.Fields[f.Asset.Field(f.Path)] = true
	}
	for _, e := range b.Edges {
		s.Edges[e.Key()] = true
	}
	for _, u := range b.KeepFieldEdgesInto {
		s.KeepFieldEdgesInto[u] = true
	}
	return s
}

// ImportResult counts what an import changed.
type ImportResult struct {
	Source   string   `json:"source"`
	Assets   int      `json:"assets"`
	Fields   int      `json:"fields"`
	Edges    int      `json:"edges"`
	Stale    Counts   `json:"marked_stale"`
	Warnings []string `json:"warnings,omitempty"`
}

// Counts of assets, fields and edges.
type Counts struct {
	Assets int `json:"assets"`
	Fields int `json:"fields"`
	Edges  int `json:"edges"`
}
