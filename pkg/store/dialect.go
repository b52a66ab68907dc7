package store

import (
	"fmt"
	"strings"
)

// The few SQL fragments that cannot be written once for both engines. Everything else a package
// writes is one SQL for both: placeholders are rebound, and flags are INTEGER 0/1 on both.

// JSONRows is a FROM item that yields one row per element of the JSON array of arrays (or objects)
// bound at param, under alias; alias.value is the element: read its fields with alias.value->>N,
// and CAST those that are not text (CAST(j.value->>0 AS BIGINT)). A batch of rows bound as one
// parameter costs one bind, not one per value.
func (d Dialect) JSONRows(param, alias string) string {
	if d == PostgreSQL {
		return fmt.Sprintf("json_array_elements(%s::json) AS %s(value)", param, alias)
	}
	return fmt.Sprintf("json_each(%s) AS %s", param, alias)
}

// JSONValues is a FROM item that yields one row per element of the JSON array of scalars bound at
// param, under alias: alias.value is the element as sqlType (BIGINT or TEXT), alias.key its index
// from 0.
func (d Dialect) JSONValues(param, alias, sqlType string) string {
	if d == PostgreSQL {
		return fmt.Sprintf("(SELECT CAST(v AS %s) AS value, o - 1 AS key FROM json_array_elements_text(%s::json) WITH ORDINALITY AS e(v, o)) AS %s",
			sqlType, param, alias)
	}
	return fmt.Sprintf("json_each(%s) AS %s", param, alias)
}

// JSONTextValues is a FROM item that yields, as alias.value, the text elements of the JSON array
// held in the column expression col (a stored list such as tags); a value that is not a JSON array
// yields no rows on SQLite and is taken as no array on PostgreSQL unless it begins with '['.
func (d Dialect) JSONTextValues(col, alias string) string {
	if d == PostgreSQL {
		return fmt.Sprintf("json_array_elements_text(CASE WHEN left(%[1]s, 1) = '[' THEN %[1]s ELSE '[]' END::json) AS %[2]s(value)", col, alias)
	}
	return fmt.Sprintf("json_each(CASE WHEN json_valid(%[1]s) THEN %[1]s ELSE '[]' END) AS %[2]s", col, alias)
}

// JSONArrayAgg is an aggregate that returns the group's rows as one JSON array of arrays, each
// row the values of exprs in order ('[]' for no rows). Reading many small rows as one value saves
// the per-row cost of database/sql, which is larger than the engine's cost of finding them.
func (d Dialect) JSONArrayAgg(exprs ...string) string {
	list := strings.Join(exprs, ", ")
	if d == PostgreSQL {
		return fmt.Sprintf("COALESCE(json_agg(json_build_array(%s)), '[]'::json)", list)
	}
	return fmt.Sprintf("json_group_array(json_array(%s))", list)
}
