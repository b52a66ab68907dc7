// Package flinksql turns a Flink SQL statement, as Confluent Cloud returns it (spec.statement),
// into context-graph assets and column-level edges: source topic columns → statement output
// columns → sink topic columns, with the expression as evidence. In Confluent Cloud a Flink table
// is a Kafka topic and its columns are the fields of the topic's value schema, pinned to the schema
// version current when the statement was created; SELECT * is expanded against that version and
// flagged as such.
package flinksql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// Statement is one Flink statement.
type Statement struct {
	Name string
	// SQL is spec.statement.
	SQL string
	// CreatedAt is metadata.created_at: the moment the statement pinned its schema versions.
	CreatedAt time.Time
	// Properties are spec.properties; sql.current-catalog and sql.current-database qualify
	// unqualified table names.
	Properties map[string]string
	// Phase is status.phase when known (RUNNING, STOPPED, FAILED…).
	Phase string
}

// TableRef is a Flink table name, qualified with the statement's current catalog (environment)
// and database (Kafka cluster) when the SQL leaves them out.
type TableRef struct {
	Catalog, Database, Table string
}

func (t TableRef) String() string {
	return strings.Join(nonEmpty(t.Catalog, t.Database, t.Table), ".")
}

// Table is what a Flink table resolves to.
type Table struct {
	Topic string
	// ValueSubject is the Schema Registry subject of the topic's values ("" when none).
	ValueSubject string
	// SchemaVersion and SchemaID of the value schema in effect at the statement's creation (0 when
	// unknown).
	SchemaVersion int
	SchemaID      int
	// Columns are the value schema's top-level field names in order (nil when unknown).
	Columns []Column
	// Note is something the caller should know about this resolution (e.g. the pinned version
	// was unknown and the latest was used); the importer passes it on as a warning.
	Note string
}

// Column is one column of a Flink table.
type Column struct {
	Name     string
	Type     string
	Nullable bool
}

// ErrTableNotFound is what a Resolver returns for a table it does not know; the importer then
// keeps table-level lineage to the topic of that name and says so in the batch's warnings.
var ErrTableNotFound = errors.New("flink table not found")

// Resolver maps a Flink table to its topic and value schema as of a moment (the statement's
// creation time).
type Resolver interface {
	ResolveTable(ctx context.Context, ref TableRef, at time.Time) (Table, error)
}

// Source is the graph source name for a statement's lineage: re-importing the statement replaces
// what it asserted before.
func Source(name string) string { return "flink:statement/" + name }

