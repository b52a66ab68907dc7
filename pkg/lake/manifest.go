package lake

import (
	"fmt"
	"io"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/hamba/avro/v2"
)

// Manifest lists and manifests are Avro object container files (see decodeAvroFile). They are
// decoded by each file's own writer schema (in its header), into structs that name only the
// fields the lake reads (spec: "Manifest Lists", "Manifests"); fields a version lacks stay zero,
// fields we do not name are skipped. Nothing is parsed before the first read, unlike iceberg-go's
// root package, whose initialiser parsed every manifest schema at each start.

// manifestFile is one entry of a manifest list.
type manifestFile struct {
	Path string `avro:"manifest_path"`
	// Content is 0 for data files, 1 for delete files (format v2; v1 lists only data manifests).
	Content int `avro:"content"`
	// AddedSnapshotID is the snapshot that added the manifest: entries without a snapshot id
	// inherit it (format v2). A long in v2, a nullable one in v1: see optionalLong.
	AddedSnapshotID any `avro:"added_snapshot_id"`
}

// kv is one pair of an Iceberg map keyed by field id, which Avro stores as an array of records.
type kvLong struct {
	Key   int   `avro:"key"`
	Value int64 `avro:"value"`
}

type kvBytes struct {
	Key   int    `avro:"key"`
	Value []byte `avro:"value"`
}

// manifestEntry is one entry of a manifest: a data (or delete) file and its column metrics.
type manifestEntry struct {
	// Status is 0 existing, 1 added, 2 deleted.
	Status int `avro:"status"`
	// SnapshotID is a long in v1, a nullable one in v2 (see optionalLong); readManifest resolves
	// it, inheriting the manifest's when null, into Snapshot.
	SnapshotID any      `avro:"snapshot_id"`
	DataFile   dataFile `avro:"data_file"`
	Snapshot   int64
}

// dataFile is the part of a manifest entry's data_file the lake reads.
type dataFile struct {
	// Content is 0 for data, 1 for position deletes, 2 for equality deletes (format v2).
	Content         int       `avro:"content"`
	FilePath        string    `avro:"file_path"`
	RecordCount     int64     `avro:"record_count"`
	ValueCounts     *[]kvLong `avro:"value_counts"`
	NullValueCounts *[]kvLong `avro:"null_value_counts"`
	// NaNValueCounts counts a float or double column's NaN values, which value_counts includes
	// and the bounds leave out.
	NaNValueCounts *[]kvLong  `avro:"nan_value_counts"`
	LowerBounds    *[]kvBytes `avro:"lower_bounds"`
	UpperBounds    *[]kvBytes `avro:"upper_bounds"`
}

const (
	entryDeleted = 2
	contentData  = 0
)

// counts is a metrics map by field id.
func counts(kvs *[]kvLong) map[int]int64 {
	if kvs == nil {
		return nil
	}
	m := make(map[int]int64, len(*kvs))
	for _, kv := range *kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// bounds is a bounds map by field id.
func bounds(kvs *[]kvBytes) map[int][]byte {
	if kvs == nil {
		return nil
	}
	m := make(map[int][]byte, len(*kvs))
	for _, kv := range *kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// readManifestList reads the snapshot's manifest list.
func readManifestList(fs iceio.IO, snap *Snapshot) ([]manifestFile, error) {
	if snap.ManifestList == "" {
		return nil, fmt.Errorf("snapshot %d has no manifest-list (format v1 inline manifests are not read)", snap.SnapshotID)
	}
	f, err := fs.Open(snap.ManifestList)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeManifestList(f)
}

func decodeManifestList(r io.Reader) ([]manifestFile, error) {
	var out []manifestFile
	err := decodeAvroFile(r, func(dec *avro.Decoder) error {
		var m manifestFile
		if err := dec.Decode(&m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("manifest list: %w", err)
	}
	return out, nil
}

// readManifest reads a manifest's live entries (deleted ones are left out), each with its
// snapshot id, inherited from the manifest when the entry has none.
func readManifest(fs iceio.IO, m manifestFile) ([]manifestEntry, error) {
	f, err := fs.Open(m.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeManifest(f, m.AddedSnapshotID)
}

func decodeManifest(r io.Reader, addedBy any) ([]manifestEntry, error) {
	added, hasAdded := optionalLong(addedBy)
	var out []manifestEntry
	err := decodeAvroFile(r, func(dec *avro.Decoder) error {
		var e manifestEntry
		if err := dec.Decode(&e); err != nil {
			return err
		}
		if e.Status == entryDeleted {
			return nil
		}
		id, ok := optionalLong(e.SnapshotID)
		if !ok {
			if !hasAdded {
				return fmt.Errorf("entry for %s has no snapshot id and its manifest no added_snapshot_id", e.DataFile.FilePath)
			}
			id = added
		}
		e.Snapshot, e.SnapshotID = id, nil
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return out, nil
}

// optionalLong reads a field that is a long in one format version and a nullable long in
// another (decoded into an interface, since a pointer takes only the union): ok is false for
// null or a field the file does not have.
func optionalLong(v any) (n int64, ok bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case map[string]any: // a union's branch, by name
		n, ok = x["long"].(int64)
		return n, ok
	}
	return 0, false
}
