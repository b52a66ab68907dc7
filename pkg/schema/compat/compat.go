// Package compat judges a schema change the way Confluent Schema Registry does: the seven
// compatibility levels over Avro (reader/writer resolution through hamba/avro), Protobuf
// (SR's tag-based diff and its compatible set) and JSON Schema (SR's content-model diff, STRICT
// or LENIENT policy), with one message per incompatibility. See reference/compatibility.md.
package compat

import (
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/schema"
)

// Level is a Schema Registry compatibility level.
type Level string

// The seven levels.
const (
	None               Level = "NONE"
	Backward           Level = "BACKWARD"
	BackwardTransitive Level = "BACKWARD_TRANSITIVE"
	Forward            Level = "FORWARD"
	ForwardTransitive  Level = "FORWARD_TRANSITIVE"
	Full               Level = "FULL"
	FullTransitive     Level = "FULL_TRANSITIVE"
)

// Levels lists every level, in the registry's order.
var Levels = []Level{None, Backward, BackwardTransitive, Forward, ForwardTransitive, Full, FullTransitive}

// ParseLevel reads a level name; empty means BACKWARD, the registry's default.
func ParseLevel(s string) (Level, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "" {
		return Backward, nil
	}
	for _, l := range Levels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown compatibility level %q: use one of NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE", s)
}

// Transitive levels compare against every earlier version; the others against the latest only.
func (l Level) Transitive() bool { return strings.HasSuffix(string(l), "_TRANSITIVE") }

func (l Level) backward() bool {
	return strings.HasPrefix(string(l), "BACKWARD") || strings.HasPrefix(string(l), "FULL")
}
func (l Level) forward() bool {
	return strings.HasPrefix(string(l), "FORWARD") || strings.HasPrefix(string(l), "FULL")
}

// Policy is SR's compatibilityPolicy; it only matters for JSON Schema content models.
type Policy string

// STRICT is SR's default; LENIENT also accepts the open/closed content-model differences.
const (
	Strict  Policy = "STRICT"
	Lenient Policy = "LENIENT"
)

// ParsePolicy reads a policy; empty means STRICT. LOGICAL (Flink/Iceberg) is not reproduced here.
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "STRICT":
		return Strict, nil
	case "LENIENT":
		return Lenient, nil
	}
	return "", fmt.Errorf("unknown compatibility policy %q: use STRICT or LENIENT", s)
}

// Direction says which reader reads which writer.
type Direction string

// BACKWARD: the new schema reads data written with the old one. FORWARD: the old reads the new.
const (
	NewReadsOld Direction = "new_reads_old"
	OldReadsNew Direction = "old_reads_new"
)

// Incompatibility is one reason a check failed.
type Incompatibility struct {
	// Type is SR's error or difference type, e.g. READER_FIELD_MISSING_DEFAULT_VALUE,
	// FIELD_SCALAR_KIND_CHANGED, PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL.
	Type string `json:"type"`
	// Path locates it: "/fields/3" (Avro), "#/Msg/2" (Protobuf), "#/properties/x" (JSON Schema).
	Path string `json:"path"`
	// Field is the field it concerns, when there is one.
	Field     string    `json:"field,omitempty"`
	Direction Direction `json:"direction"`
	// OldVersion is the earlier version it was found against (0 when unnamed).
	OldVersion int    `json:"old_version,omitempty"`
	Message    string `json:"message"`
}

// Version is an earlier, non-deleted version of the subject.
type Version struct {
	Version int
	Schema  *schema.Schema
}

// Result is a compatibility verdict.
type Result struct {
	Compatible bool  `json:"compatible"`
	Level      Level `json:"level"`
	// Compared lists the versions checked, newest first, in the order SR checks them.
	Compared          []int             `json:"compared_versions"`
	Incompatibilities []Incompatibility `json:"incompatibilities"`
}

// Check judges proposed against the earlier versions (oldest first, soft-deleted ones already
// left out) under level, as SR's register and compatibility paths do: NONE passes, the plain
// levels compare with the latest version only, transitive ones with every version newest first,
// stopping at the first failing version.
func Check(level Level, policy Policy, proposed *schema.Schema, previous []Version) Result {
	res := Result{Compatible: true, Level: level, Incompatibilities: []Incompatibility{}, Compared: []int{}}
	if level == None || len(previous) == 0 {
		return res
	}
	targets := previous
	if !level.Transitive() {
		targets = previous[len(previous)-1:]
	}
	for i := len(targets) - 1; i >= 0; i-- {
		old := targets[i]
		res.Compared = append(res.Compared, old.Version)
		var found []Incompatibility
		if level.backward() {
			found = append(found, Pair(old.Schema, proposed, NewReadsOld, policy)...)
		}
		if level.forward() {
			found = append(found, Pair(old.Schema, proposed, OldReadsNew, policy)...)
		}
		if len(found) > 0 {
			for j := range found {
				found[j].OldVersion = old.Version
			}
			res.Compatible = false
			res.Incompatibilities = found
			return res
		}
	}
	return res
}

// Pair checks one direction between two versions. NewReadsOld is SR's
// new.isBackwardCompatible(old); OldReadsNew is old.isBackwardCompatible(new).
func Pair(old, new *schema.Schema, dir Direction, policy Policy) []Incompatibility {
	if old.Format != new.Format {
		return []Incompatibility{{Type: "SCHEMA_TYPE_MISMATCH", Path: "#", Direction: dir,
			Message: fmt.Sprintf("Incompatible because of different schema type: %s vs %s", old.Format, new.Format)}}
	}
	reader, writer := new, old
	if dir == OldReadsNew {
		reader, writer = old, new
	}
	var out []Incompatibility
	switch new.Format {
	case schema.Avro:
		out = avroCompatible(reader, writer)
	case schema.Protobuf:
		// SR diffs original=writer, update=reader for canRead.
		out = protobufCompatible(writer, reader)
	case schema.JSON:
		out = jsonCompatible(writer, reader, policy)
	}
	for i := range out {
		out[i].Direction = dir
	}
	return out
}
