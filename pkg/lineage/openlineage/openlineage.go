// Package openlineage imports OpenLineage events (spec 2-0-2: RunEvent, JobEvent, DatasetEvent) from
// a JSON file, a JSON array, NDJSON, or a directory of those: datasets with their schema facet,
// jobs, inputs → job → outputs, and the columnLineage facet as field-level edges routed through the
// job. Dataset names map to our URNs where the naming spec allows (Kafka topics, Snowflake,
// PostgreSQL, BigQuery tables); anything else keeps its OpenLineage namespace and name.
package openlineage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
)

// Event is the union of RunEvent, JobEvent and DatasetEvent fields we read.
type Event struct {
	EventTime time.Time `json:"eventTime"`
	EventType string    `json:"eventType"`
	Producer  string    `json:"producer"`
	Run       *struct {
		RunID  string `json:"runId"`
		Facets struct {
			// Parent is the run this one belongs to: for an Airflow task, the DAG run (its job
			// name is the dag_id).
			Parent *struct {
				Job struct {
					Namespace string `json:"namespace"`
					Name      string `json:"name"`
				} `json:"job"`
			} `json:"parent"`
		} `json:"facets"`
	} `json:"run"`
	Job     *Job      `json:"job"`
	Inputs  []Dataset `json:"inputs"`
	Outputs []Dataset `json:"outputs"`
	Dataset *Dataset  `json:"dataset"`
}

// Job is a job reference with facets.
type Job struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Facets    JobFacets `json:"facets"`
}

// JobFacets are the job facets we read.
type JobFacets struct {
	SQL *struct {
		Query   string `json:"query"`
		Dialect string `json:"dialect"`
	} `json:"sql"`
	JobType *struct {
		ProcessingType string `json:"processingType"`
		Integration    string `json:"integration"`
		JobType        string `json:"jobType"`
	} `json:"jobType"`
	Ownership     *Ownership `json:"ownership"`
	Documentation *struct {
		Description string `json:"description"`
	} `json:"documentation"`
}

