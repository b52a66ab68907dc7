package impact

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// SQLAttr is the asset attribute holding the SQL a reader runs: a Flink statement's text, a dbt
// model's compiled code, an OpenLineage job's SQL facet, a view's definition.
const SQLAttr = "sql"

// SQLRead is one thing a reader's SQL does with the changed value, in one sentence that quotes
// the expression.
type SQLRead struct {
	// Expr is the outermost expression that matters, written back as SQL.
	Expr   string `json:"expr"`
	Clause string `json:"clause"`
	Output string `json:"output,omitempty"`
	// Sentence says what happens: "COALESCE(weight_grams, 0) turns the missing value into 0: …".
	Sentence string `json:"sentence"`
	// Breaks: the result is wrong or rows vanish because of it.
	Breaks bool `json:"breaks"`
}

// ValueChange is a change to a field's values a reader can compare: enum symbols added, or codes
// seen in a low-cardinality field that older records never had.
type ValueChange struct {
	Field     string   `json:"field"`
	NewValues []string `json:"new_values"`
	// Source says where the values come from ("enum symbols added in v9", "topic sample").
	Source string `json:"source"`
}

// sqlReads reads the reader's SQL and says, per reference to column of table, what the SQL does
// with a value showing symptom sym (or, for a value change, with the new values).
func sqlReads(a graph.Asset, table, column string, sym View, values *ValueChange) []SQLRead {
	text := a.Attrs[SQLAttr]
	if strings.TrimSpace(text) == "" || column == "" {
		return nil
	}
	stmts, _, err := sqlparse.ParseScript(text)
	if err != nil {
		return nil
	}
	var out []SQLRead
	for _, st := range stmts {
		uses := sqlparse.ValueUses(st, nil, table, column)
		if len(uses) == 0 && table != "" {
			uses = sqlparse.ValueUses(st, nil, "", column)
		}
		for _, u := range uses {
			var r SQLRead
			var ok bool
			if values != nil {
				r, ok = valueSentence(u, column, *values)
			} else {
				r, ok = symptomSentence(u, column, sym)
			}
			if ok && !slices.ContainsFunc(out, func(x SQLRead) bool { return x.Sentence == r.Sentence }) {
				out = append(out, r)
			}
		}
	}
	return out
}

func clauseWord(clause string) string {
	switch clause {
	case "where":
		return "WHERE "
	case "having":
		return "HAVING "
	case "qualify":
		return "QUALIFY "
	case "join":
		return "JOIN … ON "
	}
	return ""
}

