package plans

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dataworkers/dw/pkg/sqlparse"
	"github.com/dataworkers/dw/pkg/units"
)

// The corrected statement is written by editing the pinned statement's SQL text token by token
// (so the owner sees their own statement with the smallest change), then re-parsed with
// pkg/sqlparse and analysed against the fields the new statement will pin: a draft that does not
// parse, or reads a field the schema lacks, is refused instead of proposed.

// UnitRule is stated in the plan wherever a factor is derived: units come from the fields' names
// and the rounding from their types (pkg/units).
const UnitRule = units.Rule

// Replacement is how a removed field's value is read from the field that replaced it.
type Replacement struct {
	Removed string `json:"removed"`
	With    string `json:"with"`
	// Factor converts the replacement to the removed field's unit ("1024", "1/1000"); "1" for a rename.
	Factor string `json:"factor"`
	Why    string `json:"why"`
	// Conversion is the derived SQL over the replacement, "%s" standing for its reference; empty
	// for a rename or a factor given by hand (then the replacement is widened to BIGINT and multiplied).
	Conversion string `json:"conversion,omitempty"`
	// Exact is false when the conversion rounds; Loss then says what is lost.
	Exact bool   `json:"exact,omitempty"`
	Loss  string `json:"precision_loss,omitempty"`
	// Origin says who the mapping came from: the schema's rename, pkg/units, or the client.
	Origin string `json:"origin"`
	// OldFirst reads the restored field before the replacement: the replacement reads as a
	// zero, not null, in records written before it existed (a proto3 scalar without presence).
	OldFirst bool `json:"old_first,omitempty"`
}

// Where a replacement came from.
const (
	OriginMappingRename = "renamed in the schema"
	OriginMappingUnits  = "derived by pkg/units from the fields' units and types"
	OriginMappingClient = "given by the client in field_mappings"
)

// deriveReplacement finds the one added field that carries removed's quantity in another unit,
// the conversion chosen from the fields' types (types maps a field to its schema type; a missing
// type rounds rather than truncates). It returns a reason instead when none or several qualify.
func deriveReplacement(removed string, added []string, renamedTo string, types map[string]string) (Replacement, string) {
	if renamedTo != "" {
		return Replacement{Removed: removed, With: renamedTo, Factor: "1", Exact: true, Origin: OriginMappingRename, Why: removed + " was renamed to " + renamedTo}, ""
	}
	stem, _, ok := units.Split(removed)
	if !ok {
		return Replacement{}, fmt.Sprintf("no factor can be derived for %s: its name ends in no known unit (%s)", removed, UnitRule)
	}
	var cands []Replacement
	var refused []string
	for _, a := range added {
		if s, _, ok := units.Split(a); !ok || s != stem {
			continue
		}
		c, err := units.Derive(units.Field{Name: a, Type: types[a]}, units.Field{Name: removed, Type: types[removed]})
		if err != nil {
			refused = append(refused, err.Error())
			continue
		}
		why := c.Why
		if c.Loss != "" {
			why += "; " + c.Loss
		}
		cands = append(cands, Replacement{Removed: removed, With: a, Factor: c.Factor, Conversion: c.SQL, Exact: c.Exact, Loss: c.Loss, Origin: OriginMappingUnits,
			Why: why + " (" + UnitRule + ")"})
	}
	switch len(cands) {
	case 0:
		if len(refused) > 0 {
			return Replacement{}, fmt.Sprintf("no conversion is derived for %s: %s", removed, strings.Join(refused, "; "))
		}
		return Replacement{}, fmt.Sprintf("no field added beside the removal of %s carries the same quantity (same stem %q, a unit of the same dimension); no factor is guessed (%s)", removed, stem, UnitRule)
	case 1:
		return cands[0], ""
	}
	var names []string
	for _, c := range cands {
		names = append(names, c.With)
	}
	return Replacement{}, fmt.Sprintf("several added fields could replace %s (%s); name the one to read in a client proposal", removed, strings.Join(names, ", "))
}

// Expression is the read of the removed field in the corrected statement: the replacement
// converted to the old unit, falling back to the old field (records still written with it), or
// the old field first when the replacement reads as zero where absent (OldFirst). A
// derived conversion widens integers to BIGINT before multiplying and rounds (never truncates)
// into an integer field; a hand-given factor is applied to the replacement cast to BIGINT.
func (r Replacement) Expression(qualifier string) string {
	with := qualifier + quoteIdent(r.With)
	switch {
	case r.Origin == OriginMappingClient:
		with = r.Conversion // the client's expression as given, never templated
	case r.Conversion != "":
		with = strings.ReplaceAll(r.Conversion, "%s", with)
	case r.Factor != "1":
		with = "CAST(" + with + " AS BIGINT) * " + r.Factor
	}
	if r.OldFirst {
		return fmt.Sprintf("COALESCE(%s%s, %s)", qualifier, quoteIdent(r.Removed), with)
	}
	return fmt.Sprintf("COALESCE(%s, %s%s)", with, qualifier, quoteIdent(r.Removed))
}

