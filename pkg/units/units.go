// Package units derives a conversion between two numeric fields that carry one quantity in
// different units, when the conversion is certain: both units are SI or binary prefixes over one
// base unit (grams, metres, bytes, seconds, or a currency's major unit), read from the last word
// of the field name. The factor, the SQL expression, its result type and its rounding follow from
// the two fields' types; anything uncertain (two currencies, a unit nothing names, a string
// field) is refused with the reason, never guessed.
package units

import (
	"fmt"
	"math/big"
	"strings"
	"sync"
	"unicode"
)

// Dimension is what a unit measures.
type Dimension string

// Dimensions.
const (
	Mass     Dimension = "mass"
	Length   Dimension = "length"
	Data     Dimension = "data size"
	Duration Dimension = "duration"
	Money    Dimension = "money"
)

// Unit is one unit of a dimension: Scale base units make one of it.
type Unit struct {
	Word      string    `json:"word"`
	Dimension Dimension `json:"dimension"`
	// Scale is how many base units one of this unit is (kilogram: 1000 grams).
	Scale *big.Rat `json:"-"`
	// Base names the base unit ("g", "B", "s", or a currency's major unit).
	Base string `json:"base"`
	// Currency is the ISO code when the word names one currency (usd); empty for a bare subunit
	// (cents, micros), which is of the same currency as the field beside it.
	Currency string `json:"currency,omitempty"`
}

func rat(num, den int64) *big.Rat { return big.NewRat(num, den) }

func pow10(n int) *big.Rat {
	r := big.NewRat(1, 1)
	for i := 0; i < n; i++ {
		r.Mul(r, big.NewRat(10, 1))
	}
	for i := 0; i > n; i-- {
		r.Quo(r, big.NewRat(10, 1))
	}
	return r
}

// vocabulary maps a lower-case word to the units it can mean. Words with several meanings
// (micros: microseconds or millionths of a currency unit) list each; a conversion is made only
// when every meaning both fields share gives the same factor. Built on first use: no binary
// needs it to start.
var vocabulary = sync.OnceValue(buildVocabulary)

// currencies are the ISO 4217 codes read as a currency's major unit in a field name.
var currencies = []string{"usd", "eur", "gbp", "jpy", "chf", "cad", "aud", "nzd", "cny", "inr", "sek", "nok", "dkk",
	"pln", "czk", "huf", "brl", "mxn", "sgd", "hkd", "krw", "zar", "ils", "aed"}

func buildVocabulary() map[string][]Unit {
	v := map[string][]Unit{}
	add := func(dim Dimension, base string, scale *big.Rat, words ...string) {
		for _, w := range words {
			v[w] = append(v[w], Unit{Word: w, Dimension: dim, Scale: scale, Base: base})
		}
	}
	add(Mass, "g", pow10(-9), "ng", "nanograms", "nanogram")
	add(Mass, "g", pow10(-6), "ug", "mcg", "micrograms", "microgram")
	add(Mass, "g", pow10(-3), "mg", "milligrams", "milligram")
	add(Mass, "g", pow10(0), "g", "grams", "gram", "grammes")
	add(Mass, "g", pow10(3), "kg", "kgs", "kilograms", "kilogram", "kilos")
	add(Mass, "g", pow10(6), "tonnes", "tonne") // metric tonne; "t" and "tons" are ambiguous

	add(Length, "m", pow10(-9), "nm", "nanometers", "nanometres")
	add(Length, "m", pow10(-6), "um", "micrometers", "micrometres", "microns")
	add(Length, "m", pow10(-3), "mm", "millimeters", "millimetres")
	add(Length, "m", pow10(-2), "cm", "centimeters", "centimetres")
	add(Length, "m", pow10(0), "m", "meters", "metres", "meter", "metre")
	add(Length, "m", pow10(3), "km", "kilometers", "kilometres")

	add(Data, "B", pow10(0), "bytes", "byte") // a bare "b" may be bits
	for i, p := range []string{"k", "m", "g", "t", "p"} {
		add(Data, "B", pow10(3*(i+1)), p+"b", p+"bytes")
		bin := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(10*(i+1))))
		add(Data, "B", bin, p+"ib")
	}
	add(Data, "B", pow10(3), "kilobytes")
	add(Data, "B", pow10(6), "megabytes")
	add(Data, "B", pow10(9), "gigabytes")
	add(Data, "B", pow10(12), "terabytes")

	add(Duration, "s", pow10(-9), "ns", "nanos", "nanoseconds")
	add(Duration, "s", pow10(-6), "us", "micros", "microseconds", "usec")
	add(Duration, "s", pow10(-3), "ms", "millis", "milliseconds", "msec")
	add(Duration, "s", pow10(0), "s", "sec", "secs", "seconds", "second")
	add(Duration, "s", rat(60, 1), "min", "mins", "minutes", "minute")
	add(Duration, "s", rat(3600, 1), "h", "hr", "hrs", "hours", "hour")
	add(Duration, "s", rat(86400, 1), "d", "days", "day")

	// Subunits of a currency: the same currency as the major unit beside them.
	add(Money, "", pow10(-6), "micros")
	add(Money, "", pow10(-3), "millis")
	add(Money, "", pow10(-2), "cents")
	for _, c := range currencies {
		v[c] = append(v[c], Unit{Word: c, Dimension: Money, Scale: pow10(0), Base: c, Currency: c})
	}
	return v
}

