// Corrected statement: a new Flink statement into a -v2 sink that reads the restored fields.

package plans

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// knownFields are the fields a new statement reading topic will pin: the restoring version
// when the plan registers one, else the latest stored version of <topic>-value.
func (dc *draftContext) knownFields(ctx context.Context, topic string) ([]string, string, error) {
	subject := topic + "-value"
	if r, ok := dc.registered[subject]; ok {
		return fieldNames(r.schema), r.how, nil
	}
	order, versions, err := storedSchemas(ctx, dc.src.Store, subject)
	if err != nil {
		return nil, "", err
	}
	if len(order) == 0 {
		return nil, "", nil
	}
	v := order[len(order)-1]
	return fieldNames(versions[v]), fmt.Sprintf("%s v%d (the latest stored version)", subject, v), nil
}

func fieldNames(s *schema.Schema) []string {
	var out []string
	for _, f := range s.Fields {
		if !strings.ContainsAny(f.Path, ".[{") {
			out = append(out, f.Path)
		}
	}
	return out
}

// topicsOf lists the topics a subject is the value schema of (schema_of edges).
func (dc *draftContext) topicsOf(ctx context.Context, subject string) ([]string, error) {
	edges, _, err := dc.src.Graph.Neighbours(ctx, graph.SubjectURN(subject), graph.Downstream)
	var nf *graph.NotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range edges {
		if e.Kind == graph.EdgeSchemaOf && e.To.Asset.System() == graph.SystemKafka && !containsFold(out, e.To.Asset.ID()) {
			out = append(out, strings.TrimPrefix(e.To.Asset.ID(), "topic/"))
		}
	}
	return out, nil
}