// symptomSentence follows the value through the steps around one reference: a NULL, a zero or a
// default going in, and what each step makes of it.
func symptomSentence(u sqlparse.ValueUse, column string, sym View) (SQLRead, bool) {
	state := sym.Symptom // nulls, zeros, default
	value := "NULL"
	switch state {
	case SymptomNulls:
	case SymptomZeros, SymptomDefault:
		value = strings.TrimSuffix(sym.Sees, " (the enum's first value)")
		value = strings.TrimPrefix(value, "the default ")
	case SymptomRowsMissing, SymptomStatementFailed:
		return rowsSentence(u, sym)
	case SymptomUnderstated:
		return understatedSentence(u)
	default:
		return SQLRead{}, false
	}
	var parts []string
	breaks := false
	expr := ""
	for _, s := range u.Steps {
		expr = s.Expr
		q := "`" + s.Expr + "`"
		if s.Role == sqlparse.RoleCompare || s.Role == sqlparse.RoleIn || s.Role == sqlparse.RoleJoin {
			q = "`" + clauseWord(u.Clause) + s.Expr + "`"
		}
		done := false
		switch s.Role {
		case sqlparse.RoleCoalesce:
			if state == SymptomNulls {
				d := s.Values[0]
				parts = append(parts, fmt.Sprintf("%s turns the missing value into %s: the number is understated and every not_null test passes", q, d))
				state, value, breaks = SymptomZeros, d, true
				if !isZero(d) {
					state = SymptomDefault
				}
			} else {
				parts = append(parts, fmt.Sprintf("%s never fires: the %s passes through as if it were real", q, value))
			}
		case sqlparse.RoleSum:
			if state == SymptomNulls {
				parts = append(parts, q+" skips nulls: sums shrink, and a group whose every record lacks the value sums to NULL")
			} else if isZero(value) {
				parts = append(parts, q+" adds zeros: sums drop toward zero and no null check sees it")
			} else {
				parts = append(parts, fmt.Sprintf("%s adds %s for every new record instead of the real value", q, value))
			}
			breaks, done = true, true
		case sqlparse.RoleCount:
			if state == SymptomNulls {
				parts = append(parts, q+" counts only non-null values: counts drop")
				breaks = true
			} else {
				parts = append(parts, fmt.Sprintf("%s still counts them: the count looks right while the values are %s", q, value))
			}
			done = true
		case sqlparse.RoleAvg:
			if state == SymptomNulls {
				parts = append(parts, q+" averages only the rows that still have the value: the average rests on fewer rows")
			} else {
				parts = append(parts, fmt.Sprintf("%s is pulled toward %s", q, value))
			}
			breaks, done = true, true
		case sqlparse.RoleMinMax:
			if state == SymptomNulls {
				parts = append(parts, q+" ignores nulls: the extreme comes from fewer rows")
			} else {
				parts = append(parts, fmt.Sprintf("%s can become %s", q, value))
			}
			breaks, done = true, true
		case sqlparse.RoleArithmetic:
			if state == SymptomNulls {
				parts = append(parts, q+" is NULL whenever "+column+" is: null propagates")
			} else {
				parts = append(parts, fmt.Sprintf("%s is computed from %s", q, value))
			}
			breaks = true
		case sqlparse.RoleCompare, sqlparse.RoleIn:
			r := compareSentence(q, s, state, value, u.Clause)
			parts = append(parts, r)
			breaks, done = true, true
		case sqlparse.RoleJoin:
			if state == SymptomNulls {
				parts = append(parts, q+" finds no match for those rows (NULL equals nothing): an inner join drops them, an outer join leaves the other side empty")
			} else {
				parts = append(parts, fmt.Sprintf("%s joins on %s: those rows match the row keyed %s, or none", q, value, value))
			}
			breaks, done = true, true
		case sqlparse.RoleCase:
			if state == SymptomNulls {
				els := "NULL (it has no ELSE)"
				if s.Else != "" {
					els = s.Else
				}
				parts = append(parts, fmt.Sprintf("%s matches no branch for NULL and yields %s", q, els))
			} else {
				parts = append(parts, fmt.Sprintf("%s picks its branch for %s", q, value))
			}
			breaks, done = true, true
		case sqlparse.RoleIsNull:
			if state == SymptomNulls {
				parts = append(parts, q+" is true for every new record")
			} else {
				parts = append(parts, fmt.Sprintf("%s stays false: the missing value reads as %s and is invisible to it", q, value))
			}
			breaks, done = true, true
		case sqlparse.RoleGroup:
			parts = append(parts, fmt.Sprintf("%s puts every new record into the %s group", q, value))
			breaks, done = true, true
		}
		if done {
			break
		}
	}
	if len(parts) == 0 {
		if u.Clause != "select" || u.Output == "" {
			return SQLRead{}, false
		}
		// Read as is: the output column carries the value on.
		return SQLRead{Expr: column, Clause: u.Clause, Output: u.Output, Breaks: true,
			Sentence: fmt.Sprintf("passes %s on as %s: %s for new records", column, u.Output, value)}, true
	}
	s := strings.Join(parts, "; then ")
	if u.Output != "" {
		s += " (into " + u.Output + ")"
	}
	return SQLRead{Expr: expr, Clause: u.Clause, Output: u.Output, Sentence: s, Breaks: breaks}, true
}

// compareSentence says what a comparison does with the incoming value.
func compareSentence(q string, s sqlparse.Step, state Symptom, value, clause string) string {
	filters := clause == "where" || clause == "having" || clause == "qualify" || clause == "join"
	if state == SymptomNulls {
		if filters {
			return q + " filters those rows out (a comparison with NULL is never true)"
		}
		return q + " is NULL, not true or false, for those rows"
	}
	res, known := evaluate(s, value)
	switch {
	case !known:
		return fmt.Sprintf("%s compares %s instead of the real value", q, value)
	case !res && filters:
		return fmt.Sprintf("%s filters every new row out (%s does not pass it)", q, value)
	case res && filters:
		return fmt.Sprintf("%s keeps every new row (%s passes it), whatever the real value was", q, value)
	case res:
		return fmt.Sprintf("%s is true for every new row (%s)", q, value)
	}
	return fmt.Sprintf("%s is false for every new row (%s)", q, value)
}

