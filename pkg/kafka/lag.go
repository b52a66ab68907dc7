package kafka

import (
	"context"
	"fmt"
	"sort"
)

// PartitionLag is one partition's position in a consumer group.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Committed is the group's committed offset, -1 when the group never committed on this partition
	// (its lag is then the whole retained partition, as Kafka tools report it).
	Committed int64  `json:"committed"`
	End       int64  `json:"end_offset"`
	Lag       int64  `json:"lag"`
	MemberID  string `json:"member_id,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Host      string `json:"host,omitempty"`
	Error     string `json:"error,omitempty"`
}

// GroupLag is one consumer group's lag.
type GroupLag struct {
	Group        string         `json:"group"`
	State        string         `json:"state" jsonschema:"Stable, Empty (no members), PreparingRebalance, CompletingRebalance or Dead"`
	ProtocolType string         `json:"protocol_type,omitempty" jsonschema:"consumer, or connect for Kafka Connect workers"`
	Members      int            `json:"members"`
	TotalLag     int64          `json:"total_lag"`
	Partitions   []PartitionLag `json:"partitions"`
	Error        string         `json:"error,omitempty"`
}

// MaxLagGroups bounds how many groups one lag call describes when no group is named.
const MaxLagGroups = 200

// Lag is a lag answer: the groups described, and whether the listing was cut at MaxLagGroups.
type Lag struct {
	Groups []GroupLag `json:"groups"`
	// TotalGroups is how many groups the cluster listed (1 when a group was named).
	TotalGroups int `json:"total_groups"`
	// Truncated is true when only the first MaxLagGroups groups (by name) were described.
	Truncated bool   `json:"truncated,omitempty"`
	Warning   string `json:"warning,omitempty"`
}

// ConsumerLag computes committed offset, end offset and lag per partition for one group, or for
// every group when group is empty; topic, when set, keeps only that topic's partitions (and the
// groups that consume it). A named group the cluster does not know is an error.
func (c *Cluster) ConsumerLag(ctx context.Context, group, topic string) (Lag, error) {
	if topic != "" {
		if err := ValidateTopicName(topic); err != nil {
			return Lag{}, err
		}
	}
	bctx, cancel := c.bound(ctx)
	defer cancel()
	groups := []string{group}
	res := Lag{Groups: []GroupLag{}, TotalGroups: 1}
	if group == "" {
		listed, err := c.adm.ListGroups(bctx)
		if err != nil {
			return Lag{}, c.fail(bctx, "list consumer groups", err)
		}
		groups = listed.Groups()
		sort.Strings(groups)
		res.TotalGroups = len(groups)
		if len(groups) > MaxLagGroups {
			groups = groups[:MaxLagGroups]
			res.Truncated = true
			res.Warning = fmt.Sprintf("the cluster has %d consumer groups: only the first %d by name were described; name a group to see another", res.TotalGroups, MaxLagGroups)
		}
		if len(groups) == 0 {
			return res, nil
		}
	}
	lags, err := c.adm.Lag(bctx, groups...)
	if err != nil {
		return Lag{}, c.fail(bctx, "consumer lag", err)
	}
	out := []GroupLag{}
	for _, name := range groups {
		l, ok := lags[name]
		if !ok {
			continue
		}
		g := GroupLag{Group: name, State: l.State, ProtocolType: l.ProtocolType, Members: len(l.Members), Partitions: []PartitionLag{}}
		if err := l.Error(); err != nil {
			g.Error = err.Error()
		}
		for _, m := range l.Lag.Sorted() {
			if topic != "" && m.Topic != topic {
				continue
			}
			p := PartitionLag{Topic: m.Topic, Partition: m.Partition, Committed: m.Commit.At, End: m.End.Offset, Lag: m.Lag}
			if m.Member != nil {
				p.MemberID, p.ClientID, p.Host = m.Member.MemberID, m.Member.ClientID, m.Member.ClientHost
			}
			if m.Err != nil {
				p.Error = m.Err.Error()
			}
			if p.Lag > 0 {
				g.TotalLag += p.Lag
			}
			g.Partitions = append(g.Partitions, p)
		}
		if topic != "" && len(g.Partitions) == 0 {
			continue
		}
		// Kafka answers "Dead" with no offsets for a group it has never seen.
		if group != "" && l.State == "Dead" && len(l.Lag) == 0 {
			return Lag{}, fmt.Errorf("consumer group %q not found on kafka (it has no members and no committed offsets); call get_consumer_lag without a group to list them", group)
		}
		out = append(out, g)
	}
	if group != "" && topic != "" && len(out) == 0 {
		return Lag{}, fmt.Errorf("consumer group %q has no committed offsets on topic %q", group, topic)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TotalLag > out[j].TotalLag })
	res.Groups = out
	return res, nil
}
