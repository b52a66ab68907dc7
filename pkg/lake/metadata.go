package lake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	iceio "github.com/apache/iceberg-go/io"
)

// Table is one Iceberg table's metadata as its catalog points to it, read by us rather than through
// iceberg-go's table package: that package links iceberg-go's Substrait expression support, whose
// initialiser alone took about 100 ms at every start of the agents that read the lake.
type Table struct {
	id          []string
	metadataLoc string
	meta        *Metadata
	// ioProps open the table's files (the catalog's properties plus any it vends for the table).
	ioProps map[string]string
	// fs is the table's file IO, opened once: an S3 client resolves its configuration and
	// credentials (files, IMDS, STS) when it is built, which a client per read would repeat.
	fsMu sync.Mutex
	fs   iceio.IO
}

// Metadata is the part of an Iceberg table metadata file the lake checks read (spec: "Table
// Metadata Fields"). Unknown fields are ignored; format versions 1 to 3 share these.
type Metadata struct {
	FormatVersion     int               `json:"format-version"`
	TableUUID         string            `json:"table-uuid"`
	Location          string            `json:"location"`
	LastUpdatedMs     int64             `json:"last-updated-ms"`
	CurrentSchemaID   *int              `json:"current-schema-id"`
	SchemaList        []*Schema         `json:"schemas"`
	LegacySchema      *Schema           `json:"schema"`
	CurrentSnapshotID *int64            `json:"current-snapshot-id"`
	SnapshotList      []Snapshot        `json:"snapshots"`
	Properties        map[string]string `json:"properties"`
}

// Snapshot is one commit of the table.
type Snapshot struct {
	SnapshotID       int64             `json:"snapshot-id"`
	ParentSnapshotID *int64            `json:"parent-snapshot-id"`
	SequenceNumber   int64             `json:"sequence-number"`
	TimestampMs      int64             `json:"timestamp-ms"`
	ManifestList     string            `json:"manifest-list"`
	Manifests        []string          `json:"manifests"`
	Summary          map[string]string `json:"summary"`
	SchemaID         *int              `json:"schema-id"`
}

// Operation is the snapshot's summary operation (append, overwrite, delete, replace).
func (s Snapshot) Operation() string { return s.Summary["operation"] }

// Snapshots lists every snapshot the metadata keeps.
func (m *Metadata) Snapshots() []Snapshot { return m.SnapshotList }

// ParseMetadata decodes a table metadata file and checks the fields the lake checks rely on.
func ParseMetadata(data []byte) (*Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode table metadata: %w", err)
	}
	if m.FormatVersion < 1 || m.FormatVersion > 3 {
		return nil, fmt.Errorf("table metadata: format-version %d is not 1, 2 or 3", m.FormatVersion)
	}
	if len(m.SchemaList) == 0 && m.LegacySchema != nil {
		m.SchemaList = []*Schema{m.LegacySchema}
		id := m.LegacySchema.ID
		m.CurrentSchemaID = &id
	}
	if len(m.SchemaList) == 0 || m.CurrentSchemaID == nil {
		return nil, fmt.Errorf("table metadata: no schemas or no current-schema-id")
	}
	if m.schema(*m.CurrentSchemaID) == nil {
		return nil, fmt.Errorf("table metadata: current-schema-id %d is not among its schemas", *m.CurrentSchemaID)
	}
	if m.CurrentSnapshotID != nil && *m.CurrentSnapshotID == -1 {
		m.CurrentSnapshotID = nil // format v1 writers mark "no snapshot" with -1
	}
	if m.CurrentSnapshotID != nil && m.snapshot(*m.CurrentSnapshotID) == nil {
		return nil, fmt.Errorf("table metadata: current-snapshot-id %d is not among its snapshots", *m.CurrentSnapshotID)
	}
	return &m, nil
}

func (m *Metadata) schema(id int) *Schema {
	for _, s := range m.SchemaList {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func (m *Metadata) snapshot(id int64) *Snapshot {
	for i := range m.SnapshotList {
		if m.SnapshotList[i].SnapshotID == id {
			return &m.SnapshotList[i]
		}
	}
	return nil
}

// readMetadata reads and parses the metadata file at loc (gzip-compressed files are not read).
func readMetadata(fs iceio.IO, loc string) (*Metadata, error) {
	if strings.HasSuffix(loc, ".gz.metadata.json") || strings.HasSuffix(loc, ".metadata.json.gz") {
		return nil, fmt.Errorf("table metadata %s is gzip-compressed, which is not read", loc)
	}
	f, err := fs.Open(loc)
	if err != nil {
		return nil, fmt.Errorf("open table metadata %s: %w", loc, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read table metadata %s: %w", loc, err)
	}
	m, err := ParseMetadata(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return m, nil
}

// Identifier is the table's namespace parts and name.
func (t *Table) Identifier() []string { return t.id }

// Location is the table's base location.
func (t *Table) Location() string { return t.meta.Location }

// MetadataLocation is the metadata file the catalog points to.
func (t *Table) MetadataLocation() string { return t.metadataLoc }

// Metadata is the parsed metadata file.
func (t *Table) Metadata() *Metadata { return t.meta }

// Schema is the table's current schema.
func (t *Table) Schema() *Schema { return t.meta.schema(*t.meta.CurrentSchemaID) }

// Schemas maps each schema id the table kept to its schema.
func (t *Table) Schemas() map[int]*Schema {
	out := make(map[int]*Schema, len(t.meta.SchemaList))
	for _, s := range t.meta.SchemaList {
		out[s.ID] = s
	}
	return out
}

// CurrentSnapshot is the snapshot the table's main branch points to, nil for an empty table.
func (t *Table) CurrentSnapshot() *Snapshot {
	if t.meta.CurrentSnapshotID == nil {
		return nil
	}
	return t.meta.snapshot(*t.meta.CurrentSnapshotID)
}

// FS opens the file IO for the table's files.
func (t *Table) FS(ctx context.Context) (iceio.IO, error) {
	t.fsMu.Lock()
	defer t.fsMu.Unlock()
	if t.fs == nil {
		fs, err := loadFS(ctx, t.ioProps, t.meta.Location)
		if err != nil {
			return nil, err
		}
		t.fs = fs
	}
	if s3, ok := t.fs.(*s3FS); ok {
		return s3.withContext(ctx), nil // the same client, this call's context
	}
	return t.fs, nil
}

func (t *Table) name() string { return strings.Join(t.id, ".") }
