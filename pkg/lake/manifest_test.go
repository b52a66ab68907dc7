package lake

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hamba/avro/v2/ocf"
)

// The manifest schemas below are written from the spec's field tables ("Manifests"), reduced to
// the fields the reader uses plus a partition record and a field it skips: format v1 (required
// snapshot_id, no content) and v2 (nullable snapshot_id inherited from the manifest list, content).
const (
	manifestV1Schema = `{"type":"record","name":"manifest_entry","fields":[
		{"name":"status","type":"int","field-id":0},
		{"name":"snapshot_id","type":"long","field-id":1},
		{"name":"data_file","type":{"type":"record","name":"r2","fields":[
			{"name":"file_path","type":"string","field-id":100},
			{"name":"file_format","type":"string","field-id":101},
			{"name":"partition","type":{"type":"record","name":"r102","fields":[{"name":"day","type":["null","int"],"field-id":1000}]},"field-id":102},
			{"name":"record_count","type":"long","field-id":103},
			{"name":"value_counts","type":["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k119_v120","fields":[
				{"name":"key","type":"int","field-id":119},{"name":"value","type":"long","field-id":120}]}}],"default":null,"field-id":110},
			{"name":"lower_bounds","type":["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k126_v127","fields":[
				{"name":"key","type":"int","field-id":126},{"name":"value","type":"bytes","field-id":127}]}}],"default":null,"field-id":125}
		]},"field-id":2}]}`
	manifestV2Schema = `{"type":"record","name":"manifest_entry","fields":[
		{"name":"status","type":"int","field-id":0},
		{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1},
		{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3},
		{"name":"data_file","type":{"type":"record","name":"r2","fields":[
			{"name":"content","type":"int","field-id":134},
			{"name":"file_path","type":"string","field-id":100},
			{"name":"partition","type":{"type":"record","name":"r102","fields":[]},"field-id":102},
			{"name":"record_count","type":"long","field-id":103},
			{"name":"null_value_counts","type":["null",{"type":"array","logicalType":"map","items":{"type":"record","name":"k121_v122","fields":[
				{"name":"key","type":"int","field-id":121},{"name":"value","type":"long","field-id":122}]}}],"default":null,"field-id":110}
		]},"field-id":2}]}`
	manifestListV1Schema = `{"type":"record","name":"manifest_file","fields":[
		{"name":"manifest_path","type":"string","field-id":500},
		{"name":"manifest_length","type":"long","field-id":501},
		{"name":"added_snapshot_id","type":["null","long"],"default":null,"field-id":503}]}`
	manifestListV2Schema = `{"type":"record","name":"manifest_file","fields":[
		{"name":"manifest_path","type":"string","field-id":500},
		{"name":"content","type":"int","field-id":517},
		{"name":"added_snapshot_id","type":"long","field-id":503}]}`
)

func avroFile(t testing.TB, schema string, records ...any) []byte {
	t.Helper()
	return avroFileWith(t, ocf.Deflate, schema, records...)
}