// Ownership is the ownership facet.
type Ownership struct {
	Owners []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"owners"`
}

// Dataset is an input, output or the subject of a DatasetEvent.
type Dataset struct {
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Facets    DatasetFacets `json:"facets"`
}

// DatasetFacets are the dataset facets we read.
type DatasetFacets struct {
	Schema *struct {
		Fields []SchemaField `json:"fields"`
	} `json:"schema"`
	ColumnLineage *struct {
		Fields  map[string]ColumnLineage `json:"fields"`
		Dataset []InputField             `json:"dataset"`
	} `json:"columnLineage"`
	Ownership     *Ownership `json:"ownership"`
	Documentation *struct {
		Description string `json:"description"`
	} `json:"documentation"`
	LifecycleStateChange *struct {
		LifecycleStateChange string `json:"lifecycleStateChange"`
	} `json:"lifecycleStateChange"`
}

// SchemaField is one (possibly nested) field of the schema facet.
type SchemaField struct {
	Name        string        `json:"name"`
	Type        string        `json:"type"`
	Description string        `json:"description"`
	Fields      []SchemaField `json:"fields"`
}

// ColumnLineage is one output column's inputs.
type ColumnLineage struct {
	InputFields []InputField `json:"inputFields"`
	// Deprecated spellings still emitted by older integrations.
	TransformationDescription string `json:"transformationDescription"`
	TransformationType        string `json:"transformationType"`
}

// InputField is an input column with how it is used.
type InputField struct {
	Namespace       string `json:"namespace"`
	Name            string `json:"name"`
	Field           string `json:"field"`
	Transformations []struct {
		Type        string `json:"type"`
		Subtype     string `json:"subtype"`
		Description string `json:"description"`
		Masking     bool   `json:"masking"`
	} `json:"transformations"`
}

// JobSource names one OpenLineage job in the graph by its absolute identity, namespace and
// name (each path-escaped, so "a/b"+"c" and "a"+"b/c" differ): whichever file its events come
// from, a re-import replaces what the job asserted before, and jobs of the same name in two
// namespaces stay apart.
func JobSource(namespace, name string) string {
	return "openlineage:job/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// DatasetSource names the static assertions (DatasetEvents) about one dataset, by namespace and
// name like JobSource.
func DatasetSource(namespace, name string) string {
	return "openlineage:dataset/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// ImportJobs converts events into one batch per job (JobSource) and one per dataset that
// DatasetEvents describe (DatasetSource), in order of first appearance. Each batch is the complete
// view of its job or dataset as these events describe it, so importing them marks stale what a
// job no longer reads or writes however its events are split across files.
func ImportJobs(events []Event) ([]graph.Batch, error) {
	groups := map[string][]Event{}
	var order []string
	for i, ev := range events {
		var key string
		switch {
		case ev.Dataset != nil && ev.Job == nil:
			if ev.Dataset.Namespace == "" || ev.Dataset.Name == "" {
				return nil, fmt.Errorf("event %d: dataset without namespace or name", i+1)
			}
			key = DatasetSource(ev.Dataset.Namespace, ev.Dataset.Name)
		case ev.Job == nil || ev.Job.Name == "" || ev.Job.Namespace == "":
			return nil, fmt.Errorf("event %d: no job namespace and name (want a RunEvent, JobEvent or DatasetEvent)", i+1)
		default:
			key = JobSource(ev.Job.Namespace, ev.Job.Name)
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], ev)
	}
	out := make([]graph.Batch, 0, len(order))
	for _, key := range order {
		b, err := convert(key, groups[key])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// ReadPath reads every event in a file or, recursively, a directory (*.json, *.ndjson, *.jsonl).
// It reads with os.ReadFile, so it is for trusted paths; a tool reading a caller-named path lists
// Files and reads each one itself (regular files only, bounded) before Parse.
func ReadPath(path string) ([]Event, error) {
	files, err := Files(path)
	if err != nil {
		return nil, err
	}
	var all []Event
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("openlineage events: %w", err)
		}
		evs, err := Parse(f, raw)
		if err != nil {
			return nil, err
		}
		all = append(all, evs...)
	}
	return all, nil
}

// WalkLimits bound a directory walk: a caller can name any directory, and a walk of / must end
// quickly with an error, not run into /proc.
type WalkLimits struct {
	Files   int           // event files listed
	Entries int           // directory entries looked at
	Bytes   int64         // total size of the event files
	Time    time.Duration // the whole walk
}

// DefaultWalkLimits fit a real events directory (a day of runs of a large estate) many times over.
func DefaultWalkLimits() WalkLimits {
	return WalkLimits{Files: 10000, Entries: 100000, Bytes: 1 << 30, Time: 10 * time.Second}
}

// eventExts are the extensions of event files.
const eventExts = "*.json, *.ndjson or *.jsonl"

// Files lists the event files at path under DefaultWalkLimits: see FilesWithin.
func Files(path string) ([]string, error) { return FilesWithin(path, DefaultWalkLimits()) }

// FilesWithin lists the event files at path: path itself when it is not a directory, else every
// *.json, *.ndjson and *.jsonl below it in lexical order. It opens none of them. The walk stays
// on path's file system (like find -xdev), never enters a kernel pseudo file system (/proc, /sys),
// and stops with an error at any of the limits; a directory holding no event file is an error
// that says what was looked for.
func FilesWithin(path string, lim WalkLimits) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("openlineage events: %w", err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	if kind := pseudoFS(path); kind != "" {
		return nil, fmt.Errorf("openlineage events: %s is on %s, a kernel file system that holds no events", path, kind)
	}
	dev, hasDev := device(info)
	deadline := time.Now().Add(lim.Time)
	var files []string
	var entries int
	var size int64
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != path && errors.Is(err, fs.ErrPermission) {
				return nil // an unreadable corner is not the caller's events
			}
			return err
		}
		entries++
		switch {
		case entries > lim.Entries:
			return fmt.Errorf("more than %d entries under %s: name the directory that holds the events", lim.Entries, path)
		case entries%256 == 0 && time.Now().After(deadline):
			return fmt.Errorf("listing %s took longer than %s: name the directory that holds the events", path, lim.Time)
		}
		if d.IsDir() {
			if p == path {
				return nil
			}
			if fi, err := d.Info(); err == nil {
				if dd, ok := device(fi); ok && hasDev && dd != dev {
					return fs.SkipDir // another file system mounted below path
				}
			}
			return nil
		}
		ext := strings.ToLower(filepath.Ext(p))
		if ext != ".json" && ext != ".ndjson" && ext != ".jsonl" {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			size += fi.Size()
		}
		files = append(files, p)
		switch {
		case len(files) > lim.Files:
			return fmt.Errorf("more than %d event files under %s: import a narrower directory", lim.Files, path)
		case size > lim.Bytes:
			return fmt.Errorf("the event files under %s hold more than %d MiB: import a narrower directory", path, lim.Bytes>>20)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("openlineage events: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("openlineage events: no event files (%s) under %s (looked at %d entries)", eventExts, path, entries)
	}
	return files, nil
}

// device is the file system device a file is on, when the platform says.
func device(fi fs.FileInfo) (uint64, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), true
	}
	return 0, false
}

// pseudoFS names the kernel pseudo file system path is on (proc, sysfs, …), or "".
func pseudoFS(path string) string {
	var st syscall.Statfs_t
	if syscall.Statfs(path, &st) != nil {
		return ""
	}
	switch uint64(st.Type) {
	case 0x9fa0:
		return "procfs"
	case 0x62656572:
		return "sysfs"
	case 0x1cd1:
		return "devpts"
	case 0x27e0eb, 0x63677270:
		return "cgroupfs"
	case 0x64626720:
		return "debugfs"
	case 0x74726163:
		return "tracefs"
	case 0x73636673:
		return "securityfs"
	case 0xcafe4a11:
		return "bpffs"
	}
	return ""
}

// Parse decodes the events in raw, the content of the file name (one event, a JSON array or
// NDJSON); errors name the file.
func Parse(name string, raw []byte) ([]Event, error) {
	evs, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return evs, nil
}

// Decode reads one event, a JSON array of events, or NDJSON.
func Decode(raw []byte) ([]Event, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] == '[' {
		var evs []Event
		if err := json.Unmarshal(trimmed, &evs); err != nil {
			return nil, fmt.Errorf("openlineage JSON array: %w", err)
		}
		return evs, nil
	}
	var evs []Event
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	for {
		var e Event
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("openlineage event %d: %w", len(evs)+1, err)
		}
		evs = append(evs, e)
	}
	return evs, nil
}

// DatasetURN maps an OpenLineage dataset to our URN following the OpenLineage naming spec.
func DatasetURN(namespace, name string) graph.URN {
	u, err := url.Parse(namespace)
	scheme := namespace
	if err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	switch strings.ToLower(scheme) {
	case "kafka":
		return graph.TopicURN(name)
	case "snowflake", "postgres", "postgresql", "redshift", "bigquery", "mysql", "trino", "databricks":
		engine := strings.ToLower(scheme)
		if engine == "postgresql" {
			engine = "postgres"
		}
		return graph.WarehouseURN(engine, graph.SplitRelation(name)...)
	}
	id := strings.ReplaceAll(namespace+"/"+name, "#", "%23")
	return graph.URN("openlineage:" + id)
}

// JobURN is an OpenLineage job.
func JobURN(namespace, name string) graph.URN {
	return graph.URN("job:" + strings.ReplaceAll(namespace+"/"+name, "#", "%23"))
}

// convert turns events into one batch named source.
func convert(source string, events []Event) (graph.Batch, error) {
	b := graph.Batch{Source: source}
	sort.SliceStable(events, func(i, j int) bool { return events[i].EventTime.Before(events[j].EventTime) })
	assets := map[graph.URN]*graph.Asset{}
	var order []graph.URN
	fields := map[graph.FieldRef]graph.Field{}
	var fieldOrder []graph.FieldRef
	edges := map[graph.EdgeKey]int{}
	asset := func(u graph.URN, kind, name string) *graph.Asset {
		if a, ok := assets[u]; ok {
			return a
		}
		a := &graph.Asset{URN: u, Kind: kind, Name: name, Attrs: map[string]string{}}
		assets[u] = a
		order = append(order, u)
		return a
	}
	addEdge := func(e graph.Edge) {
		if e.From == e.To {
			return
		}
		if i, ok := edges[e.Key()]; ok {
			if e.Transformation != "" {
				b.Edges[i].Transformation = e.Transformation
			}
			return
		}
		edges[e.Key()] = len(b.Edges)
		b.Edges = append(b.Edges, e)
	}
	dataset := func(d Dataset) (graph.URN, error) {
		if d.Namespace == "" || d.Name == "" {
			return "", fmt.Errorf("dataset without namespace or name")
		}
		u := DatasetURN(d.Namespace, d.Name)
		if _, err := graph.ParseURN(string(u)); err != nil {
			return "", err
		}
		a := asset(u, kindOf(u), d.Name)
		a.Attrs["openlineage_namespace"] = d.Namespace
		if d.Facets.Ownership != nil {
			for _, o := range d.Facets.Ownership.Owners {
				a.Owners = appendUnique(a.Owners, o.Name)
			}
		}
		if d.Facets.Documentation != nil && d.Facets.Documentation.Description != "" {
			a.Description = d.Facets.Documentation.Description
		}
		if d.Facets.Schema != nil {
			ord := 0
			var walk func(prefix string, fs []SchemaField)
			walk = func(prefix string, fs []SchemaField) {
				for _, f := range fs {
					if f.Name == "" {
						continue
					}
					ord++
					ref := u.Field(prefix + f.Name)
					if _, seen := fields[ref]; !seen {
						fieldOrder = append(fieldOrder, ref)
					}
					fields[ref] = graph.Field{Asset: u, Path: ref.Path, Type: f.Type, Description: f.Description, Nullable: true, Ordinal: ord}
					walk(ref.Path+".", f.Fields)
				}
			}
			walk("", d.Facets.Schema.Fields)
		}
		return u, nil
	}
	for i, ev := range events {
		where := fmt.Sprintf("event %d", i+1)
		if ev.Dataset != nil && ev.Job == nil {
			if _, err := dataset(*ev.Dataset); err != nil {
				return graph.Batch{}, fmt.Errorf("%s: %w", where, err)
			}
			continue
		}
		if ev.Job == nil || ev.Job.Name == "" || ev.Job.Namespace == "" {
			return graph.Batch{}, fmt.Errorf("%s: no job namespace and name (want a RunEvent, JobEvent or DatasetEvent)", where)
		}
		ju := JobURN(ev.Job.Namespace, ev.Job.Name)
		if _, err := graph.ParseURN(string(ju)); err != nil {
			return graph.Batch{}, fmt.Errorf("%s: %w", where, err)
		}
		job := asset(ju, graph.KindJob, ev.Job.Name)
		job.Attrs["openlineage_namespace"] = ev.Job.Namespace
		if ev.Producer != "" {
			job.Attrs["producer"] = ev.Producer
		}
		if f := ev.Job.Facets; f.SQL != nil && f.SQL.Query != "" {
			job.Attrs["sql"] = f.SQL.Query
		}
		if f := ev.Job.Facets; f.JobType != nil {
			job.Attrs["processing_type"] = f.JobType.ProcessingType
			job.Attrs["integration"] = f.JobType.Integration
		}
		if f := ev.Job.Facets; f.Ownership != nil {
			for _, o := range f.Ownership.Owners {
				job.Owners = appendUnique(job.Owners, o.Name)
			}
		}
		if f := ev.Job.Facets; f.Documentation != nil && f.Documentation.Description != "" {
			job.Description = f.Documentation.Description
		}
		if ev.EventType != "" {
			job.Attrs["last_event"] = ev.EventType
		}
		if ev.Run != nil && ev.Run.Facets.Parent != nil && ev.Run.Facets.Parent.Job.Name != "" {
			job.Attrs["parent_job"] = ev.Run.Facets.Parent.Job.Name
			job.Attrs["parent_namespace"] = ev.Run.Facets.Parent.Job.Namespace
		}
		for _, in := range ev.Inputs {
			u, err := dataset(in)
			if err != nil {
				return graph.Batch{}, fmt.Errorf("%s input: %w", where, err)
			}
			addEdge(graph.Edge{From: u.Field(""), To: ju.Field(""), Kind: graph.EdgeReads})
		}
		withLineage := 0
		for _, out := range ev.Outputs {
			if out.Facets.ColumnLineage != nil && len(out.Facets.ColumnLineage.Fields) > 0 {
				withLineage++
			}
		}
		for _, out := range ev.Outputs {
			u, err := dataset(out)
			if err != nil {
				return graph.Batch{}, fmt.Errorf("%s output: %w", where, err)
			}
			addEdge(graph.Edge{From: ju.Field(""), To: u.Field(""), Kind: graph.EdgeWrites})
			cl := out.Facets.ColumnLineage
			if cl == nil {
				continue
			}
			for _, col := range sortedKeys(cl.Fields) {
				// Route column lineage through the job so the job is on the field-level path;
				// a job writing several outputs keeps their columns apart.
				jobField := col
				if withLineage > 1 {
					jobField = out.Name + "." + col
				}
				for _, inf := range cl.Fields[col].InputFields {
					if inf.Namespace == "" || inf.Name == "" || inf.Field == "" {
						continue
					}
					from := DatasetURN(inf.Namespace, inf.Name)
					if _, err := graph.ParseURN(string(from)); err != nil {
						return graph.Batch{}, fmt.Errorf("%s columnLineage input: %w", where, err)
					}
					asset(from, kindOf(from), inf.Name).Attrs["openlineage_namespace"] = inf.Namespace
					kind, desc := transformation(inf, cl.Fields[col])
					addEdge(graph.Edge{From: from.Field(inf.Field), To: ju.Field(jobField), Kind: kind, Transformation: desc})
				}
				addEdge(graph.Edge{From: ju.Field(jobField), To: u.Field(col), Kind: graph.EdgeIdentity, Transformation: "written by " + ev.Job.Name})
			}
			for _, inf := range cl.Dataset {
				if inf.Namespace == "" || inf.Name == "" || inf.Field == "" {
					continue
				}
				from := DatasetURN(inf.Namespace, inf.Name)
				if _, err := graph.ParseURN(string(from)); err != nil {
					return graph.Batch{}, fmt.Errorf("%s columnLineage input: %w", where, err)
				}
				kind, desc := transformation(inf, ColumnLineage{})
				addEdge(graph.Edge{From: from.Field(inf.Field), To: ju.Field(""), Kind: kind, Transformation: desc})
			}
		}
	}
	for _, u := range order {
		b.Assets = append(b.Assets, *assets[u])
	}
	for _, r := range fieldOrder {
		b.Fields = append(b.Fields, fields[r])
	}
	return b, nil
}

// transformation maps OpenLineage's type/subtype to our edge kind and a description.
func transformation(in InputField, cl ColumnLineage) (graph.EdgeKind, string) {
	kind := graph.EdgeKind("")
	var desc []string
	for _, t := range in.Transformations {
		k := graph.EdgeKind(strings.ToLower(t.Subtype))
		switch k {
		case graph.EdgeIdentity, graph.EdgeTransformation, graph.EdgeAggregation, graph.EdgeJoin, graph.EdgeGroupBy,
			graph.EdgeFilter, graph.EdgeSort, graph.EdgeWindow, graph.EdgeConditional:
		default:
			if strings.EqualFold(t.Type, "INDIRECT") {
				k = "indirect"
			} else {
				k = graph.EdgeTransformation
			}
		}
		if kind == "" || kind == graph.EdgeIdentity {
			kind = k
		}
		d := strings.TrimSpace(t.Type + " " + t.Subtype)
		if t.Description != "" {
			d += ": " + t.Description
		}
		if t.Masking {
			d += " (masking)"
		}
		desc = append(desc, d)
	}
	if kind == "" {
		switch strings.ToUpper(cl.TransformationType) {
		case "IDENTITY":
			kind = graph.EdgeIdentity
		default:
			kind = graph.EdgeTransformation
		}
		if cl.TransformationDescription != "" {
			desc = append(desc, cl.TransformationDescription)
		}
	}
	return kind, strings.Join(desc, "; ")
}

func kindOf(u graph.URN) string {
	switch u.System() {
	case graph.SystemKafka:
		return graph.KindKafkaTopic
	case graph.SystemWarehouse:
		return graph.KindWarehouseTable
	}
	return graph.KindDataset
}

func appendUnique(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
