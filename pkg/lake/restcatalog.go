package lake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/httpapi"
)

// restCatalog speaks the Iceberg REST catalog API (Polaris, Snowflake Open Catalog, Unity,
// Tableflow's own): GET /v1/config for the warehouse's prefix, then namespaces and tables under
// /v1/{prefix}/. Authentication is a bearer token, or OAuth client credentials exchanged at the
// token endpoint (lake.oauth2_server_uri, else /v1/oauth/tokens) and renewed before they expire.
type restCatalog struct {
	api    *httpapi.Client
	prefix string
	cfg    *config.Lake
	// props are the catalog's defaults and overrides from /v1/config: they open the table files.
	props map[string]string

	mu      sync.Mutex
	token   string
	expires time.Time
}

func openRESTCatalog(ctx context.Context, cfg *config.Lake) (*restCatalog, error) {
	if cfg.URI == "" {
		return nil, fmt.Errorf("set lake.uri to the REST catalog's base URL")
	}
	c := &restCatalog{cfg: cfg, token: cfg.Token, props: map[string]string{}}
	api, err := httpapi.New("iceberg rest catalog", cfg.URI, "lake", func(r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		}
	}, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	api.URLKey = "lake.uri"
	c.api = api
	if err := c.authenticate(ctx); err != nil {
		return nil, err
	}
	var conf struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	q := url.Values{}
	if cfg.Warehouse != "" {
		q.Set("warehouse", cfg.Warehouse)
	}
	if err := api.Do(ctx, http.MethodGet, "/v1/config", q, nil, &conf); err != nil {
		return nil, err
	}
	for k, v := range conf.Defaults {
		c.props[k] = v
	}
	for k, v := range cfg.Properties {
		c.props[k] = v
	}
	for k, v := range conf.Overrides {
		c.props[k] = v
	}
	c.prefix = conf.Overrides["prefix"]
	if u := conf.Overrides["uri"]; u != "" && strings.TrimRight(u, "/") != strings.TrimRight(cfg.URI, "/") {
		moved, err := httpapi.New(api.Name, u, "lake", api.Auth, cfg.Timeout)
		if err != nil {
			return nil, fmt.Errorf("the catalog's config moves it to %q: %w", u, err)
		}
		moved.URLKey = "lake.uri"
		c.api = moved
	}
	return c, nil
}

// authenticate exchanges the client credentials for a token when there is none or it is about to
// expire. A configured static token is used as it is.
func (c *restCatalog) authenticate(ctx context.Context) error {
	if c.cfg.ClientID == "" {
		return nil
	}
	c.mu.Lock()
	fresh := c.token != "" && (c.expires.IsZero() || time.Until(c.expires) > 30*time.Second)
	c.mu.Unlock()
	if fresh {
		return nil
	}
	endpoint := c.cfg.OAuth2ServerURI
	if endpoint == "" {
		endpoint = strings.TrimRight(c.cfg.URI, "/") + "/v1/oauth/tokens"
	}
	scope := c.cfg.Scope
	if scope == "" {
		scope = "catalog"
	}
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.cfg.ClientID}, "client_secret": {c.cfg.ClientSecret}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("iceberg rest catalog: token endpoint %q: %w (check lake.oauth2_server_uri)", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.api.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("iceberg rest catalog: token endpoint %s unreachable (check lake.uri or lake.oauth2_server_uri)", endpoint)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &tok)
	if resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		reason := tok.Error
		if tok.Description != "" {
			reason += ": " + tok.Description
		}
		if reason == "" {
			reason = "no access_token in the answer"
		}
		return fmt.Errorf("iceberg rest catalog: token request: %s: %s (check lake.client_id and lake.client_secret)", resp.Status, reason)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token = tok.AccessToken
	c.expires = time.Time{}
	if tok.ExpiresIn > 0 {
		c.expires = time.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return nil
}

// path joins the prefix and the escaped segments under /v1/.
func (c *restCatalog) path(segments ...string) string {
	p := "/v1"
	if c.prefix != "" {
		p += "/" + url.PathEscape(c.prefix)
	}
	for _, s := range segments {
		p += "/" + s
	}
	return p
}

// namespacePath is a namespace's path segment: its parts joined by the unit separator.
func namespacePath(ns []string) string {
	parts := make([]string, len(ns))
	for i, p := range ns {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "%1F")
}

func (c *restCatalog) get(ctx context.Context, path string, q url.Values, out any) error {
	if err := c.authenticate(ctx); err != nil {
		return err
	}
	return c.api.Do(ctx, http.MethodGet, path, q, nil, out)
}

func (c *restCatalog) locate(ctx context.Context, id []string) (string, *Metadata, map[string]string, error) {
	var res struct {
		MetadataLocation string            `json:"metadata-location"`
		Metadata         json.RawMessage   `json:"metadata"`
		Config           map[string]string `json:"config"`
	}
	err := c.get(ctx, c.path("namespaces", namespacePath(id[:len(id)-1]), "tables", url.PathEscape(id[len(id)-1])), nil, &res)
	if httpapi.IsNotFound(err) {
		return "", nil, nil, errNoSuchTable
	}
	if err != nil {
		return "", nil, nil, err
	}
	vended := map[string]string{}
	for k, v := range c.props {
		vended[k] = v
	}
	for k, v := range res.Config {
		vended[k] = v
	}
	if len(res.Metadata) == 0 || string(res.Metadata) == "null" {
		return res.MetadataLocation, nil, vended, nil
	}
	meta, err := ParseMetadata(res.Metadata)
	if err != nil {
		return "", nil, nil, fmt.Errorf("iceberg rest catalog: table %s: %w", strings.Join(id, "."), err)
	}
	return res.MetadataLocation, meta, vended, nil
}

func (c *restCatalog) listTables(ctx context.Context, namespace []string) ([][]string, error) {
	var out [][]string
	q := url.Values{}
	for {
		var page struct {
			Identifiers []struct {
				Namespace []string `json:"namespace"`
				Name      string   `json:"name"`
			} `json:"identifiers"`
			Next string `json:"next-page-token"`
		}
		if err := c.get(ctx, c.path("namespaces", namespacePath(namespace), "tables"), q, &page); err != nil {
			return nil, err
		}
		for _, id := range page.Identifiers {
			out = append(out, append(append([]string{}, id.Namespace...), id.Name))
		}
		if page.Next == "" || page.Next == q.Get("pageToken") {
			return out, nil
		}
		q.Set("pageToken", page.Next)
	}
}

func (c *restCatalog) listNamespaces(ctx context.Context) ([][]string, error) {
	var out [][]string
	q := url.Values{}
	for {
		var page struct {
			Namespaces [][]string `json:"namespaces"`
			Next       string     `json:"next-page-token"`
		}
		if err := c.get(ctx, c.path("namespaces"), q, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Namespaces...)
		if page.Next == "" || page.Next == q.Get("pageToken") {
			return out, nil
		}
		q.Set("pageToken", page.Next)
	}
}

func (c *restCatalog) close() error { return nil }