func (dc *draftContext) statement(ctx context.Context, sc diagnosis.SchemaChange, reader diagnosis.Reader) (Proposal, bool, error) {
	u := graph.URN(reader.URN)
	a, err := dc.src.Graph.Get(ctx, u)
	var nf *graph.NotFoundError
	if errors.As(err, &nf) || err == nil && a.Attrs["sql"] == "" {
		dc.note(fmt.Sprintf("no corrected statement generated: the SQL of %s is not in the context graph (import_flink_statement or sync_catalog with confluent_cloud configured)", u))
		return Proposal{}, false, nil
	}
	if err != nil {
		return Proposal{}, false, err
	}
	sql := a.Attrs["sql"]
	var added []string
	renamed := map[string]string{}
	types := map[string]string{} // each field's type: the new schema's, the old one's for a removal
	for _, ch := range sc.Changes {
		types[ch.Path] = ch.NewType
		if ch.NewType == "" {
			types[ch.Path] = ch.OldType
		}
		switch ch.Change {
		case "added":
			added = append(added, ch.Path)
		case "renamed":
			if old, ok := renameOf(ch); ok && slices.Contains(reader.ReadsFields, old) {
				renamed[old] = ch.Path
			}
		}
	}
	var reps []Replacement
	var missing, tried []string
	for _, f := range reader.ReadsFields {
		removed := false
		for _, ch := range sc.Changes {
			removed = removed || (ch.Change == "removed" && ch.Path == f) || (ch.Change == "renamed" && renamed[f] != "")
		}
		if !removed {
			continue
		}
		if _, ok := lookupFold(dc.mappings, f); ok {
			continue // read below, once the source topic is known
		}
		r, why := deriveReplacement(f, added, renamed[f], types)
		if why != "" {
			missing = append(missing, f)
			tried = append(tried, why)
			continue
		}
		reps = append(reps, r)
	}
	if len(reps) > 0 {
		next, err := dc.newSchema(ctx, sc)
		if err != nil {
			return Proposal{}, false, err
		}
		for i := range reps {
			reps[i].readOldFirstWhenZero(next, []string{reps[i].With})
		}
	}
	for k := range dc.mappings {
		if !containsFold(reader.ReadsFields, k) || !removedOrRenamed(sc, k) {
			return Proposal{}, false, fmt.Errorf("field_mappings names %s, which %s v%d did not remove or rename among the fields %s reads (%s)",
				k, sc.Subject, sc.Version, u, strings.Join(reader.ReadsFields, ", "))
		}
	}
	stmt, err := sqlparse.Parse(sql)
	if err != nil {
		dc.note(fmt.Sprintf("no corrected statement generated: the SQL of %s does not parse: %v", u, err))
		return Proposal{}, false, nil
	}
	lin := sqlparse.Analyze(stmt, nil)
	source, err := dc.sourceTopic(ctx, sc.Subject, lin)
	if err != nil {
		return Proposal{}, false, err
	}
	if source == "" || len(lin.Target) == 0 {
		dc.note(fmt.Sprintf("no corrected statement generated: %s reads no topic of %s that the graph knows, or writes no table", u, sc.Subject))
		return Proposal{}, false, nil
	}
	sink := lin.Target[len(lin.Target)-1] + "-v2"
	opts, start := dc.startAt(ctx, source)
	known, pinned, err := dc.knownFields(ctx, source)
	if err != nil {
		return Proposal{}, false, err
	}
	for _, f := range reader.ReadsFields {
		if expr, ok := lookupFold(dc.mappings, f); ok {
			r, err := dc.clientMapping(ctx, sc, source, f, expr, types[f])
			if err != nil {
				return Proposal{}, false, fmt.Errorf("field_mappings[%s]: %w", f, err)
			}
			reps = append(reps, r)
		}
	}
	d, err := rewriteStatement(sql, reps, source, sink, optionsHint(opts), known)
	if err != nil {
		dc.note(fmt.Sprintf("no corrected statement generated for %s: %v", u, err))
		return Proposal{}, false, nil
	}
	check := map[string][]string{}
	if known != nil {
		check[strings.ToLower(source)] = known
	}
	rc, err := checkStatement(d.SQL, check)
	if err != nil {
		// Our own output must parse and read only what the pinned schema has; otherwise refuse it.
		dc.note(fmt.Sprintf("the corrected statement drafted for %s was refused by its own validation: %v", u, err))
		return Proposal{}, false, nil
	}
	if len(rc.Target) == 0 || !strings.EqualFold(rc.Target[len(rc.Target)-1], sink) {
		dc.note(fmt.Sprintf("the corrected statement drafted for %s does not write %s; refused", u, sink))
		return Proposal{}, false, nil
	}
	validation := "parses with pkg/sqlparse; writes " + sink
	if known != nil {
		validation += fmt.Sprintf("; reads only fields of %s (%s)", pinned, strings.Join(rc.Reads[strings.ToLower(source)], ", "))
	} else {
		validation += "; the fields read were not checked: no stored schema version of " + source + "-value"
	}
	dc.key, dc.timeCol = groupKey(stmt)
	dc.sinkV2, dc.stmtURN = sink, u
	dc.newAsset = dc.v2Asset(ctx, lin.Target[len(lin.Target)-1], sink)
	old := strings.TrimPrefix(u.ID(), "statement/")
	name := old + "-v2"
	var whys []string
	for _, r := range reps {
		w := fmt.Sprintf("it reads %s as %s", r.Removed, r.Readable())
		if r.Factor != "1" && (r.Conversion == "" || r.Exact) {
			w += fmt.Sprintf(" (the SQL casts %s to BIGINT before multiplying, so the product cannot overflow INT)", r.With)
		}
		whys = append(whys, w+"; "+r.Why)
	}
	landing := ""
	if dc.newAsset != "" {
		landing = fmt.Sprintf(". %s is expected to land in the warehouse as %s, the name Tableflow gives it when enabled like %s (an expectation, not checked)",
			sink, dc.newAsset, lin.Target[len(lin.Target)-1])
	}
	steps := []string{
		fmt.Sprintf("CREATE TABLE `%s` LIKE `%s` (the new sink, same columns)", sink, lin.Target[len(lin.Target)-1]),
		fmt.Sprintf("Create Flink statement %s with the sql of this payload (after the schema restore is registered, so it pins the restored version)", name),
		fmt.Sprintf("Enable Tableflow on %s like %s; the warehouse table is expected as %s (check the name Tableflow gives it before the checks run)", sink, lin.Target[len(lin.Target)-1], dc.newAsset),
		fmt.Sprintf("Once %s has caught up, stop %s (after every reader of %s reads %s)", name, old, lin.Target[len(lin.Target)-1], sink),
	}
	reads := "reads " + exprList(reps) + " and "
	if len(reps) == 0 {
		reads = ""
	}
	title := fmt.Sprintf("Run %s: %swrites %s from %s", name, reads, sink, dc.from.UTC().Format("2006-01-02 15:04 UTC"))
	if len(missing) > 0 {
		dc.needsMapping = missing
		title = fmt.Sprintf("Needs a mapping for %s: %s", strings.Join(missing, ", "), title)
		whys = append(whys, fmt.Sprintf("no replacement is known for %s (tried: %s); the draft still reads the old field, so it waits for field_mappings",
			strings.Join(missing, ", "), strings.Join(tried, "; ")))
		validation += "; incomplete: needs a mapping for " + strings.Join(missing, ", ")
	}
	return Proposal{Class: config.ClassFlinkStatement, Target: string(u), NeedsMapping: missing, Mappings: reps,
		Title:    title,
		Payload:  map[string]any{"statement_name": name, "sql": d.SQL, "sink": sink, "start": start, "steps": steps},
		Executor: dc.executor(config.ClassFlinkStatement), Reversible: true,
		Undo: fmt.Sprintf("stop and delete statement %s and topic %s; %s keeps running until stopped, so nothing else changes", name, sink, old),
		Why: fmt.Sprintf("%s is pinned to %s v%d and reads %s, which v%d removed; %s%s", u, sc.Subject, reader.PinnedVersion,
			strings.Join(reader.ReadsFields, ", "), sc.Version, strings.Join(whys, "; "), landing),
		BlastRadius: []string{string(u), string(graph.TopicURN(sink)), string(dc.newAsset)}, Origin: OriginGenerated,
		Validation: validation}, true, nil
}

