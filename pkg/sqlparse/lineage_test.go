package sqlparse

import (
	"errors"
	"sort"
	"strings"
	"testing"
)

// catalog is the schema every corpus statement runs against.
var catalog = map[string][]string{
	"orders":         {"order_id", "customer_id", "amount", "currency", "order_time", "tags", "status"},
	"customers":      {"id", "tier", "name"},
	"bid":            {"bidtime", "price", "item", "supplier_id"},
	"currency_rates": {"currency", "conversion_rate", "update_time"},
	"api-usage":      {"usage_id", "account_id", "event_time", "endpoint", "status_code", "response_bytes", "response_kib"},
	"events":         {"payload", "ts"},
	"clicks":         {"user_id", "url", "ts"},
}

func columns(name []string) ([]string, bool) {
	c, ok := catalog[strings.ToLower(name[len(name)-1])]
	return c, ok
}

// summary renders lineage as "out <- table.col:kind, …" lines, sorted.
func summary(l *Lineage) []string {
	var out []string
	for _, c := range l.Columns {
		var srcs []string
		for _, s := range c.Sources {
			srcs = append(srcs, strings.Join(s.Table, ".")+"."+s.Column+":"+s.Kind)
		}
		sort.Strings(srcs)
		line := c.Name + " <- " + strings.Join(srcs, ", ")
		if c.FromStar {
			line += " (*)"
		}
		out = append(out, line)
	}
	return out
}

func indirect(l *Lineage) []string {
	var out []string
	for _, s := range l.Indirect {
		out = append(out, strings.Join(s.Table, ".")+"."+s.Column+":"+s.Kind)
	}
	sort.Strings(out)
	return out
}

