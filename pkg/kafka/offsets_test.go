package kafka_test

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
)

func TestOffsetsAtStartsWhereRecordsFromThatTimeBegin(t *testing.T) {
	f := kafkatest.Start(t, topic)
	f.Produce(t, topic, kafkatest.ScenarioDay(day.AddDate(0, 0, -1), 30))
	ends, err := kadm.NewClient(mustClient(t, f.Kafka)).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	f.Produce(t, topic, kafkatest.ScenarioDay(day, 30))
	cl := open(t, f.Kafka)

	got, err := cl.OffsetsAt(context.Background(), topic, day)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("offsets %+v, want 3 partitions", got)
	}
	for i, o := range got {
		e, _ := ends.Lookup(topic, int32(i))
		if o.Partition != int32(i) || o.Offset != e.Offset {
			t.Errorf("partition %d: %+v, want offset %d (where yesterday's records end)", i, o, e.Offset)
		}
	}
	// After the last record every partition answers its end offset.
	late, err := cl.OffsetsAt(context.Background(), topic, day.AddDate(0, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	nowEnds, _ := kadm.NewClient(mustClient(t, f.Kafka)).ListEndOffsets(context.Background(), topic)
	for _, o := range late {
		e, _ := nowEnds.Lookup(topic, o.Partition)
		if o.Offset != e.Offset {
			t.Errorf("future time, partition %d: %d, want end offset %d", o.Partition, o.Offset, e.Offset)
		}
	}
	if _, err := cl.OffsetsAt(context.Background(), "no-such-topic", day); err == nil || !strings.Contains(err.Error(), "no-such-topic") {
		t.Errorf("unknown topic: %v", err)
	}
}
