package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Record is one record of a bounded read, decoded with its writer's schema.
type Record struct {
	Partition int32
	Offset    int64
	Timestamp time.Time
	SchemaID  int
	Subject   string
	Version   int
	// Fields are the record's top-level scalar fields as its writer's schema decodes them:
	// integers as int64, floating point as float64, strings, booleans, enum symbols as strings,
	// timestamps with a logical type as time.Time, null (or unset with presence) as nil. A field
	// the writer's schema lacks is not in the map. A Protobuf scalar without presence that is not
	// on the wire is its zero value, as every reader sees it.
	Fields map[string]any
}

// Records is what a bounded read returned.
type Records struct {
	Topic      string
	Records    []Record
	Partitions []PartitionSample
	// Complete is true when every partition's window was read to its end and no bound cut it:
	// then Records holds every record of the window, which sums over it need.
	Complete bool
	// Skipped counts records read but not decoded (plain, tombstones, undecodable, oversized);
	// Why says why, one line per reason.
	Skipped int
	Why     []string
}

// ReadRecords reads a bounded window of topic like SampleTopic (the same options and bounds) and
// returns each framed record decoded with its writer's schema, for callers that recompute values
// from the source. res resolves schema ids; without it nothing can be decoded, so it is required.
func (c *Cluster) ReadRecords(ctx context.Context, topic string, opt SampleOptions, res SchemaResolver) (Records, error) {
	if res == nil {
		return Records{}, fmt.Errorf("schema_registry is not configured: records of %s cannot be decoded (set schema_registry.url)", topic)
	}
	if err := ValidateTopicName(topic); err != nil {
		return Records{}, err
	}
	if err := normalize(&opt); err != nil {
		return Records{}, err
	}
	windows, err := c.windows(ctx, topic, opt)
	if err != nil {
		return Records{}, err
	}
	out := Records{Topic: topic, Partitions: windows, Complete: true}
	for _, w := range windows {
		planned := int64(0)
		for _, seg := range w.segments {
			planned += seg[1] - seg[0]
		}
		if w.Available > planned {
			out.Complete = false
		}
	}
	decoders := map[int]*decoder{}
	infos := map[int]SchemaInfo{}
	why := map[string]int{}
	var bytes int64
	skip := func(reason string) {
		out.Skipped++
		why[clip(reason, MaxEchoBytes)]++
	}
	read, incomplete, err := c.consume(ctx, topic, windows, opt, func(r *kgo.Record) bool {
		size := int64(len(r.Key) + len(r.Value))
		bytes += size
		if bytes >= int64(opt.MaxSampleBytes) {
			out.Complete = false
			return false
		}
		if size > int64(opt.MaxRecordBytes) {
			skip("larger than kafka.max_record_bytes")
			return true
		}
		if r.Value == nil {
			skip("tombstone")
			return true
		}
		id, payload, ok := ParseWire(r.Value)
		if !ok {
			skip("not in the Confluent wire format")
			return true
		}
		d, known := decoders[id]
		if !known {
			info, err := res.ResolveSchema(ctx, id, topic)
			if err != nil {
				d = &decoder{err: fmt.Errorf("schema id %d: %w", id, err)}
			} else {
				d, infos[id] = newDecoder(info), info
			}
			decoders[id] = d
		}
		fields, err := d.record(payload)
		if err != nil {
			skip(err.Error())
			return true
		}
		info := infos[id]
		out.Records = append(out.Records, Record{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UTC(),
			SchemaID: id, Subject: info.Subject, Version: info.Version, Fields: fields})
		return true
	}, func(int64) { out.Complete = false })
	for i := range out.Partitions {
		p := &out.Partitions[i]
		p.Read = read[p.Partition]
		p.Complete = !incomplete[p.Partition]
	}
	if err != nil {
		return Records{}, err
	}
	if len(incomplete) > 0 {
		out.Complete = false
	}
	for reason, n := range why {
		out.Why = append(out.Why, fmt.Sprintf("%d record(s): %s", n, reason))
	}
	return out, nil
}

// record decodes one payload into its top-level scalar fields (see Record.Fields).
func (d *decoder) record(payload []byte) (map[string]any, error) {
	if d.err != nil {
		return nil, d.err
	}
	out := map[string]any{}
	switch {
	case d.avro != nil:
		var v any
		if err := avro.Unmarshal(d.avro, payload, &v); err != nil {
			return nil, fmt.Errorf("%w: %v", errUndecodable, err)
		}
		m, _ := v.(map[string]any)
		for _, f := range d.fields {
			if val, ok := m[f.path]; ok {
				out[f.path] = scalar(d.unwrap(f.path, val))
			}
		}
	case d.proto != nil:
		idx, rest, err := MessageIndexes(payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUndecodable, err)
		}
		md, err := messageAt(d.proto, idx)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUndecodable, err)
		}
		m := dynamicpb.NewMessage(md)
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rest, m); err != nil {
			return nil, fmt.Errorf("%w: %v", errUndecodable, err)
		}
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			fd := fs.Get(i)
			if fd.IsList() || fd.IsMap() || fd.Message() != nil || fd.Kind() == protoreflect.BytesKind {
				continue
			}
			name := string(fd.Name())
			if fd.HasPresence() && !m.Has(fd) {
				out[name] = nil
				continue
			}
			v := m.Get(fd)
			if fd.Kind() == protoreflect.EnumKind {
				out[name] = protoValue(fd, v)
				continue
			}
			out[name] = scalar(v.Interface())
		}
	default: // JSON Schema
		var m map[string]any
		if err := json.Unmarshal(payload, &m); err != nil {
			return nil, fmt.Errorf("%w: %v", errUndecodable, err)
		}
		for k, v := range m {
			out[k] = scalar(v)
		}
	}
	return out, nil
}

// scalar normalises a decoded value: integers to int64, floats to float64; records, arrays and
// maps to nil-free values kept as they are.
func scalar(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	case time.Time:
		return x.UTC()
	}
	return v
}
