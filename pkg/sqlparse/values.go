package sqlparse

import (
	"strings"
)

// Role is what an expression around a column does with its value.
type Role string

// Roles, each changing what a missing, zeroed or new value does to the result.
const (
	RoleCoalesce   Role = "coalesce"   // COALESCE/IFNULL/NVL/ZEROIFNULL(x, d): a null becomes d
	RoleSum        Role = "sum"        // SUM(x) skips nulls
	RoleCount      Role = "count"      // COUNT(x) counts non-nulls
	RoleAvg        Role = "avg"        // AVG(x) averages non-nulls
	RoleMinMax     Role = "min_max"    // MIN/MAX(x)
	RoleArithmetic Role = "arithmetic" // x + y, x * y…: null propagates
	RoleCompare    Role = "compare"    // x = 'A', x > 0, x BETWEEN…, x LIKE…
	RoleIn         Role = "in"         // x [NOT] IN (…)
	RoleCase       Role = "case"       // CASE x WHEN … / CASE WHEN x … : picks a branch by the value
	RoleJoin       Role = "join"       // a join condition compares it with another relation's column
	RoleIsNull     Role = "is_null"    // x IS NULL
	RoleGroup      Role = "group"      // GROUP BY x
)

// Step is one expression around the column, innermost first.
type Step struct {
	Role Role `json:"role"`
	// Expr is the expression, written back as SQL.
	Expr string `json:"expr"`
	// Op is the comparison operator (=, <>, >, IN, NOT IN, LIKE, BETWEEN).
	Op string `json:"op,omitempty"`
	// Values are the literals the value is compared with or falls back to.
	Values []string `json:"values,omitempty"`
	// Else is what a CASE yields when no branch matches ("" when it has no ELSE: NULL).
	Else string `json:"else,omitempty"`
}

// ValueUse is one reference to the column and what the statement does with its value.
type ValueUse struct {
	// Clause is where the reference is: select, where, join, having, group_by, qualify, order_by.
	Clause string `json:"clause"`
	// Output is the output column a select-list reference computes (its alias or name).
	Output string `json:"output,omitempty"`
	Steps  []Step `json:"steps"`
	// ByName: the reference reads a CTE or subquery column of that name, not the table directly.
	ByName bool `json:"by_name,omitempty"`
}

// ValueUses finds every reference of stmt that reads column of table (the last part of its name,
// any case; table "" matches any) and says what surrounds it. A reference to a same-named column
// of a CTE or subquery counts too (ByName), since compiled dbt SQL reads its sources through CTEs.
func ValueUses(stmt Statement, cols ColumnsFunc, table, column string) []ValueUse {
	resolved := map[*ColumnRef]*ColumnUse{}
	analyze(stmt, cols, resolved)
	match := func(r *ColumnRef) (bool, bool) {
		u := resolved[r]
		if u != nil && len(u.Table) > 0 {
			head, _, _ := strings.Cut(u.Column, ".")
			return strings.EqualFold(head, column) && (table == "" || strings.EqualFold(u.Table[len(u.Table)-1], table)), false
		}
		return len(r.Parts) > 0 && strings.EqualFold(r.Parts[len(r.Parts)-1], column), true
	}
	w := &valueWalker{match: match}
	w.statement(stmt)
	return w.out
}

type valueWalker struct {
	match  func(*ColumnRef) (ok, byName bool)
	out    []ValueUse
	stack  []Expr
	clause string
	output string
}

func (w *valueWalker) statement(s Statement) {
	switch s := s.(type) {
	case *Insert:
		w.query(s.Query)
	case *CreateTableAs:
		w.query(s.Query)
	case *QueryStatement:
		w.query(s.Query)
	}
}

func (w *valueWalker) query(q *Query) {
	if q == nil {
		return
	}
	for _, c := range q.With {
		w.query(c.Query)
	}
	w.setExpr(q.Body)
	w.exprs("order_by", q.OrderBy)
}

