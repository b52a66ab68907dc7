package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/metrics"
)

func openKafka(env *mcpkit.Env) (*kafka.Cluster, error) {
	return kafka.Open(env.Config.Kafka)
}

type listTopicsParams struct {
	Pattern         string `json:"pattern,omitempty" jsonschema:"Glob over topic names, e.g. orders-* (default all)"`
	IncludeInternal bool   `json:"include_internal,omitempty" jsonschema:"Also list internal topics such as __consumer_offsets"`
}

type listTopicsResult struct {
	Topics []kafka.TopicSummary `json:"topics"`
	Count  int                  `json:"count"`
}

func listTopics(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("list_topics",
		"List Kafka topics with partition count and replication factor, optionally filtered by a glob. "+
			"Use describe_topic for offsets, configs and retention of one topic.",
		func(ctx context.Context, p listTopicsParams) (listTopicsResult, error) {
			cl, err := openKafka(env)
			if err != nil {
				return listTopicsResult{}, err
			}
			defer cl.Close()
			ts, err := cl.ListTopics(ctx, p.Pattern, p.IncludeInternal)
			if err != nil {
				return listTopicsResult{}, err
			}
			return listTopicsResult{Topics: ts, Count: len(ts)}, nil
		})
}

type describeTopicParams struct {
	Topic string `json:"topic" jsonschema:"Topic name, e.g. orders"`
}

func describeTopic(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("describe_topic",
		"Describe one Kafka topic: partitions (leader, replicas, ISR), start and end offsets, records retained, latest record "+
			"timestamp per partition, every config with its source, and retention. Use it to check a topic is live and how far back it reaches.",
		func(ctx context.Context, p describeTopicParams) (kafka.TopicDescription, error) {
			cl, err := openKafka(env)
			if err != nil {
				return kafka.TopicDescription{}, err
			}
			defer cl.Close()
			return cl.DescribeTopic(ctx, p.Topic)
		})
}

type consumerLagParams struct {
	Group  string `json:"group,omitempty" jsonschema:"Consumer group id (default: every group, largest lag first)"`
	Topic  string `json:"topic,omitempty" jsonschema:"Only this topic's partitions, and only groups that consume it"`
	Source string `json:"source,omitempty" jsonschema:"Where lag is read: brokers (committed offsets now, the default), prometheus, confluent_metrics or datadog (the monitoring already run, with history)"`
	Since  string `json:"since,omitempty" jsonschema:"Monitoring sources only: history from this time, RFC 3339 or a duration ago (6h); empty reads the current value"`
	Until  string `json:"until,omitempty" jsonschema:"Monitoring sources only: history until this time (default now)"`
	Step   string `json:"step,omitempty" jsonschema:"Monitoring sources only: resolution of the history, e.g. 1m (default), raised to keep 1000 points per series"`
	// Throughput adds the topics' traffic, which only the Confluent Metrics API reports per topic.
	Throughput bool `json:"throughput,omitempty" jsonschema:"With source confluent_metrics: also received and sent bytes and records per topic over the same window"`
}

type consumerLagResult struct {
	Groups   []kafka.GroupLag `json:"groups"`
	TotalLag int64            `json:"total_lag"`
	// TotalGroups and Truncated say when only the first kafka.MaxLagGroups groups were described.
	TotalGroups int    `json:"total_groups"`
	Truncated   bool   `json:"truncated,omitempty" jsonschema:"True when the cluster has more groups than were described"`
	Warning     string `json:"warning,omitempty"`
	// Source is where the lag came from; History is the monitoring answer (per group and topic,
	// summed over partitions) when it is not the brokers.
	Source     string          `json:"source"`
	History    *metrics.Result `json:"history,omitempty"`
	Throughput *metrics.Result `json:"throughput,omitempty"`
}

func getConsumerLag(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("get_consumer_lag",
		"Consumer lag per group and partition: committed offset, end offset, lag, and the member that owns the partition. "+
			"A partition the group never committed shows committed -1 and its whole end offset as lag. With source prometheus, "+
			"confluent_metrics or datadog, lag per group and topic comes from that monitoring instead, over a window (since/until/step) "+
			"to compare lag before and after an incident's onset.",
		func(ctx context.Context, p consumerLagParams) (consumerLagResult, error) {
			if p.Source != "" && p.Source != "brokers" {
				return monitoredLag(ctx, env, p)
			}
			if p.Since != "" || p.Until != "" || p.Step != "" || p.Throughput {
				return consumerLagResult{}, fmt.Errorf("since, until, step and throughput need a monitoring source (prometheus, confluent_metrics or datadog): the brokers only know the lag now")
			}
			cl, err := openKafka(env)
			if err != nil {
				return consumerLagResult{}, err
			}
			defer cl.Close()
			lag, err := cl.ConsumerLag(ctx, p.Group, p.Topic)
			if err != nil {
				return consumerLagResult{}, err
			}
			r := consumerLagResult{Groups: lag.Groups, TotalGroups: lag.TotalGroups, Truncated: lag.Truncated, Warning: lag.Warning, Source: "brokers"}
			for _, g := range lag.Groups {
				r.TotalLag += g.TotalLag
			}
			return r, nil
		})
}

