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
// converted to the old unit, falling back to the old field (records still written with it).
func (r Replacement) Expression(qualifier string) string {
	with := qualifier + quoteIdent(r.With)
	if r.Factor != "1" {
		with += " * " + r.Factor
	}
	return fmt.Sprintf("COALESCE(%s, %s%s)", with, qualifier, quoteIdent(r.Removed))
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

// tok is a token of SQL text with its byte span.
type tok struct {
	kind       byte // 'i' identifier, 'q' quoted identifier, 's' string, 'n' number, 'o' other
	text       string
	start, end int
}

// tokens splits SQL into identifiers, quoted identifiers, strings, numbers and single-character
// operators, skipping whitespace and comments. It never fails: an unterminated string or
// comment ends the text (the parser reports it).
func tokens(src string) []tok {
	var out []tok
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '\'' || c == '`' || c == '"':
			start := i
			var b strings.Builder
			i++
			for i < len(src) {
				if src[i] == c {
					if i+1 < len(src) && src[i+1] == c {
						b.WriteByte(c)
						i += 2
						continue
					}
					break
				}
				b.WriteByte(src[i])
				i++
			}
			i++
			kind := byte('q')
			if c == '\'' {
				kind = 's'
			}
			out = append(out, tok{kind: kind, text: b.String(), start: start, end: min(i, len(src))})
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '$':
			start := i
			for i < len(src) && (src[i] == '_' || src[i] == '$' || src[i] >= 'a' && src[i] <= 'z' || src[i] >= 'A' && src[i] <= 'Z' || src[i] >= '0' && src[i] <= '9') {
				i++
			}
			out = append(out, tok{kind: 'i', text: src[start:i], start: start, end: i})
		case c >= '0' && c <= '9':
			start := i
			for i < len(src) && (src[i] >= '0' && src[i] <= '9' || src[i] == '.') {
				i++
			}
			out = append(out, tok{kind: 'n', text: src[start:i], start: start, end: i})
		default:
			out = append(out, tok{kind: 'o', text: string(c), start: i, end: i + 1})
			i++
		}
	}
	return out
}

func (t tok) isName(name string) bool {
	return (t.kind == 'i' || t.kind == 'q') && strings.EqualFold(t.text, name)
}

func (t tok) isKw(kw string) bool { return t.kind == 'i' && strings.EqualFold(t.text, kw) }

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

// rewriteStatement writes the corrected statement: every read of a removed field becomes the
// replacement expression, the INSERT/CREATE target becomes sink, and each read of source gets
// the dynamic-options hint (startup position).
func rewriteStatement(sql string, reps []Replacement, source, sink, hint string) (StatementDraft, error) {
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
	ts := tokens(sql)
	var edits []edit
	d := StatementDraft{Sink: sink, Replacements: reps}
	targetDone := false
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		// The target: the name after INSERT INTO / INSERT OVERWRITE / CREATE [OR REPLACE] TABLE.
		if !targetDone && (t.isKw("INTO") || t.isKw("OVERWRITE") || t.isKw("TABLE") && i > 0 && (ts[i-1].isKw("CREATE") || ts[i-1].isKw("REPLACE"))) {
			j, end := nameAt(ts, i+1)
			if end > 0 && ts[end-1].isName(target[len(target)-1]) {
				edits = append(edits, edit{start: ts[end-1].start, end: ts[end-1].end, text: "`" + strings.ReplaceAll(sink, "`", "``") + "`"})
				targetDone = true
				i = end - 1
				_ = j
				continue
			}
		}
		// The source: the name after FROM, JOIN or TABLE (TVF argument) gets the hint.
		if hint != "" && (t.isKw("FROM") || t.isKw("JOIN") || t.isKw("TABLE")) {
			if _, end := nameAt(ts, i+1); end > 0 && ts[end-1].isName(source) {
				edits = append(edits, edit{start: ts[end-1].end, end: ts[end-1].end, text: " " + hint})
				i = end - 1
				continue
			}
		}
		for _, r := range reps {
			if !t.isName(r.Removed) || (i > 0 && ts[i-1].isKw("AS")) || (i+1 < len(ts) && ts[i+1].text == "(") {
				continue
			}
			start, qual := t.start, ""
			if i >= 2 && ts[i-1].text == "." && (ts[i-2].kind == 'i' || ts[i-2].kind == 'q') {
				start = ts[i-2].start
				qual = sql[ts[i-2].start:ts[i-2].end] + "."
			}
			edits = append(edits, edit{start: start, end: t.end, text: r.Expression(qual)})
			d.Rewritten++
		}
	}
	if !targetDone {
		return StatementDraft{}, fmt.Errorf("could not find the target table %s in the statement text to redirect it", strings.Join(target, "."))
	}
	if d.Rewritten == 0 && len(reps) > 0 {
		return StatementDraft{}, fmt.Errorf("the statement text has no read of %s to rewrite", reps[0].Removed)
	}
	if hint != "" && !containsEdit(edits, " "+hint) {
		return StatementDraft{}, fmt.Errorf("could not find where the statement reads %s to set its start position", source)
	}
	d.SQL = applyEdits(sql, edits)
	// Our own output must parse with the parser that reads statements everywhere else.
	if _, err := sqlparse.Parse(d.SQL); err != nil {
		return StatementDraft{}, fmt.Errorf("the corrected statement does not parse, so it is not proposed: %w", err)
	}
	return d, nil
}

func containsEdit(es []edit, text string) bool {
	for _, e := range es {
		if e.text == text {
			return true
		}
	}
	return false
}

// nameAt reads a possibly qualified name (a.b.c) starting at token i; end is the index after it
// (0 when there is no name).
func nameAt(ts []tok, i int) (int, int) {
	if i >= len(ts) || (ts[i].kind != 'i' && ts[i].kind != 'q') {
		return i, 0
	}
	if ts[i].kind == 'i' && (ts[i].isKw("SELECT") || ts[i].isKw("TABLE")) {
		return i, 0
	}
	j := i + 1
	for j+1 < len(ts) && ts[j].text == "." && (ts[j+1].kind == 'i' || ts[j+1].kind == 'q') {
		j += 2
	}
	return i, j
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
	for _, w := range lin.Warnings {
		if rest, ok := strings.CutPrefix(w, "column "); ok {
			if col, ok := strings.CutSuffix(rest, " not found in any table of its FROM clause"); ok && !containsFold(bad, col) {
				bad = append(bad, col)
			}
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