// sourceTopic is the topic of subject a statement reads ("" when it reads none the graph knows).
func (dc *draftContext) sourceTopic(ctx context.Context, subject string, lin *sqlparse.Lineage) (string, error) {
	topics, err := dc.topicsOf(ctx, subject)
	if err != nil {
		return "", err
	}
	source := ""
	for _, t := range lin.Tables {
		for _, tp := range topics {
			if strings.EqualFold(t[len(t)-1], tp) {
				source = tp
			}
		}
	}
	return source, nil
}

// startAt is where a new statement reading source starts: the partitions' offsets at the plan's
// start when Kafka can say them, else that timestamp (noted). It returns the scan options and the
// payload's start.
func (dc *draftContext) startAt(ctx context.Context, source string) ([][2]string, map[string]any) {
	start := map[string]any{"from": dc.from.UTC().Format(time.RFC3339)}
	var offs []PartitionOffset
	why := "kafka not configured (set kafka.bootstrap_servers)"
	if dc.src.Offsets != nil {
		var err error
		if offs, err = dc.src.Offsets(ctx, source, dc.from); err != nil {
			why, offs = fmt.Sprintf("the offsets of %s could not be read (%v)", source, err), nil
		}
	}
	if offs != nil {
		start["mode"], start["offsets"] = "specific-offsets", specificOffsets(offs)
		return [][2]string{{"scan.startup.mode", "specific-offsets"}, {"scan.startup.specific-offsets", specificOffsets(offs)}}, start
	}
	ms := strconv.FormatInt(dc.from.UnixMilli(), 10)
	start["mode"], start["timestamp_millis"] = "timestamp", ms
	dc.note(fmt.Sprintf("%s: the corrected statement starts from timestamp %s (%s) instead of per-partition offsets", why, ms, dc.from.UTC().Format(time.RFC3339)))
	return [][2]string{{"scan.startup.mode", "timestamp"}, {"scan.startup.timestamp-millis", ms}}, start
}

// clientMapping reads removed from the caller's SQL expression: it must parse, read only scalar
// fields of the schema version that removed the field (the new schema), and give a number when
// the removed field was one (a string field must be CAST).
func (dc *draftContext) clientMapping(ctx context.Context, sc diagnosis.SchemaChange, source, removed, expr, removedType string) (Replacement, error) {
	next, err := dc.newSchema(ctx, sc)
	if err != nil {
		return Replacement{}, err
	}
	if next == nil {
		return Replacement{}, fmt.Errorf("no stored schema version of %s to check it against (run sync_catalog or register the schema)", sc.Subject)
	}
	reads, err := checkMapping(expr, source, next, removed, removedType)
	if err != nil {
		return Replacement{}, fmt.Errorf("%s v%d: %w", sc.Subject, sc.Version, err)
	}
	by := dc.actor
	if by == "" {
		by = "the client"
	}
	r := Replacement{Removed: removed, With: expr, Conversion: "(" + expr + ")", Origin: OriginMappingClient,
		Why: fmt.Sprintf("%s gave the mapping %s = %s in field_mappings; it parses and reads only %s of %s v%d", by, removed, expr, strings.Join(reads, ", "), sc.Subject, sc.Version)}
	r.readOldFirstWhenZero(next, reads)
	return r, nil
}

