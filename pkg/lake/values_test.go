package lake_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/lake/laketest"
)

// TestValuesFromBounds: min, max, zeros and negatives come from the manifests' bounds where they
// settle them (a file of zeros, a file of negatives) and from a read where they do not (a file
// spanning zero) or where the file has no metrics at all.
func TestValuesFromBounds(t *testing.T) {
	l := laketest.Open(t, laketest.Config(t.TempDir(), "lkc-v"))
	w := laketest.Create(t, l, "lkc-v", "usage", laketest.Long(1, "amount"), laketest.Double(2, "ratio"), laketest.String(3, "plan"))
	since := time.Now().Add(-time.Second)
	w.Append(`[{"amount":0,"ratio":0.5,"plan":"a"},{"amount":0,"ratio":0.25,"plan":"b"},{"amount":null,"ratio":null,"plan":"c"}]`)
	w.Append(`[{"amount":-5,"ratio":1.5,"plan":"a"},{"amount":3,"ratio":2,"plan":"a"}]`)
	w.Append(`[{"amount":-2,"ratio":-1,"plan":"a"},{"amount":-1,"ratio":-0.5,"plan":"a"}]`)
	w.ColumnMetrics("none")
	w.Append(`[{"amount":7,"ratio":0,"plan":"z"}]`)
	ctx := context.Background()
	tbl, err := l.Load(ctx, "tableflow:usage")
	if err != nil {
		t.Fatal(err)
	}
	st, err := lake.Stats(ctx, tbl, since, time.Now().Add(time.Second), lake.Want{Values: true})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]lake.ColumnStats{}
	for _, c := range st.Columns {
		by[c.Column] = c
	}
	a := by["amount"]
	if a.Min == nil || *a.Min != -5 || *a.Max != 7 || *a.Zeros != 2 || *a.Negatives != 3 || a.NonNull() != 7 {
		t.Fatalf("amount = %+v (min %v max %v)", a, deref(a.Min), deref(a.Max))
	}
	// Zeros (lower = upper = 0) and negatives (upper < 0) from metadata; the file spanning zero
	// and the one without metrics were read.
	if a.FromMetadata != 2 || a.Scanned != 2 {
		t.Fatalf("amount sources = %d from metadata, %d scanned", a.FromMetadata, a.Scanned)
	}
	// ratio is a double: iceberg-go writes no nan_value_counts, and a NaN is a value the bounds
	// leave out, so the bounds cannot say how many values are negative: every file is read.
	r := by["ratio"]
	if *r.Min != -1 || *r.Max != 2 || *r.Zeros != 1 || *r.Negatives != 2 || r.FromMetadata != 0 || r.Scanned != 4 {
		t.Fatalf("ratio = %+v (min %v max %v zeros %d neg %d)", r, deref(r.Min), deref(r.Max), *r.Zeros, *r.Negatives)
	}
	if p := by["plan"]; p.Min != nil || p.Zeros != nil || p.FromMetadata != 3 || p.Scanned != 1 {
		t.Fatalf("a string column has no numeric measures: %+v", p)
	}

	// Counts alone never read a file that has count metrics.
	counts, err := lake.Stats(ctx, tbl, since, time.Now().Add(time.Second), lake.Want{Columns: []string{"amount"}})
	if err != nil || counts.ScannedFiles != 1 || counts.Columns[0].Zeros != nil {
		t.Fatalf("counts only = %+v, %v", counts, err)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// Files without metrics are read column by column: a required long, a decimal (min, max, zeros
// and negatives from the unscaled values), and nested columns counted by row (a null list or
// struct is one null; a list's elements are not rows).
func TestScanWithoutMetrics(t *testing.T) {
	l := laketest.Open(t, laketest.Config(t.TempDir(), "lkc-s"))
	w := laketest.Create(t, l, "lkc-s", "orders",
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "amount", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 3, Name: "tags", Type: &iceberg.ListType{ElementID: 5, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}},
		iceberg.NestedField{ID: 4, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 6, Name: "city", Type: iceberg.PrimitiveTypes.String}}}})
	w.ColumnMetrics("none")
	since := time.Now().Add(-time.Second)
	w.Append(`[{"id":1,"amount":"-1.50","tags":["a","b","c"],"addr":{"city":"x"}},
		{"id":2,"amount":null,"tags":null,"addr":null},
		{"id":3,"amount":"0.00","tags":[],"addr":{"city":null}},
		{"id":4,"amount":"12.25","tags":["d"],"addr":{"city":"y"}}]`)
	ctx := context.Background()
	tbl, err := l.Load(ctx, "tableflow:orders")
	if err != nil {
		t.Fatal(err)
	}
	st, err := lake.Stats(ctx, tbl, since, time.Now().Add(time.Second), lake.Want{Columns: []string{"id", "amount", "tags", "addr"}, Values: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.ScannedFiles != 1 || st.Records != 4 {
		t.Fatalf("stats = %+v", st)
	}
	id, amount, tags, addr := st.Columns[0], st.Columns[1], st.Columns[2], st.Columns[3]
	if id.Values != 4 || id.Nulls != 0 || *id.Min != 1 || *id.Max != 4 || *id.Zeros != 0 || *id.Negatives != 0 || id.Scanned != 1 {
		t.Errorf("id = %+v", id)
	}
	if amount.Values != 4 || amount.Nulls != 1 || *amount.Min != -1.5 || *amount.Max != 12.25 || *amount.Zeros != 1 || *amount.Negatives != 1 {
		t.Errorf("amount = %+v (min %v max %v)", amount, deref(amount.Min), deref(amount.Max))
	}
	if tags.Values != 4 || tags.Nulls != 1 || tags.Min != nil {
		t.Errorf("tags = %+v", tags)
	}
	if addr.Values != 4 || addr.Nulls != 1 {
		t.Errorf("addr = %+v", addr)
	}
	// A field inside a struct is null where it is null and where its struct is: two of four.
	nested, err := lake.Stats(ctx, tbl, since, time.Now().Add(time.Second), lake.Want{Columns: []string{"addr.city"}})
	if err != nil {
		t.Fatal(err)
	}
	if city := nested.Columns[0]; city.Values != 4 || city.Nulls != 2 || city.Scanned != 1 {
		t.Errorf("addr.city = %+v, want 4 values, 2 null", city)
	}
}
