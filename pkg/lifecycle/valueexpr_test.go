package lifecycle

import (
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/sqlparse"
)

// parseExpr reads one expression the way a select item holds it.
func parseExpr(t testing.TB, text string) (sqlparse.Expr, bool) {
	st, err := sqlparse.Parse("SELECT " + text + " FROM t")
	if err != nil {
		return nil, false
	}
	q, ok := st.(*sqlparse.QueryStatement)
	if !ok {
		return nil, false
	}
	sel, ok := q.Query.Body.(*sqlparse.Select)
	if !ok || len(sel.Items) != 1 || sel.Items[0].Expr == nil {
		return nil, false
	}
	return sel.Items[0].Expr, true
}

func TestEvalRowFollowsFlinkSQL(t *testing.T) {
	row := map[string]any{"weight_kg": 1.2345, "grams": int64(7), "status": "DONE", "gone": nil}
	for text, want := range map[string]any{
		"CAST(ROUND(weight_kg * 1000) AS BIGINT)":         int64(1235),
		"CAST(weight_kg * 1000 AS BIGINT)":                int64(1234), // a cast truncates
		"COALESCE(gone, grams * 2)":                       int64(14),
		"grams / 2":                                       int64(3),
		"grams / 2.0":                                     3.5,
		"gone + 1":                                        nil,
		"status IN ('DONE', 'SHIPPED')":                   true,
		"status NOT IN ('DONE')":                          false,
		"CASE WHEN grams > 5 THEN 'big' ELSE 'small' END": "big",
		"CASE status WHEN 'NEW' THEN 1 END":               nil,
		"gone = 1 OR grams = 7":                           true,
		"gone = 1 AND grams = 7":                          nil,
		"-grams":                                          int64(-7),
		"ROUND(weight_kg, 2)":                             1.23,
		"Weight_KG > 1":                                   true,
		"missing_field":                                   nil,
	} {
		x, ok := parseExpr(t, text)
		if !ok {
			t.Fatalf("%s does not parse", text)
		}
		got, err := evalRow(x, row)
		if err != nil || got != want {
			t.Errorf("%s = %#v (%v), want %#v", text, got, err, want)
		}
	}
	for _, text := range []string{"UPPER(status)", "status LIKE 'D%'", "CAST(status AS BIGINT)", "grams / 0"} {
		x, _ := parseExpr(t, text)
		if _, err := evalRow(x, row); err == nil {
			t.Errorf("%s evaluated; want an error naming what is not evaluated", text)
		}
	}
}

func TestIntervalOf(t *testing.T) {
	for text, want := range map[string]time.Duration{"INTERVAL '1' HOUR": time.Hour, "INTERVAL '15' MINUTES": 15 * time.Minute, "interval '1' day": 24 * time.Hour} {
		if got, err := intervalOf(text); err != nil || got != want {
			t.Errorf("%s: %v %v", text, got, err)
		}
	}
	for _, text := range []string{"INTERVAL '0' HOUR", "INTERVAL '1' MONTH", "INTERVAL '1-2' YEAR TO MONTH", "1 HOUR"} {
		if _, err := intervalOf(text); err == nil {
			t.Errorf("%s accepted", text)
		}
	}
}

// Whatever expression a statement holds, evaluating it returns a value or an error, never panics.
func FuzzEvalRow(f *testing.F) {
	for _, s := range []string{"CAST(ROUND(a * 1000) AS BIGINT)", "COALESCE(a, b) / c", "CASE WHEN a IN (1, NULL) THEN -b END", "a % 0", "ROUND(a, b)"} {
		f.Add(s)
	}
	row := map[string]any{"a": 2.5, "b": int64(3), "c": int64(0), "s": "x", "t": time.Unix(0, 0)}
	f.Fuzz(func(t *testing.T, text string) {
		if x, ok := parseExpr(t, text); ok {
			_, _ = evalRow(x, row)
		}
		_, _ = intervalOf(text)
	})
}
