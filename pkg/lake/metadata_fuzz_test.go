package lake

import "testing"

// FuzzParseMetadata: any bytes give a parsed table or an error, never a panic; a parsed table has
// a current schema, and its current snapshot (if any) is one of its snapshots.
func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte(`{"format-version":2,"location":"file:///w/t","current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"}]}],"current-snapshot-id":5,"snapshots":[{"snapshot-id":5,"timestamp-ms":1,"manifest-list":"m.avro","summary":{"operation":"append"}}]}`))
	f.Add([]byte(`{"format-version":1,"schema":{"type":"struct","schema-id":0,"fields":[]},"current-snapshot-id":-1}`))
	f.Add([]byte(`{"format-version":2,"current-schema-id":3,"schemas":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetadata(data)
		if err != nil {
			return
		}
		tbl := &Table{meta: m}
		if tbl.Schema() == nil {
			t.Fatal("parsed metadata without a current schema")
		}
		if m.CurrentSnapshotID != nil && tbl.CurrentSnapshot() == nil {
			t.Fatal("current snapshot not among the snapshots")
		}
		LoadHistory(tbl)
		SchemaHistory(tbl)
	})
}
