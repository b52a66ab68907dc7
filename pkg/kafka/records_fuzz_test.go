package kafka

import (
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
)

// FuzzRecordFields feeds arbitrary payloads to the Avro, Protobuf and JSON decoders that
// ReadRecords uses: errors are fine, panics are not, and a decoded record never holds a field its
// schema lacks (JSON excepted: its properties are open).
func FuzzRecordFields(f *testing.F) {
	_, good, _ := ParseWire(kafkatest.Encode(f, kafkatest.Usage{Time: time.Unix(0, 0), Version: 11, UsageID: "u-1", Path: "/"}))
	f.Add(good)
	f.Add([]byte{0, 0x0a, 0x01, 'x', 0x10, 0x07})
	f.Add([]byte(`{"a":1,"b":"x"}`))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	decoders := []*decoder{
		newDecoder(SchemaInfo{ID: 11, Type: "AVRO", Schema: kafkatest.SchemaV11}),
		newDecoder(SchemaInfo{ID: 7, Type: "PROTOBUF", Schema: `syntax = "proto3"; package p; message M { string a = 1; int64 b = 2; optional double c = 3; E e = 4; } enum E { Z = 0; O = 1; }`}),
		newDecoder(SchemaInfo{ID: 4, Type: "JSON", Schema: `{"properties":{"a":{"type":"integer"},"b":{"type":"string"}}}`}),
	}
	for _, d := range decoders {
		if d.err != nil {
			f.Fatal(d.err)
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, d := range decoders[:2] {
			fields, err := d.record(payload)
			if err != nil {
				continue
			}
			for name := range fields {
				known := false
				for _, fd := range d.fields {
					known = known || fd.path == name
				}
				if !known {
					t.Fatalf("schema %d decoded a field %q it does not declare", d.info.ID, name)
				}
			}
		}
		_, _ = decoders[2].record(payload)
	})
}