// newSchema is the stored schema of the version that made the change (the newest stored one
// when that version is not stored); nil when none is stored.
func (dc *draftContext) newSchema(ctx context.Context, sc diagnosis.SchemaChange) (*schema.Schema, error) {
	order, versions, err := storedSchemas(ctx, dc.src.Store, sc.Subject)
	if err != nil {
		return nil, err
	}
	next := versions[sc.Version]
	if next == nil && len(order) > 0 {
		next = versions[order[len(order)-1]]
	}
	return next, nil
}

// readOldFirstWhenZero reads the restored field first when a field the replacement reads cannot
// be null in next: a proto3 scalar without presence reads as its zero value, and a non-null Avro
// field as its default, in the records written before it existed, so COALESCE(replacement, old)
// would never fall back to the old field and would give every old record that value.
func (r *Replacement) readOldFirstWhenZero(next *schema.Schema, reads []string) {
	if next == nil || next.Format != schema.Protobuf && next.Format != schema.Avro {
		return
	}
	for _, f := range next.Fields {
		if !f.Nullable && containsFold(reads, f.Path) {
			r.OldFirst = true
			why := "has no presence (proto3), so records written before it existed read it as 0"
			if next.Format == schema.Avro {
				why = "is not nullable, so records written before it existed read it as its default"
			}
			r.Why += fmt.Sprintf("; %s %s, not null: the restored %s is read first", f.Path, why, r.Removed)
			return
		}
	}
}

// checkMapping checks a client's expression for removed against the new schema and returns the
// fields it reads: one expression (no statement, subquery or comment), over at least one scalar
// field of next, and a number when removed was one.
func checkMapping(expr, source string, next *schema.Schema, removed, removedType string) ([]string, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("the expression is empty: give SQL over the new schema's fields, e.g. CAST(ROUND(weight_kg * 1000) AS BIGINT)")
	}
	if strings.Contains(expr, "--") || strings.Contains(expr, "/*") {
		return nil, errors.New("the expression must be one SQL expression, without comments")
	}
	ts, err := sqlparse.Tokens(expr)
	if err != nil {
		return nil, fmt.Errorf("%q is not an expression: %w", expr, err)
	}
	for _, t := range ts {
		for _, kw := range []string{"SELECT", "FROM", "WHERE", "UNION", "JOIN", "INSERT", "WITH"} {
			if t.IsKeyword(kw) {
				return nil, fmt.Errorf("%q must be one SQL expression over the record's fields, without %s", expr, kw)
			}
		}
		if t.Kind == sqlparse.TokenOp && t.Text == ";" {
			return nil, errors.New("the expression must be one SQL expression, without ';'")
		}
	}
	fields := fieldNames(next)
	rc, err := checkStatement(fmt.Sprintf("SELECT (%s) AS mapped FROM %s", expr, quoteIdent(source)), map[string][]string{strings.ToLower(source): fields})
	if err != nil {
		return nil, fmt.Errorf("%q is not an expression over fields %s: %w", expr, strings.Join(fields, ", "), err)
	}
	reads := rc.Reads[strings.ToLower(source)]
	if len(reads) == 0 {
		return nil, fmt.Errorf("%q reads no field: a constant is not a mapping", expr)
	}
	numeric := false
	for _, f := range next.Fields {
		if !containsFold(reads, f.Path) {
			continue
		}
		if !scalarType(f.Type) {
			return nil, fmt.Errorf("%q reads %s, a %s: map from scalar fields", expr, f.Path, f.Type)
		}
		numeric = numeric || numericType(f.Type)
	}
	if numericType(removedType) && !numeric && !strings.Contains(strings.ToUpper(expr), "CAST") {
		return nil, fmt.Errorf("%s is a %s but %q reads no number (%s): CAST it", removed, removedType, expr, strings.Join(reads, ", "))
	}
	return reads, nil
}

// scalarType is false for records, messages, arrays and maps (a mapping reads plain values).
func scalarType(t string) bool {
	for _, p := range []string{"record", "message", "array", "map", "object"} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return true
}

