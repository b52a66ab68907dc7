package impact

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/schema"
)

// Symptom is what the data downstream shows when a reader pinned to the old schema meets records
// written with the new one. It decides which checks can see the change.
type Symptom string

// Symptoms.
const (
	// SymptomNulls: the value reads as NULL (null-rate and not_null checks see it).
	SymptomNulls Symptom = "nulls"
	// SymptomZeros: the value reads as its type's zero (0, "", false, the first enum value, an
	// empty list) or a zero default: null checks see nothing, sums drop toward zero.
	SymptomZeros Symptom = "zeros"
	// SymptomDefault: the value reads as the reader schema's non-zero default.
	SymptomDefault Symptom = "default"
	// SymptomRowsMissing: records are skipped (a deserialization error under error-handling log
	// or ignore): rows vanish, counts and sums shrink.
	SymptomRowsMissing Symptom = "rows_missing"
	// SymptomStatementFailed: records cannot be decoded and the reader stops: its table goes stale.
	SymptomStatementFailed Symptom = "statement_failed"
	// SymptomConverted: the value is read in the old type by a lossless promotion.
	SymptomConverted Symptom = "converted"
	// SymptomUnderstated: a figure computed upstream (a sum, a count) lost part of its input: no
	// null or zero shows, the number is just smaller.
	SymptomUnderstated Symptom = "understated"
	// SymptomNone: the reader sees what it saw before.
	SymptomNone Symptom = "none"
)

// Checks are the quality checks that can see a symptom, in the words of the checks.
func (s Symptom) Checks() []string {
	switch s {
	case SymptomNulls:
		return []string{"null_rate", "not_null", "sum/volume of the value"}
	case SymptomZeros, SymptomDefault:
		return []string{"zero or default rate (custom rule)", "sum/average of the value", "value distribution"}
	case SymptomRowsMissing:
		return []string{"volume", "row count", "sums over the rows"}
	case SymptomStatementFailed:
		return []string{"freshness", "volume", "the statement's status"}
	case SymptomUnderstated:
		return []string{"sum/volume of the figure against its source", "anomaly on the figure"}
	}
	return []string{}
}

// QualityChecks are the checks of Checks by the names quality monitors and plans use: what a
// plan re-runs to see the symptom gone. Column checks (null_rate, zero_rate, sum_per_hour) run on
// the column that carries the field; volume and freshness on the table.
func (s Symptom) QualityChecks() []string {
	switch s {
	case SymptomNulls:
		return []string{"null_rate"}
	case SymptomZeros, SymptomDefault:
		return []string{"zero_rate", "sum_per_hour"}
	case SymptomRowsMissing:
		return []string{"volume"}
	case SymptomStatementFailed:
		return []string{"freshness", "volume"}
	case SymptomUnderstated:
		return []string{"sum_per_hour", "volume"}
	}
	return []string{}
}

// Error-handling modes of a Flink source table ('error-handling.mode'): fail (default) stops the
// statement on a record it cannot deserialize; ignore and log skip the record (log also writes
// it to the error table).
const (
	ErrorFail   = "fail"
	ErrorIgnore = "ignore"
	ErrorLog    = "log"
)

// ErrorHandlingAttr is the asset attribute holding a Flink table's or statement's error-handling mode.
const ErrorHandlingAttr = "error-handling.mode"

// View is what a reader pinned to the old schema sees of one field in new records, by the
// format's resolution rules.
type View struct {
	Field  string        `json:"field"`
	Format schema.Format `json:"format"`
	// Sees is the value the reader gets: "NULL", "0", `""`, "false", "the default 5", "no record".
	Sees    string  `json:"sees"`
	Symptom Symptom `json:"symptom"`
	// Checks are the checks that can see it (and, by omission, the ones that cannot).
	Checks []string `json:"checks"`
	// Why is the format rule, in one sentence.
	Why string `json:"why"`
}

// ReaderView says what a reader built against old sees of the field when records are written
// with new (newField nil: the writer no longer has it). errorHandling is the reader's Flink
// error-handling mode ("" = fail).
func ReaderView(format schema.Format, oldField, newField *schema.Field, errorHandling string) View {
	if oldField == nil {
		return View{Symptom: SymptomNone, Sees: "the field is new to it", Checks: []string{}, Why: "a reader never reads a field its schema does not have"}
	}
	v := View{Field: oldField.Path, Format: format}
	switch format {
	case schema.Protobuf:
		protobufView(&v, oldField, newField, errorHandling)
	case schema.JSON:
		jsonView(&v, oldField, newField)
	default:
		avroView(&v, oldField, newField, errorHandling)
	}
	v.Checks = v.Symptom.Checks()
	return v
}