func (w *valueWalker) setExpr(s SetExpr) {
	switch s := s.(type) {
	case *Select:
		w.selectBlock(s)
	case *SetOp:
		w.setExpr(s.Left)
		w.setExpr(s.Right)
	case *Query:
		w.query(s)
	}
}

func (w *valueWalker) selectBlock(s *Select) {
	for _, it := range s.Items {
		if it.Star {
			continue
		}
		w.output = it.Alias
		if w.output == "" {
			if c, ok := it.Expr.(*ColumnRef); ok {
				w.output = c.Parts[len(c.Parts)-1]
			}
		}
		w.clause = "select"
		w.expr(it.Expr)
		w.output = ""
	}
	for _, t := range s.From {
		w.table(t)
	}
	w.exprs("where", []Expr{s.Where})
	w.exprs("group_by", s.GroupBy)
	w.exprs("having", []Expr{s.Having})
	w.exprs("qualify", []Expr{s.Qualify})
}

func (w *valueWalker) exprs(clause string, xs []Expr) {
	for _, x := range xs {
		w.clause = clause
		w.expr(x)
	}
}

func (w *valueWalker) table(t TableExpr) {
	switch t := t.(type) {
	case *Subquery:
		w.query(t.Query)
	case *Join:
		w.table(t.Left)
		w.table(t.Right)
		w.exprs("join", []Expr{t.On})
	case *TableFunc:
		for _, a := range t.Args {
			w.clause = "from"
			w.expr(a)
		}
	}
}

func (w *valueWalker) expr(x Expr) {
	if x == nil {
		return
	}
	w.stack = append(w.stack, x)
	defer func() { w.stack = w.stack[:len(w.stack)-1] }()
	switch x := x.(type) {
	case *ColumnRef:
		if ok, byName := w.match(x); ok {
			w.record(byName)
		}
	case *FuncCall:
		for _, a := range x.Args {
			w.expr(a)
		}
		w.expr(x.Filter)
	case *Binary:
		w.expr(x.L)
		w.expr(x.R)
	case *Unary:
		w.expr(x.X)
	case *Case:
		w.expr(x.Operand)
		for _, wh := range x.Whens {
			w.expr(wh.Cond)
			w.expr(wh.Result)
		}
		w.expr(x.Else)
	case *Cast:
		w.expr(x.X)
	case *In:
		w.expr(x.X)
		for _, i := range x.List {
			w.expr(i)
		}
		if x.Query != nil {
			saved := w.clause
			w.query(x.Query)
			w.clause = saved
		}
	case *Between:
		w.expr(x.X)
		w.expr(x.Lo)
		w.expr(x.Hi)
	case *IsNull:
		w.expr(x.X)
		w.expr(x.Other)
	case *Exists:
		saved := w.clause
		w.query(x.Query)
		w.clause = saved
	case *ScalarSubquery:
		saved := w.clause
		w.query(x.Query)
		w.clause = saved
	case *Access:
		w.expr(x.X)
		w.expr(x.Index)
	case *ListExpr:
		for _, i := range x.Items {
			w.expr(i)
		}
	case *NamedArg:
		w.expr(x.Value)
	}
}

var (
	coalesceFuncs = map[string]bool{"COALESCE": true, "IFNULL": true, "NVL": true, "ISNULL": true, "ZEROIFNULL": true, "NULLIF": false}
	comparisonOps = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true, "<=>": true}
	arithmeticOps = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true, "||": true}
)

// record turns the stack above the column reference into steps, innermost first.
func (w *valueWalker) record(byName bool) {
	u := ValueUse{Clause: w.clause, Output: w.output, Steps: []Step{}, ByName: byName}
	if w.clause != "select" {
		u.Output = ""
	}
	for i := len(w.stack) - 2; i >= 0; i-- {
		x, child := w.stack[i], w.stack[i+1]
		if st, ok := step(x, child, w.clause); ok {
			u.Steps = append(u.Steps, st)
		}
	}
	if w.clause == "group_by" && len(u.Steps) == 0 {
		u.Steps = append(u.Steps, Step{Role: RoleGroup, Expr: Format(w.stack[len(w.stack)-1])})
	}
	w.out = append(w.out, u)
}