// Import parses st and returns its assets, fields and edges as a batch whose Source is
// Source(st.Name). An unparsable statement is an error (nothing is asserted, so a later Import of
// the batch cannot mark its earlier lineage stale); a resolver failure other than
// ErrTableNotFound is an error too.
func Import(ctx context.Context, st Statement, r Resolver) (graph.Batch, error) {
	if strings.TrimSpace(st.Name) == "" {
		return graph.Batch{}, errors.New("flink statement: empty name")
	}
	if strings.TrimSpace(st.SQL) == "" {
		return graph.Batch{}, fmt.Errorf("flink statement %s: empty SQL", st.Name)
	}
	stmts, skipped, err := sqlparse.ParseScript(st.SQL)
	if err != nil {
		return graph.Batch{}, fmt.Errorf("flink statement %s: %w", st.Name, err)
	}
	if len(stmts) == 0 {
		return graph.Batch{}, fmt.Errorf("flink statement %s carries no INSERT INTO, CREATE TABLE … AS or SELECT (only %s)", st.Name, strings.Join(skipped, ", "))
	}

	stURN := graph.FlinkStatementURN(st.Name)
	b := graph.Batch{Source: Source(st.Name)}
	res := &resolver{ctx: ctx, r: r, st: st, cache: map[string]*resolved{}}
	attrs := map[string]string{"sql": st.SQL}
	if !st.CreatedAt.IsZero() {
		attrs["created_at"] = st.CreatedAt.UTC().Format(time.RFC3339)
	}
	if st.Phase != "" {
		attrs["phase"] = st.Phase
	}
	stmtAsset := graph.Asset{URN: stURN, Kind: graph.KindFlinkStatement, Name: st.Name, Attrs: attrs}

	edges := map[graph.EdgeKey]int{}
	addEdge := func(e graph.Edge) {
		if i, ok := edges[e.Key()]; ok {
			if e.Transformation != "" && !strings.Contains(b.Edges[i].Transformation, e.Transformation) {
				b.Edges[i].Transformation += "; " + e.Transformation
			}
			return
		}
		edges[e.Key()] = len(b.Edges)
		b.Edges = append(b.Edges, e)
	}
	outFields := map[string]bool{}
	ordinal := 0
	var kinds []string
	for _, s := range stmts {
		lin := sqlparse.Analyze(s, res.columns)
		if res.err != nil {
			return graph.Batch{}, res.err
		}
		b.Warnings = append(b.Warnings, lin.Warnings...)
		var sink *resolved
		switch s.(type) {
		case *sqlparse.Insert:
			kinds = append(kinds, "INSERT_INTO")
		case *sqlparse.CreateTableAs:
			kinds = append(kinds, "CREATE_TABLE_AS")
		default:
			kinds = append(kinds, "SELECT")
		}
		if lin.Target != nil {
			sink = res.get(lin.Target)
			addEdge(graph.Edge{From: stURN.Field(""), To: sink.topicURN().Field(""), Kind: graph.EdgeWrites})
		}
		for _, t := range lin.Tables {
			in := res.get(t)
			addEdge(graph.Edge{From: in.topicURN().Field(""), To: stURN.Field(""), Kind: graph.EdgeReads})
		}
		for _, c := range lin.Columns {
			if c.Name == "*" {
				// Unexpanded star: the statement copies every column of an unknown table.
				for _, s := range c.Sources {
					in := res.get(s.Table)
					if sink != nil {
						addEdge(graph.Edge{From: in.topicURN().Field(""), To: sink.topicURN().Field(""), Kind: graph.EdgeTransformation,
							Transformation: "SELECT * over a table whose columns are unknown"})
					}
				}
				continue
			}
			if !outFields[strings.ToLower(c.Name)] {
				outFields[strings.ToLower(c.Name)] = true
				ordinal++
				b.Fields = append(b.Fields, graph.Field{Asset: stURN, Path: c.Name, Ordinal: ordinal, Nullable: true})
			}
			evidence := c.Expr
			if c.FromStar {
				evidence = "SELECT * expanded against " + res.describeSources(c.Sources)
			}
			for _, s := range c.Sources {
				in := res.get(s.Table)
				addEdge(graph.Edge{From: in.topicURN().Field(s.Column), To: stURN.Field(c.Name), Kind: graph.EdgeKind(s.Kind), Transformation: evidence})
			}
			if sink != nil {
				addEdge(graph.Edge{From: stURN.Field(c.Name), To: sink.topicURN().Field(c.Name), Kind: graph.EdgeIdentity, Transformation: "INSERT INTO " + sink.ref.Table})
			}
		}
		for _, s := range lin.Indirect {
			in := res.get(s.Table)
			if s.Column == "*" {
				continue
			}
			addEdge(graph.Edge{From: in.topicURN().Field(s.Column), To: stURN.Field(""), Kind: graph.EdgeKind(s.Kind)})
		}
	}
	attrs["sql_kind"] = strings.Join(kinds, ",")
	var pins []string
	for _, k := range res.order {
		rt := res.cache[k]
		if rt.table.ValueSubject != "" && rt.table.SchemaVersion > 0 {
			pins = append(pins, rt.table.ValueSubject+" v"+strconv.Itoa(rt.table.SchemaVersion))
		}
	}
	if len(pins) > 0 {
		attrs["schema_pins"] = strings.Join(pins, ",")
	}
	if res.starExpanded {
		attrs["select_star_expanded"] = "true"
	}
	b.Assets = append(b.Assets, stmtAsset)
	for _, k := range res.order {
		rt := res.cache[k]
		topic := rt.topicURN()
		a := graph.Asset{URN: topic, Kind: graph.KindKafkaTopic, Name: rt.table.Topic}
		b.Assets = append(b.Assets, a)
		if rt.table.ValueSubject != "" {
			subj := graph.SubjectURN(rt.table.ValueSubject)
			sa := graph.Asset{URN: subj, Kind: graph.KindSchemaSubject, Name: rt.table.ValueSubject}
			b.Assets = append(b.Assets, sa)
			addEdge(graph.Edge{From: subj.Field(""), To: topic.Field(""), Kind: graph.EdgeSchemaOf})
		}
		for i, c := range rt.table.Columns {
			b.Fields = append(b.Fields, graph.Field{Asset: topic, Path: c.Name, Type: c.Type, Nullable: c.Nullable, Ordinal: i + 1})
			if rt.table.ValueSubject != "" {
				// The fields of the version the statement pinned.
				b.Fields = append(b.Fields, graph.Field{Asset: graph.SubjectURN(rt.table.ValueSubject), Path: c.Name, Type: c.Type, Nullable: c.Nullable, Ordinal: i + 1})
			}
		}
		if rt.table.Note != "" {
			b.Warnings = append(b.Warnings, rt.table.Note)
		}
		if rt.missing {
			b.Warnings = append(b.Warnings, fmt.Sprintf("table %s is unknown to the schema resolver: lineage to topic %s is by name only", rt.ref, rt.table.Topic))
		}
	}
	return b, nil
}

type resolved struct {
	ref     TableRef
	table   Table
	missing bool
}