// monitoredLag reads lag from a monitoring source; the totals are the newest point of each series.
func monitoredLag(ctx context.Context, env *mcpkit.Env, p consumerLagParams) (consumerLagResult, error) {
	src, err := metrics.Open(env.Config.Metrics, p.Source, env.Now)
	if err != nil {
		return consumerLagResult{}, err
	}
	now := env.Now()
	q := metrics.Query{Group: p.Group, Topic: p.Topic}
	if q.Start, err = parseWhen("since", p.Since, now); err != nil {
		return consumerLagResult{}, err
	}
	if q.End, err = parseWhen("until", p.Until, now); err != nil {
		return consumerLagResult{}, err
	}
	if q.Start.IsZero() && !q.End.IsZero() {
		return consumerLagResult{}, fmt.Errorf("until needs since: give the window's start too, or neither for the current value")
	}
	if p.Step != "" {
		if q.Step, err = time.ParseDuration(p.Step); err != nil || q.Step <= 0 {
			return consumerLagResult{}, fmt.Errorf("step %q: use a positive duration such as 30s, 1m or 5m", p.Step)
		}
	}
	res, err := src.Lag(ctx, q)
	if err != nil {
		return consumerLagResult{}, err
	}
	r := consumerLagResult{Source: src.Name(), History: &res, Groups: []kafka.GroupLag{}}
	if p.Throughput {
		c, ok := src.(*metrics.Confluent)
		if !ok {
			return consumerLagResult{}, fmt.Errorf("throughput per topic comes from source confluent_metrics only, not %s", src.Name())
		}
		tp, err := c.Throughput(ctx, p.Topic, q)
		if err != nil {
			return consumerLagResult{}, err
		}
		r.Throughput = &tp
	}
	groups := map[string]bool{}
	for _, s := range res.Series {
		r.TotalLag += int64(s.Last().Value)
		groups[s.Group] = true
	}
	r.TotalGroups = len(groups)
	return r, nil
}

type sampleTopicParams struct {
	Topic        string  `json:"topic" jsonschema:"Topic name, e.g. orders"`
	PerPartition int     `json:"per_partition,omitempty" jsonschema:"Records per partition: the latest N, or N spread over the range (default 100, max 5000)"`
	MaxRecords   int     `json:"max_records,omitempty" jsonschema:"Cap for the whole sample (default 1000, max 10000)"`
	Since        string  `json:"since,omitempty" jsonschema:"Range start by record timestamp: RFC 3339 (2026-11-29T14:00:00Z) or a duration ago (90m, 6h)"`
	Until        string  `json:"until,omitempty" jsonschema:"Range end (exclusive), same forms as since; default now"`
	Partitions   []int32 `json:"partitions,omitempty" jsonschema:"Only these partitions"`
}

func sampleTopic(env *mcpkit.Env) mcpkit.Tool {
	return mcpkit.Read("sample_topic",
		"Read a bounded sample of recent records (or a time range) and decode the Confluent wire format: which schema "+
			"versions producers write and since when (\"v12 appears at 14:10 and is 18% of records since\"), a timeline, and "+
			"per-field null and zero rates by version (Avro, JSON Schema and Protobuf with its message indexes; an absent proto3 scalar is zero, not null), "+
			"and value counts of enum and low-cardinality fields by version with the values only a new version carries. "+
			"Use it when a downstream null, zero, value or volume change may come from a new schema version.",
		func(ctx context.Context, p sampleTopicParams) (kafka.Sample, error) {
			now := env.Now()
			since, err := parseWhen("since", p.Since, now)
			if err != nil {
				return kafka.Sample{}, err
			}
			until, err := parseWhen("until", p.Until, now)
			if err != nil {
				return kafka.Sample{}, err
			}
			return kafka.SampleFromConfig(ctx, env.Config.Kafka, env.Config.SchemaRegistry, p.Topic, kafka.SampleOptions{Partitions: p.Partitions,
				PerPartition: p.PerPartition, MaxRecords: p.MaxRecords, Since: since, Until: until})
		})
}

// parseWhen reads an RFC 3339 time or a duration before now ("90m", "6h", "2d").
func parseWhen(name, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q: use an RFC 3339 time such as 2026-11-29T14:00:00Z, or a duration ago such as 90m or 6h", name, s)
}
