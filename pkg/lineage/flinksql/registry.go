package flinksql

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/store"
)

// Pin is the schema version a statement reads of one subject, and how that is known (PinGiven,
// PinFirstSeen or PinInferred).
type Pin struct {
	Version int
	Source  string
}

// Real reports whether the pin is a recorded or given fact rather than an inference.
func (p Pin) Real() bool { return p.Version > 0 && (p.Source == PinGiven || p.Source == PinFirstSeen) }

// ParsePins reads the schema_pins ("subject vN,subject vM") and schema_pin_source (one source per
// pin, same order) attributes Import writes on a statement. Pins without a source, written
// before sources were recorded, are left out: nothing says they were more than a guess.
func ParsePins(attrs map[string]string) map[string]Pin {
	pins := map[string]Pin{}
	if attrs["schema_pins"] == "" {
		return pins
	}
	sources := strings.Split(attrs["schema_pin_source"], ",")
	for i, p := range strings.Split(attrs["schema_pins"], ",") {
		subj, v, ok := strings.Cut(strings.TrimSpace(p), " v")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || subj == "" || n <= 0 || i >= len(sources) {
			continue
		}
		switch src := strings.TrimSpace(sources[i]); src {
		case PinGiven, PinFirstSeen, PinInferred:
			pins[subj] = Pin{Version: n, Source: src}
		}
	}
	return pins
}

// PreviousPins are the pins an earlier import recorded on statement asset a, unless a is an
// older statement of the same name (another creation time).
func PreviousPins(a graph.Asset, created time.Time) map[string]Pin {
	if !created.IsZero() && a.Attrs["created_at"] != created.UTC().Format(time.RFC3339) {
		return nil
	}
	return ParsePins(a.Attrs)
}

// SeenVersion is a registered version of a subject and when Data Workers first saw it (the
// registry keeps no registration times).
type SeenVersion struct {
	Version   int
	FirstSeen time.Time
	Deleted   bool
}

// FirstSeenPin returns the newest live version first seen at or before created: the version a
// statement created then was created against, as far as the record shows. ok is false when no
// version was seen by then (Data Workers first looked later) or created is unknown.
func FirstSeenPin(vs []SeenVersion, created time.Time) (version int, ok bool) {
	if created.IsZero() {
		return 0, false
	}
	for _, v := range vs {
		if !v.Deleted && !v.FirstSeen.IsZero() && !v.FirstSeen.After(created) && v.Version > version {
			version, ok = v.Version, true
		}
	}
	return version, ok
}

// InferenceOrder lists the live versions to try when a statement's pin is unknown: an earlier
// inference first (it was made when fewer versions existed), then newest to oldest.
func InferenceOrder(live []int, prior Pin) []int {
	out := append([]int(nil), live...)
	sort.Sort(sort.Reverse(sort.IntSlice(out)))
	if prior.Version <= 0 {
		return out
	}
	for i, v := range out {
		if v == prior.Version {
			return append([]int{v}, append(out[:i:i], out[i+1:]...)...)
		}
	}
	return out
}

// RegistryResolver resolves Flink tables against Schema Registry: table T is topic T with value
// subject T-value (Confluent Cloud's TopicNameStrategy). The version a statement was created
// against is, in order: a real pin from Pins; with a Store, the newest version first seen at or
// before the statement's creation (the versions read are recorded, first seen Now); else it is
// inferred from the SQL by Import, trying an inferred pin from Pins first.
type RegistryResolver struct {
	Client *registry.Client
	Pins   map[string]Pin
	Store  *store.Store
	Now    time.Time
}

// ResolveTable implements Resolver.
func (r RegistryResolver) ResolveTable(ctx context.Context, ref TableRef, at time.Time) (Table, error) {
	subject := ref.Table + "-value"
	pin := r.Pins[subject]
	if pin.Real() {
		t, err := r.ResolveTableVersion(ctx, ref, pin.Version)
		t.PinSource = pin.Source
		return t, err
	}
	hist, err := r.Client.History(ctx, subject)
	if registry.IsCode(err, 40401) {
		return Table{}, fmt.Errorf("%w: %s (no subject %s)", ErrTableNotFound, ref, subject)
	}
	if err != nil {
		return Table{}, err
	}
	var live []int
	seen := map[int]registry.Seen{}
	if r.Store != nil {
		if seen, err = registry.RecordVersions(ctx, r.Store, r.Now, hist); err != nil {
			return Table{}, err
		}
	}
	var svs []SeenVersion
	for _, sv := range hist {
		if !sv.Deleted {
			live = append(live, sv.Version)
		}
		svs = append(svs, SeenVersion{Version: sv.Version, FirstSeen: seen[sv.Version].FirstSeen, Deleted: sv.Deleted})
	}
	if len(live) == 0 {
		return Table{}, fmt.Errorf("%w: %s (every version of %s is deleted)", ErrTableNotFound, ref, subject)
	}
	if v, ok := FirstSeenPin(svs, at); ok {
		t, err := r.ResolveTableVersion(ctx, ref, v)
		t.PinSource = PinFirstSeen
		return t, err
	}
	order := InferenceOrder(live, pin)
	t, err := r.ResolveTableVersion(ctx, ref, order[0])
	t.Candidates = order
	return t, err
}

// ResolveTableVersion implements VersionResolver.
func (r RegistryResolver) ResolveTableVersion(ctx context.Context, ref TableRef, version int) (Table, error) {
	subject := ref.Table + "-value"
	sv, err := r.Client.Version(ctx, subject, version, false)
	if registry.IsCode(err, 40401) || registry.IsCode(err, 40402) {
		return Table{}, fmt.Errorf("%w: %s (no subject %s version %d)", ErrTableNotFound, ref, subject, version)
	}
	if err != nil {
		return Table{}, err
	}
	t := Table{Topic: ref.Table, ValueSubject: subject, SchemaVersion: sv.Version, SchemaID: sv.ID}
	if sv.Type == "" || strings.EqualFold(string(sv.Type), string(schema.Avro)) {
		cols, err := ColumnsFromAvro(sv.Schema)
		if err != nil {
			return Table{}, fmt.Errorf("%s v%d: %w", subject, sv.Version, err)
		}
		t.Columns = cols
	} else {
		t.Note = fmt.Sprintf("%s is %s: its columns are not expanded (SELECT * stays table-level)", subject, sv.Type)
	}
	return t, nil
}
