// Package kafka reads Kafka through franz-go: clients built from config with SASL and TLS as
// Confluent Cloud needs them.
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/dataworkers/dw/pkg/config"
)

// ErrNotConfigured is returned when the kafka section is missing.
var ErrNotConfigured = errors.New("kafka is not configured: add a kafka section with bootstrap_servers to the config (see configs/confluent-cloud.example.yaml)")

// Options turns the kafka config section into franz-go options.
func Options(c *config.Kafka) ([]kgo.Opt, error) {
	if c == nil {
		return nil, ErrNotConfigured
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.BootstrapServers...),
		kgo.ClientID(c.ClientID),
		kgo.DialTimeout(timeout),
		kgo.RequestTimeoutOverhead(timeout),
		kgo.RetryTimeout(timeout),
		kgo.MetadataMinAge(time.Second),
	}
	if t := c.TLS; t != nil && t.Enabled {
		tc, err := TLSConfig(t)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.Dialer((&tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: tc}).DialContext))
	}
	if s := c.SASL; s != nil {
		switch strings.ToUpper(s.Mechanism) {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("kafka.sasl.mechanism %q is not supported", s.Mechanism)
		}
	}
	return opts, nil
}

// TLSConfig builds a client TLS configuration.
func TLSConfig(t *config.TLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in by config
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka.tls.ca_file %s: no PEM certificates found", t.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// NewClient opens a franz-go client (it connects lazily, on the first request).
func NewClient(c *config.Kafka, extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := Options(c)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return cl, nil
}

// Ping connects to a broker and checks it answers, within ctx.
func Ping(ctx context.Context, c *config.Kafka) error {
	cl, err := NewClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return fmt.Errorf("kafka %s: %w (check kafka.bootstrap_servers, sasl and tls)", strings.Join(c.BootstrapServers, ","), err)
	}
	return nil
}