// avroFileWith writes records with hamba/avro's container writer, which is independent of our
// reader, in blocks of two records.
func avroFileWith(t testing.TB, codec ocf.CodecName, schema string, records ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := ocf.NewEncoder(schema, &buf, ocf.WithCodec(codec), ocf.WithBlockLength(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeManifestV1(t *testing.T) {
	file := func(path string, status int, snap int64, metrics bool) map[string]any {
		df := map[string]any{"file_path": path, "file_format": "PARQUET", "partition": map[string]any{"day": map[string]any{"int": 19000}},
			"record_count": int64(3), "value_counts": nil, "lower_bounds": nil}
		if metrics {
			df["value_counts"] = map[string]any{"array": []any{map[string]any{"key": 1, "value": int64(3)}}}
			df["lower_bounds"] = map[string]any{"array": []any{map[string]any{"key": 1, "value": []byte{7, 0, 0, 0}}}}
		}
		return map[string]any{"status": status, "snapshot_id": snap, "data_file": df}
	}
	data := avroFile(t, manifestV1Schema, file("a.parquet", 1, 10, true), file("b.parquet", 2, 11, true), file("c.parquet", 0, 9, false))
	entries, err := decodeManifest(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].DataFile.FilePath != "a.parquet" || entries[1].DataFile.FilePath != "c.parquet" {
		t.Fatalf("entries = %+v (the deleted b.parquet is left out)", entries)
	}
	a := newFileMetrics(&entries[0].DataFile)
	if entries[0].Snapshot != 10 || entries[0].DataFile.RecordCount != 3 || a.values[1] != 3 || !bytes.Equal(a.lower[1], []byte{7, 0, 0, 0}) {
		t.Fatalf("a = %+v, metrics %+v", entries[0], a)
	}
	if c := newFileMetrics(&entries[1].DataFile); entries[1].Snapshot != 9 || c.values != nil || c.lower != nil {
		t.Fatalf("c = %+v, metrics %+v (no metrics written)", entries[1], c)
	}
}

func TestDecodeManifestV2InheritsSnapshot(t *testing.T) {
	entry := func(path string, snap any, content int) map[string]any {
		return map[string]any{"status": 1, "snapshot_id": snap, "sequence_number": nil, "data_file": map[string]any{
			"content": content, "file_path": path, "partition": map[string]any{}, "record_count": int64(5),
			"null_value_counts": map[string]any{"array": []any{map[string]any{"key": 2, "value": int64(1)}}}}}
	}
	data := avroFile(t, manifestV2Schema, entry("new.parquet", nil, 0), entry("own.parquet", map[string]any{"long": int64(4)}, 0), entry("del.parquet", nil, 1))
	entries, err := decodeManifest(bytes.NewReader(data), int64(42))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || entries[0].Snapshot != 42 || entries[1].Snapshot != 4 || entries[2].DataFile.Content != 1 {
		t.Fatalf("entries = %+v", entries)
	}
	if m := newFileMetrics(&entries[0].DataFile); m.nulls[2] != 1 || m.values != nil {
		t.Fatalf("metrics = %+v", m)
	}
	if _, err := decodeManifest(bytes.NewReader(data), nil); err == nil {
		t.Fatal("an entry without a snapshot id in a manifest without added_snapshot_id decoded")
	}
}

func TestDecodeManifestList(t *testing.T) {
	v1 := avroFile(t, manifestListV1Schema,
		map[string]any{"manifest_path": "m1.avro", "manifest_length": int64(10), "added_snapshot_id": map[string]any{"long": int64(7)}},
		map[string]any{"manifest_path": "m0.avro", "manifest_length": int64(10), "added_snapshot_id": nil})
	got, err := decodeManifestList(bytes.NewReader(v1))
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := optionalLong(got[0].AddedSnapshotID); len(got) != 2 || got[0].Path != "m1.avro" || got[0].Content != contentData || !ok || id != 7 {
		t.Fatalf("v1 list = %+v", got)
	}
	if _, ok := optionalLong(got[1].AddedSnapshotID); ok {
		t.Fatalf("a null added_snapshot_id read as %v", got[1].AddedSnapshotID)
	}
	v2 := avroFile(t, manifestListV2Schema, map[string]any{"manifest_path": "d.avro", "content": 1, "added_snapshot_id": int64(8)})
	if got, err = decodeManifestList(bytes.NewReader(v2)); err != nil || len(got) != 1 {
		t.Fatalf("v2 list = %+v, %v", got, err)
	}
	if id, _ := optionalLong(got[0].AddedSnapshotID); got[0].Content != 1 || id != 8 {
		t.Fatalf("v2 list = %+v", got)
	}
}

// FuzzDecodeManifest: any bytes are a manifest (list) or an error, never a panic; the seeds are
// valid files of both versions.
func FuzzDecodeManifest(f *testing.F) {
	f.Add(avroFile(f, manifestV2Schema, map[string]any{"status": 1, "snapshot_id": nil, "sequence_number": nil, "data_file": map[string]any{
		"content": 0, "file_path": "x", "partition": map[string]any{}, "record_count": int64(1), "null_value_counts": nil}}))
	f.Add(avroFile(f, manifestListV1Schema, map[string]any{"manifest_path": "m", "manifest_length": int64(1), "added_snapshot_id": nil}))
	f.Add([]byte("Obj\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeManifest(bytes.NewReader(data), int64(1))
		for _, e := range entries {
			newFileMetrics(&e.DataFile)
		}
		if err == nil {
			for _, e := range entries {
				if e.Status == entryDeleted {
					t.Fatal("a deleted entry was returned")
				}
			}
		}
		decodeManifestList(bytes.NewReader(data))
	})
}

// A block claiming a negative size (zig-zag 0x01 is -1) after a valid header is an error, not a
// panic of the container reader.
func TestDecodeManifestNegativeBlockSize(t *testing.T) {
	data := append(avroFile(t, manifestListV2Schema), 0x02, 0x01)
	if _, err := decodeManifestList(bytes.NewReader(data)); err == nil {
		t.Fatal("a negative block size decoded")
	}
}

// Every codec the reader takes, over several blocks; a codec it does not take is an error.
func TestDecodeAvroCodecs(t *testing.T) {
	var records []any
	for i := range 5 {
		records = append(records, map[string]any{"manifest_path": fmt.Sprintf("m%d.avro", i), "content": 0, "added_snapshot_id": int64(i)})
	}
	for _, codec := range []ocf.CodecName{ocf.Null, ocf.Deflate, ocf.Snappy, ocf.ZStandard} {
		got, err := decodeManifestList(bytes.NewReader(avroFileWith(t, codec, manifestListV2Schema, records...)))
		if err != nil || len(got) != 5 || got[4].Path != "m4.avro" {
			t.Errorf("%s: %+v, %v", codec, got, err)
		}
	}
	data := avroFileWith(t, ocf.Null, manifestListV2Schema, records...)
	if _, err := decodeManifestList(bytes.NewReader(bytes.Replace(data, []byte("null"), []byte("bzip"), 1))); err == nil {
		t.Error("an unknown codec decoded")
	}
	if _, err := decodeManifestList(bytes.NewReader(data[:len(data)-3])); err == nil {
		t.Error("a truncated file decoded")
	}
}
