package plans

import (
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// A proto3 scalar added beside the removal reads as 0, not null, in the records written before
// it existed (a non-null Avro field reads its default), so the corrected read takes the restored
// field first; a field with presence, a nullable Avro field or a JSON Schema property keeps the
// replacement first.
func TestAReplacementWithoutPresenceReadsTheRestoredFieldFirst(t *testing.T) {
	next := &schema.Schema{Format: schema.Protobuf, Fields: []schema.Field{{Path: "weight_kg", Type: "double"}, {Path: "volume_l", Type: "double", Nullable: true}}}
	r, why := deriveReplacement("weight_grams", []string{"weight_kg"}, "", map[string]string{"weight_grams": "int64", "weight_kg": "double"})
	if why != "" {
		t.Fatal(why)
	}
	r.readOldFirstWhenZero(next, []string{r.With})
	if got := r.Expression(""); got != "COALESCE(weight_grams, CAST(ROUND(weight_kg * 1000) AS BIGINT))" {
		t.Errorf("expression = %s", got)
	}
	if got := r.Readable(); got != "COALESCE(weight_grams, CAST(ROUND(weight_kg * 1000) AS BIGINT))" {
		t.Errorf("readable = %s", got)
	}
	with := Replacement{Removed: "volume_ml", With: "volume_l", Factor: "1000"}
	with.readOldFirstWhenZero(next, []string{"volume_l"})
	nullable := Replacement{Removed: "volume_ml", With: "volume_l", Factor: "1000"}
	nullable.readOldFirstWhenZero(&schema.Schema{Format: schema.Avro, Fields: next.Fields}, []string{"volume_l"})
	jsonProp := Replacement{Removed: "weight_grams", With: "weight_kg", Factor: "1000"}
	jsonProp.readOldFirstWhenZero(&schema.Schema{Format: schema.JSON, Fields: next.Fields}, []string{"weight_kg"})
	if with.OldFirst || nullable.OldFirst || jsonProp.OldFirst {
		t.Errorf("a field that reads null where absent read the old field first: %+v %+v %+v", with, nullable, jsonProp)
	}
	avroDefault := Replacement{Removed: "duration_s", With: "duration_ms", Factor: "1/1000"}
	avroDefault.readOldFirstWhenZero(&schema.Schema{Format: schema.Avro, Fields: []schema.Field{{Path: "duration_ms", Type: "long", HasDefault: true, Default: "0"}}}, []string{"duration_ms"})
	if !avroDefault.OldFirst || avroDefault.Expression("") != "COALESCE(duration_s, CAST(duration_ms AS BIGINT) * 1/1000)" {
		t.Errorf("a non-null Avro field with a default: %+v %s", avroDefault, avroDefault.Expression(""))
	}
}

// A statement that lands each record has no window to group by: its time column is the one it
// writes from $rowtime.
func TestTheTimeColumnOfAStatementWithoutGroupByIsItsRowtime(t *testing.T) {
	stmt, err := sqlparse.Parse("INSERT INTO `parcel-weights` SELECT scan_id, weight_grams, `$rowtime` AS scanned_at FROM `parcel-scans`")
	if err != nil {
		t.Fatal(err)
	}
	if key, col := groupKey(stmt); len(key) != 0 || col != "scanned_at" {
		t.Errorf("groupKey = %v, %q", key, col)
	}
}
