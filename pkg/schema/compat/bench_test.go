package compat_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// benchVersions is how many earlier versions the transitive benchmarks compare against;
// DW_BENCH_VERSIONS raises it (default 20).
func benchVersions() int {
	if n, err := strconv.Atoi(os.Getenv("DW_BENCH_VERSIONS")); err == nil && n > 0 {
		return n
	}
	return 20
}

func BenchmarkCheckAvroScenarioBackward(b *testing.B) {
	v11 := mustParse(b, schema.Avro, readScenarioB(b, 11))
	v12 := mustParse(b, schema.Avro, readScenarioB(b, 12))
	prev := []compat.Version{{Version: 11, Schema: v11}}
	b.ResetTimer()
	for b.Loop() {
		if !compat.Check(compat.Backward, compat.Strict, v12, prev).Compatible {
			b.Fatal("want compatible")
		}
	}
}

// avroVersion i has fields f0..f(i+4), each added with a default: every version is FULL-compatible
// with every other.
func avroVersion(i int) string {
	var fs []string
	for j := 0; j < i+5; j++ {
		fs = append(fs, fmt.Sprintf(`{"name":"f%d","type":["null","long"],"default":null}`, j))
	}
	return `{"type":"record","name":"R","namespace":"bench","fields":[` + strings.Join(fs, ",") + `]}`
}

func BenchmarkCheckAvroFullTransitive(b *testing.B) {
	n := benchVersions()
	var prev []compat.Version
	for i := 0; i < n; i++ {
		prev = append(prev, compat.Version{Version: i + 1, Schema: mustParse(b, schema.Avro, avroVersion(i))})
	}
	next := mustParse(b, schema.Avro, avroVersion(n))
	b.ReportMetric(float64(n), "versions")
	b.ResetTimer()
	for b.Loop() {
		if !compat.Check(compat.FullTransitive, compat.Strict, next, prev).Compatible {
			b.Fatal("want compatible")
		}
	}
}

func BenchmarkCheckProtobufFull(b *testing.B) {
	old := mustParse(b, schema.Protobuf, proto(`message M { string a = 1; int32 n = 2; oneof o { string s = 3; } repeated N ns = 4; } message N { string x = 1; } enum E { A = 0; B = 1; }`))
	nw := mustParse(b, schema.Protobuf, proto(`message M { string a = 1; int64 n = 2; oneof o { string s = 3; } repeated N ns = 4; bytes extra = 5; } message N { string x = 1; } enum E { A = 0; B = 1; C = 2; }`))
	prev := []compat.Version{{Version: 1, Schema: old}}
	b.ResetTimer()
	for b.Loop() {
		if !compat.Check(compat.Full, compat.Strict, nw, prev).Compatible {
			b.Fatal("want compatible")
		}
	}
}

func BenchmarkCheckJSONFull(b *testing.B) {
	old := mustParse(b, schema.JSON, obj(`"a":{"type":"string","maxLength":10},"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}`, `"additionalProperties":false`))
	nw := mustParse(b, schema.JSON, obj(`"a":{"type":"string","maxLength":10},"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}`, `"additionalProperties":false`))
	prev := []compat.Version{{Version: 1, Schema: old}}
	b.ResetTimer()
	for b.Loop() {
		if !compat.Check(compat.Full, compat.Strict, nw, prev).Compatible {
			b.Fatal("want compatible")
		}
	}
}

func BenchmarkParseAvroScenario(b *testing.B) {
	text := readScenarioB(b, 12)
	for b.Loop() {
		if _, err := schema.Parse(schema.Avro, text); err != nil {
			b.Fatal(err)
		}
	}
}

// The scenario's v12 under LOGICAL: the native check, then both conversions and both modes
// (rejected by ICEBERG_V2 as FIELD_DELETED).
func BenchmarkCheckAvroScenarioLogical(b *testing.B) {
	v11 := mustParse(b, schema.Avro, readScenarioB(b, 11))
	v12 := mustParse(b, schema.Avro, readScenarioB(b, 12))
	prev := []compat.Version{{Version: 11, Schema: v11}}
	b.ResetTimer()
	for b.Loop() {
		if compat.Check(compat.Backward, compat.Logical, v12, prev).Compatible {
			b.Fatal("want FIELD_DELETED")
		}
	}
}

// BACKWARD_TRANSITIVE under LOGICAL over DW_BENCH_VERSIONS versions, each adding a nullable field
// at the end: every version converts and passes both modes.
func BenchmarkCheckAvroLogicalBackwardTransitive(b *testing.B) {
	n := benchVersions()
	var prev []compat.Version
	for i := 0; i < n; i++ {
		prev = append(prev, compat.Version{Version: i + 1, Schema: mustParse(b, schema.Avro, avroVersion(i))})
	}
	next := mustParse(b, schema.Avro, avroVersion(n))
	b.ReportMetric(float64(n), "versions")
	b.ResetTimer()
	for b.Loop() {
		if !compat.Check(compat.BackwardTransitive, compat.Logical, next, prev).Compatible {
			b.Fatal("want compatible")
		}
	}
}

// A 2020-12 schema with tuples, unevaluated properties and oneOf branches to pair: the matching
// compares every old branch with every new one, so it is the JSON verdict most worth timing.
func BenchmarkCheckJSON2020CombinedFull(b *testing.B) {
	branch := func(n int) string {
		return fmt.Sprintf(`{"type":"object","properties":{"kind":{"const":"k%d"},"v":{"type":"integer","maximum":%d}},"required":["kind"],"unevaluatedProperties":false}`, n, 100+n)
	}
	var oldB, newB []string
	for i := 0; i < 8; i++ {
		oldB = append(oldB, branch(i))
		newB = append(newB, branch(7-i))
	}
	doc := func(branches []string) string {
		return `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"event":{"oneOf":[` + strings.Join(branches, ",") +
			`]},"pos":{"type":"array","prefixItems":[{"type":"number"},{"type":"number"}],"items":false}},"unevaluatedProperties":false}`
	}
	old, nw := mustParse(b, schema.JSON, doc(oldB)), mustParse(b, schema.JSON, doc(newB))
	prev := []compat.Version{{Version: 1, Schema: old}}
	b.ResetTimer()
	for b.Loop() {
		if !compat.Check(compat.Full, compat.Strict, nw, prev).Compatible {
			b.Fatal("want compatible")
		}
	}
}
