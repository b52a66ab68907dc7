package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/registry"
)

const topic = "api-usage"

var day = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

func open(t *testing.T, c *config.Kafka) *kafka.Cluster {
	t.Helper()
	cl, err := kafka.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestListTopicsShowsPartitionsAndFiltersByPattern(t *testing.T) {
	f := kafkatest.Start(t, topic, "usage-hourly", "orders")
	cl := open(t, f.Kafka)
	all, err := cl.ListTopics(context.Background(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Name != topic || all[0].Partitions != 3 || all[0].ReplicationFactor != 1 {
		t.Fatalf("topics = %+v", all)
	}
	some, err := cl.ListTopics(context.Background(), "*usage*", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(some) != 2 || some[1].Name != "usage-hourly" {
		t.Fatalf("filtered = %+v", some)
	}
	if _, err := cl.ListTopics(context.Background(), "[", false); err == nil {
		t.Fatal("bad pattern accepted")
	}
}

func TestDescribeTopicReportsOffsetsConfigsAndRetention(t *testing.T) {
	f := kafkatest.Start(t)
	adm := kadm.NewClient(mustClient(t, f.Kafka))
	retention := "86400000"
	if _, err := adm.CreateTopic(context.Background(), 2, 1, map[string]*string{"retention.ms": &retention}, topic); err != nil {
		t.Fatal(err)
	}
	events := kafkatest.ScenarioDay(day, 40)
	f.SeedUsageSchemas()
	f.Produce(t, topic, events)

	cl := open(t, f.Kafka)
	d, err := cl.DescribeTopic(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Partitions) != 2 || d.TotalRecords != int64(len(events)) {
		t.Fatalf("partitions %d total %d, want 2 and %d", len(d.Partitions), d.TotalRecords, len(events))
	}
	var sum int64
	for _, p := range d.Partitions {
		if p.Leader < 0 || len(p.Replicas) != 1 || p.EndOffset != p.StartOffset+p.Records {
			t.Errorf("partition %+v", p)
		}
		sum += p.EndOffset
		if p.Records > 0 && (p.LatestTimestamp == nil || p.LatestTimestamp.Before(events[0].Time)) {
			t.Errorf("partition %d latest timestamp %v", p.Partition, p.LatestTimestamp)
		}
	}
	if sum != int64(len(events)) {
		t.Errorf("end offsets sum to %d", sum)
	}
	if d.RetentionMS == nil || *d.RetentionMS != 86400000 {
		t.Errorf("retention_ms = %v", d.RetentionMS)
	}
	found := false
	for _, c := range d.Configs {
		if c.Name == "retention.ms" {
			found = c.Source == "DYNAMIC_TOPIC_CONFIG" && c.Value == retention
		}
	}
	if !found {
		t.Errorf("retention.ms not reported as a topic config: %+v", d.Configs)
	}
}

func TestDescribeUnknownTopicSaysSo(t *testing.T) {
	f := kafkatest.Start(t, topic)
	cl := open(t, f.Kafka)
	_, err := cl.DescribeTopic(context.Background(), "no-such-topic")
	if !errors.Is(err, kafka.ErrUnknownTopic) || !strings.Contains(err.Error(), "list_topics") {
		t.Fatalf("err = %v", err)
	}
	if _, err := cl.DescribeTopic(context.Background(), "bad topic/name"); err == nil || !strings.Contains(err.Error(), "not valid") {
		t.Fatalf("bad name err = %v", err)
	}
}

func TestConsumerLagFromARealGroup(t *testing.T) {
	f := kafkatest.Start(t, topic)
	f.SeedUsageSchemas()
	events := kafkatest.ScenarioDay(day, 90)
	f.Produce(t, topic, events)

	// A real group consumer reads 30 records and commits them.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(f.Kafka.BootstrapServers...), kgo.ConsumerGroup("billing-consumer"),
		kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < 30 {
		fs := consumer.PollRecords(ctx, 30-len(got))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fs.Records()...)
	}
	if err := consumer.CommitRecords(ctx, got...); err != nil {
		t.Fatal(err)
	}
	consumer.Close() // leave the group: state Empty, commits kept

	cl := open(t, f.Kafka)
	res, err := cl.ConsumerLag(context.Background(), "billing-consumer", "")
	if err != nil {
		t.Fatal(err)
	}
	lags := res.Groups
	if len(lags) != 1 || res.Truncated || res.TotalGroups != 1 {
		t.Fatalf("lags = %+v", lags)
	}
	g := lags[0]
	if g.TotalLag != int64(len(events)-len(got)) || len(g.Partitions) != 3 {
		t.Fatalf("group lag %d over %d partitions, want %d over 3: %+v", g.TotalLag, len(g.Partitions), len(events)-len(got), g)
	}
	for _, p := range g.Partitions {
		want := p.End - p.Committed
		if p.Committed < 0 {
			want = p.End
		}
		if p.Lag != want {
			t.Errorf("partition %d: lag %d, want %d", p.Partition, p.Lag, want)
		}
	}

	all, err := cl.ConsumerLag(context.Background(), "", topic)
	if err != nil || len(all.Groups) != 1 || all.Groups[0].Group != "billing-consumer" || all.Truncated {
		t.Fatalf("all groups = %+v, %v", all, err)
	}
	if _, err := cl.ConsumerLag(context.Background(), "nobody", ""); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown group err = %v", err)
	}
}

func TestConsumerLagSaysWhenGroupsAreCut(t *testing.T) {
	f := kafkatest.Start(t, topic)
	adm := kadm.NewClient(mustClient(t, f.Kafka))
	ctx := context.Background()
	n := kafka.MaxLagGroups + 3
	for i := 0; i < n; i++ {
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1})
		if err := adm.CommitAllOffsets(ctx, fmt.Sprintf("g-%03d", i), offs); err != nil {
			t.Fatal(err)
		}
	}
	res, err := open(t, f.Kafka).ConsumerLag(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.TotalGroups != n || len(res.Groups) != kafka.MaxLagGroups || !strings.Contains(res.Warning, strconv.Itoa(n)) {
		t.Fatalf("truncated=%v total=%d groups=%d warning=%q", res.Truncated, res.TotalGroups, len(res.Groups), res.Warning)
	}
	for _, g := range res.Groups {
		if g.Group > fmt.Sprintf("g-%03d", kafka.MaxLagGroups-1) {
			t.Fatalf("group %s described beyond the first %d by name", g.Group, kafka.MaxLagGroups)
		}
	}
}

func TestSampleReportsVersionMixAndNullRates(t *testing.T) {
	f := kafkatest.Start(t, topic)
	f.SeedUsageSchemas()
	events := kafkatest.ScenarioDay(day, 200)
	f.Produce(t, topic, events)
	rc, err := registry.New(f.SchemaRegistry)
	if err != nil {
		t.Fatal(err)
	}
	cl := open(t, f.Kafka)
	s, err := cl.SampleTopic(context.Background(), topic, kafka.SampleOptions{PerPartition: 1000, MaxRecords: 5000}, kafka.NewRegistryResolver(rc))
	if err != nil {
		t.Fatal(err)
	}
	if s.Records != len(events) || s.Framed != len(events) || s.Decoded != len(events) || s.Truncated {
		t.Fatalf("records %d framed %d decoded %d truncated %v, want all %d", s.Records, s.Framed, s.Decoded, s.Truncated, len(events))
	}

	// Expected values, computed from the generated events.
	var v11, v12, v12Since, allSince, nullBytes int
	var firstV12 time.Time
	for _, e := range events {
		if e.Version == 12 {
			v12++
			if firstV12.IsZero() {
				firstV12 = e.Time
			}
		} else {
			v11++
		}
		if e.ResponseBytes == nil {
			nullBytes++
		}
	}
	for _, e := range events {
		if !e.Time.Before(firstV12) {
			allSince++
			if e.Version == 12 {
				v12Since++
			}
		}
	}
	if len(s.Versions) != 2 {
		t.Fatalf("versions = %+v", s.Versions)
	}
	a, b := s.Versions[0], s.Versions[1]
	if a.Subject != kafkatest.Subject || a.Version != 11 || a.SchemaID != 11 || a.Records != v11 {
		t.Errorf("first version %+v, want v11 with %d records", a, v11)
	}
	if b.Version != 12 || b.Records != v12 || !b.FirstSeen.Equal(firstV12) {
		t.Errorf("second version %+v, want v12 with %d records from %s", b, v12, firstV12)
	}
	if want := float64(v12Since) / float64(allSince); b.ShareSinceFirstSeen != want {
		t.Errorf("v12 share since first seen %.4f, want %.4f", b.ShareSinceFirstSeen, want)
	}
	if !hasLine(s.Summary, "api-usage-value v12 (schema id 12) appears at "+firstV12.Format("2006-01-02 15:04:05Z07:00")+" and is 20.0% of records since") {
		t.Errorf("summary lacks the v12 line: %q", s.Summary)
	}
	fields := map[string]kafka.FieldStat{}
	for _, fs := range s.Fields {
		fields[fs.Field] = fs
	}
	rb := fields["response_bytes"]
	if rb.Null+rb.Missing != nullBytes || rb.Missing != v12 || rb.NullRate != float64(nullBytes)/float64(len(events)) {
		t.Errorf("response_bytes = %+v, want %d null or missing (%d missing)", rb, nullBytes, v12)
	}
	if rb.ByVersion["api-usage-value v12"] != 1 {
		t.Errorf("response_bytes null rate in v12 = %v, want 1", rb.ByVersion)
	}
	if kib := fields["response_kib"]; kib.Missing != v11 || kib.Null != 0 {
		t.Errorf("response_kib = %+v, want missing in the %d v11 records", kib, v11)
	}
	if u := fields["usage_id"]; u.NullRate != 0 || u.Records != len(events) {
		t.Errorf("usage_id = %+v", u)
	}
	if r := fields["endpoint.region"]; r.Null != len(events) || r.NullRate != 1 {
		t.Errorf("nested endpoint.region = %+v, want null everywhere", r)
	}
	if len(s.Timeline) == 0 || s.BucketWidth == "" {
		t.Errorf("no timeline")
	}
	n := 0
	for _, bkt := range s.Timeline {
		n += bkt.Records
	}
	if n != len(events) {
		t.Errorf("timeline counts %d records", n)
	}
}

func TestSampleRecentIsBoundedPerPartitionAndRangeByTime(t *testing.T) {
	f := kafkatest.Start(t, topic)
	f.SeedUsageSchemas()
	events := kafkatest.ScenarioDay(day, 300)
	f.Produce(t, topic, events)
	cl := open(t, f.Kafka)

	s, err := cl.SampleTopic(context.Background(), topic, kafka.SampleOptions{PerPartition: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Records != 30 || !s.Truncated {
		t.Fatalf("recent sample read %d (truncated %v), want 30 and truncated", s.Records, s.Truncated)
	}
	// No registry: versions by schema id, a warning naming the key.
	if len(s.Versions) == 0 || s.Versions[0].Label[:9] != "schema id" || !hasLine(s.Warnings, "schema_registry.url") {
		t.Fatalf("versions %+v warnings %q", s.Versions, s.Warnings)
	}

	since := day.Add(14*time.Hour + 5*time.Minute)
	until := since.Add(2 * time.Minute)
	r, err := cl.SampleTopic(context.Background(), topic, kafka.SampleOptions{Since: since, Until: until, PerPartition: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, e := range events {
		if !e.Time.Before(since) && e.Time.Before(until) {
			want++
		}
	}
	if r.Records != want || r.Oldest.Before(since) || !r.Newest.Before(until) {
		t.Fatalf("range sample read %d records %v..%v, want %d in [%s, %s)", r.Records, r.Oldest, r.Newest, want, since, until)
	}
	// A truncated range is read in runs spread over the whole range, not just its first records.
	wide, err := cl.SampleTopic(context.Background(), topic, kafka.SampleOptions{Since: day.Add(14 * time.Hour), Until: day.Add(14*time.Hour + 30*time.Minute), PerPartition: 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if wide.Records != 60 || !wide.Truncated || wide.Newest.Before(day.Add(14*time.Hour+25*time.Minute)) || len(wide.Versions) != 2 {
		t.Fatalf("spread sample read %d records %v..%v versions %d (truncated %v)", wide.Records, wide.Oldest, wide.Newest, len(wide.Versions), wide.Truncated)
	}
	for _, p := range wide.Partitions {
		if p.Read != 20 || !p.Complete {
			t.Errorf("partition %+v", p)
		}
	}
	empty, err := cl.SampleTopic(context.Background(), topic, kafka.SampleOptions{Since: day.Add(48 * time.Hour)}, nil)
	if err != nil || empty.Records != 0 || len(empty.Summary) == 0 {
		t.Fatalf("empty window = %+v, %v", empty, err)
	}
	if _, err := cl.SampleTopic(context.Background(), topic, kafka.SampleOptions{Partitions: []int32{7}}, nil); err == nil {
		t.Fatal("unknown partition accepted")
	}
	if _, err := cl.SampleTopic(context.Background(), topic, kafka.SampleOptions{MaxRecords: kafka.MaxSampleRecords + 1}, nil); err == nil {
		t.Fatal("unbounded sample accepted")
	}
}

func TestRefusedClusterIsAnErrorNamingTheKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here now
	cl := open(t, &config.Kafka{BootstrapServers: []string{addr}, Timeout: 300 * time.Millisecond})
	_, err = cl.ListTopics(context.Background(), "", false)
	if err == nil || !strings.Contains(err.Error(), "kafka.bootstrap_servers") {
		t.Fatalf("err = %v", err)
	}
}

func TestSilentBrokerIsAnErrorWithinTheTimeout(t *testing.T) {
	// A listener that accepts connections and never answers: a hung broker.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	cl := open(t, &config.Kafka{BootstrapServers: []string{ln.Addr().String()}, Timeout: 300 * time.Millisecond})
	_, err = cl.DescribeTopic(context.Background(), topic)
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("err = %v", err)
	}
}

func TestWrongSASLPasswordSaysAuthenticationFailed(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "dw", "right"), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	good := open(t, &config.Kafka{BootstrapServers: c.ListenAddrs(), Timeout: 2 * time.Second, SASL: &config.SASL{Mechanism: "PLAIN", Username: "dw", Password: "right"}})
	if _, err := good.ListTopics(context.Background(), "", false); err != nil {
		t.Fatalf("right password: %v", err)
	}
	bad := open(t, &config.Kafka{BootstrapServers: c.ListenAddrs(), Timeout: 2 * time.Second, SASL: &config.SASL{Mechanism: "PLAIN", Username: "dw", Password: "wrong"}})
	_, err = bad.ListTopics(context.Background(), "", false)
	if err == nil || !strings.Contains(err.Error(), "kafka.sasl") {
		t.Fatalf("wrong password err = %v", err)
	}
}

func mustClient(t *testing.T, c *config.Kafka) *kgo.Client {
	t.Helper()
	cl, err := kafka.NewClient(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func hasLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// BenchmarkSampleTopicKfake reads and decodes a 3-partition topic over TCP from kfake with the
// registry on loopback HTTP. DW_BENCH_RECORDS sets the topic size (default 3000, max 10000).
func BenchmarkSampleTopicKfake(b *testing.B) {
	n := 3000
	if v, err := strconv.Atoi(os.Getenv("DW_BENCH_RECORDS")); err == nil && v > 0 {
		n = min(v, kafka.MaxSampleRecords)
	}
	f := kafkatest.Start(b, topic)
	f.SeedUsageSchemas()
	f.Produce(b, topic, kafkatest.ScenarioDay(day, n))
	rc, err := registry.New(f.SchemaRegistry)
	if err != nil {
		b.Fatal(err)
	}
	cl, err := kafka.Open(f.Kafka)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	b.ResetTimer()
	for b.Loop() {
		s, err := cl.SampleTopic(context.Background(), topic, kafka.SampleOptions{PerPartition: kafka.MaxPerPartition, MaxRecords: kafka.MaxSampleRecords}, kafka.NewRegistryResolver(rc))
		if err != nil || s.Decoded != n {
			b.Fatalf("decoded %d of %d: %v", s.Decoded, n, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