func (r *resolved) topicURN() graph.URN { return graph.TopicURN(r.table.Topic) }

type resolver struct {
	ctx          context.Context
	r            Resolver
	st           Statement
	cache        map[string]*resolved
	order        []string
	err          error
	starExpanded bool
}

func (r *resolver) ref(name []string) TableRef {
	ref := TableRef{Catalog: r.st.Properties["sql.current-catalog"], Database: r.st.Properties["sql.current-database"]}
	switch len(name) {
	case 1:
		ref.Table = name[0]
	case 2:
		ref.Database, ref.Table = name[0], name[1]
	default:
		ref.Catalog, ref.Database, ref.Table = name[len(name)-3], name[len(name)-2], name[len(name)-1]
	}
	return ref
}

func (r *resolver) get(name []string) *resolved {
	ref := r.ref(name)
	key := strings.ToLower(ref.String())
	if rt, ok := r.cache[key]; ok {
		return rt
	}
	rt := &resolved{ref: ref}
	r.cache[key] = rt
	r.order = append(r.order, key)
	if r.err != nil {
		return rt
	}
	var t Table
	var err error
	if r.r != nil {
		t, err = r.r.ResolveTable(r.ctx, ref, r.st.CreatedAt)
	} else {
		err = ErrTableNotFound
	}
	switch {
	case errors.Is(err, ErrTableNotFound):
		rt.missing = true
		rt.table = Table{Topic: ref.Table}
	case err != nil:
		r.err = fmt.Errorf("flink statement %s: resolve table %s: %w", r.st.Name, ref, err)
		rt.table = Table{Topic: ref.Table}
	default:
		if t.Topic == "" {
			t.Topic = ref.Table
		}
		rt.table = t
	}
	return rt
}

func (r *resolver) columns(name []string) ([]string, bool) {
	rt := r.get(name)
	if rt.missing || rt.table.Columns == nil {
		return nil, false
	}
	out := make([]string, len(rt.table.Columns))
	for i, c := range rt.table.Columns {
		out[i] = c.Name
	}
	return out, true
}

func (r *resolver) describeSources(ss []sqlparse.SourceColumn) string {
	r.starExpanded = true
	var parts []string
	for _, s := range ss {
		rt := r.get(s.Table)
		d := rt.table.Topic
		if rt.table.ValueSubject != "" {
			d = rt.table.ValueSubject
			if rt.table.SchemaVersion > 0 {
				d += " v" + strconv.Itoa(rt.table.SchemaVersion)
			}
		}
		if !contains(parts, d) {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// apiStatement is the part of the Confluent Cloud statement object (sql/v1) we read.
type apiStatement struct {
	Name     string `json:"name"`
	Metadata struct {
		CreatedAt time.Time `json:"created_at"`
	} `json:"metadata"`
	Spec struct {
		Statement  string            `json:"statement"`
		Properties map[string]string `json:"properties"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// ParseAPIStatement reads a statement object as GET …/statements/{name} returns it.
func ParseAPIStatement(raw []byte) (Statement, error) {
	var a apiStatement
	if err := json.Unmarshal(raw, &a); err != nil {
		return Statement{}, fmt.Errorf("flink statement JSON: %w", err)
	}
	if a.Name == "" || a.Spec.Statement == "" {
		return Statement{}, errors.New("flink statement JSON: want name and spec.statement (the sql/v1 Statement object)")
	}
	return Statement{Name: a.Name, SQL: a.Spec.Statement, CreatedAt: a.Metadata.CreatedAt, Properties: a.Spec.Properties, Phase: a.Status.Phase}, nil
}

// StaticResolver resolves tables from a fixed map keyed by table name (case-insensitive), for
// tests, fixtures and statements whose schemas were exported to files.
type StaticResolver map[string]Table

// ResolveTable implements Resolver.
func (s StaticResolver) ResolveTable(_ context.Context, ref TableRef, _ time.Time) (Table, error) {
	for k, t := range s {
		if strings.EqualFold(k, ref.Table) {
			return t, nil
		}
	}
	return Table{}, fmt.Errorf("%w: %s", ErrTableNotFound, ref)
}

// ColumnsFromAvro lists the top-level fields of an Avro record schema as Flink columns (a union
// with null is nullable). Confluent Cloud maps a topic's value record fields to table columns
// one to one.
func ColumnsFromAvro(schema string) ([]Column, error) {
	s, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("avro schema: want a record, got %s", s.Type())
	}
	var cols []Column
	for _, f := range rec.Fields() {
		c := Column{Name: f.Name(), Type: string(f.Type().Type())}
		if u, ok := f.Type().(*avro.UnionSchema); ok {
			for _, t := range u.Types() {
				if t.Type() == avro.Null {
					c.Nullable = true
				} else {
					c.Type = string(t.Type())
				}
			}
		}
		cols = append(cols, c)
	}
	return cols, nil
}
