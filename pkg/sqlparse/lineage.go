package sqlparse

import (
	"fmt"
	"sort"
	"strings"
)

// Lineage kinds, after OpenLineage's column lineage facet: DIRECT identity / transformation /
// aggregation (and conditional for CASE conditions), INDIRECT join / group_by / filter / window.
const (
	KindIdentity       = "identity"
	KindTransformation = "transformation"
	KindAggregation    = "aggregation"
	KindConditional    = "conditional"
	KindJoin           = "join"
	KindGroupBy        = "group_by"
	KindFilter         = "filter"
	KindWindow         = "window"
)

var kindRank = map[string]int{KindIdentity: 0, KindTransformation: 1, KindAggregation: 2, KindConditional: 3}

// SourceColumn is a column of a base table that feeds an output column (or the rows).
type SourceColumn struct {
	Table  []string `json:"table"`
	Column string   `json:"column"` // "*" when a SELECT * could not be expanded
	Kind   string   `json:"kind"`
}

// OutputColumn is one column the statement produces.
type OutputColumn struct {
	Name    string         `json:"name"`
	Expr    string         `json:"expr,omitempty"` // the SQL as written
	Sources []SourceColumn `json:"sources"`
	// FromStar: the column came from expanding SELECT * against known columns.
	FromStar bool `json:"from_star,omitempty"`
}

// Lineage is what a statement reads and how each output column is computed.
type Lineage struct {
	Target   []string       `json:"target,omitempty"` // INSERT / CREATE … AS target
	Columns  []OutputColumn `json:"columns"`
	Tables   [][]string     `json:"tables"`   // base tables read
	Indirect []SourceColumn `json:"indirect"` // columns that join, filter, group or window the rows
	Warnings []string       `json:"warnings,omitempty"`
	// Unresolved are the column references (parts as written) found in no table of their FROM
	// clause; each also has a warning. Callers that judge reads go by this, not the wording.
	Unresolved [][]string `json:"-"`
}

// ColumnsFunc returns the columns of a base table, ok=false when unknown. Table names are as
// written in the SQL (quotes removed).
type ColumnsFunc func(table []string) (columns []string, ok bool)

type src struct {
	table  []string
	column string
	kind   string
}

type relation struct {
	alias   string   // lower-case name the query uses for it
	name    []string // base table name (nil for derived)
	known   bool
	cols    []string         // ordered column names when known
	derived map[string][]src // lower column → sources (derived relations)
	star    map[string]bool  // derived columns that came from SELECT *
	anyCol  []src            // unknown-column derived relation (UNNEST…): every column comes from these
	// baseUnknown: a window TVF over a table whose columns are unknown; any other column name is
	// that table's column.
	baseUnknown []string
	// base: a window TVF over a base table, whose columns (but the window columns) are that table's.
	base []string
}

type scope struct {
	rels   []*relation
	parent *scope
}

type env struct {
	ctes   map[string]*relation
	outer  *scope
	cols   ColumnsFunc
	result *Lineage
	tables map[string]bool
	// uses collects each column reference's resolution (ColumnUses); nil for Analyze.
	uses map[*ColumnRef]*ColumnUse
}

// Analyze computes column lineage for a parsed statement.
func Analyze(stmt Statement, cols ColumnsFunc) *Lineage {
	return analyze(stmt, cols, nil)
}