func undecodable(v *View, mode, why string) {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case ErrorIgnore, ErrorLog:
		v.Symptom, v.Sees = SymptomRowsMissing, "no record"
		v.Why = why + "; with error-handling.mode " + strings.ToLower(mode) + " the record is skipped, so rows vanish and sums shrink"
	default:
		v.Symptom, v.Sees = SymptomStatementFailed, "no record"
		v.Why = why + "; with error-handling.mode fail (the default) the statement fails and its table stops updating"
	}
}

// avroPromotions are the writer→reader type promotions Avro schema resolution allows.
var avroPromotions = map[string][]string{
	"int":    {"long", "float", "double"},
	"long":   {"float", "double"},
	"float":  {"double"},
	"string": {"bytes"},
	"bytes":  {"string"},
}

func avroView(v *View, old, new *schema.Field, mode string) {
	switch {
	case new == nil:
		if !old.HasDefault {
			undecodable(v, mode, fmt.Sprintf("Avro resolution: the reader's %s has no default and the writer's schema lacks it, so the record cannot be decoded", old.Path))
			return
		}
		if old.Default == "null" {
			v.Symptom, v.Sees = SymptomNulls, "NULL"
			v.Why = fmt.Sprintf("Avro resolution: the writer lacks %s, so the reader fills in its default null", old.Path)
			return
		}
		v.Sees = "the default " + old.Default
		v.Symptom = SymptomDefault
		if zeroText(old.Default) {
			v.Symptom = SymptomZeros
		}
		v.Why = fmt.Sprintf("Avro resolution: the writer lacks %s, so the reader fills in its default %s for every new record", old.Path, old.Default)
	case old.Type != new.Type:
		if slices.Contains(avroPromotions[new.Type], old.Type) {
			v.Symptom, v.Sees = SymptomConverted, "the value promoted to "+old.Type
			v.Why = fmt.Sprintf("Avro resolution promotes the writer's %s to the reader's %s", new.Type, old.Type)
			if new.Type == "long" || old.Type == "float" {
				v.Why += " (a long or int above 2^24 loses precision in float, above 2^53 in double)"
			}
			return
		}
		undecodable(v, mode, fmt.Sprintf("Avro resolution has no promotion from the writer's %s to the reader's %s for %s", new.Type, old.Type, old.Path))
	case new.Nullable && !old.Nullable:
		undecodable(v, mode, fmt.Sprintf("the writer's %s is a union with null and the reader's is not: a record whose value is null cannot be resolved", old.Path))
		v.Why += " (records with a value still decode)"
	default:
		v.Symptom, v.Sees = SymptomNone, "the value"
		v.Why = "the reader resolves the writer's field as before"
	}
}

func protobufView(v *View, old, new *schema.Field, errorHandling string) {
	if new != nil && new.Tag == old.Tag && new.Type == old.Type {
		v.Symptom, v.Sees, v.Why = SymptomNone, "the value", "the same tag and type: the wire is unchanged"
		return
	}
	if new != nil && new.Tag == old.Tag {
		if varint[baseProto(old.Type)] && varint[baseProto(new.Type)] {
			v.Symptom, v.Sees = SymptomConverted, "the value reinterpreted as "+old.Type
			v.Why = fmt.Sprintf("Protobuf: %s and %s share the varint wire type, so the value is read as %s (truncated to 32 bits or sign-reinterpreted where they differ)", new.Type, old.Type, old.Type)
			return
		}
		// Another wire type on the same tag: the reader keeps it as an unknown field.
	}
	switch {
	case !old.Optional:
		undecodable(v, errorHandling, fmt.Sprintf("proto2: %s is required in the reader's schema and absent on the wire, so parsing fails", old.Path))
	case strings.HasPrefix(old.Type, "repeated ") || strings.HasPrefix(old.Type, "map<"):
		v.Symptom, v.Sees = SymptomZeros, "an empty list"
		v.Why = fmt.Sprintf("Protobuf: the writer sends no %s elements, so the reader sees an empty %s", old.Path, old.Type)
	case strings.HasPrefix(old.Type, "message google.protobuf.") && strings.HasSuffix(old.Type, "Value"):
		v.Symptom, v.Sees = SymptomNulls, "NULL"
		v.Why = fmt.Sprintf("Protobuf: %s is a wrapper type (%s), whose absence reads as null", old.Path, strings.TrimPrefix(old.Type, "message "))
	case old.HasDefault:
		v.Sees = "the default " + old.Default
		v.Symptom = SymptomDefault
		if zeroText(strings.Trim(old.Default, `"`)) {
			v.Symptom = SymptomZeros
		}
		v.Why = fmt.Sprintf("proto2: %s is absent, so the reader gets its declared default %s", old.Path, old.Default)
	case old.Nullable:
		v.Symptom, v.Sees = SymptomNulls, "NULL"
		v.Why = fmt.Sprintf("Protobuf: %s has presence (optional, a message or a oneof member), so its absence reads as null", old.Path)
	default:
		v.Symptom, v.Sees = SymptomZeros, protoZero(old)
		v.Why = fmt.Sprintf("proto3: %s is a scalar without presence, so its absence reads as its zero value %s, not null: null-rate checks see nothing and sums drop toward zero", old.Path, v.Sees)
	}
}

