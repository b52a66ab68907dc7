package kafka_test

import (
	"context"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
)

const eventSchema = `{"type":"record","name":"Event","fields":[{"name":"code","type":"string"},{"name":"blob","type":"string"}]}`

// bigBroker is kfake on loopback accepting records up to 64 MiB, with the event schema as id 1.
func bigBroker(t *testing.T, topic string) (*config.Kafka, *config.SchemaRegistry) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "67108864"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	reg.SeedSchema("events-value", 1, 1, sr.Schema{Schema: eventSchema, Type: sr.TypeAvro})
	return &config.Kafka{BootstrapServers: c.ListenAddrs(), ClientID: "dw-test", Timeout: 5 * time.Second},
		&config.SchemaRegistry{URL: reg.URL(), Timeout: 5 * time.Second}
}

func produceEvents(t *testing.T, k *config.Kafka, topic string, events []map[string]any, opts ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.BootstrapServers...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(64 << 20), kgo.MaxBufferedBytes(256 << 20), kgo.ProducerLinger(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	at := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	for i, e := range events {
		v, err := kafkatest.EncodeWire(eventSchema, 1, e)
		if err != nil {
			t.Fatal(err)
		}
		// One at a time, so each record is its own batch, as a producer without linger sends them.
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: v, Timestamp: at.Add(time.Duration(i) * time.Second)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
}

// peakHeap samples the live heap while f runs and returns the highest figure above the baseline.
// A low GC target keeps garbage from counting as live on a noisy machine.
func peakHeap(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > peak {
				peak = m.HeapAlloc - base
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak
}

func TestSampleStopsFetchingAtTheSampleByteCap(t *testing.T) {
	k, reg := bigBroker(t, "events")
	// 40 records of 1 MiB each: 40 MiB in the window, a 4 MiB cap.
	var events []map[string]any
	for i := range 40 {
		events = append(events, map[string]any{"code": []string{"A", "B"}[i%2], "blob": strings.Repeat("x", 1<<20-64)})
	}
	produceEvents(t, k, "events", events)
	k.MaxSampleBytes, k.MaxRecordBytes = 4<<20, 2<<20
	s, err := kafka.SampleFromConfig(context.Background(), k, reg, "events", kafka.SampleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || len(s.TruncatedBy) == 0 || !strings.Contains(s.TruncatedBy[0], "kafka.max_sample_bytes") {
		t.Fatalf("the cut is not said: truncated=%v by=%q", s.Truncated, s.TruncatedBy)
	}
	if s.Records == 0 || s.Records >= 40 || s.BytesRead > 5<<20 {
		t.Fatalf("read %d records, %d bytes under a 4 MiB cap", s.Records, s.BytesRead)
	}
}

func TestSampleNeverDecodesOrEchoesAHugeRecord(t *testing.T) {
	k, reg := bigBroker(t, "events")
	long := strings.Repeat("é", 600) // a low-cardinality value longer than any echo may be
	events := []map[string]any{{"code": long, "blob": "a"}, {"code": "B", "blob": "b"}}
	// A 50 MB string field in one record.
	events = append(events, map[string]any{"code": "C", "blob": strings.Repeat("z", 50<<20)})
	events = append(events, map[string]any{"code": long, "blob": "c"})
	produceEvents(t, k, "events", events)
	var s kafka.Sample
	var err error
	peak := peakHeap(func() {
		s, err = kafka.SampleFromConfig(context.Background(), k, reg, "events", kafka.SampleOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Decompressing the 50 MB record alone would take 50 MB, decoding its string as much again.
	// The bound leaves room for the client's fetch buffers and a noisy collector.
	const limit = 32 << 20
	t.Logf("peak heap above baseline: %.1f MiB", float64(peak)/(1<<20))
	if peak > limit {
		t.Errorf("peak heap %.1f MiB above the %d MiB bound", float64(peak)/(1<<20), limit>>20)
	}
	if s.Records != 3 || s.Decoded != 3 {
		t.Errorf("read %d records, decoded %d: the three small ones should be read whole", s.Records, s.Decoded)
	}
	raw, _ := json.Marshal(s)
	if len(raw) > 64<<10 {
		t.Fatalf("a %d-byte answer", len(raw))
	}
	if !s.Truncated || len(s.TruncatedBy) == 0 || !strings.Contains(s.TruncatedBy[0], "kafka.max_sample_bytes") {
		t.Fatalf("the huge record's cut is not said: %+v", s)
	}
	t.Logf("records %d decoded %d oversized %d bytes %d by %q warnings %q", s.Records, s.Decoded, s.Oversized, s.BytesRead, s.TruncatedBy, s.Warnings)
	clipped := false
	for _, f := range s.Fields {
		for _, v := range f.Values {
			if len(v.Value) > kafka.MaxEchoBytes+40 {
				t.Errorf("%s echoes a %d-byte value", f.Field, len(v.Value))
			}
			clipped = clipped || strings.Contains(v.Value, "…[truncated: 1200 bytes]")
		}
	}
	if !clipped {
		t.Errorf("the 1200-byte value is not counted under a cut, marked value: %+v", s.Fields)
	}
	if nv := s.NewValues("code", func(kafka.VersionStat) bool { return true }); len(nv) == 0 || len(nv[0]) > kafka.MaxEchoBytes+40 {
		t.Errorf("new values: %q", nv)
	}
}

// A record above kafka.max_record_bytes but inside the sample's cap is read, counted and not decoded.
func TestSampleCountsARecordAboveTheRecordCapWithoutDecodingIt(t *testing.T) {
	k, reg := bigBroker(t, "events")
	produceEvents(t, k, "events", []map[string]any{{"code": "A", "blob": "a"}, {"code": "B", "blob": strings.Repeat("y", 3<<20)}})
	k.MaxRecordBytes = 1 << 20
	s, err := kafka.SampleFromConfig(context.Background(), k, reg, "events", kafka.SampleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Records != 2 || s.Decoded != 1 || s.Oversized != 1 || s.Framed != 2 {
		t.Fatalf("records %d decoded %d oversized %d framed %d", s.Records, s.Decoded, s.Oversized, s.Framed)
	}
	if !s.Truncated || len(s.TruncatedBy) != 1 || !strings.Contains(s.TruncatedBy[0], "kafka.max_record_bytes (1048576 bytes)") {
		t.Fatalf("truncated_by %q", s.TruncatedBy)
	}
}

// An uncompressed 50 MB record makes the broker's answer larger than the client will read: a short
// error names the cap.
func TestSampleOfAnUncompressedHugeRecordIsBounded(t *testing.T) {
	k, reg := bigBroker(t, "events")
	k.Timeout = 2 * time.Second
	produceEvents(t, k, "events", []map[string]any{{"code": "A", "blob": strings.Repeat("z", 50<<20)}}, kgo.ProducerBatchCompression(kgo.NoCompression()))
	var err error
	peak := peakHeap(func() {
		_, err = kafka.SampleFromConfig(context.Background(), k, reg, "events", kafka.SampleOptions{})
	})
	if err == nil || !strings.Contains(err.Error(), "kafka.max_sample_bytes") || len(err.Error()) > 400 {
		t.Fatalf("want a short error naming the cap, got %v", err)
	}
	// The in-process broker builds its 50 MB answer in this heap; the client must not add its own.
	t.Logf("peak heap above baseline: %.1f MiB", float64(peak)/(1<<20))
	if peak > 90<<20 {
		t.Errorf("peak heap %.1f MiB: the refused answer was read", float64(peak)/(1<<20))
	}
}