// Readable is the read as an approver states it: COALESCE(response_kib * 1024, response_bytes);
// a conversion that rounds is shown whole, so the rounding is seen.
func (r Replacement) Readable() string {
	with := quoteIdent(r.With)
	switch {
	case r.Origin == OriginMappingClient:
		with = r.Conversion
	case r.Conversion != "" && !r.Exact:
		with = strings.ReplaceAll(r.Conversion, "%s", with)
	case r.Factor != "1":
		with += " * " + r.Factor
	}
	if r.OldFirst {
		return fmt.Sprintf("COALESCE(%s, %s)", quoteIdent(r.Removed), with)
	}
	return fmt.Sprintf("COALESCE(%s, %s)", with, quoteIdent(r.Removed))
}

// quoteIdent backquotes an identifier that is not a plain lower-case word (Flink's quoting).
func quoteIdent(s string) string {
	plain := s != ""
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
		}
	}
	if plain && !reserved[strings.ToUpper(s)] {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// reserved are words that must be quoted as identifiers in the draft (a subset of Flink's list
// that covers common column names).
var reserved = map[string]bool{"HOUR": true, "DAY": true, "MINUTE": true, "SECOND": true, "YEAR": true, "MONTH": true, "TIME": true,
	"TIMESTAMP": true, "DATE": true, "USER": true, "VALUE": true, "TABLE": true, "FROM": true, "SELECT": true, "WHERE": true, "GROUP": true,
	"ORDER": true, "BY": true, "AS": true, "WINDOW": true, "RANGE": true, "ROWS": true, "SYSTEM": true}

// edit is a replacement of src[start:end].
type edit struct {
	start, end int
	text       string
}

func applyEdits(src string, edits []edit) string {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	for _, e := range edits {
		src = src[:e.start] + e.text + src[e.end:]
	}
	return src
}

// StatementDraft is the corrected statement and what was changed.
type StatementDraft struct {
	SQL          string        `json:"sql"`
	Sink         string        `json:"sink"`
	Replacements []Replacement `json:"replacements"`
	// Rewritten counts the reads of removed fields replaced.
	Rewritten int `json:"rewritten"`
}

// rewriteStatement writes the corrected statement: every read of a removed field of source
// becomes the replacement expression, the INSERT/CREATE target becomes sink, and each read of
// source gets the dynamic-options hint (startup position). Which references read source is
// decided by pkg/sqlparse's resolution (sourceFields are source's columns, nil when unknown): a
// same-named column of a joined table, a CTE's output or a nested field is left alone.
func rewriteStatement(sql string, reps []Replacement, source, sink, hint string, sourceFields []string) (StatementDraft, error) {
	stmt, err := sqlparse.Parse(sql)
	if err != nil {
		return StatementDraft{}, fmt.Errorf("the pinned statement does not parse: %w", err)
	}
	var target []string
	switch s := stmt.(type) {
	case *sqlparse.Insert:
		target = s.Table
	case *sqlparse.CreateTableAs:
		target = s.Table
	default:
		return StatementDraft{}, fmt.Errorf("the pinned statement writes no table (it is a bare query), so there is no sink to redirect")
	}
	ts, err := sqlparse.Tokens(sql)
	if err != nil {
		return StatementDraft{}, fmt.Errorf("the pinned statement does not lex: %w", err)
	}
	var edits []edit
	d := StatementDraft{Sink: sink, Replacements: reps}
	targetDone, hinted := false, false
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		// The target: the name after INSERT INTO / INSERT OVERWRITE / CREATE [OR REPLACE] TABLE.
		if !targetDone && (t.IsKeyword("INTO") || t.IsKeyword("OVERWRITE") || t.IsKeyword("TABLE") && i > 0 && (ts[i-1].IsKeyword("CREATE") || ts[i-1].IsKeyword("REPLACE"))) {
			if end := nameEnd(ts, i+1); end > 0 && ts[end-1].IsName(target[len(target)-1]) {
				edits = append(edits, edit{start: ts[end-1].Pos, end: ts[end-1].End, text: "`" + strings.ReplaceAll(sink, "`", "``") + "`"})
				targetDone = true
				i = end - 1
				continue
			}
		}
		// The source: the name after FROM, JOIN or TABLE (TVF argument) gets the hint.
		if hint != "" && (t.IsKeyword("FROM") || t.IsKeyword("JOIN") || t.IsKeyword("TABLE")) {
			if end := nameEnd(ts, i+1); end > 0 && ts[end-1].IsName(source) {
				edits = append(edits, edit{start: ts[end-1].End, end: ts[end-1].End, text: " " + hint})
				hinted = true
				i = end - 1
			}
		}
	}
	if !targetDone {
		return StatementDraft{}, fmt.Errorf("could not find the target table %s in the statement text to redirect it", strings.Join(target, "."))
	}
	if hint != "" && !hinted {
		return StatementDraft{}, fmt.Errorf("could not find where the statement reads %s to set its start position", source)
	}
	byEnd := map[int]int{} // token index by end offset
	for i, t := range ts {
		byEnd[t.End] = i
	}
	cols := func(name []string) ([]string, bool) {
		if sourceFields != nil && strings.EqualFold(name[len(name)-1], source) {
			return sourceFields, true
		}
		return nil, false
	}
	for _, u := range sqlparse.ColumnUses(stmt, cols) {
		if len(u.Table) == 0 || !strings.EqualFold(u.Table[len(u.Table)-1], source) || len(u.Ref.Parts) > 2 {
			continue
		}
		last, ok := byEnd[u.Ref.End]
		if !ok || last+1 < len(ts) && ts[last+1].Kind == sqlparse.TokenOp && (ts[last+1].Text == "." || ts[last+1].Text == "[") {
			continue // a field or element of the column, not the column
		}
		for _, r := range reps {
			if !strings.EqualFold(u.Column, r.Removed) {
				continue
			}
			text := r.Expression(sql[u.Ref.Pos:ts[last].Pos])
			if u.Bare {
				text += " AS " + quoteIdent(r.Removed) // the item keeps its output column name
			}
			edits = append(edits, edit{start: u.Ref.Pos, end: u.Ref.End, text: text})
			d.Rewritten++
		}
	}
	if d.Rewritten == 0 && len(reps) > 0 {
		return StatementDraft{}, fmt.Errorf("the statement text has no read of %s from %s to rewrite", reps[0].Removed, source)
	}
	d.SQL = applyEdits(sql, edits)
	// Our own output must parse with the parser that reads statements everywhere else.
	if _, err := sqlparse.Parse(d.SQL); err != nil {
		return StatementDraft{}, fmt.Errorf("the corrected statement does not parse, so it is not proposed: %w", err)
	}
	return d, nil
}