func analyze(stmt Statement, cols ColumnsFunc, uses map[*ColumnRef]*ColumnUse) *Lineage {
	if cols == nil {
		cols = func([]string) ([]string, bool) { return nil, false }
	}
	l := &Lineage{Columns: []OutputColumn{}, Tables: [][]string{}, Indirect: []SourceColumn{}}
	e := &env{ctes: map[string]*relation{}, cols: cols, result: l, tables: map[string]bool{}, uses: uses}
	var q *Query
	var targetCols []string
	switch s := stmt.(type) {
	case *Insert:
		l.Target, q, targetCols = s.Table, s.Query, s.Columns
		if len(targetCols) == 0 {
			if c, ok := cols(s.Table); ok {
				targetCols = c
			}
		}
	case *CreateTableAs:
		l.Target, q, targetCols = s.Table, s.Query, s.Columns
	case *QueryStatement:
		q = s.Query
	default:
		l.Warnings = append(l.Warnings, fmt.Sprintf("unsupported statement %T", stmt))
		return l
	}
	outs := e.query(q)
	if len(targetCols) > 0 && len(targetCols) != len(outs) && !hasStarPlaceholder(outs) {
		l.Warnings = append(l.Warnings, fmt.Sprintf("the query produces %d columns but the target has %d; mapping by position where possible", len(outs), len(targetCols)))
	}
	for i, o := range outs {
		if i < len(targetCols) && o.Name != "*" {
			o.Name = targetCols[i]
		}
		l.Columns = append(l.Columns, o)
	}
	l.Indirect = dedupe(l.Indirect)
	return l
}

func hasStarPlaceholder(outs []OutputColumn) bool {
	for _, o := range outs {
		if o.Name == "*" {
			return true
		}
	}
	return false
}

func (e *env) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, w := range e.result.Warnings {
		if w == msg {
			return
		}
	}
	e.result.Warnings = append(e.result.Warnings, msg)
}

func (e *env) query(q *Query) []OutputColumn {
	saved := map[string]*relation{}
	for k, v := range e.ctes {
		saved[k] = v
	}
	defer func() { e.ctes = saved }()
	for _, c := range q.With {
		outs := e.query(c.Query)
		rel := derivedRelation(c.Name, outs, c.Columns)
		e.ctes[strings.ToLower(c.Name)] = rel
	}
	return e.setExpr(q.Body)
}

func (e *env) setExpr(s SetExpr) []OutputColumn {
	switch s := s.(type) {
	case *Select:
		return e.selectBlock(s)
	case *Query:
		return e.query(s)
	case *SetOp:
		l, r := e.setExpr(s.Left), e.setExpr(s.Right)
		for i := range l {
			if i < len(r) {
				l[i].Sources = dedupe(append(l[i].Sources, r[i].Sources...))
				l[i].FromStar = l[i].FromStar || r[i].FromStar
			}
		}
		return l
	}
	return nil
}

func derivedRelation(alias string, outs []OutputColumn, rename []string) *relation {
	rel := &relation{alias: strings.ToLower(alias), known: true, derived: map[string][]src{}, star: map[string]bool{}}
	for i, o := range outs {
		name := o.Name
		if i < len(rename) {
			name = rename[i]
		}
		if name == "*" { // an unexpanded star: the relation's columns are unknown
			rel.known = false
			for _, s := range o.Sources {
				rel.anyCol = append(rel.anyCol, src{table: s.Table, column: "*", kind: s.Kind})
			}
			continue
		}
		var ss []src
		for _, s := range o.Sources {
			ss = append(ss, src{table: s.Table, column: s.Column, kind: s.Kind})
		}
		key := strings.ToLower(name)
		if _, dup := rel.derived[key]; !dup {
			rel.cols = append(rel.cols, name)
		}
		rel.derived[key] = ss
		rel.star[key] = o.FromStar
	}
	return rel
}

