package kafka

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// PartitionOffset is a partition's offset.
type PartitionOffset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// OffsetsAt returns, per partition of topic (in partition order), the first offset whose record
// timestamp is at or after t (ListOffsets by timestamp). A partition with no such record answers
// its end offset, which is where reading from t starts.
func (c *Cluster) OffsetsAt(ctx context.Context, topic string, t time.Time) ([]PartitionOffset, error) {
	bctx, cancel := c.bound(ctx)
	defer cancel()
	op := fmt.Sprintf("offsets of %s at %s", topic, t.UTC().Format(time.RFC3339))
	listed, err := c.adm.ListOffsetsAfterMilli(bctx, t.UnixMilli(), topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, c.fail(bctx, op, err)
	}
	var out []PartitionOffset
	listed.Each(func(o kadm.ListedOffset) {
		if o.Topic == topic {
			out = append(out, PartitionOffset{Partition: o.Partition, Offset: o.Offset})
		}
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("kafka: %s: topic %s has no partitions (does it exist on this cluster?)", op, topic)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}
