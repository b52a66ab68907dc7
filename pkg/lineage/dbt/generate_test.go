package dbt

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"strings"
)

// writeManifest writes a synthetic dbt project of models models as manifest.json to w, one node
// at a time: sources (one per 20 models) feed staging models, and every other model selects from
// one to three earlier ones with a join, expressions, a filter and a select * now and then; each
// relation has 12 documented columns, each model a not_null test on its id, raw and compiled SQL,
// owners in meta, and a macros section the importer must skip.
func writeManifest(out io.Writer, models int) error {
	w := bufio.NewWriterSize(out, 1<<20)
	rng := rand.New(rand.NewSource(int64(models)))
	sources := max(1, models/20)
	enc := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(b)
	}
	columns := func(prefix string) map[string]any {
		cols := map[string]any{}
		for c := 0; c < 12; c++ {
			name := fmt.Sprintf("c%d", c)
			if c == 0 {
				name = "id"
			}
			cols[name] = map[string]any{"name": name, "description": fmt.Sprintf("%s column %s: what it holds, in a sentence or two of documentation.", prefix, name),
				"data_type": []string{"bigint", "varchar", "double", "timestamp"}[c%4], "meta": map[string]any{}, "tags": []string{}}
		}
		return cols
	}
	model := func(i int) string { return fmt.Sprintf("m_%06d", i) }
	w.WriteString(`{"metadata":{"dbt_schema_version":"https://schemas.getdbt.com/dbt/manifest/v12.json","dbt_version":"1.8.0",` +
		`"generated_at":"2026-08-14T12:00:00Z","project_name":"bench","adapter_type":"snowflake"},"nodes":{`)
	for i := 0; i < models; i++ {
		if i > 0 {
			w.WriteString(",")
		}
		name := model(i)
		var parents []string
		var from, raw string
		if i < models/10 || i < 3 {
			src := fmt.Sprintf("source.bench.raw.s_%05d", i%sources)
			parents = []string{src}
			from = fmt.Sprintf(`"RAW"."LANDING"."S_%05d" a`, i%sources)
			raw = fmt.Sprintf(`select * from {{ source('raw', 's_%05d') }}`, i%sources)
		} else {
			n := 1 + rng.Intn(3)
			var joins []string
			for k := 0; k < n; k++ {
				p := rng.Intn(i)
				parents = append(parents, "model.bench."+model(p))
				alias := string(rune('a' + k))
				if k == 0 {
					joins = append(joins, fmt.Sprintf(`"ANALYTICS"."BENCH"."%s" %s`, strings.ToUpper(model(p)), alias))
				} else {
					joins = append(joins, fmt.Sprintf(`join "ANALYTICS"."BENCH"."%s" %s on a.id = %s.id`, strings.ToUpper(model(p)), alias, alias))
				}
			}
			from = strings.Join(joins, "\n  ")
			raw = "select ... from {{ ref('" + strings.Join(parents, "') }}, {{ ref('") + "') }}"
		}
		var sel []string
		if i%50 == 7 {
			sel = []string{"a.*"}
		} else {
			sel = append(sel, "a.id as id")
			for c := 1; c < 12; c++ {
				k := rng.Intn(len(parents))
				alias := string(rune('a' + k))
				switch c % 4 {
				case 0:
					sel = append(sel, fmt.Sprintf("%s.c%d as c%d", alias, c, c))
				case 1:
					sel = append(sel, fmt.Sprintf("coalesce(%s.c%d, '') as c%d", alias, c, c))
				case 2:
					sel = append(sel, fmt.Sprintf("%s.c%d * 1.5 + a.c%d as c%d", alias, c, 1+rng.Intn(11), c))
				default:
					sel = append(sel, fmt.Sprintf("cast(%s.c%d as timestamp) as c%d", alias, c, c))
				}
			}
		}
		compiled := "select\n  " + strings.Join(sel, ",\n  ") + "\nfrom " + from + "\nwhere a.c5 is not null"
		w.WriteString(`"model.bench.` + name + `":`)
		enc(map[string]any{
			"unique_id": "model.bench." + name, "resource_type": "model", "name": name, "package_name": "bench",
			"database": "ANALYTICS", "schema": "BENCH", "alias": strings.ToUpper(name),
			"relation_name": fmt.Sprintf(`"ANALYTICS"."BENCH"."%s"`, strings.ToUpper(name)),
			"description":   "A generated model for the import benchmark; its documentation runs to a few sentences like real ones do.",
			"tags":          []string{"bench"}, "meta": map[string]any{"owner": fmt.Sprintf("team-%d@example.com", i%40)},
			"config":  map[string]any{"enabled": true, "materialized": []string{"table", "view", "incremental"}[i%3], "tags": []string{}, "meta": map[string]any{}},
			"columns": columns(name), "depends_on": map[string]any{"nodes": parents, "macros": []string{}},
			"raw_code": raw, "compiled_code": compiled, "language": "sql",
			"original_file_path": "models/" + name + ".sql", "path": name + ".sql", "fqn": []string{"bench", name},
			"checksum": map[string]any{"name": "sha256", "checksum": fmt.Sprintf("%064x", i)},
		})
		w.WriteString(`,"test.bench.not_null_` + name + `_id":`)
		enc(map[string]any{"unique_id": "test.bench.not_null_" + name + "_id", "resource_type": "test", "name": "not_null_" + name + "_id",
			"attached_node": "model.bench." + name, "column_name": "id", "test_metadata": map[string]any{"name": "not_null"},
			"depends_on": map[string]any{"nodes": []string{"model.bench." + name}, "macros": []string{"macro.dbt.test_not_null"}},
			"config":     map[string]any{"enabled": true}, "compiled_code": "select id from x where id is null"})
	}
	w.WriteString(`},"sources":{`)
	for s := 0; s < sources; s++ {
		if s > 0 {
			w.WriteString(",")
		}
		id := fmt.Sprintf("source.bench.raw.s_%05d", s)
		w.WriteString(`"` + id + `":`)
		enc(map[string]any{"unique_id": id, "resource_type": "source", "name": fmt.Sprintf("s_%05d", s), "source_name": "raw",
			"database": "RAW", "schema": "LANDING", "identifier": fmt.Sprintf("S_%05d", s),
			"relation_name": fmt.Sprintf(`"RAW"."LANDING"."S_%05d"`, s), "columns": columns(id), "config": map[string]any{"enabled": true}})
	}
	w.WriteString(`},"macros":{`)
	for k := 0; k < 200; k++ {
		if k > 0 {
			w.WriteString(",")
		}
		fmt.Fprintf(w, `"macro.bench.m%d":`, k)
		enc(map[string]any{"name": fmt.Sprintf("m%d", k), "macro_sql": strings.Repeat("{% macro x() %} select 1 {% endmacro %}\n", 20)})
	}
	w.WriteString(`},"exposures":{"exposure.bench.dashboard":`)
	enc(map[string]any{"unique_id": "exposure.bench.dashboard", "name": "dashboard", "type": "dashboard",
		"owner": map[string]any{"email": "bi@example.com"}, "depends_on": map[string]any{"nodes": []string{"model.bench." + model(models-1)}}})
	w.WriteString(`},"groups":{},"docs":{},"disabled":{},"parent_map":{},"child_map":{}}`)
	return w.Flush()
}
