package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dataworkers/dw/pkg/config"
)

// DefaultTimeout bounds a call when kafka.timeout is unset.
const DefaultTimeout = 10 * time.Second

// Cluster reads topic metadata, offsets, configs and group lag through kadm. Every call is bounded
// by the configured timeout, so a dead or refusing cluster is an error, never a hang.
type Cluster struct {
	cfg     *config.Kafka
	cl      *kgo.Client
	adm     *kadm.Client
	timeout time.Duration
}

// Open builds a Cluster; nothing is sent until the first call.
func Open(c *config.Kafka) (*Cluster, error) {
	cl, err := NewClient(c)
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Cluster{cfg: c, cl: cl, adm: kadm.NewClient(cl), timeout: timeout}, nil
}

// Close releases the connections.
func (c *Cluster) Close() { c.cl.Close() }

// Timeout is the per-call bound taken from kafka.timeout.
func (c *Cluster) Timeout() time.Duration { return c.timeout }

func (c *Cluster) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// fail turns a client error into one that says where it happened and what to check.
func (c *Cluster) fail(ctx context.Context, op string, err error) error {
	servers := strings.Join(c.cfg.BootstrapServers, ",")
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("kafka %s: %s: no answer within %s (is the cluster up? check kafka.bootstrap_servers, sasl and tls, or raise kafka.timeout)", servers, op, c.timeout)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.SaslAuthenticationFailed, kerr.IllegalSaslState, kerr.UnsupportedSaslMechanism:
			return fmt.Errorf("kafka %s: %s: authentication failed: %w (check kafka.sasl username, password and mechanism)", servers, op, err)
		case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed:
			return fmt.Errorf("kafka %s: %s: %w (the credentials in kafka.sasl lack the ACL for this)", servers, op, err)
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("kafka %s: %s: the broker closed the connection: %w (wrong kafka.sasl credentials or mechanism, or kafka.tls not matching the listener?)", servers, op, err)
	}
	return fmt.Errorf("kafka %s: %s: %w (check kafka.bootstrap_servers, sasl and tls)", servers, op, err)
}

// TopicSummary is one topic in a listing.
type TopicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id,omitempty"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal,omitempty"`
	Error             string `json:"error,omitempty"`
}

// ListTopics lists topics, optionally filtered by a glob pattern (path.Match syntax, e.g. "usage-*").
func (c *Cluster) ListTopics(ctx context.Context, pattern string, includeInternal bool) ([]TopicSummary, error) {
	if pattern != "" {
		if _, err := path.Match(pattern, ""); err != nil {
			return nil, fmt.Errorf("pattern %q: %w (use * and ? wildcards)", pattern, err)
		}
	}
	bctx, cancel := c.bound(ctx)
	defer cancel()
	var (
		details kadm.TopicDetails
		err     error
	)
	if includeInternal {
		details, err = c.adm.ListTopicsWithInternal(bctx)
	} else {
		details, err = c.adm.ListTopics(bctx)
	}
	if err != nil {
		return nil, c.fail(bctx, "list topics", err)
	}
	out := []TopicSummary{}
	for _, d := range details.Sorted() {
		if pattern != "" {
			if ok, _ := path.Match(pattern, d.Topic); !ok {
				continue
			}
		}
		s := TopicSummary{Name: d.Topic, Partitions: len(d.Partitions), ReplicationFactor: d.Partitions.NumReplicas(), Internal: d.IsInternal}
		if d.ID != (kadm.TopicID{}) {
			s.ID = d.ID.String()
		}
		if d.Err != nil {
			s.Error = d.Err.Error()
		}
		out = append(out, s)
	}
	return out, nil
}

// PartitionInfo is one partition of a described topic.
type PartitionInfo struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas,omitempty"`
	StartOffset     int64   `json:"start_offset"`
	EndOffset       int64   `json:"end_offset"`
	// Records is end minus start: the records retained now (control records included).
	Records int64 `json:"records"`
	// LatestTimestamp is the largest record timestamp in the partition, when the broker reports it.
	LatestTimestamp *time.Time `json:"latest_timestamp,omitempty"`
	Error           string     `json:"error,omitempty"`
}

