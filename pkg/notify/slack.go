// Package notify tells people about approval requests: a Slack incoming webhook when configured.
package notify

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// Message is one notification.
type Message struct {
	Text string
}

// Notifier delivers messages.
type Notifier interface {
	Notify(ctx context.Context, m Message) error
}

// Slack posts to an incoming webhook.
type Slack struct {
	api  *httpapi.Client
	path string
}

// NewSlack returns a Slack notifier, or nil (and no error) when Slack is not configured.
func NewSlack(c *config.Slack) (*Slack, error) {
	if c == nil || c.WebhookURL == "" {
		return nil, nil
	}
	u, err := url.Parse(c.WebhookURL)
	if err != nil || u.Host == "" {
		return nil, errors.New("slack.webhook_url is not a URL")
	}
	base := u.Scheme + "://" + u.Host
	api, err := httpapi.New("slack", base, "slack", nil, 10*time.Second)
	if err != nil {
		return nil, err
	}
	api.URLKey = "slack.webhook_url"
	return &Slack{api: api, path: u.EscapedPath()}, nil
}

// Notify posts the message. Slack answers a plain "ok", not JSON, so the body is not decoded.
func (s *Slack) Notify(ctx context.Context, m Message) error {
	if err := s.api.Do(ctx, "POST", s.path, nil, map[string]string{"text": m.Text}, nil); err != nil {
		// The webhook path is the secret: never let it reach a message.
		return fmt.Errorf("slack notification: %s", strings.ReplaceAll(err.Error(), s.path, "/<webhook>"))
	}
	return nil
}
