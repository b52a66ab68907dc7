// Package kafkatest starts the protocol-faithful peers the Kafka tests run against: kfake (the
// real Kafka wire protocol on 127.0.0.1) and srfake (the Schema Registry REST API on loopback
// HTTP), and produces the acceptance scenario's api-usage records in the Confluent wire format.
package kafkatest

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/dataworkers/dw/pkg/config"
)

// The scenario's subject: v11 carries optional response_bytes; v12 (registered at 14:05) drops it
// and adds response_kib. BACKWARD accepts the change.
const (
	Subject = "api-usage-value"

	SchemaV11 = `{"type":"record","name":"ApiUsage","namespace":"com.example.gateway","fields":[` +
		`{"name":"usage_id","type":"string"},` +
		`{"name":"account_id","type":"long"},` +
		`{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},` +
		`{"name":"endpoint","type":{"type":"record","name":"Endpoint","fields":[{"name":"path","type":"string"},{"name":"region","type":["null","string"],"default":null}]}},` +
		`{"name":"response_bytes","type":["null","long"],"default":null}]}`

	SchemaV12 = `{"type":"record","name":"ApiUsage","namespace":"com.example.gateway","fields":[` +
		`{"name":"usage_id","type":"string"},` +
		`{"name":"account_id","type":"long"},` +
		`{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},` +
		`{"name":"endpoint","type":{"type":"record","name":"Endpoint","fields":[{"name":"path","type":"string"},{"name":"region","type":["null","string"],"default":null}]}},` +
		`{"name":"response_kib","type":["null","double"],"default":null}]}`
)

// Fixture is a running kfake cluster and srfake registry, with configs pointing at them.
type Fixture struct {
	Cluster        *kfake.Cluster
	Registry       *srfake.Registry
	Kafka          *config.Kafka
	SchemaRegistry *config.SchemaRegistry
}

// Start runs kfake (one broker on 127.0.0.1, the given topics with 3 partitions each) and srfake;
// both stop when the test ends.
func Start(t testing.TB, topics ...string) *Fixture {
	t.Helper()
	c, _, err := StartBroker(topics...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	return &Fixture{
		Cluster:        c,
		Registry:       reg,
		Kafka:          kafkaConfig(c),
		SchemaRegistry: &config.SchemaRegistry{URL: reg.URL(), Timeout: 5 * time.Second},
	}
}

// StartBroker runs kfake alone (one broker on 127.0.0.1, the given topics with 3 partitions each)
// for callers outside a test, such as the local demo; the caller closes the cluster.
func StartBroker(topics ...string) (*kfake.Cluster, *config.Kafka, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(3, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("kfake: %w", err)
	}
	return c, kafkaConfig(c), nil
}

func kafkaConfig(c *kfake.Cluster) *config.Kafka {
	return &config.Kafka{BootstrapServers: c.ListenAddrs(), ClientID: "dw-test", Timeout: 5 * time.Second}
}

// SeedUsageSchemas registers api-usage-value v11 (schema id 11) and v12 (schema id 12).
func (f *Fixture) SeedUsageSchemas() {
	f.Registry.SeedSchema(Subject, 11, 11, sr.Schema{Schema: SchemaV11, Type: sr.TypeAvro})
	f.Registry.SeedSchema(Subject, 12, 12, sr.Schema{Schema: SchemaV12, Type: sr.TypeAvro})
}

// Usage is one gateway event.
type Usage struct {
	Time          time.Time
	Version       int // 11 or 12
	UsageID       string
	AccountID     int64
	Path          string
	ResponseBytes *int64   // v11 only
	ResponseKiB   *float64 // v12 only
}

// Encode serializes u with its version's schema in the Confluent wire format.
func Encode(t testing.TB, u Usage) []byte {
	t.Helper()
	text, id := SchemaV11, uint32(11)
	rec := map[string]any{"usage_id": u.UsageID, "account_id": u.AccountID, "ts": u.Time,
		"endpoint": map[string]any{"path": u.Path, "region": nil}}
	if u.Version == 12 {
		text, id = SchemaV12, 12
		rec["response_kib"] = nullable(u.ResponseKiB)
	} else {
		rec["response_bytes"] = nullable(u.ResponseBytes)
	}
	out, err := EncodeWire(text, id, rec)
	if err != nil {
		t.Fatalf("encode %+v: %v", u, err)
	}
	return out
}

// EncodeWire serializes rec with the Avro schema text in the Confluent wire format: magic byte 0,
// the 4-byte big-endian schema id, then the Avro binary body.
func EncodeWire(schemaText string, id uint32, rec map[string]any) ([]byte, error) {
	s, err := avro.ParseWithCache(schemaText, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("parse schema %d: %w", id, err)
	}
	payload, err := avro.Marshal(s, rec)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(out[1:], id)
	return append(out, payload...), nil
}

func nullable[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// Produce writes records to topic with their timestamps, keyed by account (so partitions mix).
func (f *Fixture) Produce(t testing.TB, topic string, us []Usage) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.Kafka.BootstrapServers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, len(us))
	for _, u := range us {
		key := make([]byte, 8)
		binary.BigEndian.PutUint64(key, uint64(u.AccountID))
		recs = append(recs, &kgo.Record{Key: key, Value: Encode(t, u), Timestamp: u.Time})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// ScenarioDay builds the afternoon: n events one every 6 s from 14:00 UTC on day; from 14:10 one in
// five producers runs v12 (so v12 is 20% of records since its first appearance), and one v11 event
// in ten has no response_bytes.
func ScenarioDay(day time.Time, n int) []Usage {
	start := time.Date(day.Year(), day.Month(), day.Day(), 14, 0, 0, 0, time.UTC)
	v12From := start.Add(10 * time.Minute)
	out := make([]Usage, 0, n)
	v12 := 0
	for i := range n {
		ts := start.Add(time.Duration(i) * 6 * time.Second)
		u := Usage{Time: ts, Version: 11, UsageID: "u-" + strconv.Itoa(i), AccountID: int64(i % 7), Path: "/v1/search"}
		if !ts.Before(v12From) && v12%5 == 0 {
			u.Version = 12
			kib := float64(i) / 4
			u.ResponseKiB = &kib
		} else if i%10 != 3 {
			b := int64(i * 1024)
			u.ResponseBytes = &b
		}
		if !ts.Before(v12From) {
			v12++
		}
		out = append(out, u)
	}
	return out
}
