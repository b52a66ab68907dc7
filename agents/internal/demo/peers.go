package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/connect/connecttest"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
	"github.com/dataworkers/dw/pkg/orchestrators/orchtest"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/registry/srtest"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// Names the story uses.
const (
	Subject       = "api-usage-value"
	EventsTopic   = "api-usage"
	HourlyTopic   = "usage-hourly"
	HourlyTopicV2 = "usage-hourly-v2"
	ErrorsTopic   = "api-errors-hourly"
	StripeDAG     = "sync_metered_usage_to_stripe"
	OtherDAG      = "refresh_account_dim"
	DBTAccount    = 12345
	DBTJob        = 4242
	dbtToken      = "dbt-demo-token"
	v11SchemaID   = 100011
	rollupName    = "usage-hourly-rollup"
	tableflowPath = "s3://tableflow-demo/usage/"
	peerTimeout   = 5 * time.Second
)

// Peers are the loopback stand-ins of everything the agents talk to.
type Peers struct {
	Cluster   *kfake.Cluster
	Kafka     *config.Kafka
	Registry  *srtest.Server
	Connect   *connecttest.Server
	Confluent *confluenttest.Server
	Airflow   *orchtest.Airflow
	DBT       *orchtest.DBTCloud

	closers []closer
}

// closer stops one stand-in listening on addrs.
type closer struct {
	addrs []string
	close func() error
}

func (p *Peers) onClose(f func() error, addrs ...string) {
	c := closer{close: f}
	for _, a := range addrs {
		c.addrs = append(c.addrs, strings.TrimPrefix(a, "http://"))
	}
	p.closers = append(p.closers, c)
}

// noErr adapts a Close without a result.
func noErr(f func()) func() error { return func() error { f(); return nil } }

// StartPeers starts every peer on 127.0.0.1 with the story's state before the rollout: api-usage-value
// at v11 (BACKWARD), the statements running, Tableflow on usage-hourly, the DAGs unpaused.
func StartPeers(ctx context.Context, a *Artifacts) (_ *Peers, err error) {
	p := &Peers{}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	c, kc, err := kafkatest.StartBroker(EventsTopic, HourlyTopic, ErrorsTopic)
	if err != nil {
		return nil, err
	}
	p.Cluster, p.Kafka = c, kc
	p.Kafka.ClientID = "dw-demo"
	p.onClose(noErr(c.Close), kc.BootstrapServers...)

	if p.Registry, err = srtest.Start(srtest.Options{}); err != nil {
		return nil, err
	}
	p.onClose(p.Registry.Close, p.Registry.URL)
	p.Registry.Registry.SeedSchema(Subject, 11, v11SchemaID, sr.Schema{Schema: a.Schemas[11], Type: sr.TypeAvro})
	rc, err := registry.New(p.RegistryConfig())
	if err != nil {
		return nil, err
	}
	if err := rc.SetSubjectLevel(ctx, Subject, compat.Backward); err != nil {
		return nil, fmt.Errorf("set %s to BACKWARD: %w", Subject, err)
	}

	p.Connect = connecttest.Start()
	p.onClose(noErr(p.Connect.Close), p.Connect.URL)

	p.Confluent = confluenttest.Start(a.Statements, []confluenttest.Tableflow{
		{Topic: HourlyTopic, Phase: "RUNNING", TableFormats: []string{"ICEBERG"}, TablePath: tableflowPath + HourlyTopic},
		{Topic: ErrorsTopic, Phase: "RUNNING", TableFormats: []string{"ICEBERG"}, TablePath: tableflowPath + ErrorsTopic},
	})
	p.onClose(noErr(p.Confluent.Close), p.Confluent.URL)

	p.Airflow = orchtest.NewAirflow("v2", map[string]bool{StripeDAG: false, OtherDAG: false})
	p.onClose(noErr(p.Airflow.Close), p.Airflow.URL)
	p.DBT = orchtest.NewDBTCloud(DBTAccount, dbtToken, DBTJob)
	p.onClose(noErr(p.DBT.Close), p.DBT.URL)
	return p, nil
}

// Listeners are the stand-ins' loopback host:port addresses.
func (p *Peers) Listeners() []string {
	out := append([]string(nil), p.Kafka.BootstrapServers...)
	for _, u := range []string{p.Registry.URL, p.Connect.URL, p.Confluent.URL, p.Airflow.URL, p.DBT.URL} {
		out = append(out, strings.TrimPrefix(u, "http://"))
	}
	return out
}

// RegistryConfig points a schema_registry section at the stand-in.
func (p *Peers) RegistryConfig() *config.SchemaRegistry {
	return &config.SchemaRegistry{URL: p.Registry.URL, Timeout: peerTimeout}
}

// Close stops every peer, newest first, and returns each one's shutdown result by listener
// ("" when its Close returned cleanly: kfake and httptest close their listeners and wait for
// in-flight requests before returning). Safe to call twice.
func (p *Peers) Close() map[string]string {
	out := map[string]string{}
	for i := len(p.closers) - 1; i >= 0; i-- {
		c := p.closers[i]
		res := ""
		if err := c.close(); err != nil {
			res = err.Error()
		}
		for _, a := range c.addrs {
			out[a] = res
		}
	}
	p.closers = nil
	return out
}

// registerAsGateway registers a schema the way the gateway team's release did, straight against
// the registry (BACKWARD is the only gate), and returns its id and version.
func (p *Peers) registerAsGateway(ctx context.Context, text string) (id, version int, err error) {
	rc, err := registry.New(p.RegistryConfig())
	if err != nil {
		return 0, 0, err
	}
	id, err = rc.Register(ctx, Subject, schema.Avro, text, nil)
	if err != nil {
		return 0, 0, err
	}
	hist, err := rc.History(ctx, Subject)
	if err != nil {
		return 0, 0, err
	}
	for _, v := range hist {
		if v.ID == id {
			version = v.Version
		}
	}
	if version == 0 {
		return 0, 0, errors.New("registered schema not in the subject's history")
	}
	return id, version, nil
}