func (e *env) selectBlock(s *Select) []OutputColumn {
	sc := &scope{parent: e.outer}
	for _, t := range s.From {
		e.tableExpr(t, sc)
	}
	savedOuter := e.outer
	e.outer = sc
	defer func() { e.outer = savedOuter }()

	var outs []OutputColumn
	for i, it := range s.Items {
		if it.Star {
			outs = append(outs, e.expandStar(it, sc)...)
			continue
		}
		o := OutputColumn{Name: it.Alias, Expr: it.Text}
		top := KindTransformation
		if cr, ok := it.Expr.(*ColumnRef); ok {
			top = KindIdentity
			if o.Name == "" {
				o.Name = cr.Parts[len(cr.Parts)-1]
				if e.uses != nil {
					e.uses[cr] = &ColumnUse{Ref: cr, Bare: true}
				}
			}
		}
		if o.Name == "" {
			o.Name = fmt.Sprintf("EXPR$%d", i)
		}
		o.Sources = dedupe(toSource(e.walk(it.Expr, sc, top)))
		outs = append(outs, o)
	}
	e.indirect(s.Where, sc, KindFilter)
	for _, g := range s.GroupBy {
		e.indirect(g, sc, KindGroupBy)
	}
	e.indirect(s.Having, sc, KindFilter)
	e.indirect(s.Qualify, sc, KindFilter)
	return outs
}

func (e *env) indirect(x Expr, sc *scope, kind string) {
	if x == nil {
		return
	}
	for _, s := range e.walk(x, sc, kind) {
		e.result.Indirect = append(e.result.Indirect, SourceColumn{Table: s.table, Column: s.column, Kind: kind})
	}
}

func (e *env) expandStar(it SelectItem, sc *scope) []OutputColumn {
	var outs []OutputColumn
	rels := sc.rels
	if len(it.Qualifier) > 0 {
		r := findRelation(sc, it.Qualifier)
		if r == nil {
			e.warn("%s: no table %s in FROM", it.Text, strings.Join(it.Qualifier, "."))
			return nil
		}
		rels = []*relation{r}
	}
	except := map[string]bool{}
	for _, x := range it.Except {
		except[strings.ToLower(x)] = true
	}
	for _, r := range rels {
		if r.baseUnknown != nil {
			outs = append(outs, OutputColumn{Name: "*", Expr: it.Text, Sources: []SourceColumn{{Table: r.baseUnknown, Column: "*", Kind: KindIdentity}}})
			e.warn("SELECT * over %s, whose columns are unknown: column lineage for it is table-level only", strings.Join(r.baseUnknown, "."))
		}
		if !r.known {
			o := OutputColumn{Name: "*", Expr: it.Text}
			if r.name != nil {
				o.Sources = []SourceColumn{{Table: r.name, Column: "*", Kind: KindIdentity}}
				e.warn("SELECT * over %s, whose columns are unknown: column lineage for it is table-level only", strings.Join(r.name, "."))
			} else {
				o.Sources = toSource(r.anyCol)
			}
			outs = append(outs, o)
			continue
		}
		for _, c := range r.cols {
			if except[strings.ToLower(c)] {
				continue
			}
			ss := r.column(c)
			outs = append(outs, OutputColumn{Name: c, Expr: it.Text, Sources: dedupe(toSource(ss)), FromStar: true})
		}
	}
	return outs
}

// column returns the sources of one column of a relation (nil, false when the relation knows its
// columns and this is not one of them).
func (r *relation) column(c string) []src {
	if r.name != nil {
		name := c
		for _, k := range r.cols {
			if strings.EqualFold(k, c) {
				name = k
				break
			}
		}
		return []src{{table: r.name, column: name, kind: KindIdentity}}
	}
	if ss, ok := r.derived[strings.ToLower(c)]; ok {
		return ss
	}
	// A relation built on an unexpanded SELECT *: column c is the base table's column c.
	out := make([]src, 0, len(r.anyCol))
	for _, s := range r.anyCol {
		if s.column == "*" {
			s.column = c
		}
		out = append(out, s)
	}
	return out
}

func (r *relation) has(c string) bool {
	if !r.known {
		return false
	}
	for _, k := range r.cols {
		if strings.EqualFold(k, c) {
			return true
		}
	}
	return false
}