// The Flink corpus: statements shaped like Confluent Cloud's and the Flink documentation's examples.
func TestFlinkCorpusLineage(t *testing.T) {
	cases := []struct {
		name     string
		sql      string
		target   string
		columns  []string
		indirect []string
	}{
		{"tumble rollup (the scenario's statement)",
			"INSERT INTO `usage-hourly` SELECT account_id, window_start AS `hour`, SUM(response_bytes) AS egress_bytes, COUNT(*) AS request_count " +
				"FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR(event_time), INTERVAL '1' HOUR)) GROUP BY account_id, window_start, window_end",
			"usage-hourly",
			[]string{"account_id <- api-usage.account_id:identity", "hour <- api-usage.event_time:transformation",
				"egress_bytes <- api-usage.response_bytes:aggregation", "request_count <- "},
			[]string{"api-usage.account_id:group_by", "api-usage.event_time:group_by", "api-usage.event_time:window"}},
		{"the corrected statement: COALESCE over arithmetic, $rowtime",
			"INSERT INTO `usage-hourly-v2` SELECT account_id, window_start AS `hour`, SUM(COALESCE(response_kib * 1024, response_bytes)) AS egress_bytes " +
				"FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR($rowtime), INTERVAL '1' HOUR)) GROUP BY account_id, window_start, window_end",
			"usage-hourly-v2",
			[]string{"account_id <- api-usage.account_id:identity", "hour <- api-usage.$rowtime:transformation",
				"egress_bytes <- api-usage.response_bytes:aggregation, api-usage.response_kib:aggregation"},
			[]string{"api-usage.$rowtime:group_by", "api-usage.$rowtime:window", "api-usage.account_id:group_by"}},
		{"hop window",
			"SELECT window_start, window_end, SUM(price) AS total_price FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES)) GROUP BY window_start, window_end",
			"",
			[]string{"window_start <- Bid.bidtime:transformation", "window_end <- Bid.bidtime:transformation", "total_price <- Bid.price:aggregation"},
			[]string{"Bid.bidtime:group_by", "Bid.bidtime:window"}},
		{"cumulate window with named arguments",
			"SELECT window_start, item, MAX(price) AS max_price FROM TABLE(CUMULATE(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), STEP => INTERVAL '2' MINUTES, SIZE => INTERVAL '10' MINUTES)) GROUP BY window_start, window_end, item",
			"",
			[]string{"window_start <- Bid.bidtime:transformation", "item <- Bid.item:identity", "max_price <- Bid.price:aggregation"},
			[]string{"Bid.bidtime:group_by", "Bid.bidtime:window", "Bid.item:group_by"}},
		{"session window partitioned",
			"SELECT user_id, window_start, COUNT(url) AS clicks FROM TABLE(SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL '5' MINUTES)) GROUP BY user_id, window_start, window_end",
			"",
			[]string{"user_id <- clicks.user_id:identity", "window_start <- clicks.ts:transformation", "clicks <- clicks.url:aggregation"},
			[]string{"clicks.ts:group_by", "clicks.ts:window", "clicks.user_id:group_by", "clicks.user_id:window"}},
		{"regular join",
			"INSERT INTO orders_enriched SELECT o.order_id, o.amount, c.tier FROM orders o JOIN customers c ON o.customer_id = c.id",
			"orders_enriched",
			[]string{"order_id <- orders.order_id:identity", "amount <- orders.amount:identity", "tier <- customers.tier:identity"},
			[]string{"customers.id:join", "orders.customer_id:join"}},
		{"temporal join",
			"SELECT o.order_id, o.amount * r.conversion_rate AS converted FROM orders AS o JOIN currency_rates FOR SYSTEM_TIME AS OF o.order_time AS r ON o.currency = r.currency",
			"",
			[]string{"order_id <- orders.order_id:identity", "converted <- currency_rates.conversion_rate:transformation, orders.amount:transformation"},
			[]string{"currency_rates.currency:join", "orders.currency:join"}},
		{"CTAS with options and SELECT * expanded",
			"CREATE TABLE high_value WITH ('changelog.mode' = 'append', 'kafka.retention.time' = '7 d') AS SELECT * FROM customers WHERE tier = 'gold'",
			"high_value",
			[]string{"id <- customers.id:identity (*)", "tier <- customers.tier:identity (*)", "name <- customers.name:identity (*)"},
			[]string{"customers.tier:filter"}},
		{"CASE",
			"SELECT order_id, CASE WHEN amount > 1000 THEN 'large' WHEN amount > 100 THEN 'medium' ELSE status END AS size_class FROM orders",
			"",
			[]string{"order_id <- orders.order_id:identity", "size_class <- orders.amount:conditional, orders.status:transformation"},
			nil},
		{"window Top-N over a TVF",
			"SELECT * FROM (SELECT window_start, item, price, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))) WHERE rownum <= 3",
			"",
			[]string{"window_start <- Bid.bidtime:transformation (*)", "item <- Bid.item:identity (*)", "price <- Bid.price:identity (*)", "rownum <-  (*)"},
			[]string{"Bid.bidtime:window", "Bid.price:window"}},
		{"deduplication",
			"SELECT order_id, amount FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY order_id ORDER BY order_time DESC) AS rn FROM orders) WHERE rn = 1",
			"",
			[]string{"order_id <- orders.order_id:identity", "amount <- orders.amount:identity"},
			[]string{"orders.order_id:window", "orders.order_time:window"}},
		{"UNNEST",
			"SELECT o.order_id, t.tag FROM orders o CROSS JOIN UNNEST(o.tags) AS t (tag)",
			"",
			[]string{"order_id <- orders.order_id:identity", "tag <- orders.tags:transformation"},
			nil},
		{"nested field and CAST arithmetic",
			"SELECT payload.user_id AS uid, CAST(payload.bytes AS DECIMAL(10, 2)) * 1.2 AS gross FROM events",
			"",
			[]string{"uid <- events.payload.user_id:identity", "gross <- events.payload.bytes:transformation"},
			nil},
		{"UNION ALL",
			"INSERT INTO all_ids SELECT order_id AS id FROM orders UNION ALL SELECT id FROM customers",
			"all_ids",
			[]string{"id <- customers.id:identity, orders.order_id:identity"},
			nil},
		{"qualified catalog.database.table",
			"INSERT INTO `env-1`.`lkc-1`.`sink` SELECT c.name FROM `env-1`.`lkc-1`.customers AS c",
			"env-1.lkc-1.sink",
			[]string{"name <- env-1.lkc-1.customers.name:identity"},
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Parse(c.sql)
			if err != nil {
				t.Fatal(err)
			}
			l := Analyze(st, columns)
			if got := strings.Join(l.Target, "."); got != c.target {
				t.Errorf("target %q, want %q", got, c.target)
			}
			got := summary(l)
			if strings.Join(got, "\n") != strings.Join(c.columns, "\n") {
				t.Errorf("columns:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.columns, "\n"))
			}
			if c.indirect != nil {
				if gi := indirect(l); strings.Join(gi, ",") != strings.Join(c.indirect, ",") {
					t.Errorf("indirect %v, want %v", gi, c.indirect)
				}
			}
		})
	}
}

