package sqlparse

// Statement is one parsed statement: *Insert, *CreateTableAs or *QueryStatement.
type Statement interface{ stmt() }

// Insert is INSERT INTO/OVERWRITE table [(columns)] query.
type Insert struct {
	Table   []string
	Columns []string
	Query   *Query
}

// CreateTableAs is CREATE [OR REPLACE] TABLE/VIEW name [(columns)] [WITH (...)] AS query.
type CreateTableAs struct {
	Table   []string
	Columns []string
	View    bool
	Query   *Query
}

// QueryStatement is a bare query.
type QueryStatement struct{ Query *Query }

func (*Insert) stmt()         {}
func (*CreateTableAs) stmt()  {}
func (*QueryStatement) stmt() {}

// Query is [WITH ctes] body [ORDER BY] [LIMIT].
type Query struct {
	With    []CTE
	Body    SetExpr
	OrderBy []Expr
}

// CTE is one WITH entry.
type CTE struct {
	Name    string
	Columns []string
	Query   *Query
}

// SetExpr is *Select, *SetOp or *Query (parenthesised).
type SetExpr interface{ setExpr() }

// SetOp is UNION/INTERSECT/EXCEPT/MINUS.
type SetOp struct {
	Op          string
	All         bool
	Left, Right SetExpr
}

// Select is one SELECT block.
type Select struct {
	Distinct bool
	Items    []SelectItem
	From     []TableExpr // comma-separated items; joins nest inside
	Where    Expr
	GroupBy  []Expr
	Having   Expr
	Qualify  Expr
}

func (*Select) setExpr() {}
func (*SetOp) setExpr()  {}
func (*Query) setExpr()  {}

// SelectItem is expr [AS alias], * or qual.*.
type SelectItem struct {
	Expr      Expr
	Alias     string
	Star      bool
	Qualifier []string // for qual.*
	Except    []string // * EXCEPT (a, b) / * EXCLUDE (a, b)
	Text      string   // the item's SQL as written
}

// TableExpr is an item of FROM.
type TableExpr interface{ tableExpr() }

// TableName is a named table or CTE reference.
type TableName struct {
	Name  []string
	Alias string
}

// Subquery is (query) alias.
type Subquery struct {
	Query         *Query
	Alias         string
	ColumnAliases []string
}

// Join is left JOIN right [ON cond | USING (cols)].
type Join struct {
	Kind        string // INNER, LEFT, RIGHT, FULL, CROSS, NATURAL, LATERAL
	Left, Right TableExpr
	On          Expr
	Using       []string
}

// TableFunc is a table-valued function in FROM: TABLE(TUMBLE(TABLE t, DESCRIPTOR(c), INTERVAL…)),
// UNNEST(x), LATERAL TABLE(f(x)), FLATTEN(input => x)…
type TableFunc struct {
	Name          string // upper-cased function name
	Args          []Expr
	Alias         string
	ColumnAliases []string
}

func (*TableName) tableExpr() {}
func (*Subquery) tableExpr()  {}
func (*Join) tableExpr()      {}
func (*TableFunc) tableExpr() {}

// Expr is an expression.
type Expr interface{ expr() }

// ColumnRef is a possibly qualified column: a, t.a, s.t.a. Pos and End are its byte span in the
// parsed text (first part to last), so a caller can edit the reference where it is written.
type ColumnRef struct {
	Parts    []string
	Pos, End int
}

// Literal is a constant (string, number, boolean, NULL, typed literal, niladic function). Text
// of a string literal is unquoted and unescaped; String marks it.
type Literal struct {
	Text   string
	String bool
}

// StarArg is the * in COUNT(*).
type StarArg struct{}

// FuncCall is name(args) [FILTER (WHERE …)] [OVER (…)].
type FuncCall struct {
	Name     string // upper-cased, last part of a qualified name
	Distinct bool
	Args     []Expr
	Filter   Expr
	Over     *Window
}

// Window is an OVER clause.
type Window struct {
	Name        string
	PartitionBy []Expr
	OrderBy     []Expr
}

// Binary is l op r (arithmetic, comparison, AND/OR, LIKE, ||…).
type Binary struct {
	Op   string
	L, R Expr
}

// Unary is op x (NOT, -, +, ~).
type Unary struct {
	Op string
	X  Expr
}

// Case is CASE [operand] WHEN … THEN … [ELSE …] END.
type Case struct {
	Operand Expr
	Whens   []When
	Else    Expr
}

// When is one branch of CASE.
type When struct{ Cond, Result Expr }

// Cast is CAST(x AS type), TRY_CAST, or x::type.
type Cast struct {
	X    Expr
	Type string
}

// In is x [NOT] IN (list) or IN (query).
type In struct {
	X     Expr
	List  []Expr
	Query *Query
	Not   bool
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct{ X, Lo, Hi Expr }

// IsNull is x IS [NOT] NULL / TRUE / FALSE / DISTINCT FROM y.
type IsNull struct {
	X     Expr
	Other Expr
}

// Exists is EXISTS (query).
type Exists struct{ Query *Query }

// ScalarSubquery is (query) used as a value.
type ScalarSubquery struct{ Query *Query }

// Interval is INTERVAL '1' HOUR.
type Interval struct{ Text string }

// Descriptor is DESCRIPTOR(col, …), the time attribute argument of a windowing TVF.
type Descriptor struct{ Columns []string }

// TableArg is TABLE t (or a subquery) passed to a table function, with SESSION's PARTITION BY.
type TableArg struct {
	Table       TableExpr
	PartitionBy []Expr
}

// NamedArg is name => value.
type NamedArg struct {
	Name  string
	Value Expr
}

// Access is x[i] or x.field on a non-column expression.
type Access struct {
	X     Expr
	Index Expr
}

// ListExpr is ARRAY[…], (a, b) row constructors and similar lists.
type ListExpr struct{ Items []Expr }

func (*ColumnRef) expr()      {}
func (*Literal) expr()        {}
func (*StarArg) expr()        {}
func (*FuncCall) expr()       {}
func (*Binary) expr()         {}
func (*Unary) expr()          {}
func (*Case) expr()           {}
func (*Cast) expr()           {}
func (*In) expr()             {}
func (*Between) expr()        {}
func (*IsNull) expr()         {}
func (*Exists) expr()         {}
func (*ScalarSubquery) expr() {}
func (*Interval) expr()       {}
func (*Descriptor) expr()     {}
func (*TableArg) expr()       {}
func (*NamedArg) expr()       {}
func (*Access) expr()         {}
func (*ListExpr) expr()       {}
