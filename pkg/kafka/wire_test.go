package kafka

import (
	"bytes"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
)

func TestParseWire(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		id   int
		ok   bool
	}{
		{"framed", []byte{0, 0, 0, 0, 12, 'x'}, 12, true},
		{"empty payload", []byte{0, 0, 0, 1, 0}, 256, true},
		{"wrong magic", []byte{1, 0, 0, 0, 12, 'x'}, 0, false},
		{"too short", []byte{0, 0, 0, 12}, 0, false},
		{"id zero", []byte{0, 0, 0, 0, 0, 1}, 0, false},
		{"plain json", []byte(`{"a":1}`), 0, false},
		{"nil", nil, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, _, ok := ParseWire(c.in)
			if id != c.id || ok != c.ok {
				t.Fatalf("ParseWire = %d, %v; want %d, %v", id, ok, c.id, c.ok)
			}
		})
	}
}

func FuzzParseWire(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 12, 2, 'a'})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("not framed"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, payload, ok := ParseWire(b)
		if ok && (id <= 0 || !bytes.Equal(payload, b[5:])) {
			t.Fatalf("ParseWire(%x) = %d, %x", b, id, payload)
		}
	})
}

// FuzzDecodeAvro feeds arbitrary payloads to the v11 decoder: errors are fine, panics are not.
func FuzzDecodeAvro(f *testing.F) {
	_, good, _ := ParseWire(kafkatest.Encode(f, kafkatest.Usage{Time: time.Unix(0, 0), Version: 11, UsageID: "u-1", Path: "/"}))
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	d := newDecoder(SchemaInfo{ID: 11, Subject: kafkatest.Subject, Version: 11, Type: "AVRO", Schema: kafkatest.SchemaV11})
	if d.err != nil {
		f.Fatal(d.err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		n := 0
		if err := d.observe(payload, func(string, observed) { n++ }); err == nil && n != len(d.fields) {
			t.Fatalf("decoded record reported %d of %d fields", n, len(d.fields))
		}
	})
}

func TestDecoderRejectsSchemasItCannotRead(t *testing.T) {
	for _, info := range []SchemaInfo{
		{ID: 1, Type: "AVRO", Schema: `{"type":"record"`},
		{ID: 2, Type: "PROTOBUF", Schema: `syntax = "proto3"; message M { int32 a = ; }`},
		{ID: 3, Type: "JSON", Schema: `[1,2]`},
	} {
		if d := newDecoder(info); d.err == nil {
			t.Errorf("schema %d (%s) accepted", info.ID, info.Type)
		}
	}
	d := newDecoder(SchemaInfo{ID: 4, Type: "JSON", Schema: `{"properties":{"a":{"type":"string"},"b":{}}}`})
	nulls := map[string]bool{}
	if err := d.observe([]byte(`{"a":"x","b":null}`), func(p string, o observed) { nulls[p] = o.null }); err != nil {
		t.Fatal(err)
	}
	if nulls["a"] || !nulls["b"] {
		t.Fatalf("json nulls = %v", nulls)
	}
}

func FuzzDecodeProtobuf(f *testing.F) {
	d := newDecoder(SchemaInfo{ID: 7, Type: "PROTOBUF", Schema: `syntax = "proto3"; package p;
message Box { string id = 1; int64 grams = 2; optional bool fragile = 3; Inner inner = 4; repeated string tags = 5;
  message Inner { int32 depth_mm = 1; } }`})
	if d.err != nil {
		f.Fatal(d.err)
	}
	f.Add([]byte{0, 0x0a, 1, 'x', 0x10, 0x05})
	f.Add([]byte{2, 0, 0x08, 1})
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, payload []byte) {
		seen := map[string]observed{}
		if err := d.observe(payload, func(p string, o observed) { seen[p] = o }); err == nil {
			if _, ok := seen["grams"]; !ok && len(d.fields) > 0 {
				// Records of a nested message (indexes [0 0]) report that message's fields.
				if _, inner := seen["depth_mm"]; !inner {
					t.Fatalf("decoded record reported %v", seen)
				}
			}
		}
	})
}