func TestStatementSetYieldsEveryInsert(t *testing.T) {
	stmts, skipped, err := ParseScript(`SET 'sql.state-ttl' = '1 h';
EXECUTE STATEMENT SET BEGIN
  INSERT INTO a SELECT order_id FROM orders;
  INSERT INTO b SELECT id FROM customers;
END;`)
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 2 || len(skipped) != 1 || skipped[0] != "SET" {
		t.Fatalf("stmts %d skipped %v", len(stmts), skipped)
	}
}

func TestSelectStarOverUnknownTableIsFlaggedNotGuessed(t *testing.T) {
	st, err := Parse("INSERT INTO copy SELECT * FROM mystery")
	if err != nil {
		t.Fatal(err)
	}
	l := Analyze(st, columns)
	if len(l.Columns) != 1 || l.Columns[0].Name != "*" || len(l.Warnings) == 0 {
		t.Errorf("want one unexpanded * and a warning, got %+v", l)
	}
}

func TestAmbiguousUnqualifiedColumnIsLeftOutWithAWarning(t *testing.T) {
	st, err := Parse("SELECT x FROM t1 JOIN t2 ON t1.id = t2.id")
	if err != nil {
		t.Fatal(err)
	}
	l := Analyze(st, columns)
	if len(l.Columns[0].Sources) != 0 || len(l.Warnings) == 0 {
		t.Errorf("x is in t1 or t2: want no sources and a warning, got %+v", l)
	}
}

// Compiled dbt SQL: CTEs, :: casts, QUALIFY, IFF, date functions, quoted relations.
func TestWarehouseSQL(t *testing.T) {
	sql := `with src as (
    select * from "ANALYTICS"."RAW"."ORDERS"
), ranked as (
    select order_id, amount::number(18,2) as amount, iff(status = 'refunded', -amount, amount) as net,
           row_number() over (partition by order_id order by order_time desc) as rn
    from src
    qualify rn = 1
)
select order_id, sum(net) filter (where net > 0) as positive_net, date_trunc('day', current_timestamp) as day
from ranked
group by all`
	st, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	l := Analyze(st, func(name []string) ([]string, bool) {
		if strings.EqualFold(name[len(name)-1], "orders") {
			return catalog["orders"], true
		}
		return nil, false
	})
	got := strings.Join(summary(l), "\n")
	want := strings.Join([]string{
		"order_id <- ANALYTICS.RAW.ORDERS.order_id:identity",
		"positive_net <- ANALYTICS.RAW.ORDERS.amount:aggregation, ANALYTICS.RAW.ORDERS.status:conditional",
		"day <- ",
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSyntaxErrorsArePositionedAndNeverPanic(t *testing.T) {
	for _, sql := range []string{
		"", "SELECT", "SELECT FROM t", "INSERT INTO", "SELECT a FROM (SELECT b FROM t", "SELECT 'unterminated",
		"SELECT a FROM t WHERE", "SELECT CASE END FROM t", "SELECT a FROM t GROUP", "DELETE FROM t",
		"SELECT " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500),
		"SELECT a FROM TABLE(TUMBLE(TABLE))", "INSERT INTO t SELECT * FROM u; garbage",
	} {
		_, err := Parse(sql)
		var se *SyntaxError
		if err == nil || !errors.As(err, &se) || se.Line < 1 {
			t.Errorf("Parse(%q) = %v, want a positioned *SyntaxError", sql, err)
		}
	}
}

func FuzzParseAndAnalyze(f *testing.F) {
	for _, s := range []string{
		"INSERT INTO `usage-hourly` SELECT account_id, SUM(response_bytes) AS b FROM TABLE(TUMBLE(TABLE `api-usage`, DESCRIPTOR(event_time), INTERVAL '1' HOUR)) GROUP BY account_id, window_start, window_end",
		"CREATE TABLE x WITH ('a'='b') AS SELECT * FROM orders",
		"with a as (select * from t) select a.x, count(*) over (partition by y) from a left join b using (id) where z in (select 1) qualify row_number() over (order by 1) = 1",
		"SELECT CASE x WHEN 1 THEN 'a' ELSE NULL END, CAST(y AS TIMESTAMP(3) WITH LOCAL TIME ZONE), z::varchar, INTERVAL '1' DAY, ARRAY[1,2][1] FROM t",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; END",
		"SELECT * EXCLUDE (a) FROM t1, LATERAL FLATTEN(input => t1.v) f",
		"SELECT o.id FROM o JOIN r FOR SYSTEM_TIME AS OF o.ts AS r ON o.k = r.k",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		stmts, _, err := ParseScript(sql)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("non-syntax error %T: %v", err, err)
			}
			return
		}
		for _, st := range stmts {
			Analyze(st, columns)
		}
	})
}
