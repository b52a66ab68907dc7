// Package flinksql turns a Flink SQL statement, as Confluent Cloud returns it (spec.statement),
// into context-graph assets and column-level edges: source topic columns → statement output
// columns → sink topic columns, with the expression as evidence. In Confluent Cloud a Flink table
// is a Kafka topic and its columns are the fields of the topic's value schema, pinned to the schema
// version current when the statement was created; SELECT * is expanded against that version and
// flagged as such. When no record says which version that was, it is inferred from the SQL (a
// statement only starts when every column it reads resolves) and flagged inferred_from_sql.
package flinksql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	// CatalogAliases and DatabaseAliases are other names of the environment and Kafka cluster
	// whose topics the graph's topic URNs denote (their IDs or display names, e.g. the configured
	// confluent_cloud.environment_id and kafka_cluster_id). A table qualified with a catalog or
	// database that is neither the statement's current one nor one of these is in another
	// cluster (see Import).
	CatalogAliases, DatabaseAliases []string
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
	// SchemaVersion and SchemaID of the value schema the columns come from (0 when none): the
	// statement's pin when PinSource is set, else the first candidate to try.
	SchemaVersion int
	SchemaID      int
	// Columns are the value schema's top-level field names in order (nil when unknown).
	Columns []Column
	// PinSource says how SchemaVersion was decided: PinFirstSeen or PinGiven are recorded facts;
	// "" means the resolver does not know which version the statement was created against, and
	// Import infers it from the SQL (see Candidates).
	PinSource string
	// Candidates are the versions Import tries, in order, when PinSource is "": the first under
	// which every column the SQL reads resolves becomes the pin (PinInferred). The table as
	// returned must be at Candidates[0]; a VersionResolver reads the others. Empty: only
	// SchemaVersion is tried.
	Candidates []int
	// Note is something the caller should know about this resolution; the importer passes it on
	// as a warning.
	Note string
}

// How a table's schema version was pinned (the schema_pin_source attribute).
const (
	// PinFirstSeen: the newest version Data Workers had seen at or before the statement's creation.
	PinFirstSeen = "first_seen"
	// PinGiven: the caller said which version the statement was created against.
	PinGiven = "given"
	// PinInferred: no record; the newest version under which the statement's SQL resolves every
	// column it reads (a Flink statement only starts when they all resolve).
	PinInferred = "inferred_from_sql"
)

