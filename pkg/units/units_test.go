package units

import (
	"strings"
	"testing"
)

func TestSplitReadsSnakeCamelAndIn(t *testing.T) {
	cases := map[string][2]string{
		"weight_kg":        {"weight", "kg"},
		"parcelWeightKg":   {"parcel_weight", "kg"},
		"latency_in_ms":    {"latency", "ms"},
		"price_micros":     {"price", "micros"},
		"distance-km":      {"distance", "km"},
		"payload_size_kib": {"payload_size", "kib"},
	}
	for in, want := range cases {
		stem, w, ok := Split(in)
		if !ok || stem != want[0] || w != want[1] {
			t.Errorf("Split(%q) = %q, %q, %v; want %v", in, stem, w, ok, want)
		}
	}
	for _, in := range []string{"weight", "kg", "status_code", "sizeb"} {
		if _, _, ok := Split(in); ok {
			t.Errorf("Split(%q) found a unit", in)
		}
	}
}

func TestDeriveMassFromDoubleKilogramsRoundsIntoGrams(t *testing.T) {
	c, err := Derive(Field{Name: "weight_kg", Type: "double"}, Field{Name: "weight_grams", Type: "long"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Factor != "1000" || c.ResultType != "BIGINT" || c.Exact {
		t.Fatalf("got %+v", c)
	}
	if got := c.Apply("weight_kg"); got != "CAST(ROUND(weight_kg * 1000) AS BIGINT)" {
		t.Errorf("expression %s", got)
	}
	if !strings.Contains(c.Loss, "rounded to the nearest grams") && !strings.Contains(c.Loss, "nearest") {
		t.Errorf("loss not stated: %q", c.Loss)
	}
	if !strings.Contains(c.Why, "1 kg = 1000 grams") {
		t.Errorf("why %q", c.Why)
	}
}

func TestDeriveIntegerScaleUpIsExactAndWidened(t *testing.T) {
	c, err := Derive(Field{Name: "trip_km", Type: "int32"}, Field{Name: "trip_m", Type: "int64"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Apply("t.trip_km"); got != "CAST(t.trip_km AS BIGINT) * 1000" || !c.Exact || c.Loss != "" {
		t.Errorf("got %s %+v", got, c)
	}
}

func TestDeriveScaleDownRoundsAndSaysSo(t *testing.T) {
	c, err := Derive(Field{Name: "duration_ms", Type: "long"}, Field{Name: "duration_s", Type: "int"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Apply("duration_ms"); got != "CAST(ROUND(CAST(duration_ms AS DOUBLE) * 0.001) AS BIGINT)" {
		t.Errorf("expression %s", got)
	}
	if c.Exact || !strings.Contains(c.Loss, "below half a s") {
		t.Errorf("loss %q", c.Loss)
	}
}

func TestDeriveCurrencyMicrosIntoMajorUnitAsDouble(t *testing.T) {
	// price_micros is ambiguous on its own (microseconds or millionths), but beside a currency code only money fits.
	c, err := Derive(Field{Name: "price_micros", Type: "int64"}, Field{Name: "price_eur", Type: "double"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Dim != Money || c.Factor != "1/1000000" || c.Apply("price_micros") != "CAST(price_micros AS DOUBLE) * 0.000001" || c.ResultType != "DOUBLE" {
		t.Errorf("got %+v %s", c, c.Apply("price_micros"))
	}
	// micros → millis agree in both meanings (time and money): the factor is certain.
	c, err = Derive(Field{Name: "fee_micros", Type: "long"}, Field{Name: "fee_millis", Type: "long"})
	if err != nil || c.Factor != "1/1000" {
		t.Errorf("micros→millis: %+v %v", c, err)
	}
}

func TestDeriveBinaryAndDecimalPrefixes(t *testing.T) {
	c, err := Derive(Field{Name: "blob_kb", Type: "long"}, Field{Name: "blob_kib", Type: "double"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Factor != "125/128" || c.Apply("blob_kb") != "CAST(blob_kb AS DOUBLE) * 0.9765625" {
		t.Errorf("got %+v %s", c, c.Apply("blob_kb"))
	}
	c, err = Derive(Field{Name: "blob_mib", Type: "int"}, Field{Name: "blob_bytes", Type: "long"})
	if err != nil || c.Factor != "1048576" || !c.Exact {
		t.Errorf("mib→bytes %+v %v", c, err)
	}
}

func TestDeriveRefusesWhatIsNotCertain(t *testing.T) {
	cases := []struct {
		from, to Field
		reason   string
	}{
		{Field{"price_usd", "double"}, Field{"price_eur", "double"}, "different currencies"},
		{Field{"weight", "double"}, Field{"weight_grams", "long"}, "no known unit"},
		{Field{"weight_kg", "double"}, Field{"weight", "long"}, "no known unit"},
		{Field{"net_kg", "double"}, Field{"gross_grams", "long"}, "different quantities"},
		{Field{"size_kg", "double"}, Field{"size_bytes", "long"}, "measure different things"},
		{Field{"weight_kg", "string"}, Field{"weight_grams", "long"}, "not a number"},
	}
	for _, c := range cases {
		_, err := Derive(c.from, c.to)
		if err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s → %s: want %q, got %v", c.from.Name, c.to.Name, c.reason, err)
		}
	}
}

func TestDeriveUnknownTypesRoundInsteadOfTruncating(t *testing.T) {
	c, err := Derive(Field{Name: "weight_kg"}, Field{Name: "weight_g"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Apply("weight_kg") != "CAST(ROUND(weight_kg * 1000) AS BIGINT)" || c.Loss == "" {
		t.Errorf("got %+v", c)
	}
}

func FuzzDerive(f *testing.F) {
	f.Add("weight_kg", "double", "weight_grams", "long")
	f.Add("priceMicros", "int64", "price_usd", "")
	f.Add("_", "", "__kg", "int")
	f.Fuzz(func(t *testing.T, a, at, b, bt string) {
		c, err := Derive(Field{a, at}, Field{b, bt})
		if err == nil && (c.SQL == "" || c.Factor == "" || !strings.Contains(c.SQL, "%s")) {
			t.Fatalf("a conversion without an expression: %+v", c)
		}
	})
}