func jsonView(v *View, old, new *schema.Field) {
	switch {
	case new == nil:
		v.Symptom, v.Sees = SymptomNulls, "NULL"
		v.Why = fmt.Sprintf("JSON Schema: the property %s is absent from new documents, which a reader reads as null", old.Path)
	case old.Type != new.Type:
		v.Symptom, v.Sees = SymptomConverted, "a "+new.Type+" where it expects "+old.Type
		v.Why = fmt.Sprintf("JSON Schema: %s now holds %s; a reader that casts it to %s may fail or read null", old.Path, new.Type, old.Type)
	case new.Nullable && !old.Nullable:
		v.Symptom, v.Sees = SymptomNulls, "NULL in some records"
		v.Why = fmt.Sprintf("JSON Schema: %s may now be null", old.Path)
	default:
		v.Symptom, v.Sees, v.Why = SymptomNone, "the value", "the property is unchanged"
	}
}

// varint are the scalar types sharing the plain varint encoding (sint32/sint64 use zigzag).
var varint = map[string]bool{"int32": true, "int64": true, "uint32": true, "uint64": true, "bool": true}

func baseProto(t string) string { return strings.TrimPrefix(t, "optional ") }

func protoZero(f *schema.Field) string {
	t := baseProto(f.Type)
	switch {
	case t == "string" || t == "bytes":
		return `""`
	case t == "bool":
		return "false"
	case strings.HasPrefix(t, "enum "):
		if len(f.Symbols) > 0 {
			return f.Symbols[0] + " (the enum's first value)"
		}
		return "the enum's first value"
	}
	return "0"
}

func zeroText(s string) bool {
	switch strings.TrimSpace(s) {
	case "0", "0.0", `""`, "", "false", "[]", "{}":
		return true
	}
	return false
}

// pinnedView is the View of change c for a reader pinned to req.Old, under error-handling mode.
func pinnedView(req Request, c schema.Change, mode string) (View, bool) {
	if req.Old == nil || req.New == nil {
		return View{}, false
	}
	oldPath := c.Path
	if c.OldPath != "" {
		oldPath = c.OldPath
	}
	of, ok := req.Old.Field(oldPath)
	if !ok {
		return View{}, false
	}
	var nf *schema.Field
	if f, ok := req.New.Field(c.Path); ok && c.Kind != schema.FieldRemoved {
		nf = &f
		// Avro and JSON readers match by name: a renamed field is missing to a pinned reader
		// (Avro aliases count only in the reader's schema). Protobuf matches by tag.
		if c.Kind == schema.FieldRenamed && req.Old.Format != schema.Protobuf {
			nf = nil
		}
	}
	if req.Old.Format == schema.Protobuf && nf == nil {
		// A new field on the removed one's tag is another value on the wire, not this one.
		for _, f := range req.New.Fields {
			if f.Tag == of.Tag && f.Tag != 0 && parentOf(f.Path) == parentOf(of.Path) {
				g := f
				nf = &g
			}
		}
	}
	return ReaderView(req.Old.Format, &of, nf, mode), true
}

