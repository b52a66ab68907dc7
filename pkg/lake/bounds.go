package lake

import (
	"encoding/binary"
	"math"
	"math/big"
)

// isNumeric reports whether a column's values have a numeric order we measure (min, max, zeros,
// negatives): int, long, float, double and decimal.
func isNumeric(t Type) bool {
	switch t.Name {
	case "int", "long", "float", "double", "decimal":
		return true
	}
	return false
}

// decodeBound reads a manifest lower or upper bound of a numeric column, stored in Iceberg's
// single-value binary serialization (spec, appendix D): int and float little-endian in 4 bytes,
// long and double in 8, decimal as the unscaled value's big-endian two's complement in the
// fewest bytes. Numeric bounds are never truncated, so they are the file's exact min and max as
// its writer saw them. ok is false for a missing or malformed bound, or a NaN.
func decodeBound(t Type, b []byte) (v float64, ok bool) {
	if b == nil {
		return 0, false
	}
	switch t.Name {
	case "int":
		if len(b) != 4 {
			return 0, false
		}
		v = float64(int32(binary.LittleEndian.Uint32(b)))
	case "long":
		// A long column promoted from int keeps its older files' 4-byte bounds.
		switch len(b) {
		case 4:
			v = float64(int32(binary.LittleEndian.Uint32(b)))
		case 8:
			v = float64(int64(binary.LittleEndian.Uint64(b)))
		default:
			return 0, false
		}
	case "float":
		if len(b) != 4 {
			return 0, false
		}
		v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case "double":
		// A double column promoted from float keeps its older files' 4-byte bounds.
		switch len(b) {
		case 4:
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case 8:
			v = math.Float64frombits(binary.LittleEndian.Uint64(b))
		default:
			return 0, false
		}
	case "decimal":
		// decimal(38) needs at most 16 bytes; an empty or wider value is malformed.
		if len(b) == 0 || len(b) > 16 {
			return 0, false
		}
		v = decimalFloat(twosComplement(b), t.Scale)
	default:
		return 0, false
	}
	return v, !math.IsNaN(v)
}

// twosComplement reads a big-endian two's complement integer (an empty slice is 0).
func twosComplement(b []byte) *big.Int {
	u := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 { // negative: subtract 2^(8·len)
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return u
}

// decimalFloat is unscaled·10^-scale, correctly rounded to a float64.
func decimalFloat(unscaled *big.Int, scale int) float64 {
	v, _ := new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).Float64()
	return v
}
