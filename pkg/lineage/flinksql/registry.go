package flinksql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
)

// RegistryResolver resolves Flink tables against Schema Registry: table T is topic T with value
// subject T-value (Confluent Cloud's TopicNameStrategy). The registry keeps no registration times,
// so the version a statement was created against is taken from Pins (subject → version) when
// given, else the latest version is used and the table's Note says so.
type RegistryResolver struct {
	Client *registry.Client
	Pins   map[string]int
}

// ResolveTable implements Resolver.
func (r RegistryResolver) ResolveTable(ctx context.Context, ref TableRef, _ time.Time) (Table, error) {
	subject := ref.Table + "-value"
	version := r.Pins[subject]
	sv, err := r.Client.Version(ctx, subject, version, false)
	if registry.IsCode(err, 40401) || registry.IsCode(err, 40402) {
		return Table{}, fmt.Errorf("%w: %s (no subject %s version %s)", ErrTableNotFound, ref, subject, versionText(version))
	}
	if err != nil {
		return Table{}, err
	}
	t := Table{Topic: ref.Table, ValueSubject: subject, SchemaVersion: sv.Version, SchemaID: sv.ID}
	if version == 0 {
		t.Note = fmt.Sprintf("the version of %s that statement was created against is unknown: latest (v%d) used; pass schema_versions to pin it", subject, sv.Version)
	}
	if sv.Type == "" || strings.EqualFold(string(sv.Type), string(schema.Avro)) {
		cols, err := ColumnsFromAvro(sv.Schema)
		if err != nil {
			return Table{}, fmt.Errorf("%s v%d: %w", subject, sv.Version, err)
		}
		t.Columns = cols
	} else {
		t.Note = strings.TrimSpace(t.Note + fmt.Sprintf(" %s is %s: its columns are not expanded (SELECT * stays table-level)", subject, sv.Type))
	}
	return t, nil
}

func versionText(v int) string {
	if v == 0 {
		return "latest"
	}
	return fmt.Sprint(v)
}
