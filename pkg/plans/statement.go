package plans

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/dataworkers/dw/pkg/sqlparse"
)

// The corrected statement is written by editing the pinned statement's SQL text token by token
// (so the owner sees their own statement with the smallest change), then re-parsed with
// pkg/sqlparse and analysed against the fields the new statement will pin: a draft that does not
// parse, or reads a field the schema lacks, is refused instead of proposed.

// Unit suffixes: a field named <stem>_<unit> holds a quantity in that unit. Two fields with the
// same stem and units of one dimension convert by the ratio of their units (response_kib →
// response_bytes is × 1024). Nothing else is inferred: other names have no derivable factor.
var unitSuffixes = map[string]struct {
	dimension string
	size      *big.Int
}{
	"bytes": {"bytes", big.NewInt(1)}, "kb": {"bytes", big.NewInt(1000)}, "kib": {"bytes", big.NewInt(1024)},
	"mb": {"bytes", big.NewInt(1000 * 1000)}, "mib": {"bytes", big.NewInt(1 << 20)},
	"gb": {"bytes", big.NewInt(1000 * 1000 * 1000)}, "gib": {"bytes", big.NewInt(1 << 30)},
	"ns": {"time", big.NewInt(1)}, "nanos": {"time", big.NewInt(1)}, "us": {"time", big.NewInt(1000)}, "micros": {"time", big.NewInt(1000)},
	"ms": {"time", big.NewInt(1000 * 1000)}, "millis": {"time", big.NewInt(1000 * 1000)},
	"s": {"time", big.NewInt(1000 * 1000 * 1000)}, "sec": {"time", big.NewInt(1000 * 1000 * 1000)}, "seconds": {"time", big.NewInt(1000 * 1000 * 1000)},
}

// UnitRule is stated in the plan wherever a factor is derived.
const UnitRule = "a field named <stem>_<unit> holds <unit>s; a replacement with the same stem and a unit of the same dimension " +
	"(bytes, kb, kib, mb, mib, gb, gib; ns, us, ms, s) converts by the ratio of the units, and only a whole-number ratio is used"

func splitUnit(field string) (stem, unit string, ok bool) {
	i := strings.LastIndexByte(field, '_')
	if i <= 0 {
		return "", "", false
	}
	u := strings.ToLower(field[i+1:])
	if _, ok := unitSuffixes[u]; !ok {
		return "", "", false
	}
	return strings.ToLower(field[:i]), u, true
}

// Replacement is how a removed field's value is read from the field that replaced it.
type Replacement struct {
	Removed string `json:"removed"`
	With    string `json:"with"`
	// Factor converts the replacement to the removed field's unit ("1024"); "1" for a rename.
	Factor string `json:"factor"`
	Why    string `json:"why"`
}

// deriveReplacement finds the one added field that carries removed's quantity in another unit.
// It returns a reason instead when none or several qualify, or the ratio is not a whole number.
func deriveReplacement(removed string, added []string, renamedTo string) (Replacement, string) {
	if renamedTo != "" {
		return Replacement{Removed: removed, With: renamedTo, Factor: "1", Why: removed + " was renamed to " + renamedTo}, ""
	}
	stem, unit, ok := splitUnit(removed)
	if !ok {
		return Replacement{}, fmt.Sprintf("no factor can be derived for %s: its name ends in no known unit (%s)", removed, UnitRule)
	}
	var cands []Replacement
	for _, a := range added {
		s, u, ok := splitUnit(a)
		if !ok || s != stem || unitSuffixes[u].dimension != unitSuffixes[unit].dimension {
			continue
		}
		num, den := unitSuffixes[u].size, unitSuffixes[unit].size
		var q, r big.Int
		q.QuoRem(num, den, &r)
		if r.Sign() != 0 || q.Sign() == 0 {
			return Replacement{}, fmt.Sprintf("%s replaces %s but one %s is not a whole number of %s, so no factor is used (%s)", a, removed, u, unit, UnitRule)
		}
		cands = append(cands, Replacement{Removed: removed, With: a, Factor: q.String(),
			Why: fmt.Sprintf("%s_%s holds %s and %s holds %s: 1 %s = %s %s (%s)", stem, u, u, removed, unit, u, q.String(), unit, UnitRule)})
	}
	switch len(cands) {
	case 0:
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
// converted to the old unit, falling back to the old field (records still written with it). The
// replacement is cast to BIGINT before it is multiplied, so an INT field times the factor cannot
// overflow; Readable is the same read without the cast, for the approver.
func (r Replacement) Expression(qualifier string) string {
	with := qualifier + quoteIdent(r.With)
	if r.Factor != "1" {
		with = "CAST(" + with + " AS BIGINT) * " + r.Factor
	}
	return fmt.Sprintf("COALESCE(%s, %s%s)", with, qualifier, quoteIdent(r.Removed))
}

// Readable is the read as an approver states it: COALESCE(response_kib * 1024, response_bytes).
func (r Replacement) Readable() string {
	with := quoteIdent(r.With)
	if r.Factor != "1" {
		with += " * " + r.Factor
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
