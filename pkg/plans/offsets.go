package plans

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/kafka"
)

// PartitionOffset is where a partition's records at or after a time begin.
type PartitionOffset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// OffsetsFunc returns, per partition of topic, the first offset whose record timestamp is at or
// after at.
type OffsetsFunc func(ctx context.Context, topic string, at time.Time) ([]PartitionOffset, error)

// KafkaOffsets reads start offsets from the configured cluster (ListOffsets by timestamp). A
// partition with no record at or after the time starts at its end offset, which is where Kafka
// itself answers for a time in the future.
func KafkaOffsets(c *config.Kafka) OffsetsFunc {
	return func(ctx context.Context, topic string, at time.Time) ([]PartitionOffset, error) {
		cl, err := kafka.NewClient(c)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		timeout := c.Timeout
		if timeout <= 0 {
			timeout = kafka.DefaultTimeout
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		adm := kadm.NewClient(cl)
		listed, err := adm.ListOffsetsAfterMilli(ctx, at.UnixMilli(), topic)
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("kafka %s: offsets of %s at %s: %w (check kafka.bootstrap_servers, sasl and tls)",
				strings.Join(c.BootstrapServers, ","), topic, at.UTC().Format(time.RFC3339), err)
		}
		var out []PartitionOffset
		listed.Each(func(o kadm.ListedOffset) {
			if o.Topic == topic {
				out = append(out, PartitionOffset{Partition: o.Partition, Offset: o.Offset})
			}
		})
		if len(out) == 0 {
			return nil, fmt.Errorf("kafka: topic %s has no partitions (does it exist on this cluster?)", topic)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
		return out, nil
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