// nameEnd reads a possibly qualified name (a.b.c) starting at token i and returns the index
// after it (0 when there is no name there).
func nameEnd(ts []sqlparse.Token, i int) int {
	isName := func(t sqlparse.Token) bool { return t.Kind == sqlparse.TokenIdent || t.Kind == sqlparse.TokenQuoted }
	if i >= len(ts) || !isName(ts[i]) || ts[i].IsKeyword("SELECT") || ts[i].IsKeyword("TABLE") {
		return 0
	}
	j := i + 1
	for j+1 < len(ts) && ts[j].Kind == sqlparse.TokenOp && ts[j].Text == "." && isName(ts[j+1]) {
		j += 2
	}
	return j
}

// optionsHint is Flink's dynamic table options hint for a start position.
func optionsHint(opts [][2]string) string {
	var parts []string
	for _, o := range opts {
		parts = append(parts, fmt.Sprintf("'%s'='%s'", strings.ReplaceAll(o[0], "'", "''"), strings.ReplaceAll(o[1], "'", "''")))
	}
	return "/*+ OPTIONS(" + strings.Join(parts, ", ") + ") */"
}

// ReadCheck is what a statement reads, judged against the fields of the schema it will pin.
type ReadCheck struct {
	Target []string
	// Reads are the source fields read, per table name as written.
	Reads map[string][]string
}

// checkStatement parses sql and checks that every column it reads from a table in known is one
// of that table's fields (known maps a lower-case table name to its fields). $-prefixed system
// columns and window columns of TVFs are allowed.
func checkStatement(sql string, known map[string][]string) (ReadCheck, error) {
	stmt, err := sqlparse.Parse(sql)
	if err != nil {
		return ReadCheck{}, err
	}
	cols := func(name []string) ([]string, bool) {
		f, ok := known[strings.ToLower(name[len(name)-1])]
		return f, ok
	}
	lin := sqlparse.Analyze(stmt, cols)
	rc := ReadCheck{Target: lin.Target, Reads: map[string][]string{}}
	var bad []string
	check := func(s sqlparse.SourceColumn) {
		if len(s.Table) == 0 || s.Column == "*" || strings.HasPrefix(s.Column, "$") {
			return
		}
		table := strings.ToLower(s.Table[len(s.Table)-1])
		fields, ok := known[table]
		if !ok {
			return
		}
		head, _, _ := strings.Cut(s.Column, ".")
		if !containsFold(rc.Reads[table], head) {
			rc.Reads[table] = append(rc.Reads[table], head)
		}
		if !containsFold(fields, head) && !containsFold(bad, table+"."+head) {
			bad = append(bad, table+"."+head)
		}
	}
	for _, c := range lin.Columns {
		for _, s := range c.Sources {
			check(s)
		}
	}
	for _, s := range lin.Indirect {
		check(s)
	}
	for _, parts := range lin.Unresolved {
		if col := strings.Join(parts, "."); !containsFold(bad, col) {
			bad = append(bad, col)
		}
	}
	if len(bad) > 0 {
		return rc, fmt.Errorf("the statement reads %s, which the pinned schema does not have", strings.Join(bad, ", "))
	}
	return rc, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
