package kafka_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/schema"
)

// Ad clicks in Protobuf (proto3): v4 carries cost_micros and a channel enum; v5 drops cost_micros
// (reserving its tag) and adds the AFFILIATE channel.
const (
	clicksV4 = `syntax = "proto3";
package ads;
message AdClick {
  string click_id = 1;
  int64 cost_micros = 2;
  Channel channel = 3;
  optional string coupon = 4;
}
enum Channel { CHANNEL_UNSPECIFIED = 0; SEARCH = 1; DISPLAY = 2; }`
	clicksV5 = `syntax = "proto3";
package ads;
message AdClick {
  reserved 2;
  reserved "cost_micros";
  string click_id = 1;
  Channel channel = 3;
  optional string coupon = 4;
  double cost_usd = 5;
}
enum Channel { CHANNEL_UNSPECIFIED = 0; SEARCH = 1; DISPLAY = 2; AFFILIATE = 3; }`
)

// frameProto writes a message in the Confluent wire format: magic 0, the schema id, the message
// indexes (a single 0 for the first message) and the Protobuf bytes.
func frameProto(t *testing.T, id uint32, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], id)
	out = append(out, 0)
	return append(out, b...)
}

func clickMessage(t *testing.T, text string) protoreflect.MessageDescriptor {
	t.Helper()
	s, err := schema.Parse(schema.Protobuf, text)
	if err != nil {
		t.Fatal(err)
	}
	return s.ProtoFile().Messages().Get(0)
}

func TestSampleDecodesProtobufZerosAndNewEnumValuesPerVersion(t *testing.T) {
	const adTopic = "ad-clicks"
	f := kafkatest.Start(t, adTopic)
	f.Registry.SeedSchema("ad-clicks-value", 4, 41, sr.Schema{Schema: clicksV4, Type: sr.TypeProtobuf})
	f.Registry.SeedSchema("ad-clicks-value", 5, 42, sr.Schema{Schema: clicksV5, Type: sr.TypeProtobuf})
	md4, md5 := clickMessage(t, clicksV4), clickMessage(t, clicksV5)
	start := time.Date(2026, 10, 3, 9, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for i := 0; i < 60; i++ {
		var value []byte
		if i < 40 { // v4: every click has a cost, one in four is free (0)
			m := dynamicpb.NewMessage(md4)
			m.Set(md4.Fields().ByName("click_id"), protoreflect.ValueOfString(fmt.Sprintf("c-%d", i)))
			if i%4 != 0 {
				m.Set(md4.Fields().ByName("cost_micros"), protoreflect.ValueOfInt64(int64(250000+i)))
			}
			m.Set(md4.Fields().ByName("channel"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(1+i%2)))
			value = frameProto(t, 41, m)
		} else { // v5: no cost_micros on the wire; some clicks come from affiliates
			m := dynamicpb.NewMessage(md5)
			m.Set(md5.Fields().ByName("click_id"), protoreflect.ValueOfString(fmt.Sprintf("c-%d", i)))
			m.Set(md5.Fields().ByName("cost_usd"), protoreflect.ValueOfFloat64(0.25))
			m.Set(md5.Fields().ByName("channel"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(1+i%3)))
			if i%5 == 0 {
				m.Set(md5.Fields().ByName("coupon"), protoreflect.ValueOfString("AUTUMN"))
			}
			value = frameProto(t, 42, m)
		}
		recs = append(recs, &kgo.Record{Topic: adTopic, Value: value, Timestamp: start.Add(time.Duration(i) * time.Minute)})
	}
	pc, err := kgo.NewClient(kgo.SeedBrokers(f.Kafka.BootstrapServers...))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rc, err := registry.New(f.SchemaRegistry)
	if err != nil {
		t.Fatal(err)
	}
	s, err := open(t, f.Kafka).SampleTopic(context.Background(), adTopic, kafka.SampleOptions{PerPartition: 1000}, kafka.NewRegistryResolver(rc))
	if err != nil {
		t.Fatal(err)
	}
	if s.Decoded != 60 || s.Undecodable != 0 || len(s.Versions) != 2 {
		t.Fatalf("decoded %d undecodable %d versions %+v warnings %v", s.Decoded, s.Undecodable, s.Versions, s.Warnings)
	}
	by := map[string]kafka.FieldStat{}
	for _, fs := range s.Fields {
		by[fs.Field] = fs
	}
	cost := by["cost_micros"]
	// v4 records: cost absent from the wire means 0 (a free click), never null.
	if cost.Type != "int64" || cost.Null != 0 || cost.Zero != 10 || cost.ZeroByVersion["ad-clicks-value v4"] != 0.25 ||
		cost.ByVersion["ad-clicks-value v4"] != 0 || cost.ByVersion["ad-clicks-value v5"] != 1 || cost.Missing != 20 {
		t.Errorf("cost_micros %+v", cost)
	}
	// proto3 optional has presence: unset is null.
	if coupon := by["coupon"]; coupon.Null != 56 || coupon.Zero != 0 {
		t.Errorf("coupon %+v", coupon)
	}
	v5 := func(v kafka.VersionStat) bool { return v.Version == 5 }
	if got := s.NewValues("channel", v5); !slices.Equal(got, []string{"AFFILIATE"}) {
		t.Errorf("new channel values %v (values %+v)", got, by["channel"].Values)
	}
	if ch := by["channel"]; len(ch.Values) != 3 || ch.HighCardinality {
		t.Errorf("channel values %+v", ch)
	}
	if id := by["click_id"]; !id.HighCardinality || id.Values != nil {
		t.Errorf("click_id is not low-cardinality: %+v", id)
	}
	sum := strings.Join(s.Summary, "\n")
	for _, want := range []string{"channel takes values only ad-clicks-value v5 records carry: AFFILIATE", "cost_micros is zero"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

func TestMessageIndexes(t *testing.T) {
	cases := []struct {
		in   []byte
		want []int
		rest int
		ok   bool
	}{
		{[]byte{0, 0x0a}, []int{0}, 1, true},
		{[]byte{4, 2, 4, 0x0a}, []int{1, 2}, 1, true}, // zigzag: count 2→4, indexes 1→2, 2→4
		{[]byte{1}, nil, 0, false},                    // negative count
		{[]byte{}, nil, 0, false},
		{[]byte{2}, nil, 0, false}, // count without indexes
	}
	for _, c := range cases {
		idx, rest, err := kafka.MessageIndexes(c.in)
		if (err == nil) != c.ok || c.ok && (!slices.Equal(idx, c.want) || len(rest) != c.rest) {
			t.Errorf("MessageIndexes(%v) = %v, %v, %v", c.in, idx, rest, err)
		}
	}
}

func FuzzMessageIndexes(f *testing.F) {
	f.Add([]byte{0, 1, 2})
	f.Add([]byte{4, 2, 4, 6})
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, rest, err := kafka.MessageIndexes(b)
		if err == nil && (len(idx) == 0 || len(rest) > len(b)) {
			t.Fatalf("%v → %v %v", b, idx, rest)
		}
	})
}