// VersionResolver is a Resolver that can read a table at another version of its value schema,
// so Import can infer an unknown pin from the SQL.
type VersionResolver interface {
	Resolver
	ResolveTableVersion(ctx context.Context, ref TableRef, version int) (Table, error)
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
// ErrTableNotFound is an error too. A table qualified with another cluster (catalog.database.table
// in Confluent Cloud is environment.kafka-cluster.topic) is left unresolved: a topic URN names no
// cluster, so no edge is drawn to it (it would land on the same-named local topic); a warning and
// the statement's unresolved_tables attribute name it.
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
	lins, err := res.analyze(stmts)
	if err != nil {
		return graph.Batch{}, err
	}
	if lins, err = res.inferPins(stmts, lins); err != nil {
		return graph.Batch{}, err
	}
	for i, s := range stmts {
		lin := lins[i]
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
			if sink = res.get(lin.Target); sink.foreign != "" {
				sink = nil
			} else {
				addEdge(graph.Edge{From: stURN.Field(""), To: sink.topicURN().Field(""), Kind: graph.EdgeWrites})
			}
		}
		for _, t := range lin.Tables {
			if in := res.get(t); in.foreign == "" {
				addEdge(graph.Edge{From: in.topicURN().Field(""), To: stURN.Field(""), Kind: graph.EdgeReads})
			}
		}
		for _, c := range lin.Columns {
			if c.Name == "*" {
				// Unexpanded star: the statement copies every column of an unknown table.
				for _, s := range c.Sources {
					in := res.get(s.Table)
					if sink != nil && in.foreign == "" {
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
				if in := res.get(s.Table); in.foreign == "" {
					addEdge(graph.Edge{From: in.topicURN().Field(s.Column), To: stURN.Field(c.Name), Kind: graph.EdgeKind(s.Kind), Transformation: evidence})
				}
			}
			if sink != nil {
				addEdge(graph.Edge{From: stURN.Field(c.Name), To: sink.topicURN().Field(c.Name), Kind: graph.EdgeIdentity, Transformation: "INSERT INTO " + sink.ref.Table})
			}
		}
		for _, s := range lin.Indirect {
			in := res.get(s.Table)
			if s.Column == "*" || in.foreign != "" {
				continue
			}
			addEdge(graph.Edge{From: in.topicURN().Field(s.Column), To: stURN.Field(""), Kind: graph.EdgeKind(s.Kind)})
		}
	}
	attrs["sql_kind"] = strings.Join(kinds, ",")
	// Only evidence is recorded as a pin: a recorded or given version, or one inferred from the
	// SQL (with its source, so a later sync knows a fact from an inference).
	var pins, sources []string
	for _, k := range res.order {
		rt := res.cache[k]
		if rt.table.ValueSubject != "" && rt.table.SchemaVersion > 0 && rt.table.PinSource != "" {
			pins = append(pins, rt.table.ValueSubject+" v"+strconv.Itoa(rt.table.SchemaVersion))
			sources = append(sources, rt.table.PinSource)
		}
	}
	if len(pins) > 0 {
		attrs["schema_pins"] = strings.Join(pins, ",")
		attrs["schema_pin_source"] = strings.Join(sources, ",")
	}
	if res.starExpanded {
		attrs["select_star_expanded"] = "true"
	}
	var foreign []string
	for _, k := range res.order {
		if rt := res.cache[k]; rt.foreign != "" {
			foreign = append(foreign, rt.ref.String())
			b.Warnings = append(b.Warnings, fmt.Sprintf("table %s is in another cluster (%s): left unresolved, no lineage edge drawn to it "+
				"(topic URNs name this cluster's topics, so it would be linked to a same-named local topic); declare it in a catalog file", rt.ref, rt.foreign))
		}
	}
	if len(foreign) > 0 {
		attrs["unresolved_tables"] = strings.Join(foreign, ",")
	}
	b.Assets = append(b.Assets, stmtAsset)
	for _, k := range res.order {
		rt := res.cache[k]
		if rt.foreign != "" {
			continue
		}
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
	// foreign, when set, says why the table is in another cluster than the statement's own.
	foreign string
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

// analyze computes the lineage of each statement against the tables as resolved now.
func (r *resolver) analyze(stmts []sqlparse.Statement) ([]*sqlparse.Lineage, error) {
	out := make([]*sqlparse.Lineage, len(stmts))
	for i, s := range stmts {
		out[i] = sqlparse.Analyze(s, r.columns)
		if r.err != nil {
			return nil, r.err
		}
	}
	return out, nil
}

// inferPins decides the version of each table whose pin the resolver does not know. A Flink
// statement only starts when every column it reads resolves, so it was created against a
// version under which they all do: the first such candidate (newest first) is the pin. Tables
// are decided one at a time, the others as they stand. When no candidate resolves, the table
// stays unpinned and its lineage goes by the column names the SQL uses.
func (r *resolver) inferPins(stmts []sqlparse.Statement, lins []*sqlparse.Lineage) ([]*sqlparse.Lineage, error) {
	vr, _ := r.r.(VersionResolver)
	for _, k := range append([]string(nil), r.order...) {
		rt := r.cache[k]
		if rt.missing || rt.table.PinSource != "" || rt.table.ValueSubject == "" || rt.table.SchemaVersion <= 0 || rt.table.Columns == nil {
			continue
		}
		first := rt.table
		cands := first.Candidates
		if len(cands) == 0 {
			cands = []int{first.SchemaVersion}
		}
		var tried []string
		pinned := false
		for i, v := range cands {
			if i > 0 {
				if vr == nil {
					break
				}
				t, err := vr.ResolveTableVersion(r.ctx, rt.ref, v)
				if errors.Is(err, ErrTableNotFound) {
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("flink statement %s: resolve table %s at %s v%d: %w", r.st.Name, rt.ref, first.ValueSubject, v, err)
				}
				if t.Topic == "" {
					t.Topic = rt.ref.Table
				}
				rt.table = t
				if lins, err = r.analyze(stmts); err != nil {
					return nil, err
				}
			}
			if bad := r.unresolved(k, lins); len(bad) > 0 {
				tried = append(tried, fmt.Sprintf("v%d lacks %s", v, strings.Join(bad, ", ")))
				continue
			}
			rt.table.PinSource = PinInferred
			note := fmt.Sprintf("no record of the %s version statement %s was created against: pinned to v%d, the newest under which its SQL resolves every column it reads (%s)",
				rt.table.ValueSubject, r.st.Name, rt.table.SchemaVersion, PinInferred)
			if len(tried) > 0 {
				note += "; " + strings.Join(tried, "; ")
			}
			rt.table.Note = strings.TrimSpace(rt.table.Note + " " + note)
			pinned = true
			break
		}
		if !pinned {
			rt.table = Table{Topic: first.Topic, ValueSubject: first.ValueSubject,
				Note: fmt.Sprintf("no version of %s resolves every column statement %s reads (%s): left unpinned, its lineage follows the column names in the SQL",
					first.ValueSubject, r.st.Name, strings.Join(tried, "; "))}
			var err error
			if lins, err = r.analyze(stmts); err != nil {
				return nil, err
			}
		}
	}
	return lins, nil
}

// unresolved lists the columns the statements read of table key (a resolver cache key) that its
// current columns lack, and the column references found in no table at all.
func (r *resolver) unresolved(key string, lins []*sqlparse.Lineage) []string {
	have := map[string]bool{}
	for _, c := range r.cache[key].table.Columns {
		have[strings.ToLower(c.Name)] = true
	}
	var bad []string
	check := func(s sqlparse.SourceColumn) {
		if s.Column == "*" || strings.HasPrefix(s.Column, "$") || strings.ToLower(r.ref(s.Table).String()) != key {
			return // $rowtime and the like are system columns of every Confluent Cloud table
		}
		head, _, _ := strings.Cut(s.Column, ".")
		if !have[strings.ToLower(head)] && !slices.Contains(bad, head) {
			bad = append(bad, head)
		}
	}
	for _, l := range lins {
		for _, c := range l.Columns {
			for _, s := range c.Sources {
				check(s)
			}
		}
		for _, s := range l.Indirect {
			check(s)
		}
		reads := false
		for _, t := range l.Tables {
			reads = reads || strings.ToLower(r.ref(t).String()) == key
		}
		if !reads {
			continue // a sink only: the references of its statement are not its columns
		}
		for _, w := range l.Warnings {
			// sqlparse's wording for a reference no table of its FROM has: it may be any read
			// table's, so it counts against each.
			if rest, ok := strings.CutPrefix(w, "column "); ok {
				if col, ok := strings.CutSuffix(rest, " not found in any table of its FROM clause"); ok && !slices.Contains(bad, col) {
					bad = append(bad, col)
				}
			}
		}
	}
	return bad
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
	if rt.foreign = r.foreign(name, ref); rt.foreign != "" {
		return rt
	}
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

// foreign says why a table the SQL names qualified is in another cluster ("" when it is the
// statement's own): its catalog (environment) or database (Kafka cluster) is neither the
// statement's current one nor an alias. A qualified name in a statement that carries neither a
// current catalog/database nor aliases cannot be placed, so it counts as foreign too.
func (r *resolver) foreign(name []string, ref TableRef) string {
	local := func(got, current string, aliases []string) bool {
		if strings.EqualFold(got, current) {
			return true
		}
		for _, a := range aliases {
			if strings.EqualFold(got, a) {
				return true
			}
		}
		return false
	}
	curCat, curDB := r.st.Properties["sql.current-catalog"], r.st.Properties["sql.current-database"]
	here := strings.Join(nonEmpty(curCat, curDB), ".")
	if here == "" {
		here = "unknown: the statement has no sql.current-catalog or sql.current-database"
	}
	switch {
	case len(name) >= 3 && !local(ref.Catalog, curCat, r.st.CatalogAliases):
		return fmt.Sprintf("catalog %s is not the statement's environment, %s", ref.Catalog, here)
	case len(name) >= 2 && !local(ref.Database, curDB, r.st.DatabaseAliases):
		return fmt.Sprintf("database %s is not the statement's Kafka cluster, %s", ref.Database, here)
	}
	return ""
}

func (r *resolver) columns(name []string) ([]string, bool) {
	rt := r.get(name)
	if rt.missing || rt.foreign != "" || rt.table.Columns == nil {
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
		if !slices.Contains(parts, d) {
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, ", ")
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