func (e *env) tableExpr(t TableExpr, sc *scope) {
	switch t := t.(type) {
	case *TableName:
		sc.rels = append(sc.rels, e.tableRelation(t))
	case *Subquery:
		saved := e.outer
		e.outer = sc // LATERAL subqueries see earlier FROM items
		outs := e.query(t.Query)
		e.outer = saved
		sc.rels = append(sc.rels, derivedRelation(t.Alias, outs, t.ColumnAliases))
	case *Join:
		e.tableExpr(t.Left, sc)
		e.tableExpr(t.Right, sc)
		e.indirect(t.On, sc, KindJoin)
		for _, u := range t.Using {
			for _, s := range e.resolve([]string{u}, sc, KindJoin, true) {
				e.result.Indirect = append(e.result.Indirect, SourceColumn{Table: s.table, Column: s.column, Kind: KindJoin})
			}
		}
	case *TableFunc:
		sc.rels = append(sc.rels, e.tableFunc(t, sc))
	}
}

func (e *env) tableRelation(t *TableName) *relation {
	if len(t.Name) == 1 {
		if cte, ok := e.ctes[strings.ToLower(t.Name[0])]; ok {
			r := *cte
			r.alias = strings.ToLower(t.Name[0])
			if t.Alias != "" {
				r.alias = strings.ToLower(t.Alias)
			}
			return &r
		}
	}
	key := strings.ToLower(strings.Join(t.Name, "\x00"))
	if !e.tables[key] {
		e.tables[key] = true
		e.result.Tables = append(e.result.Tables, t.Name)
	}
	r := &relation{name: t.Name, alias: strings.ToLower(t.Name[len(t.Name)-1])}
	if t.Alias != "" {
		r.alias = strings.ToLower(t.Alias)
	}
	if cols, ok := e.cols(t.Name); ok {
		r.known, r.cols = true, cols
	}
	return r
}

// windowTVFs are Flink's windowing table-valued functions: they return every column of their
// input table plus window_start, window_end and window_time, computed from the time attribute
// named by DESCRIPTOR.
var windowTVFs = map[string]bool{"TUMBLE": true, "HOP": true, "CUMULATE": true, "SESSION": true}

func (e *env) tableFunc(t *TableFunc, sc *scope) *relation {
	if windowTVFs[t.Name] {
		var inner *relation
		var timeCols []src
		for _, a := range t.Args {
			v := a
			if na, ok := a.(*NamedArg); ok {
				v = na.Value
			}
			switch v := v.(type) {
			case *TableArg:
				tmp := &scope{parent: sc.parent}
				e.tableExpr(v.Table, tmp)
				if len(tmp.rels) == 1 {
					inner = tmp.rels[0]
					for _, pb := range v.PartitionBy {
						e.indirect(pb, tmp, KindWindow)
					}
				}
			case *Descriptor:
				if inner == nil {
					continue
				}
				for _, c := range v.Columns {
					timeCols = append(timeCols, withKind(inner.column(c), KindTransformation)...)
				}
			}
		}
		if inner == nil {
			e.warn("%s(…) without a TABLE argument", t.Name)
			return &relation{alias: strings.ToLower(t.Alias)}
		}
		for _, s := range timeCols {
			e.result.Indirect = append(e.result.Indirect, SourceColumn{Table: s.table, Column: s.column, Kind: KindWindow})
		}
		r := &relation{alias: inner.alias, known: inner.known, derived: map[string][]src{}, star: map[string]bool{}, anyCol: inner.anyCol, base: inner.name}
		if t.Alias != "" {
			r.alias = strings.ToLower(t.Alias)
		}
		for _, c := range inner.cols {
			r.cols = append(r.cols, c)
			r.derived[strings.ToLower(c)] = inner.column(c)
		}
		if !inner.known && inner.name != nil {
			r.anyCol = []src{{table: inner.name, column: "*", kind: KindIdentity}}
			r.unknownBase(inner.name)
		}
		for _, c := range []string{"window_start", "window_end", "window_time"} {
			r.cols = append(r.cols, c)
			r.derived[c] = timeCols
		}
		r.known = true
		return r
	}
	// Other table functions (UNNEST, FLATTEN, LATERAL TABLE(udf(x))): every column they produce
	// comes from their arguments.
	var ss []src
	for _, a := range t.Args {
		ss = append(ss, withKind(e.walk(a, sc, KindTransformation), KindTransformation)...)
	}
	r := &relation{alias: strings.ToLower(t.Alias), anyCol: ss}
	if len(t.ColumnAliases) > 0 {
		r.known = true
		r.derived = map[string][]src{}
		for _, c := range t.ColumnAliases {
			r.cols = append(r.cols, c)
			r.derived[strings.ToLower(c)] = ss
		}
	}
	return r
}

