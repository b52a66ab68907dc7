package kafka

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
)

type staticResolver map[int]SchemaInfo

func (s staticResolver) ResolveSchema(_ context.Context, id int, _ string) (SchemaInfo, error) {
	return s[id], nil
}

// BenchmarkSampleAggregate measures decoding and aggregating framed Avro records (version mix,
// timeline, null rates) without a broker. DW_BENCH_RECORDS sets the records per op (default 10000).
func BenchmarkSampleAggregate(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("DW_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	events := kafkatest.ScenarioDay(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), n)
	recs := make([]*kgo.Record, n)
	for i, e := range events {
		recs[i] = &kgo.Record{Value: kafkatest.Encode(b, e), Timestamp: e.Time, Partition: int32(i % 3), Offset: int64(i)}
	}
	res := staticResolver{
		11: {ID: 11, Subject: kafkatest.Subject, Version: 11, Type: "AVRO", Schema: kafkatest.SchemaV11},
		12: {ID: 12, Subject: kafkatest.Subject, Version: 12, Type: "AVRO", Schema: kafkatest.SchemaV12},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		agg := newAggregator()
		for _, r := range recs {
			agg.add(context.Background(), "api-usage", r, res, true)
		}
		var s Sample
		agg.finish(&s)
		if s.Decoded != n {
			b.Fatalf("decoded %d of %d", s.Decoded, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
