package lifecycle

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/sqlparse"
)

// evalRow evaluates one scalar SQL expression of a corrected statement over a decoded record, the
// way Flink SQL does for the subset a mapping and a filter use: column references, literals,
// arithmetic (integer division truncates), comparisons and three-valued AND/OR/NOT, IN, CASE,
// COALESCE/IFNULL/NVL, ROUND/FLOOR/CEIL/ABS and CAST (a floating value cast to an integer type
// truncates toward zero). A null operand gives null. Anything else is an error naming it, so a
// comparison that cannot be recomputed says so instead of guessing.
func evalRow(x sqlparse.Expr, row map[string]any) (any, error) {
	switch e := x.(type) {
	case *sqlparse.ColumnRef:
		return lookupField(row, e.Parts[len(e.Parts)-1]), nil
	case *sqlparse.Literal:
		return literalValue(e)
	case *sqlparse.Unary:
		v, err := evalRow(e.X, row)
		if err != nil || v == nil {
			return nil, err
		}
		switch strings.ToUpper(e.Op) {
		case "-":
			switch n := v.(type) {
			case int64:
				return -n, nil
			case float64:
				return -n, nil
			}
			return nil, fmt.Errorf("-%v is not a number", v)
		case "+":
			return v, nil
		case "NOT":
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("NOT %v is not a boolean", v)
			}
			return !b, nil
		}
		return nil, fmt.Errorf("operator %s is not evaluated", e.Op)
	case *sqlparse.Binary:
		return evalBinary(e, row)
	case *sqlparse.Cast:
		v, err := evalRow(e.X, row)
		if err != nil || v == nil {
			return nil, err
		}
		return castTo(v, e.Type)
	case *sqlparse.FuncCall:
		return evalFunc(e, row)
	case *sqlparse.In:
		if e.Query != nil {
			return nil, fmt.Errorf("IN (subquery) is not evaluated")
		}
		v, err := evalRow(e.X, row)
		if err != nil || v == nil {
			return nil, err
		}
		found, sawNull := false, false
		for _, it := range e.List {
			w, err := evalRow(it, row)
			if err != nil {
				return nil, err
			}
			if w == nil {
				sawNull = true
				continue
			}
			if c, ok := compare(v, w); ok && c == 0 {
				found = true
			}
		}
		switch {
		case found:
			return !e.Not, nil
		case sawNull:
			return nil, nil
		}
		return e.Not, nil
	case *sqlparse.Case:
		for _, w := range e.Whens {
			cond := w.Cond
			if e.Operand != nil {
				cond = &sqlparse.Binary{Op: "=", L: e.Operand, R: w.Cond}
			}
			v, err := evalRow(cond, row)
			if err != nil {
				return nil, err
			}
			if b, ok := v.(bool); ok && b {
				return evalRow(w.Result, row)
			}
		}
		if e.Else == nil {
			return nil, nil
		}
		return evalRow(e.Else, row)
	}
	return nil, fmt.Errorf("%s is not evaluated", sqlparse.Format(x))
}