// TopicConfig is one topic configuration entry.
type TopicConfig struct {
	Name      string `json:"name"`
	Value     string `json:"value,omitempty"`
	Source    string `json:"source" jsonschema:"Where the value comes from: DYNAMIC_TOPIC_CONFIG (set on the topic), DEFAULT_CONFIG, STATIC_BROKER_CONFIG…"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// TopicDescription is describe_topic's answer.
type TopicDescription struct {
	Name              string          `json:"name"`
	ID                string          `json:"id,omitempty"`
	Internal          bool            `json:"internal,omitempty"`
	ReplicationFactor int             `json:"replication_factor"`
	Partitions        []PartitionInfo `json:"partitions"`
	TotalRecords      int64           `json:"total_records"`
	// RetentionMS is retention.ms (-1 = forever); RetentionBytes is retention.bytes (-1 = unlimited).
	RetentionMS    *int64        `json:"retention_ms,omitempty"`
	RetentionBytes *int64        `json:"retention_bytes,omitempty"`
	CleanupPolicy  string        `json:"cleanup_policy,omitempty"`
	Configs        []TopicConfig `json:"configs"`
	Warnings       []string      `json:"warnings,omitempty"`
}

// ErrUnknownTopic marks a topic the cluster does not have.
var ErrUnknownTopic = errors.New("unknown topic")

// DescribeTopic returns partitions (leader, replicas, ISR), start and end offsets, configs and
// retention of one topic.
func (c *Cluster) DescribeTopic(ctx context.Context, topic string) (TopicDescription, error) {
	if err := ValidateTopicName(topic); err != nil {
		return TopicDescription{}, err
	}
	bctx, cancel := c.bound(ctx)
	defer cancel()
	d, err := c.topicDetail(bctx, topic)
	if err != nil {
		return TopicDescription{}, err
	}
	out := TopicDescription{Name: topic, Internal: d.IsInternal, ReplicationFactor: d.Partitions.NumReplicas(), Configs: []TopicConfig{}}
	if d.ID != (kadm.TopicID{}) {
		out.ID = d.ID.String()
	}
	starts, err := c.adm.ListStartOffsets(bctx, topic)
	if err != nil {
		return TopicDescription{}, c.fail(bctx, "list start offsets of "+topic, err)
	}
	ends, err := c.adm.ListEndOffsets(bctx, topic)
	if err != nil {
		return TopicDescription{}, c.fail(bctx, "list end offsets of "+topic, err)
	}
	// The max-timestamp listing needs Kafka 3.0+; an older broker just leaves the field empty.
	maxTS, tsErr := c.adm.ListMaxTimestampOffsets(bctx, topic)
	if tsErr != nil {
		out.Warnings = append(out.Warnings, "latest record timestamps unavailable: "+tsErr.Error())
	}
	for _, p := range d.Partitions.Sorted() {
		pi := PartitionInfo{Partition: p.Partition, Leader: p.Leader, Replicas: nonNil(p.Replicas), ISR: nonNil(p.ISR), OfflineReplicas: p.OfflineReplicas}
		if p.Err != nil {
			pi.Error = p.Err.Error()
		}
		if s, ok := starts.Lookup(topic, p.Partition); ok && s.Err == nil {
			pi.StartOffset = s.Offset
		} else if ok {
			pi.Error = joinErr(pi.Error, "start offset: "+s.Err.Error())
		}
		if e, ok := ends.Lookup(topic, p.Partition); ok && e.Err == nil {
			pi.EndOffset = e.Offset
		} else if ok {
			pi.Error = joinErr(pi.Error, "end offset: "+e.Err.Error())
		}
		pi.Records = max(pi.EndOffset-pi.StartOffset, 0)
		out.TotalRecords += pi.Records
		if m, ok := maxTS.Lookup(topic, p.Partition); ok && m.Err == nil && m.Offset >= 0 && m.Timestamp > 0 && pi.Records > 0 {
			t := time.UnixMilli(m.Timestamp).UTC()
			pi.LatestTimestamp = &t
		}
		if len(pi.ISR) < len(pi.Replicas) {
			out.Warnings = append(out.Warnings, fmt.Sprintf("partition %d is under-replicated: ISR %v of replicas %v", p.Partition, pi.ISR, pi.Replicas))
		}
		out.Partitions = append(out.Partitions, pi)
	}
	rcs, err := c.adm.DescribeTopicConfigs(bctx, topic)
	if err != nil {
		return TopicDescription{}, c.fail(bctx, "describe configs of "+topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		if err == nil {
			err = rc.Err
		}
		out.Warnings = append(out.Warnings, "configs unavailable: "+err.Error())
	}
	for _, cfg := range rc.Configs {
		tc := TopicConfig{Name: cfg.Key, Source: configSource(cfg.Source.String()), Sensitive: cfg.Sensitive}
		if !cfg.Sensitive {
			tc.Value = cfg.MaybeValue()
		}
		out.Configs = append(out.Configs, tc)
		switch cfg.Key {
		case "retention.ms":
			out.RetentionMS = parseInt(cfg.Value)
		case "retention.bytes":
			out.RetentionBytes = parseInt(cfg.Value)
		case "cleanup.policy":
			out.CleanupPolicy = cfg.MaybeValue()
		}
	}
	sort.Slice(out.Configs, func(i, j int) bool { return out.Configs[i].Name < out.Configs[j].Name })
	return out, nil
}

// topicDetail loads one topic's metadata, turning "unknown topic" into ErrUnknownTopic.
func (c *Cluster) topicDetail(ctx context.Context, topic string) (kadm.TopicDetail, error) {
	details, err := c.adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, c.fail(ctx, "describe topic "+topic, err)
	}
	d, ok := details[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return kadm.TopicDetail{}, fmt.Errorf("topic %q: %w on kafka %s (list_topics shows the names)", topic, ErrUnknownTopic, strings.Join(c.cfg.BootstrapServers, ","))
	}
	if d.Err != nil {
		return kadm.TopicDetail{}, c.fail(ctx, "describe topic "+topic, d.Err)
	}
	return d, nil
}

// ValidateTopicName applies Kafka's own rule: 1–249 characters of [a-zA-Z0-9._-], not "." or "..".
func ValidateTopicName(t string) error {
	if t == "" || len(t) > 249 || t == "." || t == ".." {
		return fmt.Errorf("topic name %q is not valid: 1–249 characters of letters, digits, '.', '_' and '-'", t)
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q is not valid: %q is not allowed (letters, digits, '.', '_' and '-' only)", t, r)
		}
	}
	return nil
}

func configSource(s string) string {
	if s == "" || strings.HasPrefix(s, "ConfigSource(") {
		return "UNKNOWN"
	}
	return s
}

func parseInt(v *string) *int64 {
	if v == nil {
		return nil
	}
	n, err := strconv.ParseInt(*v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
