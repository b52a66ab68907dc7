package lake

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// Bounds in Iceberg's single-value serialization, written out by hand from the spec's table.
func TestDecodeBound(t *testing.T) {
	cases := []struct {
		name string
		typ  iceberg.Type
		b    []byte
		want float64
		ok   bool
	}{
		{"int little-endian", iceberg.PrimitiveTypes.Int32, []byte{0xfe, 0xff, 0xff, 0xff}, -2, true},
		{"long little-endian", iceberg.PrimitiveTypes.Int64, []byte{0x10, 0x27, 0, 0, 0, 0, 0, 0}, 10000, true},
		{"float", iceberg.PrimitiveTypes.Float32, []byte{0, 0, 0xc0, 0x3f}, 1.5, true},
		{"double", iceberg.PrimitiveTypes.Float64, []byte{0, 0, 0, 0, 0, 0, 0x04, 0xc0}, -2.5, true},
		{"decimal big-endian unscaled", iceberg.DecimalTypeOf(9, 2), []byte{0x30, 0x39}, 123.45, true},
		{"negative decimal", iceberg.DecimalTypeOf(9, 2), []byte{0xff}, -0.01, true},
		{"double NaN", iceberg.PrimitiveTypes.Float64, []byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f}, 0, false},
		{"missing", iceberg.PrimitiveTypes.Int64, nil, 0, false},
		{"short long", iceberg.PrimitiveTypes.Int64, []byte{1, 2}, 0, false},
		{"string is not numeric", iceberg.PrimitiveTypes.String, []byte("abc"), 0, false},
	}
	for _, c := range cases {
		got, ok := decodeBound(c.typ, c.b)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: got %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// FuzzDecodeBound: any bytes for any numeric type decode or are refused, never panic.
func FuzzDecodeBound(f *testing.F) {
	f.Add(byte(0), []byte{1, 0, 0, 0})
	f.Add(byte(4), []byte{0x80})
	types := []iceberg.Type{iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Float32,
		iceberg.PrimitiveTypes.Float64, iceberg.DecimalTypeOf(38, 6)}
	f.Fuzz(func(t *testing.T, which byte, b []byte) {
		decodeBound(types[int(which)%len(types)], b)
	})
}
