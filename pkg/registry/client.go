// Package registry reads and writes Confluent Schema Registry through srclient, with timeouts and
// basic auth for Confluent Cloud.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/riferrei/srclient"

	"github.com/dataworkers/dw/pkg/config"
)

// ErrNotConfigured is returned when the schema_registry section is missing.
var ErrNotConfigured = errors.New("schema registry is not configured: add schema_registry.url to the config (see configs/confluent-cloud.example.yaml)")

// Client is a Schema Registry client.
type Client struct {
	SR  *srclient.SchemaRegistryClient
	URL string
}

// New builds a client; it does not connect.
func New(c *config.SchemaRegistry) (*Client, error) {
	if c == nil {
		return nil, ErrNotConfigured
	}
	hc := &http.Client{Timeout: c.Timeout}
	sr := srclient.NewSchemaRegistryClient(strings.TrimRight(c.URL, "/"), srclient.WithClient(hc))
	if c.Username != "" {
		sr.SetCredentials(c.Username, c.Password)
	}
	sr.CachingEnabled(false)
	return &Client{SR: sr, URL: c.URL}, nil
}

// Ping reads the global compatibility level: the cheapest call every registry answers.
// srclient takes no context, so the call runs beside ctx and ctx bounds the wait.
func (c *Client) Ping(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() {
		_, err := c.SR.GetGlobalCompatibilityLevel()
		errc <- err
	}()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("schema registry %s: %w (check schema_registry.url and credentials)", c.URL, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("schema registry %s: no answer: %w", c.URL, ctx.Err())
	}
}
