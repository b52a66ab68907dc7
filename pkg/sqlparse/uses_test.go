package sqlparse

import (
	"strings"
	"testing"
)

func TestColumnUsesResolveEachReferenceToItsBaseTable(t *testing.T) {
	sql := "INSERT INTO s SELECT u.account_id, response_bytes, l.response_bytes AS lim, u.payload.response_bytes AS nested, " +
		"SUM(u.response_bytes) AS total, window_start FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR(event_time), INTERVAL '1' HOUR)) AS u " +
		"JOIN limits l ON l.account_id = u.account_id GROUP BY u.account_id, response_bytes, l.response_bytes, window_start, window_end"
	stmt, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	cols := func(name []string) ([]string, bool) {
		if name[len(name)-1] == "api-usage" {
			return []string{"account_id", "event_time", "response_bytes", "payload"}, true
		}
		return nil, false
	}
	var got []string
	for _, u := range ColumnUses(stmt, cols) {
		text := sql[u.Ref.Pos:u.Ref.End]
		if text != strings.Join(u.Ref.Parts, ".") && !strings.Contains(text, "`") {
			t.Errorf("span %q does not cover %v", text, u.Ref.Parts)
		}
		tag := text + "=" + strings.Join(u.Table, ".") + ":" + u.Column
		if u.Bare {
			tag += "(bare)"
		}
		got = append(got, tag)
	}
	want := []string{
		"u.account_id=api-usage:account_id(bare)",
		"response_bytes=api-usage:response_bytes(bare)",
		"l.response_bytes=limits:response_bytes",
		"u.payload.response_bytes=api-usage:payload.response_bytes",
		"u.response_bytes=api-usage:response_bytes",
		"window_start=:(bare)",
		"l.account_id=limits:account_id",
		"u.account_id=api-usage:account_id",
		"u.account_id=api-usage:account_id",
		"response_bytes=api-usage:response_bytes",
		"l.response_bytes=limits:response_bytes",
		"window_start=:",
		"window_end=:",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestColumnUsesOfACTEAreNotTheBaseTable(t *testing.T) {
	stmt, err := Parse("WITH x AS (SELECT response_bytes FROM t) SELECT response_bytes FROM x")
	if err != nil {
		t.Fatal(err)
	}
	uses := ColumnUses(stmt, nil)
	if len(uses) != 2 || strings.Join(uses[0].Table, ".") != "t" || uses[1].Table != nil {
		t.Errorf("uses %+v", uses)
	}
}

func TestUnresolvedColumnsAreListed(t *testing.T) {
	stmt, err := Parse("SELECT a.x, b.y FROM t a JOIN u b ON a.k = b.k WHERE nope > 0")
	if err != nil {
		t.Fatal(err)
	}
	cols := func(name []string) ([]string, bool) {
		return map[string][]string{"t": {"x", "k"}, "u": {"y", "k"}}[name[0]], true
	}
	l := Analyze(stmt, cols)
	if len(l.Unresolved) != 1 || strings.Join(l.Unresolved[0], ".") != "nope" {
		t.Errorf("unresolved %v (warnings %v)", l.Unresolved, l.Warnings)
	}
}

func TestTokensKeepSpansAndStopAtALexicalError(t *testing.T) {
	src := "select `a b`.c, 'it''s' -- note\n from t {# x"
	toks, err := Tokens(src)
	if err == nil {
		t.Fatal("'#' accepted")
	}
	var kinds []string
	for _, tk := range toks {
		kinds = append(kinds, src[tk.Pos:tk.End])
	}
	if strings.Join(kinds, "|") != "select|`a b`|.|c|,|'it''s'|from|t|{" {
		t.Errorf("tokens %q", kinds)
	}
	if !toks[1].IsName("A B") || toks[1].Kind != TokenQuoted || toks[5].Text != "it's" || !toks[0].IsKeyword("SELECT") || toks[1].IsKeyword("a b") {
		t.Errorf("tokens %+v", toks)
	}
}

// FuzzColumnUses: for any SQL that parses, every reference's span lies in the text, covers its
// parts in order, and Tokens agrees with the parser on where tokens end.
func FuzzColumnUses(f *testing.F) {
	f.Add("SELECT u.a, b, `c d`.e FROM t u JOIN `c d` ON u.k = `c d`.k")
	f.Add("INSERT INTO s SELECT x.y.z FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' HOUR)) x")
	f.Add("WITH q AS (SELECT a FROM t) SELECT a, \"q\".a FROM q")
	f.Fuzz(func(t *testing.T, sql string) {
		stmt, err := Parse(sql)
		if err != nil {
			return
		}
		toks, err := Tokens(sql)
		if err != nil {
			t.Fatalf("parsed but does not lex: %v", err)
		}
		ends := map[int]bool{}
		for _, tk := range toks {
			ends[tk.End] = true
		}
		for _, u := range ColumnUses(stmt, nil) {
			r := u.Ref
			if r.Pos < 0 || r.End > len(sql) || r.Pos >= r.End || !ends[r.End] {
				t.Fatalf("span [%d,%d) of %v is not a token span of %q", r.Pos, r.End, r.Parts, sql)
			}
		}
	})
}
