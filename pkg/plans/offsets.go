package plans

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/kafka"
)

// PartitionOffset is where a partition's records at or after a time begin.
type PartitionOffset = kafka.PartitionOffset

// OffsetsFunc returns, per partition of topic, the first offset whose record timestamp is at or
// after at.
type OffsetsFunc func(ctx context.Context, topic string, at time.Time) ([]PartitionOffset, error)

// KafkaOffsets reads start offsets from the configured cluster (kafka.Cluster.OffsetsAt).
func KafkaOffsets(c *config.Kafka) OffsetsFunc {
	return func(ctx context.Context, topic string, at time.Time) ([]PartitionOffset, error) {
		cl, err := kafka.Open(c)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		return cl.OffsetsAt(ctx, topic, at)
	}
}

// specificOffsets is the value of Flink's scan.startup.specific-offsets option.
func specificOffsets(offs []PartitionOffset) string {
	parts := make([]string, len(offs))
	for i, o := range offs {
		parts[i] = fmt.Sprintf("partition:%d,offset:%d", o.Partition, o.Offset)
	}
	return strings.Join(parts, ";")
}
