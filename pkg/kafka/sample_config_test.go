package kafka_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/kafka"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
)

func TestSampleFromConfigNamesVersionsWithTheRegistryAndByIDWithout(t *testing.T) {
	f := kafkatest.Start(t, topic)
	f.SeedUsageSchemas()
	f.Produce(t, topic, kafkatest.ScenarioDay(day, 200))
	ctx := context.Background()

	named, err := kafka.SampleFromConfig(ctx, f.Kafka, f.SchemaRegistry, topic, kafka.SampleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if named.Decoded != 200 || len(named.Versions) != 2 || named.Versions[0].Subject != "api-usage-value" {
		t.Fatalf("with the registry: decoded %d versions %+v", named.Decoded, named.Versions)
	}
	byID, err := kafka.SampleFromConfig(ctx, f.Kafka, nil, topic, kafka.SampleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if byID.Decoded != 0 || byID.Framed != 200 || byID.Versions[0].Subject != "" {
		t.Fatalf("without the registry: %+v", byID)
	}
	if _, err := kafka.SampleFromConfig(ctx, nil, nil, topic, kafka.SampleOptions{}); !errors.Is(err, kafka.ErrNotConfigured) {
		t.Errorf("no kafka config: %v", err)
	}
	if _, err := kafka.SampleFromConfig(ctx, f.Kafka, &config.SchemaRegistry{URL: "::not a url"}, topic, kafka.SampleOptions{}); err == nil {
		t.Error("a broken registry config was accepted")
	}
}
