package compat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dataworkers/dw/pkg/schema"
)

// ReservedProperty is the metadata property a data contract lists its reserved field names
// under, comma-separated: names no field may take, kept from version to version.
const ReservedProperty = "confluent:reserved"

// reservedNames reads the reserved names from a version's metadata properties.
func reservedNames(meta map[string]string) []string {
	var out []string
	for _, n := range strings.Split(meta[ReservedProperty], ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// topLevelFields are the names of the schema's top-level fields (record fields, the first
// message's fields, the root object's properties): what a reserved name may not be.
func topLevelFields(s *schema.Schema) map[string]bool {
	out := map[string]bool{}
	for _, f := range s.Fields {
		if !strings.ContainsAny(f.Path, ".[{") {
			out[f.Path] = true
		}
	}
	return out
}

// ReservedDiff is the registry's reserved-field check under validateFields: every name original
// reserves must stay reserved in update, and no top-level field of update may take a name update
// reserves. JSON Schema spells the differences RESERVED_PROPERTY_REMOVED (at the name) and
// RESERVED_PROPERTY_CONFLICTS_WITH_PROPERTY (at #/properties/name); Avro and Protobuf
// RESERVED_FIELD_REMOVED and FIELD_CONFLICTS_WITH_RESERVED_FIELD (at the name). original may be
// nil (a first version): only the conflicts are checked then. Every such difference is
// incompatible.
func ReservedDiff(original *schema.Schema, origMeta map[string]string, update *schema.Schema, updMeta map[string]string) []Incompatibility {
	removedType, conflictType := "RESERVED_FIELD_REMOVED", "FIELD_CONFLICTS_WITH_RESERVED_FIELD"
	if update.Format == schema.JSON {
		removedType, conflictType = "RESERVED_PROPERTY_REMOVED", "RESERVED_PROPERTY_CONFLICTS_WITH_PROPERTY"
	}
	var out []Incompatibility
	kept := reservedNames(updMeta)
	if original != nil {
		for _, n := range reservedNames(origMeta) {
			if !slices.Contains(kept, n) {
				out = append(out, Incompatibility{Type: removedType, Path: n, Field: n,
					Message: fmt.Sprintf("%s: the reserved field %s was removed from metadata property %q; a reserved name stays reserved in every later version", removedType, n, ReservedProperty)})
			}
		}
	}
	fields := topLevelFields(update)
	for _, n := range kept {
		if !fields[n] {
			continue
		}
		path := n
		if update.Format == schema.JSON {
			path = "#/properties/" + n
		}
		out = append(out, Incompatibility{Type: conflictType, Path: path, Field: n,
			Message: fmt.Sprintf("%s: the field %s conflicts with the reserved field %s (metadata property %q); rename the field or release the name", conflictType, n, n, ReservedProperty)})
	}
	return out
}
