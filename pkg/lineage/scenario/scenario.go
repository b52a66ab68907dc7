// Package scenario loads the design's acceptance scenario into a context graph from its real-format
// artifacts (pkg/lineage/testdata/scenario: a dbt manifest, Confluent Cloud statement objects, the
// Avro value schema the statement was created against, and a catalog file of what sync_catalog
// reports), plus any catalog files such as configs/catalog.example.yaml. Tests of other packages
// and the demo use it to get the same graph.
package scenario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/lineage/catalogfile"
	"github.com/dataworkers/dw/pkg/lineage/dbt"
	"github.com/dataworkers/dw/pkg/lineage/flinksql"
)

// Resolver builds a Flink table resolver from the dir's <subject>.v<N>.avsc files: topic T has
// value subject T-value (TopicNameStrategy) pinned at version N.
func Resolver(dir string) (flinksql.StaticResolver, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.avsc"))
	if err != nil {
		return nil, err
	}
	r := flinksql.StaticResolver{}
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".avsc")
		subject, ver, ok := strings.Cut(base, ".v")
		n, err := strconv.Atoi(ver)
		if !ok || err != nil || !strings.HasSuffix(subject, "-value") {
			return nil, fmt.Errorf("%s: name schema files <topic>-value.v<N>.avsc", f)
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		cols, err := flinksql.ColumnsFromAvro(string(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		topic := strings.TrimSuffix(subject, "-value")
		r[topic] = flinksql.Table{Topic: topic, ValueSubject: subject, SchemaVersion: n, Columns: cols}
	}
	return r, nil
}

// Load imports dir's manifest.json, *.statement.json and *.yaml catalog files, then the extra
// catalog files, into g. Each artifact is a complete import of its own source.
func Load(ctx context.Context, g *graph.Graph, dir string, catalogFiles ...string) error {
	res, err := Resolver(dir)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return err
	}
	m, err := dbt.Parse(raw)
	if err != nil {
		return err
	}
	b, _, err := dbt.Import(m, "")
	if err != nil {
		return err
	}
	if _, err := g.Import(ctx, b); err != nil {
		return err
	}
	stmts, err := filepath.Glob(filepath.Join(dir, "*.statement.json"))
	if err != nil {
		return err
	}
	sort.Strings(stmts)
	for _, f := range stmts {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		st, err := flinksql.ParseAPIStatement(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		b, err := flinksql.Import(ctx, st, res)
		if err != nil {
			return err
		}
		if _, err := g.Import(ctx, b); err != nil {
			return err
		}
	}
	cats, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(cats)
	for _, f := range append(cats, catalogFiles...) {
		b, err := catalogfile.Load(f)
		if err != nil {
			return err
		}
		if _, err := g.Import(ctx, b); err != nil {
			return err
		}
	}
	return nil
}
