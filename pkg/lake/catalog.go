package lake

import (
	"context"
	"errors"
)

// catalogClient is what the lake needs of a catalog: where a table's current metadata is, and
// which tables and namespaces exist. Each kind (REST, Glue, a SQL catalog database, a hadoop
// warehouse path) answers it its own way; none goes through iceberg-go's catalog package, whose
// tables link the Substrait initialiser (see Table).
type catalogClient interface {
	// locate finds table id's current metadata file. A catalog that returns the metadata with
	// the answer (REST) gives it as meta; vended are file IO properties for the table's files.
	locate(ctx context.Context, id []string) (loc string, meta *Metadata, vended map[string]string, err error)
	listTables(ctx context.Context, namespace []string) ([][]string, error)
	listNamespaces(ctx context.Context) ([][]string, error)
	close() error
}

// errNoSuchTable is a catalog's "no such table" answer.
var errNoSuchTable = errors.New("no such table")
