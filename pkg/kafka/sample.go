package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Sampling bounds: a sample reads at most this many records, whatever the caller asks.
const (
	DefaultPerPartition = 100
	MaxPerPartition     = 5000
	DefaultMaxRecords   = 1000
	MaxSampleRecords    = 10000
	// Byte bounds (kafka.max_record_bytes, kafka.max_sample_bytes): a record above the first is
	// counted but not decoded; fetching stops at the second.
	DefaultMaxRecordBytes = 1 << 20
	DefaultMaxSampleBytes = 16 << 20
	// MaxEchoBytes bounds any one value a sample echoes (value counts, new values, error text).
	MaxEchoBytes = 200
)

// clip cuts s to at most n bytes on a rune boundary, with a marker naming the original size.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…[truncated: %d bytes]", s[:cut], len(s))
}

// SampleOptions choose which records a sample reads.
type SampleOptions struct {
	// Partitions limits the sample to these partitions (default all).
	Partitions []int32
	// PerPartition is how many records to read per partition: the latest N (recent mode), or N
	// spread in evenly spaced runs over the range (range mode).
	PerPartition int
	// Since and Until select a time range by record timestamp (range mode when Since is set).
	Since, Until time.Time
	// MaxRecords caps the whole sample.
	MaxRecords int
	// MaxRecordBytes and MaxSampleBytes bound the bytes decoded per record and fetched per
	// sample (defaults DefaultMaxRecordBytes, DefaultMaxSampleBytes).
	MaxRecordBytes, MaxSampleBytes int
}

// PartitionSample says what was read from one partition.
type PartitionSample struct {
	Partition int32 `json:"partition"`
	From      int64 `json:"from_offset"`
	To        int64 `json:"to_offset" jsonschema:"Exclusive end of the offsets read"`
	Read      int   `json:"read"`
	// Available is how many offsets the requested window held; more than Read means truncated.
	Available int64  `json:"available"`
	Complete  bool   `json:"complete"`
	Error     string `json:"error,omitempty"`

	// segments are the [from, to) offset runs actually read: one run, or a truncated range spread
	// over evenly spaced runs so a sample still spans the whole range.
	segments [][2]int64
}

// spreadRuns is how many runs a truncated time range is sampled in.
const spreadRuns = 10

// spread splits [a, b) into up to spreadRuns evenly spaced runs holding quota offsets in all.
func spread(a, b, quota int64) [][2]int64 {
	n := min(int64(spreadRuns), quota)
	out := make([][2]int64, 0, n)
	for i := range n {
		size := quota / n
		if i < quota%n {
			size++
		}
		start := a + i*(b-a)/n
		out = append(out, [2]int64{start, min(start+size, b)})
	}
	return out
}