// Split reads a field name as a stem and a unit word: weight_kg, weightKg and weight_in_kg are all
// (weight, kg). ok is false when the last word names no unit.
func Split(field string) (stem, word string, ok bool) {
	words := nameWords(field)
	if len(words) < 2 {
		return "", "", false
	}
	last := words[len(words)-1]
	if _, known := vocabulary()[last]; !known {
		return "", "", false
	}
	rest := words[:len(words)-1]
	if len(rest) > 1 && rest[len(rest)-1] == "in" {
		rest = rest[:len(rest)-1]
	}
	return strings.Join(rest, "_"), last, true
}

// nameWords splits snake_case, kebab-case and camelCase into lower-case words.
func nameWords(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			flush()
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// Field is a numeric field as a schema declares it.
type Field struct {
	Name string `json:"name"`
	// Type is the schema's type name: int, long, int32, int64, uint64, sint64, integer, float,
	// double, number, decimal…; empty when unknown.
	Type string `json:"type,omitempty"`
}

// Conversion computes To's value from From's.
type Conversion struct {
	From     Field     `json:"from"`
	To       Field     `json:"to"`
	FromUnit string    `json:"from_unit"`
	ToUnit   string    `json:"to_unit"`
	Dim      Dimension `json:"dimension"`
	// Factor multiplies a From value into To's unit, as an exact fraction ("1000", "1/1000", "125/128").
	Factor string `json:"factor"`
	// SQL is the expression over From (quoted by the caller's quote function) giving To's value.
	SQL string `json:"sql"`
	// ResultType is the SQL type of the expression: BIGINT or DOUBLE.
	ResultType string `json:"result_type"`
	// Exact: no value changes by the conversion; else Loss says what is rounded away.
	Exact bool   `json:"exact"`
	Loss  string `json:"precision_loss,omitempty"`
	// Why states the rule the factor came from.
	Why string `json:"why"`
}

// Rule is stated wherever a conversion is derived or refused.
const Rule = "a field whose name ends in a unit (weight_kg, sizeKib, latency_in_ms, price_micros) holds that unit; a field with the same stem " +
	"and a unit over the same base (g, m, B, s, or the same currency) converts by the ratio of the units, with rounding chosen from the field types; " +
	"different currencies, unnamed units and non-numeric types are never converted"

type numKind int

const (
	numUnknown numKind = iota
	numInteger
	numFloat
	numDecimal
	numOther
)

func kindOf(typ string) numKind {
	t := strings.ToLower(strings.TrimSpace(typ))
	t = strings.TrimPrefix(t, "optional ")
	if i := strings.IndexAny(t, "(/"); i > 0 {
		if strings.HasPrefix(t, "bytes/decimal") || strings.HasPrefix(t, "fixed/decimal") {
			return numDecimal
		}
		t = t[:i]
	}
	switch t {
	case "":
		return numUnknown
	case "int", "long", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64",
		"integer", "bigint", "smallint", "tinyint", "int2", "int4", "int8", "number(38,0)":
		return numInteger
	case "float", "double", "number", "real", "float4", "float8", "double precision":
		return numFloat
	case "decimal", "numeric":
		return numDecimal
	}
	return numOther
}

// Derive works out how to compute to from from. It returns an error saying why when the
// conversion is not certain.
func Derive(from, to Field) (Conversion, error) {
	fs, fw, ok1 := Split(from.Name)
	ts, tw, ok2 := Split(to.Name)
	switch {
	case !ok2:
		return Conversion{}, fmt.Errorf("%s: its name ends in no known unit, so no conversion is derived (%s)", to.Name, Rule)
	case !ok1:
		return Conversion{}, fmt.Errorf("%s: its name ends in no known unit, so no conversion to %s is derived (%s)", from.Name, to.Name, Rule)
	case fs != ts:
		return Conversion{}, fmt.Errorf("%s and %s name different quantities (%q and %q), so neither is converted into the other", from.Name, to.Name, fs, ts)
	}
	for _, f := range []Field{from, to} {
		if k := kindOf(f.Type); k == numOther {
			return Conversion{}, fmt.Errorf("%s is %s, not a number: no unit conversion applies", f.Name, f.Type)
		}
	}
	factor, dim, err := ratio(fw, tw)
	if err != nil {
		return Conversion{}, fmt.Errorf("%s → %s: %w", from.Name, to.Name, err)
	}
	c := Conversion{From: from, To: to, FromUnit: fw, ToUnit: tw, Dim: dim, Factor: factor.RatString()}
	c.Why = fmt.Sprintf("%s holds %s and %s holds %s (%s): 1 %s = %s %s", from.Name, fw, to.Name, tw, dim, fw, factor.RatString(), tw)
	c.SQL, c.ResultType, c.Exact, c.Loss = expression(from, to, factor)
	return c, nil
}

// ratio is the factor from word a to word b, when every shared meaning agrees on it.
func ratio(a, b string) (*big.Rat, Dimension, error) {
	var found *big.Rat
	var dim Dimension
	for _, ua := range vocabulary()[a] {
		for _, ub := range vocabulary()[b] {
			if ua.Dimension != ub.Dimension {
				continue
			}
			if ua.Currency != "" && ub.Currency != "" && ua.Currency != ub.Currency {
				return nil, "", fmt.Errorf("%s and %s are different currencies: an exchange rate is not a unit conversion", a, b)
			}
			f := new(big.Rat).Quo(ua.Scale, ub.Scale)
			if found != nil && found.Cmp(f) != 0 {
				return nil, "", fmt.Errorf("%s and %s can mean different units (%s or %s), with different factors", a, b, dim, ua.Dimension)
			}
			found, dim = f, ua.Dimension
		}
	}
	if found == nil {
		return nil, "", fmt.Errorf("%s and %s measure different things (%s; %s)", a, b, dims(a), dims(b))
	}
	return found, dim, nil
}

func dims(w string) string {
	var ds []string
	for _, u := range vocabulary()[w] {
		ds = append(ds, string(u.Dimension))
	}
	return w + ": " + strings.Join(ds, " or ")
}

// expression writes the SQL over from (the placeholder %s stands for the quoted field) that yields
// to's value, its result type, whether it is exact and what is lost.
func expression(from, to Field, factor *big.Rat) (sql, resultType string, exact bool, loss string) {
	fk, tk := kindOf(from.Type), kindOf(to.Type)
	intFactor := factor.IsInt()
	toInteger := tk == numInteger || tk == numUnknown && fk != numFloat && fk != numDecimal
	// The product is taken in a type that holds it: integers widen to BIGINT before multiplying
	// (INT × 1000 overflows), anything else is computed in DOUBLE.
	switch {
	case toInteger && (fk == numInteger) && intFactor:
		return "CAST(%s AS BIGINT) * " + factor.RatString(), "BIGINT", true, ""
	case toInteger && fk == numUnknown && intFactor:
		// Unknown source type: ROUND keeps an integer exact and rounds a fraction instead of truncating it.
		return "CAST(ROUND(%s * " + factor.RatString() + ") AS BIGINT)", "BIGINT", false,
			fmt.Sprintf("the type of %s is unknown: a fractional value is rounded to the nearest whole %s", from.Name, unitOf(to.Name))
	case toInteger:
		inner := "%s" // a double or decimal keeps its own arithmetic
		if fk == numInteger {
			inner = "CAST(%s AS DOUBLE)" // no integer division, no INT overflow
		}
		return "CAST(ROUND(" + inner + " * " + decimalText(factor) + ") AS BIGINT)", "BIGINT", false, lossText(from, to, factor)
	default:
		exact := fk == numInteger && intFactor
		l := ""
		if !exact {
			l = fmt.Sprintf("computed in DOUBLE: about 15 significant digits of %s are kept", to.Name)
		}
		return "CAST(%s AS DOUBLE) * " + decimalText(factor), "DOUBLE", exact, l
	}
}

func lossText(from, to Field, factor *big.Rat) string {
	u := unitOf(to.Name)
	if kindOf(from.Type) == numInteger && !factor.IsInt() {
		return fmt.Sprintf("%s is a whole number of %s, so anything below half a %s is rounded to the nearest (not truncated)", to.Name, u, u)
	}
	return fmt.Sprintf("%s is %s and %s a whole number: each value is rounded to the nearest %s (never truncated)", from.Name, orUnknown(from.Type), to.Name, u)
}

func unitOf(name string) string {
	_, w, _ := Split(name)
	return w
}

func orUnknown(t string) string {
	if t == "" {
		return "of unknown type"
	}
	return t
}

// decimalText writes a factor as an exact decimal when it has one (1/1000 → 0.001), else as a
// division (125/128 stays "125 / 128.0" so the arithmetic is not integer division).
func decimalText(r *big.Rat) string {
	if r.IsInt() {
		return r.RatString()
	}
	den := new(big.Int).Set(r.Denom())
	for _, p := range []int64{2, 5} {
		for new(big.Int).Mod(den, big.NewInt(p)).Sign() == 0 {
			den.Quo(den, big.NewInt(p))
		}
	}
	if den.Cmp(big.NewInt(1)) == 0 {
		s := r.FloatString(30)
		s = strings.TrimRight(s, "0")
		return strings.TrimSuffix(s, ".")
	}
	return "(" + r.Num().String() + " / " + r.Denom().String() + ".0)"
}

// Apply fills the expression's placeholder with the quoted field reference.
func (c Conversion) Apply(ref string) string { return strings.ReplaceAll(c.SQL, "%s", ref) }
