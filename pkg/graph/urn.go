// Package graph is the context graph on the shared store: assets with stable URNs across systems,
// their fields, typed edges (column-level where known) with the source that asserted them and when,
// name resolution that never guesses, traversal and blast radius.
//
// URNs are "<system>:<identifier>", for example
//
//	kafka:topic/usage-events            schema:api-usage-value
//	flink:statement/usage-hourly-rollup tableflow:usage-hourly
//	warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY
//	dbt:model.billing.fct_billable_egress bi:sigma/revenue-today
//	job:airflow/sync_metered_usage_to_stripe sink:stripe
//
// A field is addressed as its asset's URN, '#', and the field path (dots separate nested record
// fields): "schema:api-usage-value#response_bytes", "warehouse:snowflake/A.B.C#EGRESS_BYTES".
//
// Writing: an importer or sync builds a Batch named by its Source ("sync:kafka/lkc-1",
// "flink:statement/x") and calls Import (a complete pass: what the source asserted before and not
// now is marked stale) or Upsert (additive); MarkStale is the same sweep on its own. Each source's
// claims are kept apart, so one source never erases another's. Typical edges: a subject is the
// schema_of its topic; a topic materializes as its Tableflow table, which materializes as the
// warehouse table (field names carry over through both kinds); field-level edges name both fields.
//
// Reading: Resolve (a name → one URN, or the candidates), Get, Search, Neighbours; Traverse,
// Downstream and Upstream at field or table level ("every downstream reader of field F of subject
// S" is Downstream(ctx, []FieldRef{SubjectURN(S).Field(F)}, 0)); BlastRadius for owners,
// criticality, sinks and the next run of scheduled jobs.
package graph

import (
	"fmt"
	"strings"
	"unicode"
)

// URN identifies an asset across systems: "<system>:<identifier>".
type URN string

// Systems (the URN prefixes) Data Workers knows. Other lower-case prefixes are accepted too, so a
// catalog file can name a system we have no importer for.
const (
	SystemKafka     = "kafka"
	SystemSchema    = "schema"
	SystemFlink     = "flink"
	SystemTableflow = "tableflow"
	SystemWarehouse = "warehouse"
	SystemDBT       = "dbt"
	SystemBI        = "bi"
	SystemJob       = "job"
	SystemSink      = "sink"
	SystemConnect   = "connect"
	// SystemOpenLineage holds datasets and jobs known only from OpenLineage events.
	SystemOpenLineage = "openlineage"
)

// ParseURN checks s is "<system>:<identifier>" with a lower-case system and a non-empty identifier
// without '#' (which separates a field path) or control characters.
func ParseURN(s string) (URN, error) {
	sys, id, ok := strings.Cut(s, ":")
	if !ok || sys == "" || id == "" {
		return "", fmt.Errorf("bad URN %q: want <system>:<identifier>, e.g. kafka:topic/usage-events", s)
	}
	for _, r := range sys {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", fmt.Errorf("bad URN %q: system %q must be lower-case letters, digits, '-' or '_'", s, sys)
		}
	}
	if strings.ContainsRune(id, '#') {
		return "", fmt.Errorf("bad URN %q: '#' starts a field path; pass the field separately", s)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return "", fmt.Errorf("bad URN %q: control character in identifier", s)
		}
	}
	return URN(s), nil
}

// System is the part before the first ':'.
func (u URN) System() string {
	sys, _, _ := strings.Cut(string(u), ":")
	return sys
}

// ID is the part after the first ':'.
func (u URN) ID() string {
	_, id, _ := strings.Cut(string(u), ":")
	return id
}

// Field addresses one of the asset's fields.
func (u URN) Field(path string) FieldRef { return FieldRef{Asset: u, Path: path} }

// FieldRef is an asset, or one field of it when Path is not empty.
type FieldRef struct {
	Asset URN    `json:"asset"`
	Path  string `json:"field,omitempty"`
}

// String is "urn#path", or the URN alone for the whole asset.
func (f FieldRef) String() string {
	if f.Path == "" {
		return string(f.Asset)
	}
	return string(f.Asset) + "#" + f.Path
}

// ParseFieldRef reads "urn" or "urn#path".
func ParseFieldRef(s string) (FieldRef, error) {
	u, p, _ := strings.Cut(s, "#")
	urn, err := ParseURN(u)
	if err != nil {
		return FieldRef{}, err
	}
	return FieldRef{Asset: urn, Path: p}, nil
}

// URN constructors: one place decides how each system's names become URNs, so two importers that
// meet the same object produce the same URN.

// TopicURN is a Kafka topic.
func TopicURN(topic string) URN { return URN("kafka:topic/" + topic) }

// SubjectURN is a Schema Registry subject.
func SubjectURN(subject string) URN { return URN("schema:" + subject) }

// FlinkStatementURN is a Flink statement by name.
func FlinkStatementURN(name string) URN { return URN("flink:statement/" + name) }

// TableflowURN is the Tableflow table materialised from a topic (Tableflow names it by the topic).
func TableflowURN(topic string) URN { return URN("tableflow:" + topic) }

// DBTURN is a dbt node, source or exposure by unique_id.
func DBTURN(uniqueID string) URN { return URN("dbt:" + uniqueID) }

// JobURN is an orchestrator job, e.g. JobURN("airflow", "sync_metered_usage_to_stripe").
func JobURN(orchestrator, id string) URN { return URN("job:" + orchestrator + "/" + id) }

// WarehouseURN is a warehouse table. Identifiers are unquoted; for Snowflake, unquoted
// identifiers are stored upper-case (Snowflake's own folding), so "analytics.usage.usage_hourly"
// and "ANALYTICS.USAGE.USAGE_HOURLY" are the same table. A quoted part keeps its case.
func WarehouseURN(engine string, parts ...string) URN {
	engine = strings.ToLower(engine)
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p == "" {
			continue
		}
		out = append(out, NormalizeIdent(engine, p))
	}
	return URN("warehouse:" + engine + "/" + strings.Join(out, "."))
}

// NormalizeIdent folds one identifier the way the engine does: quoted identifiers keep their
// case (quotes removed), unquoted ones fold to upper case on Snowflake and lower case on
// PostgreSQL; other engines keep them as written.
func NormalizeIdent(engine, ident string) string {
	if len(ident) >= 2 && (ident[0] == '"' && ident[len(ident)-1] == '"' || ident[0] == '`' && ident[len(ident)-1] == '`') {
		q := ident[:1]
		return strings.ReplaceAll(ident[1:len(ident)-1], q+q, q)
	}
	switch strings.ToLower(engine) {
	case "snowflake":
		return strings.ToUpper(ident)
	case "postgres", "postgresql", "redshift":
		return strings.ToLower(ident)
	}
	return ident
}

// SplitRelation splits a relation name such as `"DB"."SCHEMA"."TABLE"` or db.schema.table into its
// parts, honouring double quotes and backticks (a dot inside quotes is part of the name). Quotes are
// kept so NormalizeIdent can tell quoted from unquoted parts.
func SplitRelation(rel string) []string {
	var parts []string
	var cur strings.Builder
	var quote rune
	for _, r := range rel {
		switch {
		case quote != 0:
			cur.WriteRune(r)
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '`':
			quote = r
			cur.WriteRune(r)
		case r == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	parts = append(parts, strings.TrimSpace(cur.String()))
	return parts
}
