package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/registry"
)

// Reading is one api-usage record as a statement's reader sees it: the egress it sums (nil when
// the reader finds none) and the writer's schema version.
type Reading struct {
	AccountID string
	Time      time.Time
	Version   int
	Egress    *int64
	// Partition and Offset locate the record on the topic.
	Partition int32
	Offset    int64
}

// usageRecord is the part of an api-usage record the hourly statements read.
type usageRecord struct {
	AccountID     string    `avro:"account_id"`
	EventTime     time.Time `avro:"event_time"`
	ResponseBytes *int64    `avro:"response_bytes"`
	ResponseKiB   *int64    `avro:"response_kib"`
}

// readTopic consumes every record of topic from the start to the current end offsets.
func readTopic(ctx context.Context, kc *config.Kafka, topic string) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.BootstrapServers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("start offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok {
			want += o.Offset - s.Offset
		}
	})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %d of %d records: %w", topic, len(out), want, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("read %s: %w", topic, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out, nil
}

// wireDecoder decodes Confluent-framed Avro values (framing split by kafka.ParseWire), writer
// schemas fetched from the registry by id.
type wireDecoder struct {
	rc      *registry.Client
	writers map[int]avro.Schema
	version map[int]int
}

func newWireDecoder(rc *registry.Client) *wireDecoder {
	return &wireDecoder{rc: rc, writers: map[int]avro.Schema{}, version: map[int]int{}}
}

func (d *wireDecoder) writer(ctx context.Context, id int) (avro.Schema, int, error) {
	if s, ok := d.writers[id]; ok {
		return s, d.version[id], nil
	}
	sv, err := d.rc.SchemaByID(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	s, err := avro.ParseWithCache(sv.Schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, 0, fmt.Errorf("schema id %d: %w", id, err)
	}
	hist, err := d.rc.History(ctx, Subject)
	if err != nil {
		return nil, 0, err
	}
	for _, v := range hist {
		if v.ID == id {
			d.version[id] = v.Version
		}
	}
	d.writers[id] = s
	return s, d.version[id], nil
}

// decode reads one value with reader (nil: its own writer schema), resolving the writer's schema
// to the reader's as Avro schema resolution does (a field the writer lacks gets the reader's default).
func (d *wireDecoder) decode(ctx context.Context, value []byte, reader avro.Schema) (usageRecord, int, error) {
	id, payload, ok := kafka.ParseWire(value)
	if !ok {
		return usageRecord{}, 0, fmt.Errorf("value is not in the Confluent wire format")
	}
	w, version, err := d.writer(ctx, id)
	if err != nil {
		return usageRecord{}, 0, err
	}
	s := w
	if reader != nil {
		if s, err = avro.NewSchemaCompatibility().Resolve(reader, w); err != nil {
			return usageRecord{}, 0, fmt.Errorf("resolve writer id %d to the reader: %w", id, err)
		}
	}
	var u usageRecord
	if err := avro.Unmarshal(s, payload, &u); err != nil {
		return usageRecord{}, 0, fmt.Errorf("decode schema id %d: %w", id, err)
	}
	return u, version, nil
}

// Egress is what an hourly statement sums for one decoded record.
type egressOf func(usageRecord) *int64

// pinnedReader is the statement pinned to v11: SUM(response_bytes) as the v11 reader sees it.
func pinnedReader(u usageRecord) *int64 { return u.ResponseBytes }

// correctedReader is the corrected statement: COALESCE(response_kib * 1024, response_bytes),
// each record read with its writer's schema.
func correctedReader(u usageRecord) *int64 {
	if u.ResponseKiB != nil {
		b := *u.ResponseKiB * 1024
		return &b
	}
	return u.ResponseBytes
}

// readUsage reads topic back from the broker and decodes every record with reader (nil: each
// with its writer schema), giving the egress value computes.
func readUsage(ctx context.Context, p *Peers, topic string, reader avro.Schema, value egressOf) ([]Reading, error) {
	recs, err := readTopic(ctx, p.Kafka, topic)
	if err != nil {
		return nil, err
	}
	rc, err := registry.New(p.RegistryConfig())
	if err != nil {
		return nil, err
	}
	d := newWireDecoder(rc)
	out := make([]Reading, 0, len(recs))
	for _, r := range recs {
		u, v, err := d.decode(ctx, r.Value, reader)
		if err != nil {
			return nil, fmt.Errorf("%s partition %d offset %d: %w", topic, r.Partition, r.Offset, err)
		}
		out = append(out, Reading{AccountID: u.AccountID, Time: u.EventTime, Version: v, Egress: value(u), Partition: r.Partition, Offset: r.Offset})
	}
	return out, nil
}