// evaluate works out a comparison of value against the step's literals when both are numbers or
// the operator is an equality or IN.
func evaluate(s sqlparse.Step, value string) (result, known bool) {
	if len(s.Values) == 0 {
		return false, false
	}
	v := strings.Trim(value, `"'`)
	switch s.Op {
	case "IN", "NOT IN":
		in := slices.Contains(s.Values, v)
		return in == (s.Op == "IN"), true
	case "BETWEEN":
		a, err1 := strconv.ParseFloat(v, 64)
		lo, err2 := strconv.ParseFloat(s.Values[0], 64)
		hi, err3 := strconv.ParseFloat(s.Values[len(s.Values)-1], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return false, false
		}
		return a >= lo && a <= hi, true
	}
	lit := s.Values[0]
	a, err1 := strconv.ParseFloat(v, 64)
	b, err2 := strconv.ParseFloat(lit, 64)
	if err1 != nil || err2 != nil {
		switch s.Op {
		case "=":
			return v == lit, true
		case "<>", "!=":
			return v != lit, true
		}
		return false, false
	}
	switch s.Op {
	case "=":
		return a == b, true
	case "<>", "!=":
		return a != b, true
	case ">":
		return a > b, true
	case ">=":
		return a >= b, true
	case "<":
		return a < b, true
	case "<=":
		return a <= b, true
	}
	return false, false
}

func isZero(v string) bool { return zeroText(strings.Trim(v, `"`)) || v == `""` || v == "''" }

// rowsSentence: when records never arrive, only what counts or sums the rows changes.
func rowsSentence(u sqlparse.ValueUse, sym View) (SQLRead, bool) {
	for _, s := range u.Steps {
		switch s.Role {
		case sqlparse.RoleSum, sqlparse.RoleCount, sqlparse.RoleAvg:
			why := "the records that cannot be decoded are skipped"
			if sym.Symptom == SymptomStatementFailed {
				why = "the statement upstream stops, so no new rows arrive and the result goes stale"
			}
			return SQLRead{Expr: s.Expr, Clause: u.Clause, Output: u.Output, Breaks: true,
				Sentence: fmt.Sprintf("`%s` is computed without them: %s", s.Expr, why)}, true
		}
	}
	return SQLRead{}, false
}

// valueSentence says what a comparison, a CASE or a join does with a value it has never seen.
func valueSentence(u sqlparse.ValueUse, column string, vc ValueChange) (SQLRead, bool) {
	vals := strings.Join(vc.NewValues, ", ")
	for _, s := range u.Steps {
		q := "`" + clauseWord(u.Clause) + s.Expr + "`"
		filters := u.Clause == "where" || u.Clause == "having" || u.Clause == "qualify"
		r := SQLRead{Expr: s.Expr, Clause: u.Clause, Output: u.Output}
		switch s.Role {
		case sqlparse.RoleCompare, sqlparse.RoleIn:
			if s.Op != "=" && s.Op != "IN" && s.Op != "<>" && s.Op != "!=" && s.Op != "NOT IN" {
				continue
			}
			matched := false
			for _, v := range vc.NewValues {
				if res, known := evaluate(s, v); known && res {
					matched = true
				}
			}
			switch {
			case !matched && filters:
				r.Sentence, r.Breaks = fmt.Sprintf("the new value %s is filtered out by %s: those rows vanish from this reader", vals, q), true
			case !matched:
				r.Sentence, r.Breaks = fmt.Sprintf("the new value %s never matches %s: it is counted as not matching", vals, q), true
			case s.Op == "<>" || s.Op == "!=" || s.Op == "NOT IN":
				r.Sentence = fmt.Sprintf("the new value %s passes %s and is counted with the others", vals, q)
			default:
				continue
			}
			return r, true
		case sqlparse.RoleCase:
			els := "NULL (it has no ELSE)"
			if s.Else != "" {
				els = s.Else
			}
			hit := false
			for _, v := range vc.NewValues {
				hit = hit || slices.Contains(s.Values, v)
			}
			if hit {
				continue
			}
			r.Sentence, r.Breaks = fmt.Sprintf("`%s` has no branch for the new value %s and yields %s", s.Expr, vals, els), true
			return r, true
		case sqlparse.RoleJoin:
			r.Sentence, r.Breaks = fmt.Sprintf("the new value %s is joined on by %s: unless the other side has a row for it, an inner join drops those rows", vals, q), true
			return r, true
		case sqlparse.RoleGroup:
			r.Sentence = fmt.Sprintf("`GROUP BY %s` gets a new group %s", column, vals)
			return r, true
		}
	}
	return SQLRead{}, false
}

