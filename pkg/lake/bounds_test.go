package lake

import (
	"encoding/binary"
	"math"
	"math/big"
	"testing"
)

// Bounds in Iceberg's single-value serialization, written out by hand from the spec's table.
func TestDecodeBound(t *testing.T) {
	long, double := Type{Name: "long"}, Type{Name: "double"}
	dec92 := Type{Name: "decimal", Precision: 9, Scale: 2}
	cases := []struct {
		name string
		typ  Type
		b    []byte
		want float64
		ok   bool
	}{
		{"int little-endian", Type{Name: "int"}, []byte{0xfe, 0xff, 0xff, 0xff}, -2, true},
		{"long little-endian", long, []byte{0x10, 0x27, 0, 0, 0, 0, 0, 0}, 10000, true},
		{"long promoted from int", long, []byte{0xff, 0xff, 0xff, 0xff}, -1, true},
		{"float", Type{Name: "float"}, []byte{0, 0, 0xc0, 0x3f}, 1.5, true},
		{"double", double, []byte{0, 0, 0, 0, 0, 0, 0x04, 0xc0}, -2.5, true},
		{"double promoted from float", double, []byte{0, 0, 0xc0, 0x3f}, 1.5, true},
		{"decimal big-endian unscaled", dec92, []byte{0x30, 0x39}, 123.45, true},
		{"negative decimal", dec92, []byte{0xff}, -0.01, true},
		{"negative decimal, two bytes", dec92, []byte{0xcf, 0xc7}, -123.45, true},
		{"decimal(38) at 16 bytes", Type{Name: "decimal", Precision: 38, Scale: 0}, append([]byte{0x01}, make([]byte, 15)...), math.Ldexp(1, 120), true},
		{"decimal wider than 16 bytes", dec92, make([]byte, 17), 0, false},
		{"empty decimal", dec92, []byte{}, 0, false},
		{"double NaN", double, []byte{1, 0, 0, 0, 0, 0, 0xf8, 0x7f}, 0, false},
		{"missing", long, nil, 0, false},
		{"short long", long, []byte{1, 2}, 0, false},
		{"string is not numeric", Type{Name: "string"}, []byte("abc"), 0, false},
	}
	for _, c := range cases {
		got, ok := decodeBound(c.typ, c.b)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: got %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// FuzzDecodeBound: any bytes for any numeric type decode or are refused, never panic; what
// decodes agrees with an independent reading of the spec's encoding.
func FuzzDecodeBound(f *testing.F) {
	f.Add(byte(0), []byte{1, 0, 0, 0})
	f.Add(byte(4), []byte{0x80})
	f.Add(byte(1), []byte{0x10, 0x27, 0, 0, 0, 0, 0, 0})
	types := []Type{{Name: "int"}, {Name: "long"}, {Name: "float"}, {Name: "double"}, {Name: "decimal", Precision: 38, Scale: 6}}
	f.Fuzz(func(t *testing.T, which byte, b []byte) {
		typ := types[int(which)%len(types)]
		v, ok := decodeBound(typ, b)
		if !ok {
			return
		}
		var want float64
		switch {
		case typ.Name == "int" || typ.Name == "long" && len(b) == 4:
			want = float64(int32(binary.LittleEndian.Uint32(b)))
		case typ.Name == "long":
			want = float64(int64(binary.LittleEndian.Uint64(b)))
		case typ.Name == "float" || typ.Name == "double" && len(b) == 4:
			want = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case typ.Name == "double":
			want = math.Float64frombits(binary.LittleEndian.Uint64(b))
		default:
			// Two's complement, read the other way round: flip the bits of a negative value.
			mag := new(big.Int).SetBytes(b)
			if b[0]&0x80 != 0 {
				inv := make([]byte, len(b))
				for i := range b {
					inv[i] = ^b[i]
				}
				mag.SetBytes(inv).Add(mag, big.NewInt(1)).Neg(mag)
			}
			want, _ = new(big.Float).Quo(new(big.Float).SetInt(mag), big.NewFloat(1e6)).Float64()
			if math.Abs(v-want) > math.Abs(want)*1e-15 {
				t.Fatalf("decimal %x: %v, want %v", b, v, want)
			}
			return
		}
		if v != want {
			t.Fatalf("%s %x: %v, want %v", typ.Name, b, v, want)
		}
	})
}
