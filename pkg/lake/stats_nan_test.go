package lake

import "testing"

// A double file's NaNs are values, but neither zero nor negative: the bounds settle the rest, and
// a file that does not count its NaNs is left to a scan.
func TestNaNsAreNotCountedAsNegativesFromMetadata(t *testing.T) {
	double := Field{ID: 2, Name: "ratio", Type: Type{Name: "double"}}
	neg := []byte{0, 0, 0, 0, 0, 0, 0xf0, 0xbf}     // -1.0
	negHalf := []byte{0, 0, 0, 0, 0, 0, 0xe0, 0xbf} // -0.5
	df := fileMetrics{values: map[int]int64{2: 10}, nulls: map[int]int64{2: 1}, nans: map[int]int64{2: 3},
		lower: map[int][]byte{2: neg}, upper: map[int][]byte{2: negHalf}}
	st := ColumnStats{Zeros: new(int64), Negatives: new(int64)}
	if !fromMetadata(df, double, &st, true) {
		t.Fatal("a file that counts its NaNs was not answered from metadata")
	}
	if st.Values != 10 || st.Nulls != 1 || *st.Negatives != 6 || *st.Zeros != 0 {
		t.Fatalf("stats = values %d nulls %d negatives %d zeros %d; want 10, 1, 6 (9 non-null less 3 NaN), 0",
			st.Values, st.Nulls, *st.Negatives, *st.Zeros)
	}
	df.nans = nil
	if fromMetadata(df, double, &ColumnStats{Zeros: new(int64), Negatives: new(int64)}, true) {
		t.Fatal("a double file without NaN counts was answered from its bounds")
	}
	// Counts alone need no NaN count.
	if !fromMetadata(df, double, &ColumnStats{}, false) {
		t.Fatal("counts of a double file were not answered from metadata")
	}
}
