package demo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/confluent"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
)

// The scenario's real-format artifacts live beside the packages that own them (the lineage and
// schema tests read the same files); the demo reads them from the repository it runs from.
const (
	lineageDir  = "pkg/lineage/testdata/scenario"
	schemaDir   = "pkg/schema/testdata/scenario"
	catalogFile = "configs/catalog.example.yaml"
	modulePath  = "github.com/dataworkers/dw"
)

// Artifacts are the scenario files the demo loads.
type Artifacts struct {
	Root string
	// Schemas are api-usage-value's texts by version (11, 12, 13).
	Schemas map[int]string
	// Statements are the Flink statements as the Confluent Cloud API serves them.
	Statements []confluenttest.Statement
	// Manifest, Streaming and Catalog are paths: the dbt manifest, what sync_catalog reports
	// about Snowflake reading the Tableflow table, and the catalog file of what has no API.
	Manifest, Streaming, Catalog string
}

// FindRoot walks up from dir to the repository root (the directory whose go.mod declares this module).
func FindRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module "+modulePath+"\n")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no Data Workers repository (go.mod of %s) above %s: run the demo from the repository or through ./start-agent.sh demo", modulePath, dir)
		}
		d = parent
	}
}

// LoadArtifacts reads the scenario from the repository at root.
func LoadArtifacts(root string) (*Artifacts, error) {
	a := &Artifacts{Root: root, Schemas: map[int]string{},
		Manifest:  filepath.Join(root, lineageDir, "manifest.json"),
		Streaming: filepath.Join(root, lineageDir, "streaming.yaml"),
		Catalog:   filepath.Join(root, catalogFile)}
	for _, v := range []int{11, 12, 13} {
		b, err := os.ReadFile(filepath.Join(root, schemaDir, fmt.Sprintf("api-usage-value.v%d.avsc", v)))
		if err != nil {
			return nil, fmt.Errorf("scenario schema v%d: %w", v, err)
		}
		a.Schemas[v] = string(b)
	}
	for _, p := range []string{a.Manifest, a.Streaming, a.Catalog} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("scenario artifact: %w", err)
		}
	}
	files, err := filepath.Glob(filepath.Join(root, lineageDir, "*.statement.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		st, err := parseStatement(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		a.Statements = append(a.Statements, st)
	}
	if len(a.Statements) == 0 {
		return nil, fmt.Errorf("no *.statement.json under %s", filepath.Join(root, lineageDir))
	}
	return a, nil
}

// parseStatement reads a statement file with pkg/confluent's parser of the sql/v1 Statement
// object, into the shape the Flink stand-in serves back.
func parseStatement(raw []byte) (confluenttest.Statement, error) {
	s, err := confluent.ParseStatement(raw)
	if err != nil {
		return confluenttest.Statement{}, err
	}
	if s.Name == "" || strings.TrimSpace(s.SQL) == "" {
		return confluenttest.Statement{}, fmt.Errorf("statement without name or SQL")
	}
	var created time.Time
	if s.CreatedAt != nil {
		created = *s.CreatedAt
	}
	return confluenttest.Statement{Name: s.Name, SQL: s.SQL, Phase: s.Phase, CreatedAt: created,
		ComputePoolID: s.ComputePoolID, Properties: s.Properties, Labels: s.Labels, SQLKind: s.SQLKind,
		LatestOffsets: s.LatestOffsets}, nil
}