// understatedSentence: the value is a figure that lost part of its input upstream.
func understatedSentence(u sqlparse.ValueUse) (SQLRead, bool) {
	var parts []string
	r := SQLRead{Clause: u.Clause, Output: u.Output, Breaks: true}
	for _, s := range u.Steps {
		q := "`" + clauseWord(u.Clause) + s.Expr + "`"
		r.Expr = s.Expr
		switch s.Role {
		case sqlparse.RoleCoalesce:
			parts = append(parts, fmt.Sprintf("%s turns a figure that came out NULL (every input lacked the value) into %s: it is understated and every not_null test passes", q, s.Values[0]))
			continue
		case sqlparse.RoleSum, sqlparse.RoleAvg, sqlparse.RoleMinMax, sqlparse.RoleArithmetic:
			parts = append(parts, q+" carries the understated figure on")
		case sqlparse.RoleCompare, sqlparse.RoleIn, sqlparse.RoleCase:
			parts = append(parts, q+" is judged on understated figures: rows near the threshold change side or drop out")
		default:
			continue
		}
		break
	}
	if len(parts) == 0 {
		if u.Clause == "select" && u.Output != "" {
			return SQLRead{Expr: u.Output, Clause: u.Clause, Output: u.Output, Breaks: true, Sentence: "passes the understated figure on as " + u.Output}, true
		}
		return SQLRead{}, false
	}
	r.Sentence = strings.Join(parts, "; then ")
	if u.Output != "" {
		r.Sentence += " (into " + u.Output + ")"
	}
	return r, true
}

// ChangeValuesAdded marks a reader reached by a value change (ValueChange) rather than a field change.
const ChangeValuesAdded = "values_added"

// SymptomMisclassified: a CASE sends the new value to its ELSE branch (or NULL).
const SymptomMisclassified Symptom = "misclassified"

// valueChanges are the enum symbols the change adds plus the caller's observed new values.
func valueChanges(req Request, diff []schema.Change) []ValueChange {
	var out []ValueChange
	for _, c := range diff {
		if c.Kind == schema.EnumSymbolsAdded && len(c.SymbolsAdded) > 0 {
			out = append(out, ValueChange{Field: c.Path, NewValues: c.SymbolsAdded, Source: "enum symbols added in " + req.label()})
		}
	}
	for _, v := range req.NewValues {
		if v.Field != "" && len(v.NewValues) > 0 {
			if v.Source == "" {
				v.Source = "given by the caller"
			}
			out = append(out, v)
		}
	}
	return out
}

// valueReaders finds the readers downstream of a value change whose SQL compares the value.
func (a *Assessor) valueReaders(ctx context.Context, req Request, subj graph.URN, vc ValueChange, predicted []View) ([]Reader, bool, error) {
	// A statement pinned to the old version decodes records itself: the format may not resolve
	// the new value at all (an Avro enum symbol without a default).
	var pinnedFails *View
	for i, p := range predicted {
		if p.Field == vc.Field && (p.Symptom == SymptomStatementFailed || p.Symptom == SymptomRowsMissing || p.Symptom == SymptomDefault) {
			pinnedFails = &predicted[i]
		}
	}
	lin, err := a.g.Traverse(ctx, []graph.FieldRef{subj.Field(vc.Field)}, graph.TraverseOptions{Direction: graph.Downstream, MaxDepth: req.MaxDepth})
	if err != nil {
		return nil, false, err
	}
	// Every asset the walk reached, in one read of the graph; get reads one it missed.
	assets, err := a.g.GetMany(ctx, reachedAssets(lin))
	if err != nil {
		return nil, false, err
	}
	get := func(u graph.URN) graph.Asset {
		if x, ok := assets[u]; ok {
			return x
		}
		x, err := a.g.Get(ctx, u)
		if err != nil {
			x = graph.Asset{URN: u}
		}
		assets[u] = x
		return x
	}
	byAsset := map[graph.URN]*Reader{}
	var order []graph.URN
	for _, n := range lin.Nodes {
		asset := get(n.Node.Asset)
		if carrier(asset.Kind) || n.Node.Asset == subj || asset.Attrs[SQLAttr] == "" {
			continue
		}
		via := get(n.Via.Asset)
		col := n.Via.Path
		if col == "" {
			col = vc.Field
		}
		reads := sqlReads(asset, via.Name, col, View{}, &vc)
		pinned := 0
		if asset.Kind == graph.KindFlinkStatement {
			pinned = pinnedVersion(asset.Attrs["schema_pins"], req.Subject)
		}
		if pinnedFails != nil && asset.Kind == graph.KindFlinkStatement && (carrier(via.Kind) || n.Via.Asset == subj) &&
			(req.NewVersion == 0 || pinned < req.NewVersion) {
			v := *pinnedFails
			if m := errorHandling(asset, via); m != "" {
				for _, p := range Predict(req.Old, req.New, m) {
					if p.Field == vc.Field {
						v = p
					}
				}
			}
			reads = append([]SQLRead{{Expr: col, Clause: "decode", Breaks: true,
				Sentence: fmt.Sprintf("decodes %s with the schema it was created against: %s", col, v.Why)}}, reads...)
		}
		if len(reads) == 0 {
			continue
		}
		r := byAsset[asset.URN]
		if r == nil {
			r = &Reader{URN: asset.URN, Kind: asset.Kind, System: asset.System, Name: asset.Name, Depth: n.Depth, Field: vc.Field,
				Change: ChangeValuesAdded, Via: n.Via.Asset, Owners: asset.Owners, Tags: asset.Tags, Criticality: asset.Criticality,
				Schedule: asset.Schedule, Sees: "the new value " + strings.Join(vc.NewValues, ", "), Symptom: SymptomNone}
			r.Severity, r.SeverityReason = severityOf(asset)
			r.PinnedVersion = pinned
			byAsset[asset.URN] = r
			order = append(order, asset.URN)
		}
		for _, rd := range reads {
			if slices.ContainsFunc(r.Reads, func(x SQLRead) bool { return x.Sentence == rd.Sentence }) {
				continue
			}
			r.Reads = append(r.Reads, rd)
			if rd.Breaks && !r.Breaks {
				r.Breaks, r.Effect = true, rd.Sentence
				r.Evidence = rd.Expr
				r.Symptom = SymptomRowsMissing
				switch {
				case rd.Clause == "decode" && pinnedFails != nil:
					r.Symptom = pinnedFails.Symptom
					if strings.Contains(rd.Sentence, "is skipped") {
						r.Symptom = SymptomRowsMissing
					}
				case strings.HasPrefix(rd.Expr, "CASE"):
					r.Symptom = SymptomMisclassified
				}
			}
		}
		if r.Effect == "" {
			r.Effect = r.Reads[0].Sentence
		}
	}
	out := make([]Reader, 0, len(order))
	for _, u := range order {
		out = append(out, *byAsset[u])
	}
	return out, lin.Truncated, nil
}

