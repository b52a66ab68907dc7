package config

import (
	"time"
)

// Metrics names the monitoring a team already runs, read for consumer lag and throughput history
// instead of (or as well as) the brokers' committed offsets.
type Metrics struct {
	Prometheus       *Prometheus       `yaml:"prometheus"`
	ConfluentMetrics *ConfluentMetrics `yaml:"confluent_metrics"`
	Datadog          *Datadog          `yaml:"datadog"`
}

// Prometheus is a Prometheus-compatible HTTP query API (Prometheus, Thanos, Mimir, VictoriaMetrics).
type Prometheus struct {
	URL         string `yaml:"url"`
	Username    string `yaml:"username"`
	Password    string `yaml:"password"`
	BearerToken string `yaml:"bearer_token"`
	// Series picks the naming scheme of the lag series: kafka_exporter (danielqsj/kafka-exporter,
	// the default) or confluent (Confluent Cloud's Prometheus export). The fields below override it.
	Series         string        `yaml:"series"`
	LagMetric      string        `yaml:"lag_metric"`
	GroupLabel     string        `yaml:"group_label"`
	TopicLabel     string        `yaml:"topic_label"`
	PartitionLabel string        `yaml:"partition_label"`
	Timeout        time.Duration `yaml:"timeout"`
}

// ConfluentMetrics is the Confluent Cloud Metrics API v2 (api.telemetry.confluent.cloud).
type ConfluentMetrics struct {
	URL       string `yaml:"url"`
	APIKey    string `yaml:"api_key"`
	APISecret string `yaml:"api_secret"`
	// KafkaClusterID is the lkc-… cluster the series are filtered on (default confluent_cloud.kafka_cluster_id).
	KafkaClusterID string        `yaml:"kafka_cluster_id"`
	Timeout        time.Duration `yaml:"timeout"`
}

// Datadog is the Datadog metrics query API of one site.
type Datadog struct {
	// Site is the Datadog site, e.g. datadoghq.com (default), datadoghq.eu, us5.datadoghq.com.
	Site string `yaml:"site"`
	// URL overrides the API base derived from site (https://api.<site>).
	URL            string `yaml:"url"`
	APIKey         string `yaml:"api_key"`
	ApplicationKey string `yaml:"application_key"`
	// LagMetric and the tags default to the Datadog Kafka consumer integration's names.
	LagMetric    string        `yaml:"lag_metric"`
	GroupTag     string        `yaml:"group_tag"`
	TopicTag     string        `yaml:"topic_tag"`
	PartitionTag string        `yaml:"partition_tag"`
	Timeout      time.Duration `yaml:"timeout"`
}

// The lag series naming schemes a Prometheus may hold.
var prometheusSeries = map[string][4]string{
	"kafka_exporter": {"kafka_consumergroup_lag", "consumergroup", "topic", "partition"},
	"confluent":      {"confluent_kafka_server_consumer_lag_offsets", "consumer_group_id", "topic", "partition"},
}

func defaultMetrics(m *Metrics, cc *ConfluentCloud) {
	if m == nil {
		return
	}
	if p := m.Prometheus; p != nil {
		p.Timeout = orDefault(p.Timeout)
		if p.Series == "" {
			p.Series = "kafka_exporter"
		}
		if names, ok := prometheusSeries[p.Series]; ok {
			p.LagMetric = or(p.LagMetric, names[0])
			p.GroupLabel = or(p.GroupLabel, names[1])
			p.TopicLabel = or(p.TopicLabel, names[2])
			p.PartitionLabel = or(p.PartitionLabel, names[3])
		}
	}
	if c := m.ConfluentMetrics; c != nil {
		c.Timeout = orDefault(c.Timeout)
		c.URL = or(c.URL, "https://api.telemetry.confluent.cloud")
		if cc != nil {
			c.KafkaClusterID = or(c.KafkaClusterID, cc.KafkaClusterID)
			if c.APIKey == "" && c.APISecret == "" {
				c.APIKey, c.APISecret = cc.APIKey, cc.APISecret
			}
		}
	}
	if d := m.Datadog; d != nil {
		d.Timeout = orDefault(d.Timeout)
		d.Site = or(d.Site, "datadoghq.com")
		d.URL = or(d.URL, "https://api."+d.Site)
		d.LagMetric = or(d.LagMetric, "kafka.consumer_lag")
		d.GroupTag = or(d.GroupTag, "consumer_group")
		d.TopicTag = or(d.TopicTag, "topic")
		d.PartitionTag = or(d.PartitionTag, "partition")
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func (c *Config) validateMetrics(add func(string, ...any)) {
	m := c.Metrics
	if m == nil {
		return
	}
	if p := m.Prometheus; p != nil {
		checkURL(add, "metrics.prometheus.url", p.URL, true)
		if _, ok := prometheusSeries[p.Series]; !ok {
			add("metrics.prometheus.series: %q; use kafka_exporter or confluent (or set lag_metric and the labels)", p.Series)
		}
		if (p.Username == "") != (p.Password == "") {
			add("metrics.prometheus: set both username and password or neither")
		}
		if p.BearerToken != "" && p.Username != "" {
			add("metrics.prometheus: set bearer_token or username/password, not both")
		}
		if p.Timeout < 0 {
			add("metrics.prometheus.timeout: must not be negative")
		}
	}
	if cm := m.ConfluentMetrics; cm != nil {
		checkURL(add, "metrics.confluent_metrics.url", cm.URL, true)
		if cm.APIKey == "" || cm.APISecret == "" {
			add("metrics.confluent_metrics: api_key and api_secret are required (a Cloud API key with MetricsViewer, e.g. ${CONFLUENT_CLOUD_API_SECRET})")
		}
		if cm.KafkaClusterID == "" {
			add("metrics.confluent_metrics.kafka_cluster_id: required (the lkc-… id), or set confluent_cloud.kafka_cluster_id")
		}
		if cm.Timeout < 0 {
			add("metrics.confluent_metrics.timeout: must not be negative")
		}
	}
	if d := m.Datadog; d != nil {
		checkURL(add, "metrics.datadog.url", d.URL, true)
		if d.APIKey == "" || d.ApplicationKey == "" {
			add("metrics.datadog: api_key and application_key are both required (the query API needs an application key with timeseries_query)")
		}
		if d.Timeout < 0 {
			add("metrics.datadog.timeout: must not be negative")
		}
	}
}

// Sources lists the configured monitoring sources by the name get_consumer_lag takes.
func (m *Metrics) Sources() []string {
	if m == nil {
		return nil
	}
	var out []string
	if m.Prometheus != nil {
		out = append(out, "prometheus")
	}
	if m.ConfluentMetrics != nil {
		out = append(out, "confluent_metrics")
	}
	if m.Datadog != nil {
		out = append(out, "datadog")
	}
	return out
}

func (c *Config) metricsSecrets() []secretValue {
	m := c.Metrics
	if m == nil {
		return nil
	}
	var out []secretValue
	add := func(key, v string) {
		if len(v) >= 4 {
			out = append(out, secretValue{key, v})
		}
	}
	if p := m.Prometheus; p != nil {
		add("metrics.prometheus.password", p.Password)
		add("metrics.prometheus.bearer_token", p.BearerToken)
	}
	if cm := m.ConfluentMetrics; cm != nil {
		add("metrics.confluent_metrics.api_secret", cm.APISecret)
	}
	if d := m.Datadog; d != nil {
		add("metrics.datadog.api_key", d.APIKey)
		add("metrics.datadog.application_key", d.ApplicationKey)
	}
	return out
}
