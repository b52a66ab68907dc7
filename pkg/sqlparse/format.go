package sqlparse

import (
	"strings"
)

// Format writes an expression back as SQL, normalised (upper-case keywords and function names,
// single spaces), so a sentence can quote what a statement does with a column.
func Format(x Expr) string {
	var b strings.Builder
	format(&b, x)
	return b.String()
}

func format(b *strings.Builder, x Expr) {
	switch x := x.(type) {
	case nil:
	case *ColumnRef:
		for i, p := range x.Parts {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(ident(p))
		}
	case *Literal:
		if x.String {
			b.WriteString("'" + strings.ReplaceAll(x.Text, "'", "''") + "'")
		} else {
			b.WriteString(x.Text)
		}
	case *StarArg:
		b.WriteByte('*')
	case *FuncCall:
		b.WriteString(x.Name + "(")
		if x.Distinct {
			b.WriteString("DISTINCT ")
		}
		list(b, x.Args)
		b.WriteByte(')')
		if x.Filter != nil {
			b.WriteString(" FILTER (WHERE ")
			format(b, x.Filter)
			b.WriteByte(')')
		}
		if x.Over != nil {
			b.WriteString(" OVER (…)")
		}
	case *Binary:
		operand(b, x.L, x.Op)
		b.WriteString(" " + strings.ToUpper(x.Op) + " ")
		operand(b, x.R, x.Op)
	case *Unary:
		op := strings.ToUpper(x.Op)
		b.WriteString(op)
		if op == "NOT" {
			b.WriteByte(' ')
		}
		format(b, x.X)
	case *Case:
		b.WriteString("CASE")
		if x.Operand != nil {
			b.WriteByte(' ')
			format(b, x.Operand)
		}
		for _, w := range x.Whens {
			b.WriteString(" WHEN ")
			format(b, w.Cond)
			b.WriteString(" THEN ")
			format(b, w.Result)
		}
		if x.Else != nil {
			b.WriteString(" ELSE ")
			format(b, x.Else)
		}
		b.WriteString(" END")
	case *Cast:
		b.WriteString("CAST(")
		format(b, x.X)
		b.WriteString(" AS " + x.Type + ")")
	case *In:
		format(b, x.X)
		if x.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		if x.Query != nil {
			b.WriteString("SELECT …")
		} else {
			list(b, x.List)
		}
		b.WriteByte(')')
	case *Between:
		format(b, x.X)
		b.WriteString(" BETWEEN ")
		format(b, x.Lo)
		b.WriteString(" AND ")
		format(b, x.Hi)
	case *IsNull:
		format(b, x.X)
		if x.Other != nil {
			b.WriteString(" IS DISTINCT FROM ")
			format(b, x.Other)
		} else {
			b.WriteString(" IS NULL")
		}
	case *Exists:
		b.WriteString("EXISTS (SELECT …)")
	case *ScalarSubquery:
		b.WriteString("(SELECT …)")
	case *Interval:
		b.WriteString(x.Text)
	case *Descriptor:
		b.WriteString("DESCRIPTOR(" + strings.Join(x.Columns, ", ") + ")")
	case *TableArg:
		b.WriteString("TABLE …")
	case *NamedArg:
		b.WriteString(x.Name + " => ")
		format(b, x.Value)
	case *Access:
		format(b, x.X)
		b.WriteByte('[')
		format(b, x.Index)
		b.WriteByte(']')
	case *ListExpr:
		b.WriteByte('(')
		list(b, x.Items)
		b.WriteByte(')')
	}
}

// operand writes a side of a binary operator, parenthesised when it is another operator (the
// parser's precedence is not re-derived; parentheses keep the meaning).
func operand(b *strings.Builder, x Expr, op string) {
	if in, ok := x.(*Binary); ok && !strings.EqualFold(in.Op, op) {
		b.WriteByte('(')
		format(b, x)
		b.WriteByte(')')
		return
	}
	format(b, x)
}

func list(b *strings.Builder, xs []Expr) {
	for i, a := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		format(b, a)
	}
}

// ident quotes a name that is not a plain word.
func ident(s string) string {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' || c == '$') {
			return "`" + strings.ReplaceAll(s, "`", "``") + "`"
		}
	}
	if s == "" {
		return "``"
	}
	return s
}
