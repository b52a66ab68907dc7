package plans

import (
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/sqlparse"
)

// A proto3 scalar added beside the removal reads as 0, not null, in the records written before
// it existed, so the corrected read takes the restored field first; a field with presence (or
// any Avro field) keeps the replacement first.
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
	avro := Replacement{Removed: "weight_grams", With: "weight_kg", Factor: "1000"}
	avro.readOldFirstWhenZero(&schema.Schema{Format: schema.Avro, Fields: next.Fields}, []string{"weight_kg"})
	if with.OldFirst || avro.OldFirst {
		t.Errorf("a field with presence or an Avro field read the old field first: %+v %+v", with, avro)
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