func parentOf(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// latestView is what a reader that decodes with each record's own (writer's) schema sees: a
// removed field is simply not there, so its column is null.
func latestView(c schema.Change, e effect) View {
	v := View{Field: c.Path, Symptom: SymptomNone, Sees: "the value", Checks: []string{}}
	switch e {
	case effNull:
		v.Symptom, v.Sees, v.Why = SymptomNulls, "NULL", "records written with the new version do not carry the field, so a column fed from them is null"
	case effFails:
		v.Symptom, v.Sees, v.Why = SymptomStatementFailed, "no record", "the old readers cannot read the new records"
	case effType:
		v.Symptom, v.Sees, v.Why = SymptomConverted, "the new type", "the value arrives in the new type"
	}
	v.Checks = v.Symptom.Checks()
	return v
}

// effectOf turns a pinned reader's symptom into the effect carried down the lineage.
func effectOf(s Symptom, parent effect) effect {
	switch s {
	case SymptomNulls:
		return effNull
	case SymptomZeros, SymptomDefault:
		return effZero
	case SymptomRowsMissing:
		return effSkips
	case SymptomStatementFailed:
		return effFails
	case SymptomConverted:
		return effType
	case SymptomNone:
		return effNone
	}
	return parent
}

// ErrorHandling is the error-handling mode of a Flink statement reading source: its own, or else
// the one set on the table it reads ("" = fail).
func ErrorHandling(stmt, source graph.Asset) string { return errorHandling(stmt, source) }

// errorHandling is the error-handling mode set on the statement or on the table it reads.
func errorHandling(stmt, source graph.Asset) string {
	if m := stmt.Attrs[ErrorHandlingAttr]; m != "" {
		return m
	}
	return source.Attrs[ErrorHandlingAttr]
}

// after is the symptom an asset's data shows once the effect at it is known: a sum or count over
// the bad values is understated, a COALESCE turns a null into its fallback.
func after(v View, e effect) View {
	switch {
	case e == effShrinks || e == effDrops || e == effSkews:
		if v.Symptom == SymptomNulls || v.Symptom == SymptomZeros || v.Symptom == SymptomDefault {
			v.Symptom, v.Sees = SymptomUnderstated, "an understated figure"
			v.Checks = v.Symptom.Checks()
		}
	case e == effZero && v.Symptom == SymptomNulls:
		v.Symptom, v.Sees = SymptomZeros, "the fallback"
		v.Checks = v.Symptom.Checks()
	case e == effSkips && v.Symptom != SymptomRowsMissing:
		v.Symptom, v.Sees = SymptomRowsMissing, "no record"
		v.Checks = v.Symptom.Checks()
	case e == effFails && v.Symptom != SymptomStatementFailed:
		v.Symptom, v.Sees = SymptomStatementFailed, "no new rows"
		v.Checks = v.Symptom.Checks()
	}
	return v
}

// Predict is, for every reader-affecting field change from old to new, what a reader pinned to
// old sees of it in records written with new, under error-handling mode ("" = fail).
func Predict(old, new *schema.Schema, mode string) []View {
	if old == nil || new == nil {
		return []View{}
	}
	req := Request{Old: old, New: new}
	out := []View{}
	for _, c := range schema.Diff(old, new) {
		var v View
		var ok bool
		switch {
		case c.Kind.AffectsReaders():
			v, ok = pinnedView(req, c, mode)
		case c.Kind == schema.EnumSymbolsAdded:
			v, ok = enumView(old, c, mode)
		}
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// enumView is what a reader pinned to old sees of a record carrying a symbol its enum lacks. In
// Avro the symbol cannot be resolved: the reader's enum default is read instead, or, without one,
// the record cannot be decoded. (Protobuf enums keep an unknown number and JSON Schema carries the
// string: nothing fails, and the readers that compare the value are found from their SQL.)
func enumView(old *schema.Schema, c schema.Change, mode string) (View, bool) {
	added := c.SymbolsAdded
	if old.Format != schema.Avro || c.Old == nil || len(added) == 0 {
		return View{}, false
	}
	syms := strings.Join(added, ", ")
	v := View{Field: c.Path, Format: schema.Avro}
	name := strings.TrimPrefix(c.Old.Type, "enum ")
	if e := findAvroEnum(old.AvroSchema(), name, map[string]bool{}); e != nil && e.HasDefault() {
		v.Symptom, v.Sees = SymptomDefault, "the enum default "+e.Default()
		v.Why = fmt.Sprintf("Avro resolution: the reader's enum %s lacks %s, so records carrying it read its default %s", name, syms, e.Default())
	} else {
		undecodable(&v, mode, fmt.Sprintf("Avro resolution: the reader's enum %s lacks %s and declares no default, so a record carrying it cannot be decoded", name, syms))
	}
	v.Checks = v.Symptom.Checks()
	return v, true
}

// findAvroEnum finds the enum of that full name in the schema.
func findAvroEnum(s avro.Schema, name string, seen map[string]bool) *avro.EnumSchema {
	switch t := s.(type) {
	case *avro.EnumSchema:
		if t.FullName() == name {
			return t
		}
	case *avro.RefSchema:
		return findAvroEnum(t.Schema(), name, seen)
	case *avro.RecordSchema:
		if seen[t.FullName()] {
			return nil
		}
		seen[t.FullName()] = true
		for _, f := range t.Fields() {
			if e := findAvroEnum(f.Type(), name, seen); e != nil {
				return e
			}
		}
	case *avro.UnionSchema:
		for _, b := range t.Types() {
			if e := findAvroEnum(b, name, seen); e != nil {
				return e
			}
		}
	case *avro.ArraySchema:
		return findAvroEnum(t.Items(), name, seen)
	case *avro.MapSchema:
		return findAvroEnum(t.Values(), name, seen)
	}
	return nil
}
