package lake

import (
	"math"

	"github.com/apache/iceberg-go"
)

// isNumeric reports whether a column's values have a numeric order we measure (min, max, zeros,
// negatives): int, long, float, double and decimal.
func isNumeric(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type, iceberg.DecimalType:
		return true
	}
	return false
}

// decodeBound reads a manifest lower or upper bound of a numeric column, stored in Iceberg's
// single-value binary serialization (int and float little-endian in 4 bytes, long and double in 8,
// decimal as the unscaled value's big-endian two's complement in the fewest bytes). Numeric
// bounds are never truncated, so they are the file's exact min and max as its writer saw them.
// ok is false for a missing or malformed bound, or a NaN.
func decodeBound(t iceberg.Type, b []byte) (v float64, ok bool) {
	if b == nil {
		return 0, false
	}
	if _, dec := t.(iceberg.DecimalType); dec && len(b) > 16 {
		return 0, false // wider than decimal(38): iceberg-go would panic decoding it
	}
	lit, err := iceberg.LiteralFromBytes(t, b)
	if err != nil {
		return 0, false
	}
	switch x := lit.(type) {
	case iceberg.Int32Literal:
		v = float64(x)
	case iceberg.Int64Literal:
		v = float64(x)
	case iceberg.Float32Literal:
		v = float64(x)
	case iceberg.Float64Literal:
		v = float64(x)
	case iceberg.DecimalLiteral:
		v = x.Val.ToFloat64(int32(x.Scale))
	default:
		return 0, false
	}
	return v, !math.IsNaN(v)
}