// ValueReaders are the readers of an assessment that a value change breaks (a filter that drops
// the new value, a CASE without a branch for it, a join on it): the gate reports them beside the
// field-level readers.
func ValueReaders(a Assessment) []Reader {
	var out []Reader
	for _, r := range a.Readers {
		if r.Change == ChangeValuesAdded && r.Breaks {
			out = append(out, r)
		}
	}
	return out
}

// NullReads says what a reader's SQL does with column of table when the value arrives NULL (a
// dropped or emptied column upstream), expression by expression: for a blast radius, which
// names the readers but not yet the change's format.
func NullReads(a graph.Asset, table, column string) []SQLRead {
	return sqlReads(a, table, column, View{Symptom: SymptomNulls, Sees: "NULL"}, nil)
}

// ReadsOf says what the SQL text does with column of table when the value shows v's symptom (or,
// with values set, when it takes the new values): for callers that hold a statement's SQL but no
// graph asset, such as a diagnosis.
func ReadsOf(sql, table, column string, v View, values *ValueChange) []SQLRead {
	return sqlReads(graph.Asset{Attrs: map[string]string{SQLAttr: sql}}, table, column, v, values)
}

// DropView is what readers of subject see of fields once a version drops them, from what the
// graph records of the subject: its format (the schema_type attribute) and each field's type and
// presence. ok is false when that does not settle it — Avro, whose reader fills in its own
// default (not in the graph), an unknown format, fields whose views differ — and then callers
// fall back to NullReads, the common case (a nullable Avro field's default is null).
func DropView(subject graph.Asset, fields []graph.Field) (v View, ok bool) {
	format, err := schema.ParseFormat(subject.Attrs["schema_type"])
	if err != nil || format == schema.Avro || len(fields) == 0 {
		return View{}, false
	}
	for i, f := range fields {
		// The graph does not record proto2's required: a field it lists is taken as optional.
		got := ReaderView(format, &schema.Field{Path: f.Path, Type: f.Type, Nullable: f.Nullable, Optional: true}, nil, "")
		if i > 0 && (got.Symptom != v.Symptom || got.Sees != v.Sees) {
			return View{}, false
		}
		if i == 0 {
			v = got
		}
	}
	return v, true
}

// ReadsAs says what a reader's SQL does with column of table when the value shows v's symptom.
func ReadsAs(a graph.Asset, table, column string, v View) []SQLRead {
	return sqlReads(a, table, column, v, nil)
}