// unknownBase marks a window relation over a table with unknown columns: any column name resolves
// to that table's column of the same name.
func (r *relation) unknownBase(name []string) {
	r.name = nil
	r.anyCol = nil
	r.baseUnknown = name
}

func findRelation(sc *scope, qual []string) *relation {
	for s := sc; s != nil; s = s.parent {
		last := strings.ToLower(qual[len(qual)-1])
		for _, r := range s.rels {
			if r.alias == last {
				return r
			}
		}
		for _, r := range s.rels {
			if r.name != nil && len(qual) <= len(r.name) && equalFoldParts(r.name[len(r.name)-len(qual):], qual) {
				return r
			}
		}
	}
	return nil
}

func equalFoldParts(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

// resolve finds the sources of a column reference in scope (then enclosing scopes).
func (e *env) resolve(parts []string, sc *scope, kind string, quiet bool) []src {
	ss, _, _ := e.resolveIn(parts, sc, kind, quiet)
	return ss
}

// resolveIn is resolve that also says which relation the reference resolved to and the column
// path within it (nil, nil when it did not resolve to one relation).
func (e *env) resolveIn(parts []string, sc *scope, kind string, quiet bool) ([]src, *relation, []string) {
	if len(parts) > 1 {
		if r := findRelation(sc, parts[:len(parts)-1]); r != nil {
			return withKind(r.lookup(parts[len(parts)-1]), kind), r, parts[len(parts)-1:]
		}
		for i := len(parts) - 2; i >= 1; i-- { // t.struct_col.field
			if r := findRelation(sc, parts[:i]); r != nil {
				return withKind(r.lookupPath(parts[i:]), kind), r, parts[i:]
			}
		}
	}
	name := parts[0]
	for s := sc; s != nil; s = s.parent {
		var hits, unknown []*relation
		for _, r := range s.rels {
			if r.has(name) {
				hits = append(hits, r)
			} else if !r.known || r.baseUnknown != nil {
				unknown = append(unknown, r)
			}
		}
		switch {
		case len(hits) == 1:
			if len(parts) > 1 {
				return withKind(hits[0].lookupPath(parts), kind), hits[0], parts
			}
			return withKind(hits[0].lookup(name), kind), hits[0], parts
		case len(hits) > 1:
			e.warn("column %s is ambiguous between %d tables; its lineage is left out", strings.Join(parts, "."), len(hits))
			return nil, nil, nil
		case len(unknown) == 1:
			if len(parts) > 1 {
				return withKind(unknown[0].lookupPath(parts), kind), unknown[0], parts
			}
			return withKind(unknown[0].lookup(name), kind), unknown[0], parts
		case len(s.rels) == 1 && s.rels[0].name != nil:
			// One base table in scope: an unqualified column is its column, whatever the catalog
			// listed (dbt's documented columns are often incomplete).
			return withKind(s.rels[0].lookup(name), kind), s.rels[0], parts
		case len(unknown) > 1:
			if !quiet {
				e.warn("cannot tell which table column %s comes from (columns of %d tables are unknown); its lineage is left out", strings.Join(parts, "."), len(unknown))
			}
			return nil, nil, nil
		}
	}
	if !quiet {
		e.warn("column %s not found in any table of its FROM clause", strings.Join(parts, "."))
		e.result.Unresolved = append(e.result.Unresolved, parts)
	}
	return nil, nil, nil
}

func (r *relation) lookup(c string) []src {
	if r.baseUnknown != nil {
		if ss, ok := r.derived[strings.ToLower(c)]; ok {
			return ss
		}
		return []src{{table: r.baseUnknown, column: c, kind: KindIdentity}}
	}
	return r.column(c)
}

// lookupPath resolves a nested field path (struct_col.field) to the dotted field path on a base
// table, or to the struct column's sources on a derived one.
func (r *relation) lookupPath(path []string) []src {
	base := r.name
	if base == nil {
		base = r.baseUnknown
	}
	if base != nil {
		head := r.lookup(path[0])
		if len(head) == 1 {
			return []src{{table: base, column: head[0].column + "." + strings.Join(path[1:], "."), kind: KindIdentity}}
		}
	}
	return r.lookup(path[0])
}

func withKind(ss []src, kind string) []src {
	out := make([]src, len(ss))
	for i, s := range ss {
		s.kind = combine(s.kind, kind)
		out[i] = s
	}
	return out
}

func combine(a, b string) string {
	ra, oka := kindRank[a]
	rb, okb := kindRank[b]
	switch {
	case !oka:
		return b
	case !okb:
		return b // an indirect context (filter, join…) names the role
	case rb > ra:
		return b
	}
	return a
}

var aggregates = map[string]bool{"SUM": true, "COUNT": true, "AVG": true, "MIN": true, "MAX": true, "ANY_VALUE": true,
	"ARRAY_AGG": true, "LISTAGG": true, "STRING_AGG": true, "GROUP_CONCAT": true, "COUNT_IF": true, "SUM_IF": true,
	"STDDEV": true, "STDDEV_POP": true, "STDDEV_SAMP": true, "VARIANCE": true, "VAR_POP": true, "VAR_SAMP": true,
	"APPROX_COUNT_DISTINCT": true, "APPROX_DISTINCT": true, "HLL": true, "COLLECT": true, "LISTAGG_DISTINCT": true,
	"MEDIAN": true, "PERCENTILE_CONT": true, "PERCENTILE_DISC": true, "MODE": true, "BOOL_AND": true, "BOOL_OR": true,
	"BOOLAND_AGG": true, "BOOLOR_AGG": true, "EVERY": true, "FIRST_VALUE": true, "LAST_VALUE": true, "OBJECT_AGG": true,
	"ARRAY_UNIQUE_AGG": true, "BITAND_AGG": true, "BITOR_AGG": true, "JSON_ARRAYAGG": true, "JSON_OBJECTAGG": true}

// walk collects the base columns an expression reads, with the role each plays.
func (e *env) walk(x Expr, sc *scope, kind string) []src {
	switch x := x.(type) {
	case nil:
		return nil
	case *ColumnRef:
		ss, r, path := e.resolveIn(x.Parts, sc, kind, false)
		if e.uses != nil {
			e.use(x, r, path)
		}
		return ss
	case *Literal, *StarArg, *Interval:
		return nil
	case *FuncCall:
		inner := kind
		if aggregates[x.Name] {
			inner = combine(kind, KindAggregation)
		} else if kind == KindIdentity {
			inner = KindTransformation
		}
		var out []src
		for i, a := range x.Args {
			k := inner
			if i == 0 && len(x.Args) == 3 && (x.Name == "IFF" || x.Name == "IF") {
				k = combine(inner, KindConditional) // IFF(cond, a, b): cond picks, like CASE WHEN
			}
			out = append(out, e.walk(a, sc, k)...)
		}
		// FILTER (WHERE …) picks the rows an aggregate sees: indirect, like WHERE.
		e.indirect(x.Filter, sc, KindFilter)
		if x.Over != nil {
			for _, p := range x.Over.PartitionBy {
				e.indirect(p, sc, KindWindow)
			}
			for _, o := range x.Over.OrderBy {
				e.indirect(o, sc, KindWindow)
			}
		}
		return out
	case *Binary:
		k := demote(kind)
		return append(e.walk(x.L, sc, k), e.walk(x.R, sc, k)...)
	case *Unary:
		return e.walk(x.X, sc, demote(kind))
	case *Case:
		k := demote(kind)
		cond := combine(k, KindConditional)
		out := e.walk(x.Operand, sc, cond)
		for _, w := range x.Whens {
			out = append(out, e.walk(w.Cond, sc, cond)...)
			out = append(out, e.walk(w.Result, sc, k)...)
		}
		return append(out, e.walk(x.Else, sc, k)...)
	case *Cast:
		return e.walk(x.X, sc, demote(kind))
	case *In:
		out := e.walk(x.X, sc, demote(kind))
		for _, i := range x.List {
			out = append(out, e.walk(i, sc, demote(kind))...)
		}
		if x.Query != nil {
			e.subqueryIndirect(x.Query, sc)
		}
		return out
	case *Between:
		k := demote(kind)
		return append(append(e.walk(x.X, sc, k), e.walk(x.Lo, sc, k)...), e.walk(x.Hi, sc, k)...)
	case *IsNull:
		k := demote(kind)
		return append(e.walk(x.X, sc, k), e.walk(x.Other, sc, k)...)
	case *Exists:
		e.subqueryIndirect(x.Query, sc)
		return nil
	case *ScalarSubquery:
		saved := e.outer
		e.outer = sc
		outs := e.query(x.Query)
		e.outer = saved
		var out []src
		for _, o := range outs {
			for _, s := range o.Sources {
				out = append(out, src{table: s.Table, column: s.Column, kind: combine(s.Kind, demote(kind))})
			}
		}
		return out
	case *Access:
		return append(e.walk(x.X, sc, demote(kind)), e.walk(x.Index, sc, demote(kind))...)
	case *ListExpr:
		var out []src
		for _, i := range x.Items {
			out = append(out, e.walk(i, sc, demote(kind))...)
		}
		return out
	case *NamedArg:
		return e.walk(x.Value, sc, kind)
	case *Descriptor, *TableArg:
		return nil
	}
	return nil
}

// subqueryIndirect records what an IN/EXISTS subquery reads as filter columns.
func (e *env) subqueryIndirect(q *Query, sc *scope) {
	saved := e.outer
	e.outer = sc
	outs := e.query(q)
	e.outer = saved
	for _, o := range outs {
		for _, s := range o.Sources {
			e.result.Indirect = append(e.result.Indirect, SourceColumn{Table: s.Table, Column: s.Column, Kind: KindFilter})
		}
	}
}

// demote turns a bare-column context into a computed one: a + b is a transformation of a.
func demote(kind string) string {
	if kind == KindIdentity {
		return KindTransformation
	}
	return kind
}

func toSource(ss []src) []SourceColumn {
	out := make([]SourceColumn, 0, len(ss))
	for _, s := range ss {
		out = append(out, SourceColumn{Table: s.table, Column: s.column, Kind: s.kind})
	}
	return out
}

// dedupe merges repeated sources, keeping the strongest kind for each column.
func dedupe(ss []SourceColumn) []SourceColumn {
	idx := map[string]int{}
	var out []SourceColumn
	for _, s := range ss {
		k := strings.ToLower(strings.Join(s.Table, "\x00") + "\x01" + s.Column + "\x01" + kindClass(s.Kind))
		if i, ok := idx[k]; ok {
			out[i].Kind = combine(out[i].Kind, s.Kind)
			continue
		}
		idx[k] = len(out)
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := strings.Join(out[i].Table, "."), strings.Join(out[j].Table, ".")
		if a != b {
			return a < b
		}
		return out[i].Column < out[j].Column
	})
	if out == nil {
		out = []SourceColumn{}
	}
	return out
}

// kindClass keeps direct and each indirect role apart when deduplicating.
func kindClass(k string) string {
	if _, direct := kindRank[k]; direct {
		return "direct"
	}
	return k
}