func step(x, child Expr, clause string) (Step, bool) {
	switch x := x.(type) {
	case *FuncCall:
		switch {
		case coalesceFuncs[x.Name] && len(x.Args) > 0 && x.Args[len(x.Args)-1] != child || x.Name == "ZEROIFNULL":
			st := Step{Role: RoleCoalesce, Expr: Format(x)}
			if x.Name == "ZEROIFNULL" {
				st.Values = []string{"0"}
			} else {
				st.Values = []string{Format(x.Args[len(x.Args)-1])}
			}
			return st, true
		case x.Name == "SUM":
			return Step{Role: RoleSum, Expr: Format(x)}, true
		case x.Name == "COUNT":
			return Step{Role: RoleCount, Expr: Format(x)}, true
		case x.Name == "AVG":
			return Step{Role: RoleAvg, Expr: Format(x)}, true
		case x.Name == "MIN" || x.Name == "MAX":
			return Step{Role: RoleMinMax, Expr: Format(x)}, true
		}
	case *Binary:
		op := strings.ToUpper(x.Op)
		other := x.R
		if x.R == child {
			other = x.L
		}
		switch {
		case comparisonOps[op] && clause == "join":
			if _, col := other.(*ColumnRef); col {
				return Step{Role: RoleJoin, Expr: Format(x), Op: op}, true
			}
			return Step{Role: RoleCompare, Expr: Format(x), Op: op, Values: literals(other)}, true
		case comparisonOps[op]:
			return Step{Role: RoleCompare, Expr: Format(x), Op: op, Values: literals(other)}, true
		case op == "LIKE" || op == "ILIKE" || op == "NOT LIKE" || op == "RLIKE" || op == "REGEXP":
			return Step{Role: RoleCompare, Expr: Format(x), Op: op, Values: literals(other)}, true
		case arithmeticOps[op]:
			return Step{Role: RoleArithmetic, Expr: Format(x), Op: op}, true
		}
	case *In:
		if x.X != child {
			return Step{}, false
		}
		op := "IN"
		if x.Not {
			op = "NOT IN"
		}
		var vals []string
		for _, i := range x.List {
			vals = append(vals, literals(i)...)
		}
		return Step{Role: RoleIn, Expr: Format(x), Op: op, Values: vals}, true
	case *Between:
		if x.X == child {
			return Step{Role: RoleCompare, Expr: Format(x), Op: "BETWEEN", Values: append(literals(x.Lo), literals(x.Hi)...)}, true
		}
	case *IsNull:
		if x.Other == nil {
			return Step{Role: RoleIsNull, Expr: Format(x)}, true
		}
	case *Case:
		st := Step{Role: RoleCase, Expr: Format(x)}
		if x.Else != nil {
			st.Else = Format(x.Else)
		}
		if x.Operand == child {
			for _, wh := range x.Whens {
				st.Values = append(st.Values, literals(wh.Cond)...)
			}
			st.Op = "="
			return st, true
		}
		for _, wh := range x.Whens {
			if wh.Cond == child {
				return st, true
			}
		}
	}
	return Step{}, false
}

// literals are the constant values of x (a literal, or a list of them).
func literals(x Expr) []string {
	switch x := x.(type) {
	case *Literal:
		return []string{x.Text}
	case *Unary:
		if l, ok := x.X.(*Literal); ok && x.Op == "-" {
			return []string{"-" + l.Text}
		}
	case *ListExpr:
		var out []string
		for _, i := range x.Items {
			out = append(out, literals(i)...)
		}
		return out
	case *Cast:
		return literals(x.X)
	}
	return nil
}