// numericType says whether a schema type (Avro, Protobuf or JSON Schema) holds a number.
func numericType(t string) bool {
	for _, p := range strings.Split(t, "|") {
		switch strings.TrimSpace(p) {
		case "int", "long", "float", "double", "integer", "number", "int32", "int64", "uint32", "uint64",
			"sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64":
			return true
		}
		if strings.HasPrefix(p, "decimal") {
			return true
		}
	}
	return false
}

// removedOrRenamed says whether the change removed field or renamed it away.
func removedOrRenamed(sc diagnosis.SchemaChange, field string) bool {
	for _, ch := range sc.Changes {
		if ch.Change == "removed" && strings.EqualFold(ch.Path, field) {
			return true
		}
		if old, ok := renameOf(ch); ok && strings.EqualFold(old, field) {
			return true
		}
	}
	return false
}

// lookupFold finds a mapping by field name, case-insensitively (SQL names are).
func lookupFold(m map[string]string, key string) (string, bool) {
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

func exprList(reps []Replacement) string {
	var out []string
	for _, r := range reps {
		out = append(out, r.Readable())
	}
	return strings.Join(out, ", ")
}

// groupKey is the statement's GROUP BY as output column names (window_end, grouped but not
// selected, is left out) and the output column of the window start (the time column).
func groupKey(stmt sqlparse.Statement) ([]string, string) {
	var q *sqlparse.Query
	switch s := stmt.(type) {
	case *sqlparse.Insert:
		q = s.Query
	case *sqlparse.CreateTableAs:
		q = s.Query
	}
	if q == nil {
		return nil, ""
	}
	sel, ok := q.Body.(*sqlparse.Select)
	if !ok {
		return nil, ""
	}
	var key []string
	timeCol := ""
	for _, g := range sel.GroupBy {
		c, ok := g.(*sqlparse.ColumnRef)
		if !ok {
			continue
		}
		name := c.Parts[len(c.Parts)-1]
		for _, it := range sel.Items {
			ic, ok := it.Expr.(*sqlparse.ColumnRef)
			if !ok || !strings.EqualFold(ic.Parts[len(ic.Parts)-1], name) {
				continue
			}
			out := name
			if it.Alias != "" {
				out = it.Alias
			}
			key = append(key, out)
			if strings.EqualFold(name, "window_start") {
				timeCol = out
			}
		}
	}
	if len(sel.GroupBy) == 0 {
		// A statement that lands each record: its time is the column it writes from $rowtime,
		// Confluent Flink's system column holding the record's Kafka timestamp.
		for _, it := range sel.Items {
			if c, ok := it.Expr.(*sqlparse.ColumnRef); ok && strings.EqualFold(c.Parts[len(c.Parts)-1], "$rowtime") {
				timeCol = c.Parts[len(c.Parts)-1]
				if it.Alias != "" {
					timeCol = it.Alias
				}
			}
		}
	}
	return key, timeCol
}

// v2Asset is the warehouse table the new sink lands as: the incident's table named like the new
// topic when the old table is named like the old topic (Tableflow turns '-' into '_'), else the
// old name with _V2 appended; either way the note says so.
func (dc *draftContext) v2Asset(ctx context.Context, oldTopic, newTopic string) graph.URN {
	asset := graph.URN(dc.inc.Asset)
	id := asset.ID()
	engine, rel, ok := strings.Cut(id, "/")
	if asset.System() != graph.SystemWarehouse || !ok {
		dc.note(fmt.Sprintf("the incident asset %s is not a warehouse table, so the table %s lands in is unknown; the checks stay on the incident asset", asset, newTopic))
		return ""
	}
	parts := graph.SplitRelation(rel)
	last := parts[len(parts)-1]
	newLast := last + "_V2"
	if strings.EqualFold(strings.ReplaceAll(oldTopic, "-", "_"), last) {
		newLast = strings.ReplaceAll(newTopic, "-", "_")
		if strings.ToUpper(last) == last {
			newLast = strings.ToUpper(newLast)
		}
	}
	parts[len(parts)-1] = newLast
	u := graph.WarehouseURN(engine, parts...)
	dc.note(fmt.Sprintf("%s is expected to land as %s (the name Tableflow gives topic %s when enabled like %s); the checks run there", newTopic, u, newTopic, oldTopic))
	return u
}