// VersionStat is one schema version's presence in the sample.
type VersionStat struct {
	Label     string    `json:"label" jsonschema:"subject vN, or schema id N when the registry could not name it"`
	Subject   string    `json:"subject,omitempty"`
	Version   int       `json:"version,omitempty"`
	SchemaID  int       `json:"schema_id"`
	Type      string    `json:"type,omitempty"`
	Records   int       `json:"records"`
	Share     float64   `json:"share" jsonschema:"Fraction of the sample's framed records"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// ShareSinceFirstSeen is this version's fraction of the framed records timestamped at or after
	// its first appearance: "v12 appears at 14:10 and is 18% of records since".
	ShareSinceFirstSeen float64 `json:"share_since_first_seen"`
}

// TimeBucket counts records per version in one slice of time.
type TimeBucket struct {
	Start    time.Time      `json:"start"`
	Records  int            `json:"records"`
	Versions map[string]int `json:"versions"`
}

// FieldStat is one field's null rate over the decoded records.
type FieldStat struct {
	Field string `json:"field" jsonschema:"Dotted path; nested record fields included"`
	Type  string `json:"type"`
	// Records is how many decoded records were checked; Null counts null values. NullRate counts
	// null and missing together, which is how a reader pinned to an older version sees the field.
	Records   int                `json:"records"`
	Null      int                `json:"null"`
	Missing   int                `json:"missing" jsonschema:"Records whose writer schema has no such field"`
	NullRate  float64            `json:"null_rate"`
	ByVersion map[string]float64 `json:"null_rate_by_version,omitempty"`
	// Zero counts values equal to their type's zero (0, "", false, empty); for Protobuf a scalar
	// without presence that is absent reads as zero, not null, so zeros are what a removal shows.
	Zero            int                `json:"zero"`
	ZeroRate        float64            `json:"zero_rate"`
	ZeroByVersion   map[string]float64 `json:"zero_rate_by_version,omitempty"`
	Values          []ValueCount       `json:"values,omitempty" jsonschema:"Counts per value for enum and low-cardinality fields, by schema version"`
	HighCardinality bool               `json:"high_cardinality,omitempty" jsonschema:"More distinct values than are counted: no value counts"`
}

// ValueCount is how often one value of a field occurs, per schema version.
type ValueCount struct {
	Value     string         `json:"value"`
	Count     int            `json:"count"`
	ByVersion map[string]int `json:"by_version"`
}

// Value-count bounds: a field with more distinct values than this is not low-cardinality (an enum
// gets a higher bound, since its symbols are few by declaration).
const (
	maxDistinctValues = 20
	maxEnumValues     = 256
)

// Sample is what sample_topic reports.
type Sample struct {
	Topic       string            `json:"topic"`
	Mode        string            `json:"mode" jsonschema:"recent (latest records per partition) or range (by record timestamp)"`
	Since       *time.Time        `json:"since,omitempty"`
	Until       *time.Time        `json:"until,omitempty"`
	Partitions  []PartitionSample `json:"partitions"`
	Records     int               `json:"records"`
	Tombstones  int               `json:"tombstones,omitempty"`
	Framed      int               `json:"framed" jsonschema:"Records in the Confluent wire format (magic byte 0 + schema id)"`
	Plain       int               `json:"plain,omitempty" jsonschema:"Records without the wire-format header"`
	Decoded     int               `json:"decoded"`
	Undecodable int               `json:"undecodable,omitempty"`
	Oldest      *time.Time        `json:"oldest,omitempty"`
	Newest      *time.Time        `json:"newest,omitempty"`
	Versions    []VersionStat     `json:"versions"`
	BucketWidth string            `json:"bucket_width,omitempty"`
	Timeline    []TimeBucket      `json:"timeline"`
	Fields      []FieldStat       `json:"fields"`
	Summary     []string          `json:"summary"`
	Truncated   bool              `json:"truncated,omitempty" jsonschema:"The window held more records than the bounds allowed, or a byte cap cut the sample"`
	TruncatedBy []string          `json:"truncated_by,omitempty" jsonschema:"The byte caps that cut the sample: kafka.max_sample_bytes (fetching stopped) or kafka.max_record_bytes (records counted, not decoded)"`
	Oversized   int               `json:"oversized,omitempty" jsonschema:"Records larger than kafka.max_record_bytes: counted, not decoded"`
	BytesRead   int64             `json:"bytes_read"`
	Warnings    []string          `json:"warnings,omitempty"`
}

type observation struct {
	ts      time.Time
	version int // index into versions, -1 for plain
}

// SampleTopic reads a bounded set of records and reports the schema-version mix over time and
// per-field null rates. res may be nil (no registry configured): versions are then shown by
// schema id and fields are not decoded.
func (c *Cluster) SampleTopic(ctx context.Context, topic string, opt SampleOptions, res SchemaResolver) (Sample, error) {
	if err := ValidateTopicName(topic); err != nil {
		return Sample{}, err
	}
	if err := normalize(&opt); err != nil {
		return Sample{}, err
	}
	s := Sample{Topic: topic, Mode: "recent", Partitions: []PartitionSample{}, Versions: []VersionStat{}, Timeline: []TimeBucket{}, Fields: []FieldStat{}, Summary: []string{}}
	if !opt.Since.IsZero() {
		s.Mode = "range"
		since := opt.Since.UTC()
		s.Since = &since
		if !opt.Until.IsZero() {
			until := opt.Until.UTC()
			s.Until = &until
		}
	}

	windows, err := c.windows(ctx, topic, opt)
	if err != nil {
		return Sample{}, err
	}
	s.Partitions = windows
	want := 0
	for _, w := range windows {
		planned := int64(0)
		for _, seg := range w.segments {
			planned += seg[1] - seg[0]
		}
		want += int(planned)
		if w.Available > planned {
			s.Truncated = true
		}
	}
	if want == 0 {
		s.Summary = append(s.Summary, fmt.Sprintf("no records in %s for the requested window (describe_topic shows its offsets and latest timestamps)", topic))
		return s, nil
	}

	agg := newAggregator()
	budgetHit := false
	var skippedBatches, skippedOffsets int64
	read, incomplete, err := c.consume(ctx, topic, windows, opt, func(r *kgo.Record) bool {
		size := int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			size += int64(len(h.Key) + len(h.Value))
		}
		s.BytesRead += size
		agg.add(ctx, topic, r, res, size <= int64(opt.MaxRecordBytes))
		r.Value, r.Key, r.Headers = nil, nil, nil // let the fetch's memory go
		if s.BytesRead >= int64(opt.MaxSampleBytes) {
			budgetHit = true
			return false
		}
		return true
	}, func(offsets int64) { skippedBatches++; skippedOffsets += offsets })
	if skippedBatches > 0 {
		s.Truncated = true
		s.TruncatedBy = append(s.TruncatedBy, fmt.Sprintf("kafka.max_sample_bytes (%d bytes): %d compressed batch(es) holding %d offsets decompress past it and were skipped unread", opt.MaxSampleBytes, skippedBatches, skippedOffsets))
	}
	if budgetHit {
		s.Truncated = true
		s.TruncatedBy = append(s.TruncatedBy, fmt.Sprintf("kafka.max_sample_bytes (%d bytes): fetching stopped after %d bytes", opt.MaxSampleBytes, s.BytesRead))
	}
	total := 0
	for _, n := range read {
		total += n
	}
	if err != nil && total == 0 {
		return Sample{}, err
	}
	if err != nil {
		s.Warnings = append(s.Warnings, "stopped early: "+clip(err.Error(), MaxEchoBytes))
	}
	for i := range s.Partitions {
		p := &s.Partitions[i]
		p.Read = read[p.Partition]
		p.Complete = !incomplete[p.Partition]
	}
	if total == 0 {
		return Sample{}, fmt.Errorf("kafka: topic %s has %d records in the window but none arrived within %s (check kafka ACLs for reading the topic, or raise kafka.timeout)", topic, want, c.timeout)
	}
	if len(incomplete) > 0 && err == nil && !budgetHit {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d partition(s) not read to the end of the window within %s (transaction markers and compacted-away records leave offsets without records; raise kafka.timeout if the broker is slow)", len(incomplete), c.timeout))
	}
	agg.finish(&s)
	if s.Oversized > 0 {
		s.Truncated = true
		s.TruncatedBy = append(s.TruncatedBy, fmt.Sprintf("kafka.max_record_bytes (%d bytes): %d record(s) above it were counted, not decoded", opt.MaxRecordBytes, s.Oversized))
	}
	if res == nil && s.Framed > 0 {
		s.Warnings = append(s.Warnings, "schema_registry is not configured: versions are shown by schema id and fields are not decoded (set schema_registry.url)")
	}
	return s, nil
}

func normalize(o *SampleOptions) error {
	if o.PerPartition <= 0 {
		o.PerPartition = DefaultPerPartition
	}
	if o.PerPartition > MaxPerPartition {
		return fmt.Errorf("per_partition %d is above the limit of %d", o.PerPartition, MaxPerPartition)
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.MaxRecords > MaxSampleRecords {
		return fmt.Errorf("max_records %d is above the limit of %d", o.MaxRecords, MaxSampleRecords)
	}
	if o.MaxRecordBytes <= 0 {
		o.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if o.MaxSampleBytes <= 0 {
		o.MaxSampleBytes = DefaultMaxSampleBytes
	}
	o.MaxRecordBytes = min(o.MaxRecordBytes, o.MaxSampleBytes)
	if o.Since.IsZero() && !o.Until.IsZero() {
		return errors.New("until needs since: give a time range start, or neither for the latest records")
	}
	if !o.Until.IsZero() && !o.Until.After(o.Since) {
		return fmt.Errorf("until %s is not after since %s", o.Until.Format(time.RFC3339), o.Since.Format(time.RFC3339))
	}
	return nil
}

// windows decides the offsets to read per partition.
func (c *Cluster) windows(ctx context.Context, topic string, opt SampleOptions) ([]PartitionSample, error) {
	bctx, cancel := c.bound(ctx)
	defer cancel()
	d, err := c.topicDetail(bctx, topic)
	if err != nil {
		return nil, err
	}
	parts := d.Partitions.Numbers()
	if len(opt.Partitions) > 0 {
		for _, p := range opt.Partitions {
			if _, ok := d.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %s has no partition %d (it has %d partitions: 0–%d)", topic, p, len(parts), len(parts)-1)
			}
		}
		parts = append([]int32(nil), opt.Partitions...)
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	}
	starts, err := c.adm.ListStartOffsets(bctx, topic)
	if err != nil {
		return nil, c.fail(bctx, "list start offsets of "+topic, err)
	}
	ends, err := c.adm.ListEndOffsets(bctx, topic)
	if err != nil {
		return nil, c.fail(bctx, "list end offsets of "+topic, err)
	}
	from, to := starts, ends
	if !opt.Since.IsZero() {
		if from, err = c.adm.ListOffsetsAfterMilli(bctx, opt.Since.UnixMilli(), topic); err != nil {
			return nil, c.fail(bctx, "find offsets at "+opt.Since.Format(time.RFC3339), err)
		}
		if !opt.Until.IsZero() {
			if to, err = c.adm.ListOffsetsAfterMilli(bctx, opt.Until.UnixMilli(), topic); err != nil {
				return nil, c.fail(bctx, "find offsets at "+opt.Until.Format(time.RFC3339), err)
			}
		}
	}
	quota := min(opt.PerPartition, max(1, opt.MaxRecords/len(parts)))
	out := make([]PartitionSample, 0, len(parts))
	for _, p := range parts {
		ps := PartitionSample{Partition: p}
		lo, ok1 := from.Lookup(topic, p)
		hi, ok2 := to.Lookup(topic, p)
		st, ok3 := starts.Lookup(topic, p)
		if !ok1 || !ok2 || !ok3 || lo.Err != nil || hi.Err != nil || st.Err != nil {
			ps.Error = "offsets unavailable"
			for _, e := range []error{lo.Err, hi.Err, st.Err} {
				if e != nil {
					ps.Error = e.Error()
				}
			}
			out = append(out, ps)
			continue
		}
		a, b := max(lo.Offset, st.Offset), hi.Offset
		if b < a {
			b = a
		}
		ps.Available = b - a
		ps.From, ps.To = a, b
		switch {
		case ps.Available <= int64(quota):
			ps.segments = [][2]int64{{a, b}}
		case opt.Since.IsZero():
			ps.From = b - int64(quota) // recent: the latest records
			ps.segments = [][2]int64{{ps.From, b}}
		default:
			ps.segments = spread(a, b, int64(quota)) // range: runs spread over the whole range
		}
		out = append(out, ps)
	}
	return out, nil
}

// consume reads each partition's window with a direct (group-less) consumer. It stops when every
// window is read or the timeout passes, returning what it read.
// each returns false to stop (the byte budget is spent); skip is told of a batch passed over because
// it decompresses past the sample's byte cap. The fetch sizes follow the byte caps, and a broker
// response larger than the sample cap plus one record is refused before it is read.
func (c *Cluster) consume(ctx context.Context, topic string, windows []PartitionSample, opt SampleOptions, each func(*kgo.Record) bool, skip func(offsets int64)) (read map[int32]int, incomplete map[int32]bool, err error) {
	read, incomplete = map[int32]int{}, map[int32]bool{}
	type cursor struct {
		segs [][2]int64
		idx  int
		next int64 // the next offset not yet counted: a re-fetched record is never counted twice
	}
	cur := map[int32]*cursor{}
	offsets := map[int32]kgo.Offset{}
	for _, w := range windows {
		if len(w.segments) > 0 && w.segments[0][1] > w.segments[0][0] {
			offsets[w.Partition] = kgo.NewOffset().At(w.segments[0][0])
			cur[w.Partition] = &cursor{segs: w.segments}
			incomplete[w.Partition] = true
		}
	}
	cl, err := NewClient(c.cfg,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxBytes(int32(opt.MaxSampleBytes)),
		kgo.FetchMaxPartitionBytes(int32(opt.MaxRecordBytes)),
		kgo.BrokerMaxReadBytes(int32(max(opt.MaxSampleBytes+opt.MaxRecordBytes+64<<10, 1<<20))),
		kgo.MaxConcurrentFetches(1),
		kgo.MaxDecompressBatchBytes(opt.MaxSampleBytes),
	)
	if err != nil {
		return read, incomplete, err
	}
	defer cl.Close()
	cctx, cancel := c.bound(ctx)
	defer cancel()
	for len(incomplete) > 0 {
		fetches := cl.PollRecords(cctx, 1000)
		if cctx.Err() != nil {
			if ctx.Err() != nil {
				return read, incomplete, ctx.Err()
			}
			// Records may have arrived: the caller reports a partial sample, or an error when none did.
			return read, incomplete, nil
		}
		var ferr error
		jump := map[int32]kgo.EpochOffset{}
		fetches.EachError(func(_ string, p int32, e error) {
			var big *kgo.ErrDecompressTooLarge
			switch {
			case errors.As(e, &big):
				// A batch that decompresses past the sample's byte cap is skipped, never held.
				skip(big.NextOffset - big.Offset)
				k := cur[p]
				if k == nil || !incomplete[p] {
					return
				}
				k.next = max(k.next, big.NextOffset)
				for k.idx < len(k.segs) && big.NextOffset >= k.segs[k.idx][1] {
					k.idx++
				}
				if k.idx == len(k.segs) {
					delete(incomplete, p)
					return
				}
				jump[p] = kgo.EpochOffset{Epoch: -1, Offset: max(big.NextOffset, k.segs[k.idx][0])}
			case !errors.Is(e, context.DeadlineExceeded) && !errors.Is(e, context.Canceled):
				ferr = e
			}
		})
		if ferr != nil && strings.Contains(ferr.Error(), "BrokerMaxReadBytes") {
			// franz-go refused the answer unread (its error has no type): an uncompressed batch over the caps.
			return read, incomplete, fmt.Errorf("kafka: a fetch from %s is larger than kafka.max_sample_bytes (%d) plus kafka.max_record_bytes (%d) allow, so it was not read: an uncompressed batch or record above the caps (raise kafka.max_sample_bytes, or sample other partitions or a time range)", topic, opt.MaxSampleBytes, opt.MaxRecordBytes)
		}
		if ferr != nil {
			return read, incomplete, c.fail(cctx, "read "+topic, ferr)
		}
		stop := false
		fetches.EachRecord(func(r *kgo.Record) {
			k, ok := cur[r.Partition]
			if stop || !ok || !incomplete[r.Partition] {
				return
			}
			// Past the current run (offsets without records): move on to the run holding r.
			for k.idx < len(k.segs) && r.Offset >= k.segs[k.idx][1] {
				k.idx++
			}
			if k.idx == len(k.segs) {
				delete(incomplete, r.Partition)
				return
			}
			seg := k.segs[k.idx]
			if r.Offset < seg[0] {
				jump[r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: seg[0]}
				return
			}
			if r.Offset < k.next {
				return
			}
			delete(jump, r.Partition)
			k.next = r.Offset + 1
			read[r.Partition]++
			if !each(r) {
				stop = true
				return
			}
			if r.Offset >= seg[1]-1 {
				k.idx++
				if k.idx == len(k.segs) {
					delete(incomplete, r.Partition)
				} else {
					jump[r.Partition] = kgo.EpochOffset{Epoch: -1, Offset: k.segs[k.idx][0]}
				}
			}
		})
		if stop {
			return read, incomplete, nil
		}
		if len(jump) > 0 {
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: jump})
		}
	}
	return read, incomplete, nil
}

// aggregator accumulates versions, observations and field nulls.
type aggregator struct {
	s          Sample
	versions   []VersionStat
	byID       map[int]int // schema id → index in versions
	decoders   map[int]*decoder
	resolveErr map[int]error
	obs        []observation
	fields     map[string]*fieldAcc
	order      []string
	errors     map[string]int
	decoded    map[int]int // version index → decoded records
}

type fieldAcc struct {
	typ                    string
	enum                   bool
	null, present, missing int
	zero                   int
	byVersion              map[int][2]int         // version index → {null or missing, decoded}
	zeroBy                 map[int]int            // version index → zeros
	values                 map[string]map[int]int // value → version index → count
	overflow               bool                   // too many distinct values to count
}

func newAggregator() *aggregator {
	return &aggregator{byID: map[int]int{}, decoders: map[int]*decoder{}, resolveErr: map[int]error{}, fields: map[string]*fieldAcc{}, errors: map[string]int{}, decoded: map[int]int{}}
}

// add counts r; a record above the byte cap (decode false) counts by time and schema id, its
// fields are not decoded.
func (a *aggregator) add(ctx context.Context, topic string, r *kgo.Record, res SchemaResolver, decode bool) {
	a.s.Records++
	ts := r.Timestamp.UTC()
	if a.s.Oldest == nil || ts.Before(*a.s.Oldest) {
		t := ts
		a.s.Oldest = &t
	}
	if a.s.Newest == nil || ts.After(*a.s.Newest) {
		t := ts
		a.s.Newest = &t
	}
	if r.Value == nil {
		a.s.Tombstones++
		return
	}
	id, payload, ok := ParseWire(r.Value)
	if !ok {
		a.s.Plain++
		if !decode {
			a.s.Oversized++
		}
		a.obs = append(a.obs, observation{ts: ts, version: -1})
		return
	}
	a.s.Framed++
	vi, known := a.byID[id]
	if !known {
		info := SchemaInfo{ID: id}
		if res != nil {
			ri, err := res.ResolveSchema(ctx, id, topic)
			if err != nil {
				a.resolveErr[id] = err
				a.errors[clip(err.Error(), MaxEchoBytes)]++
			} else {
				info = ri
				a.decoders[id] = newDecoder(ri)
			}
		}
		label := fmt.Sprintf("schema id %d", id)
		if info.Subject != "" {
			label = fmt.Sprintf("%s v%d", info.Subject, info.Version)
		}
		a.versions = append(a.versions, VersionStat{Label: label, Subject: info.Subject, Version: info.Version, SchemaID: id, Type: info.Type})
		vi = len(a.versions) - 1
		a.byID[id] = vi
	}
	v := &a.versions[vi]
	v.Records++
	if v.FirstSeen.IsZero() || ts.Before(v.FirstSeen) {
		v.FirstSeen = ts
	}
	if ts.After(v.LastSeen) {
		v.LastSeen = ts
	}
	a.obs = append(a.obs, observation{ts: ts, version: vi})
	if !decode {
		a.s.Oversized++
		return
	}
	d := a.decoders[id]
	if d == nil {
		if res != nil && a.resolveErr[id] != nil {
			a.s.Undecodable++
		}
		return
	}
	seenHere := map[string]bool{}
	err := d.observe(payload, func(path string, o observed) {
		seenHere[path] = true
		f := a.field(path, d)
		f.present++
		bv := f.byVersion[vi]
		bv[1]++
		if o.null {
			f.null++
			bv[0]++
		}
		f.byVersion[vi] = bv
		if o.zero {
			f.zero++
			f.zeroBy[vi]++
		}
		if o.countable && !f.overflow {
			o.value = clip(o.value, MaxEchoBytes)
			limit := maxDistinctValues
			if f.enum {
				limit = maxEnumValues
			}
			if _, ok := f.values[o.value]; !ok && len(f.values) >= limit {
				f.overflow, f.values = true, nil
				return
			}
			if f.values[o.value] == nil {
				f.values[o.value] = map[int]int{}
			}
			f.values[o.value][vi]++
		}
	})
	if err != nil {
		a.s.Undecodable++
		a.errors[clip(err.Error(), MaxEchoBytes)]++
		return
	}
	// A field the writer's schema lacks reads as null to every reader that expects it.
	for _, path := range a.order {
		if !seenHere[path] {
			f := a.fields[path]
			f.missing++
			bv := f.byVersion[vi]
			bv[0]++
			bv[1]++
			f.byVersion[vi] = bv
		}
	}
	a.s.Decoded++
	a.decoded[vi]++
}

// field returns a path's accumulator, creating it with every earlier decoded record counted as
// missing the field.
func (a *aggregator) field(path string, d *decoder) *fieldAcc {
	if f, ok := a.fields[path]; ok {
		return f
	}
	f := &fieldAcc{missing: a.s.Decoded, byVersion: map[int][2]int{}, zeroBy: map[int]int{}, values: map[string]map[int]int{}}
	for _, fd := range d.fields {
		if fd.path == path {
			f.typ, f.enum = fd.typ, fd.enum
		}
	}
	for vi, n := range a.decoded {
		f.byVersion[vi] = [2]int{n, n}
	}
	a.fields[path] = f
	a.order = append(a.order, path)
	return f
}

func (a *aggregator) finish(s *Sample) {
	s.Records, s.Tombstones, s.Framed, s.Plain, s.Decoded, s.Undecodable, s.Oversized = a.s.Records, a.s.Tombstones, a.s.Framed, a.s.Plain, a.s.Decoded, a.s.Undecodable, a.s.Oversized
	s.Oldest, s.Newest = a.s.Oldest, a.s.Newest
	sort.SliceStable(a.obs, func(i, j int) bool { return a.obs[i].ts.Before(a.obs[j].ts) })
	for vi := range a.versions {
		v := &a.versions[vi]
		if s.Framed > 0 {
			v.Share = ratio(v.Records, s.Framed)
		}
		since, mine := 0, 0
		for _, o := range a.obs {
			if o.version < 0 || o.ts.Before(v.FirstSeen) {
				continue
			}
			since++
			if o.version == vi {
				mine++
			}
		}
		v.ShareSinceFirstSeen = ratio(mine, since)
	}
	order := make([]int, len(a.versions))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return a.versions[order[i]].FirstSeen.Before(a.versions[order[j]].FirstSeen) })
	for _, vi := range order {
		s.Versions = append(s.Versions, a.versions[vi])
	}
	s.Timeline, s.BucketWidth = a.timeline()
	for _, path := range a.order {
		f := a.fields[path]
		fs := FieldStat{Field: path, Type: f.typ, Records: s.Decoded, Null: f.null, Missing: f.missing, NullRate: ratio(f.null+f.missing, s.Decoded), ByVersion: map[string]float64{},
			Zero: f.zero, ZeroRate: ratio(f.zero, s.Decoded), ZeroByVersion: map[string]float64{}, HighCardinality: f.overflow}
		for vi, bv := range f.byVersion {
			if bv[1] > 0 {
				fs.ByVersion[a.versions[vi].Label] = ratio(bv[0], bv[1])
				fs.ZeroByVersion[a.versions[vi].Label] = ratio(f.zeroBy[vi], bv[1])
			}
		}
		fs.Values = a.valueCounts(f)
		s.Fields = append(s.Fields, fs)
	}
	s.Summary = a.summary(s)
	msgs := make([]string, 0, len(a.errors))
	for m, n := range a.errors {
		msgs = append(msgs, fmt.Sprintf("%s (%d records)", m, n))
	}
	sort.Strings(msgs)
	if len(msgs) > 5 {
		msgs = append(msgs[:5], fmt.Sprintf("… and %d more kinds of error", len(msgs)-5))
	}
	s.Warnings = append(s.Warnings, msgs...)
}

// valueCounts lists a field's values, most frequent first, with counts per version label.
func (a *aggregator) valueCounts(f *fieldAcc) []ValueCount {
	if f.overflow || len(f.values) == 0 {
		return nil
	}
	out := make([]ValueCount, 0, len(f.values))
	for v, by := range f.values {
		vc := ValueCount{Value: v, ByVersion: map[string]int{}}
		for vi, n := range by {
			vc.Count += n
			vc.ByVersion[a.versions[vi].Label] += n
		}
		out = append(out, vc)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out
}

// NewValues are the values of field that only records of the versions isNew accepts carry (none
// of the other versions in the sample): a new code meeting readers that compare values.
func (s Sample) NewValues(field string, isNew func(VersionStat) bool) []string {
	label := map[string]bool{}
	for _, v := range s.Versions {
		label[v.Label] = isNew(v)
	}
	var out []string
	for _, f := range s.Fields {
		if f.Field != field {
			continue
		}
		for _, v := range f.Values {
			only := len(v.ByVersion) > 0
			for l, n := range v.ByVersion {
				only = only && (n == 0 || label[l])
			}
			if only {
				out = append(out, v.Value)
			}
		}
	}
	return out
}

// bucketWidths are the timeline granularities; the first giving at most 24 buckets wins.
var bucketWidths = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

func (a *aggregator) timeline() ([]TimeBucket, string) {
	if len(a.obs) == 0 {
		return []TimeBucket{}, ""
	}
	first, last := a.obs[0].ts, a.obs[len(a.obs)-1].ts
	width := bucketWidths[len(bucketWidths)-1]
	for _, w := range bucketWidths {
		if last.Truncate(w).Sub(first.Truncate(w))/w < 24 {
			width = w
			break
		}
	}
	var out []TimeBucket
	for _, o := range a.obs {
		start := o.ts.Truncate(width)
		if len(out) == 0 || !out[len(out)-1].Start.Equal(start) {
			out = append(out, TimeBucket{Start: start, Versions: map[string]int{}})
		}
		b := &out[len(out)-1]
		b.Records++
		label := "plain"
		if o.version >= 0 {
			label = a.versions[o.version].Label
		}
		b.Versions[label]++
	}
	return out, width.String()
}

func (a *aggregator) summary(s *Sample) []string {
	var out []string
	if s.Oldest != nil {
		out = append(out, fmt.Sprintf("read %d records of %s from %d partition(s), timestamped %s to %s", s.Records, s.Topic, len(s.Partitions), s.Oldest.Format(time.RFC3339), s.Newest.Format(time.RFC3339)))
	}
	if s.Plain > 0 {
		out = append(out, fmt.Sprintf("%d records (%.1f%%) are not in the Confluent wire format", s.Plain, 100*ratio(s.Plain, s.Records)))
	}
	switch len(s.Versions) {
	case 0:
	case 1:
		out = append(out, fmt.Sprintf("every framed record uses %s (schema id %d)", s.Versions[0].Label, s.Versions[0].SchemaID))
	default:
		for i, v := range s.Versions {
			// A version already there at the sample's first record may be older than the sample.
			if i == 0 || s.Oldest != nil && v.FirstSeen.Equal(*s.Oldest) {
				out = append(out, fmt.Sprintf("%s (schema id %d) is present from the sample's first record and is %.1f%% of framed records", v.Label, v.SchemaID, 100*v.Share))
				continue
			}
			out = append(out, fmt.Sprintf("%s (schema id %d) appears at %s and is %.1f%% of records since (%.1f%% of the sample)",
				v.Label, v.SchemaID, v.FirstSeen.Format("2006-01-02 15:04:05Z07:00"), 100*v.ShareSinceFirstSeen, 100*v.Share))
		}
	}
	for _, f := range s.Fields {
		if f.Null+f.Missing == 0 || len(f.ByVersion) < 2 {
			continue
		}
		var parts []string
		for _, v := range s.Versions {
			if r, ok := f.ByVersion[v.Label]; ok {
				parts = append(parts, fmt.Sprintf("%.0f%% of %s", 100*r, v.Label))
			}
		}
		uneven := false
		for _, r := range f.ByVersion {
			if r != f.NullRate {
				uneven = true
			}
		}
		if uneven {
			out = append(out, fmt.Sprintf("%s is null or missing in %.1f%% of decoded records: %s", f.Field, 100*f.NullRate, strings.Join(parts, ", ")))
		}
	}
	for _, f := range s.Fields {
		if len(f.ZeroByVersion) < 2 || f.Zero == 0 {
			continue
		}
		var parts []string
		uneven := false
		for _, v := range s.Versions {
			if r, ok := f.ZeroByVersion[v.Label]; ok {
				parts = append(parts, fmt.Sprintf("%.0f%% of %s", 100*r, v.Label))
				uneven = uneven || r != f.ZeroRate
			}
		}
		if uneven {
			out = append(out, fmt.Sprintf("%s is zero (0, \"\", false or empty) in %.1f%% of decoded records: %s", f.Field, 100*f.ZeroRate, strings.Join(parts, ", ")))
		}
	}
	if len(s.Versions) > 1 {
		for _, f := range s.Fields {
			for _, v := range s.Versions[1:] {
				if nv := s.NewValues(f.Field, func(x VersionStat) bool { return x.Label == v.Label }); len(nv) > 0 {
					out = append(out, fmt.Sprintf("%s takes values only %s records carry: %s", f.Field, v.Label, strings.Join(nv, ", ")))
				}
			}
		}
	}
	if s.Truncated {
		out = append(out, "the window held more records than the bounds allow: this is a sample (raise per_partition or max_records, or narrow the range)")
	}
	return out
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
