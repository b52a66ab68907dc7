package kafka

import (
	"context"
	"fmt"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/registry"
)

// SampleFromConfig opens the cluster k, names schema ids through the registry when sr is configured
// (nil: versions by schema id, fields not decoded) and samples topic: the one way an agent samples
// a topic from its config, with the byte caps kafka.max_record_bytes and kafka.max_sample_bytes
// unless opt sets its own.
func SampleFromConfig(ctx context.Context, k *config.Kafka, sr *config.SchemaRegistry, topic string, opt SampleOptions) (Sample, error) {
	cl, err := Open(k)
	if err != nil {
		return Sample{}, err
	}
	if opt.MaxRecordBytes <= 0 {
		opt.MaxRecordBytes = k.MaxRecordBytes
	}
	if opt.MaxSampleBytes <= 0 {
		opt.MaxSampleBytes = k.MaxSampleBytes
	}
	defer cl.Close()
	var res SchemaResolver
	if sr != nil {
		rc, err := registry.New(sr)
		if err != nil {
			return Sample{}, err
		}
		res = NewRegistryResolver(rc)
	}
	return cl.SampleTopic(ctx, topic, opt, res)
}

// RecordsFromConfig opens the cluster k and reads a bounded window of topic decoded through the
// registry sr (required: without it nothing decodes), with the configured byte caps unless opt
// sets its own.
func RecordsFromConfig(ctx context.Context, k *config.Kafka, sr *config.SchemaRegistry, topic string, opt SampleOptions) (Records, error) {
	if sr == nil {
		return Records{}, fmt.Errorf("schema_registry is not configured: records of %s cannot be decoded (set schema_registry.url)", topic)
	}
	cl, err := Open(k)
	if err != nil {
		return Records{}, err
	}
	defer cl.Close()
	if opt.MaxRecordBytes <= 0 {
		opt.MaxRecordBytes = k.MaxRecordBytes
	}
	if opt.MaxSampleBytes <= 0 {
		opt.MaxSampleBytes = k.MaxSampleBytes
	}
	rc, err := registry.New(sr)
	if err != nil {
		return Records{}, err
	}
	return cl.ReadRecords(ctx, topic, opt, NewRegistryResolver(rc))
}
