package sqlparse

import (
	"strings"
	"testing"
)

func uses(t *testing.T, sql, table, column string) []ValueUse {
	t.Helper()
	stmt, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	return ValueUses(stmt, nil, table, column)
}

func roles(u ValueUse) string {
	var rs []string
	for _, s := range u.Steps {
		rs = append(rs, string(s.Role))
	}
	return strings.Join(rs, ">")
}

func TestValueUsesSaysWhatSurroundsTheColumn(t *testing.T) {
	sql := `INSERT INTO depot_daily
SELECT depot,
       SUM(COALESCE(weight_grams, 0)) AS total_grams,
       COUNT(weight_grams) AS weighed,
       AVG(weight_grams * 1.0) AS mean_grams,
       CASE WHEN weight_grams > 30000 THEN 'heavy' ELSE 'normal' END AS band
FROM parcel_scans s
JOIN depots d ON s.depot = d.depot_code
WHERE weight_grams > 0 AND status IN ('DELIVERED', 'RETURNED')
GROUP BY depot`
	got := uses(t, sql, "parcel_scans", "weight_grams")
	want := []struct{ clause, output, roles string }{
		{"select", "total_grams", "coalesce>sum"},
		{"select", "weighed", "count"},
		{"select", "mean_grams", "arithmetic>avg"},
		{"select", "band", "compare>case"},
		{"where", "", "compare"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d uses: %+v", len(got), got)
	}
	for i, w := range want {
		if got[i].Clause != w.clause || got[i].Output != w.output || roles(got[i]) != w.roles {
			t.Errorf("use %d: got %s %s %s, want %+v", i, got[i].Clause, got[i].Output, roles(got[i]), w)
		}
	}
	if s := got[0].Steps[0]; s.Expr != "COALESCE(weight_grams, 0)" || s.Values[0] != "0" {
		t.Errorf("coalesce step %+v", s)
	}
	if s := got[4].Steps[0]; s.Expr != "weight_grams > 0" || s.Op != ">" || s.Values[0] != "0" {
		t.Errorf("where step %+v", s)
	}
	st := uses(t, sql, "parcel_scans", "status")
	if len(st) != 1 || st[0].Steps[0].Role != RoleIn || strings.Join(st[0].Steps[0].Values, ",") != "DELIVERED,RETURNED" ||
		st[0].Steps[0].Expr != "status IN ('DELIVERED', 'RETURNED')" {
		t.Errorf("status %+v", st)
	}
	j := uses(t, sql, "parcel_scans", "depot")
	var join *ValueUse
	for i := range j {
		if j[i].Clause == "join" {
			join = &j[i]
		}
	}
	if join == nil || join.Steps[0].Role != RoleJoin || join.Steps[0].Expr != "s.depot = d.depot_code" {
		t.Errorf("join %+v", j)
	}
}

func TestValueUsesFollowsCTEsByNameAndCaseOperands(t *testing.T) {
	sql := `with src as (select * from raw.orders),
final as (
  select order_id,
         case channel when 'WEB' then 'online' when 'APP' then 'online' else 'store' end as channel_group
  from src where channel <> 'TEST'
)
select * from final`
	got := uses(t, sql, "orders", "channel")
	if len(got) != 2 {
		t.Fatalf("got %+v", got)
	}
	c := got[0]
	if !c.ByName || c.Steps[0].Role != RoleCase || strings.Join(c.Steps[0].Values, ",") != "WEB,APP" || c.Steps[0].Else != "'store'" {
		t.Errorf("case %+v", c)
	}
	if got[1].Clause != "where" || got[1].Steps[0].Op != "<>" {
		t.Errorf("where %+v", got[1])
	}
}

func TestFormatKeepsMeaningWithParentheses(t *testing.T) {
	stmt, err := Parse("SELECT (a + b) * c AS x, NOT (d = 1 OR e = 2) AS y FROM t")
	if err != nil {
		t.Fatal(err)
	}
	q := stmt.(*QueryStatement).Query.Body.(*Select)
	if got := Format(q.Items[0].Expr); got != "(a + b) * c" {
		t.Errorf("got %s", got)
	}
	if got := Format(q.Items[1].Expr); !strings.Contains(got, "(d = 1) OR (e = 2)") {
		t.Errorf("got %s", got)
	}
}

func FuzzValueUses(f *testing.F) {
	f.Add("SELECT SUM(COALESCE(x, 0)) FROM t WHERE x > 0", "x")
	f.Add("SELECT CASE y WHEN 'A' THEN 1 END FROM t JOIN u ON t.y = u.y", "y")
	f.Fuzz(func(t *testing.T, sql, col string) {
		stmt, err := Parse(sql)
		if err != nil {
			return
		}
		for _, u := range ValueUses(stmt, nil, "", col) {
			for _, s := range u.Steps {
				if s.Expr == "" || s.Role == "" {
					t.Fatalf("empty step %+v", s)
				}
			}
		}
	})
}
