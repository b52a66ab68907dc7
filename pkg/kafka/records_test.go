package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
)

// ReadRecords decodes every record with its writer's schema: Avro (a nullable union, a logical
// timestamp), Protobuf (an absent proto3 scalar is 0, an unset optional is null, an enum its
// symbol) and JSON, and says whether the window was read whole.
func TestReadRecordsDecodesEachFormatWithItsWritersSchema(t *testing.T) {
	const mixed = "mixed"
	f := kafkatest.Start(t, mixed)
	f.Registry.SeedSchema("mixed-value", 11, 11, sr.Schema{Schema: kafkatest.SchemaV11, Type: sr.TypeAvro})
	f.Registry.SeedSchema("clicks-value", 5, 42, sr.Schema{Schema: clicksV5, Type: sr.TypeProtobuf})
	f.Registry.SeedSchema("orders-value", 1, 61, sr.Schema{Schema: `{"type":"object","properties":{"order_id":{"type":"string"},"qty":{"type":"integer"}}}`, Type: sr.TypeJSON})
	start := time.Date(2026, 10, 3, 9, 0, 0, 0, time.UTC)
	bytes := int64(4096)
	avroVal, err := kafkatest.EncodeWire(kafkatest.SchemaV11, 11, map[string]any{"usage_id": "u-1", "account_id": int64(7), "ts": start,
		"endpoint": map[string]any{"path": "/v1", "region": nil}, "response_bytes": bytes})
	if err != nil {
		t.Fatal(err)
	}
	md := clickMessage(t, clicksV5)
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("click_id"), protoreflect.ValueOfString("c-1"))
	m.Set(md.Fields().ByName("channel"), protoreflect.ValueOfEnum(3))
	jsonVal := append([]byte{0, 0, 0, 0, 61}, []byte(`{"order_id":"o-1","qty":3}`)...)
	recs := []*kgo.Record{
		{Topic: mixed, Value: avroVal, Timestamp: start},
		{Topic: mixed, Value: frameProto(t, 42, m), Timestamp: start.Add(time.Minute)},
		{Topic: mixed, Value: jsonVal, Timestamp: start.Add(2 * time.Minute)},
		{Topic: mixed, Value: []byte("plain text"), Timestamp: start.Add(3 * time.Minute)},
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.Kafka.BootstrapServers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := kafka.RecordsFromConfig(ctx, f.Kafka, f.SchemaRegistry, mixed, kafka.SampleOptions{Since: start, Until: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Complete || len(got.Records) != 3 || got.Skipped != 1 {
		t.Fatalf("read %+v", got)
	}
	by := map[int]map[string]any{}
	for _, r := range got.Records {
		by[r.SchemaID] = r.Fields
	}
	if a := by[11]; a["response_bytes"] != bytes || a["account_id"] != int64(7) || !start.Equal(a["ts"].(time.Time)) {
		t.Errorf("avro %#v", a)
	}
	if p := by[42]; p["cost_usd"] != 0.0 || p["coupon"] != nil || p["channel"] != "AFFILIATE" || p["click_id"] != "c-1" {
		t.Errorf("protobuf %#v", p)
	}
	if j := by[61]; j["order_id"] != "o-1" || fmt.Sprint(j["qty"]) != "3" {
		t.Errorf("json %#v", j)
	}
	if got.Records[0].Subject == "" || got.Records[0].Version == 0 {
		t.Errorf("versions not named: %+v", got.Records[0])
	}

	// A bound smaller than the window leaves it incomplete; no registry is refused.
	part, err := kafka.RecordsFromConfig(ctx, f.Kafka, f.SchemaRegistry, mixed, kafka.SampleOptions{Since: start, Until: start.Add(time.Hour), MaxRecords: 1})
	if err != nil {
		t.Fatal(err)
	}
	if part.Complete {
		t.Errorf("a truncated read says it is complete: %+v", part)
	}
	if _, err := kafka.RecordsFromConfig(ctx, f.Kafka, nil, mixed, kafka.SampleOptions{}); err == nil {
		t.Error("no registry: records read without decoding")
	}
}