// lookupField reads a field by name: the exact name, else the one equal ignoring case; a field
// the record's writer lacks reads as null (the restored schema's default).
func lookupField(row map[string]any, name string) any {
	if v, ok := row[name]; ok {
		return v
	}
	for k, v := range row {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

func literalValue(l *sqlparse.Literal) (any, error) {
	if l.String {
		return l.Text, nil
	}
	switch strings.ToUpper(l.Text) {
	case "NULL":
		return nil, nil
	case "TRUE":
		return true, nil
	case "FALSE":
		return false, nil
	}
	if n, err := strconv.ParseInt(l.Text, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(l.Text, 64); err == nil {
		return f, nil
	}
	return nil, fmt.Errorf("literal %s is not evaluated", l.Text)
}

func evalBinary(e *sqlparse.Binary, row map[string]any) (any, error) {
	op := strings.ToUpper(e.Op)
	l, err := evalRow(e.L, row)
	if err != nil {
		return nil, err
	}
	r, err := evalRow(e.R, row)
	if err != nil {
		return nil, err
	}
	switch op {
	case "AND", "OR":
		lb, lok := l.(bool)
		rb, rok := r.(bool)
		if (l != nil && !lok) || (r != nil && !rok) {
			return nil, fmt.Errorf("%s needs booleans", op)
		}
		if op == "AND" {
			if lok && !lb || rok && !rb {
				return false, nil
			}
			if lok && rok {
				return true, nil
			}
			return nil, nil
		}
		if lok && lb || rok && rb {
			return true, nil
		}
		if lok && rok {
			return false, nil
		}
		return nil, nil
	}
	if l == nil || r == nil {
		return nil, nil
	}
	switch op {
	case "=", "<>", "!=", "<", "<=", ">", ">=":
		c, ok := compare(l, r)
		if !ok {
			return nil, fmt.Errorf("%v %s %v compares values of different types", l, op, r)
		}
		switch op {
		case "=":
			return c == 0, nil
		case "<>", "!=":
			return c != 0, nil
		case "<":
			return c < 0, nil
		case "<=":
			return c <= 0, nil
		case ">":
			return c > 0, nil
		}
		return c >= 0, nil
	case "||":
		return fmt.Sprint(l) + fmt.Sprint(r), nil
	case "+", "-", "*", "/", "%":
		return arith(op, l, r)
	}
	return nil, fmt.Errorf("operator %s is not evaluated", e.Op)
}

func arith(op string, l, r any) (any, error) {
	li, lInt := l.(int64)
	ri, rInt := r.(int64)
	if lInt && rInt {
		switch op {
		case "+":
			return li + ri, nil
		case "-":
			return li - ri, nil
		case "*":
			return li * ri, nil
		case "/", "%":
			if ri == 0 {
				return nil, fmt.Errorf("division by zero")
			}
			if op == "/" {
				return li / ri, nil
			}
			return li % ri, nil
		}
	}
	lf, lok := toFloat(l)
	rf, rok := toFloat(r)
	if !lok || !rok {
		return nil, fmt.Errorf("%v %s %v: not numbers", l, op, r)
	}
	switch op {
	case "+":
		return lf + rf, nil
	case "-":
		return lf - rf, nil
	case "*":
		return lf * rf, nil
	case "/":
		return lf / rf, nil
	}
	return math.Mod(lf, rf), nil
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// compare orders two non-null values of the same kind (numbers with numbers).
func compare(a, b any) (int, bool) {
	if af, ok := toFloat(a); ok {
		bf, ok := toFloat(b)
		if !ok {
			return 0, false
		}
		switch {
		case af < bf:
			return -1, true
		case af > bf:
			return 1, true
		}
		return 0, true
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return strings.Compare(x, y), ok
	case bool:
		y, ok := b.(bool)
		if !ok {
			return 0, false
		}
		if x == y {
			return 0, true
		}
		if !x {
			return -1, true
		}
		return 1, true
	case time.Time:
		y, ok := b.(time.Time)
		return x.Compare(y), ok
	}
	return 0, false
}

func evalFunc(f *sqlparse.FuncCall, row map[string]any) (any, error) {
	if f.Over != nil || f.Filter != nil || f.Distinct {
		return nil, fmt.Errorf("%s with OVER, FILTER or DISTINCT is not evaluated", f.Name)
	}
	args := make([]any, len(f.Args))
	for i, a := range f.Args {
		v, err := evalRow(a, row)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	switch f.Name {
	case "COALESCE", "IFNULL", "NVL":
		for _, a := range args {
			if a != nil {
				return a, nil
			}
		}
		return nil, nil
	case "ROUND", "FLOOR", "CEIL", "CEILING", "ABS":
		if len(args) == 0 || args[0] == nil {
			return nil, nil
		}
		if n, ok := args[0].(int64); ok {
			if f.Name == "ABS" && n < 0 {
				return -n, nil
			}
			return n, nil
		}
		x, ok := toFloat(args[0])
		if !ok {
			return nil, fmt.Errorf("%s(%v): not a number", f.Name, args[0])
		}
		switch f.Name {
		case "FLOOR":
			return math.Floor(x), nil
		case "CEIL", "CEILING":
			return math.Ceil(x), nil
		case "ABS":
			return math.Abs(x), nil
		}
		digits := int64(0)
		if len(args) > 1 {
			d, ok := args[1].(int64)
			if !ok {
				return nil, fmt.Errorf("ROUND's digits %v is not an integer", args[1])
			}
			digits = d
		}
		p := math.Pow(10, float64(digits))
		return math.Round(x*p) / p, nil // half away from zero, as Flink rounds
	}
	return nil, fmt.Errorf("function %s is not evaluated", f.Name)
}

// castTo converts a non-null value to a SQL type.
func castTo(v any, typ string) (any, error) {
	t := strings.ToUpper(strings.TrimSpace(typ))
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	switch t {
	case "BIGINT", "INT", "INTEGER", "SMALLINT", "TINYINT":
		switch n := v.(type) {
		case int64:
			return n, nil
		case float64:
			if math.IsNaN(n) || math.IsInf(n, 0) {
				return nil, fmt.Errorf("CAST(%v AS %s): not finite", n, t)
			}
			return int64(n), nil // truncates toward zero
		case string:
			i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("CAST(%q AS %s): %w", n, t, err)
			}
			return i, nil
		}
	case "DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC":
		if f, ok := toFloat(v); ok {
			return f, nil
		}
		if s, ok := v.(string); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, fmt.Errorf("CAST(%q AS %s): %w", s, t, err)
			}
			return f, nil
		}
	case "STRING", "VARCHAR", "CHAR", "TEXT":
		return fmt.Sprint(v), nil
	}
	return nil, fmt.Errorf("CAST(%v AS %s) is not evaluated", v, typ)
}
