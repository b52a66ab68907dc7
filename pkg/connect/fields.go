package connect

import (
	"fmt"
	"strings"
)

// FieldMapping is one field of a sink's records and the column of its target table it lands in.
type FieldMapping struct {
	// Field is the record value's field path as the schema names it ("weight_g", "dims.width_mm").
	Field  string `json:"field"`
	Column string `json:"column"`
	// How says by which rule, in words.
	How string `json:"how"`
}

// recordContent is the Snowflake sink's VARIANT column holding the whole record value when the
// table has no column per field (classic Snowpipe without schematization).
const recordContent = "RECORD_CONTENT"

// SinkFields maps the value fields of the records a sink connector consumes to the columns of its
// target table, by the connector's documented rules, after the value-side single message
// transforms its config chains (ReplaceField renames and include/exclude, Flatten with its
// delimiter, ExtractField). JDBC sinks write each top-level field to the column of its name
// (nested structs need Flatten); the Snowflake sink matches first-level keys to columns by name,
// case-insensitively, or puts the whole value into RECORD_CONTENT. notes say what could not be
// mapped and why; nothing is guessed.
func SinkFields(cfg map[string]string, fields, columns []string) (out []FieldMapping, notes []string) {
	class := strings.ToLower(cfg["connector.class"])
	jdbc, snowflake := strings.Contains(class, "jdbc"), strings.Contains(class, "snowflake")
	if !jdbc && !snowflake {
		return nil, []string{fmt.Sprintf("field-level lineage is derived for JDBC and Snowflake sinks only, not %s", cfg["connector.class"])}
	}
	names, how, note := transformNames(cfg, fields)
	if note != "" {
		return nil, []string{note}
	}
	allowed := map[string]bool{}
	for _, k := range []string{"fields.whitelist", "fields.include"} {
		for _, f := range splitList(cfg[k]) {
			allowed[f] = true
		}
	}
	hasRecordContent := findColumn(columns, recordContent, false) != ""
	for _, f := range fields {
		name, ok := names[f]
		if !ok {
			continue // dropped by a transform
		}
		nested := strings.Contains(name, nest)
		name = strings.ReplaceAll(name, nest, ".")
		if jdbc && len(allowed) > 0 && !allowed[name] {
			continue
		}
		rule := how[f]
		switch {
		case nested:
			if snowflake && hasRecordContent {
				out = append(out, FieldMapping{Field: f, Column: findColumn(columns, recordContent, false), How: rule + "the Snowflake sink stores the whole value in RECORD_CONTENT; this field is RECORD_CONTENT:" + name})
				continue
			}
			notes = append(notes, fmt.Sprintf("%s is nested: the sink writes top-level fields only (add a Flatten transform to give it a column)", f))
			continue
		}
		col := findColumn(columns, name, jdbc)
		switch {
		case col != "":
			rule += "the sink writes field " + name + " to the column of that name"
			if col != name {
				rule += " (" + col + ", matched ignoring case)"
			}
			out = append(out, FieldMapping{Field: f, Column: col, How: rule})
		case snowflake && hasRecordContent:
			out = append(out, FieldMapping{Field: f, Column: findColumn(columns, recordContent, false), How: rule + "the Snowflake sink stores the whole value in RECORD_CONTENT; this field is RECORD_CONTENT:" + name})
		default:
			notes = append(notes, fmt.Sprintf("%s (written as %s) has no column of that name in the target table", f, name))
		}
	}
	return out, notes
}

// findColumn is the column named name: exactly, else the one column equal ignoring case (JDBC
// sinks quote identifiers by default, so exact comes first; a database that folds case, and the
// Snowflake sink, match regardless). Several case-insensitive matches are no match.
func findColumn(columns []string, name string, exactFirst bool) string {
	if exactFirst {
		for _, c := range columns {
			if c == name {
				return c
			}
		}
	}
	found := ""
	for _, c := range columns {
		if strings.EqualFold(c, name) {
			if found != "" && found != c {
				return ""
			}
			found = c
		}
	}
	return found
}

// nameKeeping are value transforms that change values, headers, keys or the topic but not the
// value's field names.
var nameKeeping = []string{"Cast$Value", "MaskField$Value", "TimestampConverter$Value", "InsertField$Value", "RegexRouter",
	"TimestampRouter", "Filter", "HeaderFrom$Value", "InsertHeader", "DropHeaders", "ValueToKey", "SetSchemaMetadata$Value"}

// nest separates the levels of a nested field inside transformNames (a field name may itself
// hold a "." once Flatten has joined its levels with that delimiter).
const nest = "\x1f"

// transformNames applies the value-side transforms of the config to the field paths: the name
// each field is written under, its levels separated by nest (absent: dropped), the rule in words,
// or a note when a transform's effect on names is not known.
func transformNames(cfg map[string]string, fields []string) (map[string]string, map[string]string, string) {
	names, how := map[string]string{}, map[string]string{}
	for _, f := range fields {
		if strings.Contains(f, "[]") || strings.Contains(f, "{}") {
			continue // elements of arrays and maps have no column of their own
		}
		names[f], how[f] = strings.ReplaceAll(f, ".", nest), ""
	}
	for _, alias := range splitList(cfg["transforms"]) {
		typ := strings.TrimSpace(cfg["transforms."+alias+".type"])
		key := func(k string) string { return cfg["transforms."+alias+"."+k] }
		short := typ[strings.LastIndexByte(typ, '.')+1:]
		switch {
		case strings.HasSuffix(typ, "$Key") || keeps(short):
		case short == "ReplaceField$Value":
			renames := map[string]string{}
			for _, p := range splitList(key("renames")) {
				if from, to, ok := strings.Cut(p, ":"); ok {
					renames[strings.TrimSpace(from)] = strings.TrimSpace(to)
				}
			}
			include := setOf(splitList(firstNonEmpty(key("include"), key("whitelist"))))
			exclude := setOf(splitList(firstNonEmpty(key("exclude"), key("blacklist"))))
			for f, n := range names {
				top, rest, nested := strings.Cut(n, nest)
				if len(include) > 0 && !include[top] || exclude[top] {
					delete(names, f)
					continue
				}
				if to, ok := renames[top]; ok {
					n = to
					if nested {
						n += nest + rest
					}
					names[f] = n
					how[f] += fmt.Sprintf("transform %s renames %s to %s; ", alias, top, to)
				}
			}
		case short == "Flatten$Value":
			delim := key("delimiter")
			if delim == "" {
				delim = "."
			}
			for f, n := range names {
				if strings.Contains(n, nest) {
					flat := strings.ReplaceAll(n, nest, delim)
					how[f] += fmt.Sprintf("transform %s flattens %s to %s; ", alias, strings.ReplaceAll(n, nest, "."), flat)
					names[f] = flat
				}
			}
		case short == "ExtractField$Value":
			field := key("field")
			for f, n := range names {
				rest, ok := strings.CutPrefix(n, field+nest)
				if !ok {
					delete(names, f)
					continue
				}
				names[f] = rest
				how[f] += fmt.Sprintf("transform %s extracts %s; ", alias, field)
			}
		default:
			return nil, nil, fmt.Sprintf("transform %s (%s) may rename or reshape fields: field-level lineage through the sink is not derived", alias, typ)
		}
	}
	return names, how, ""
}

func keeps(short string) bool {
	for _, k := range nameKeeping {
		if short == k {
			return true
		}
	}
	return false
}

func setOf(list []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range list {
		m[s] = true
	}
	return m
}

func firstNonEmpty(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}
