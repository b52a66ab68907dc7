package mcpkit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ResourceKind is one kind of thing an agent serves as MCP resources under a URI template, such
// as dw://incidents/{id}: clients read one by URI and list the current ones.
type ResourceKind struct {
	// URITemplate is an RFC 6570 template whose variables Read receives, e.g. dw://receipts/{id}.
	URITemplate, Name, Title, Description, MIMEType string
	// Read returns one resource's text; vars are the template's variables from the URI.
	Read func(ctx context.Context, uri string, vars map[string]string) (string, error)
	// List returns the resources of this kind that exist now (bounded, newest first), or nil to
	// offer the template only (too many to list, such as every asset of the graph).
	List func(ctx context.Context) ([]ResourceRef, error)
}

// ResourceRef names one listed resource.
type ResourceRef struct {
	URI, Name, Description string
}

// resourceSet keeps the listed resources in step with the store: it lists them when a client asks,
// after each tool call that may have changed them and on a timer while serving, and tells clients
// (notifications/resources/list_changed) when the list differs.
type resourceSet struct {
	srv    *server.MCPServer
	kinds  []ResourceKind
	logger *slog.Logger
	redact func(string) string

	mu   sync.Mutex
	uris []string
}

func addResources(s *server.MCPServer, kinds []ResourceKind, logger *slog.Logger, redact func(string) string) *resourceSet {
	rs := &resourceSet{srv: s, kinds: kinds, logger: logger, redact: redact}
	for _, k := range kinds {
		mime := k.MIMEType
		if mime == "" {
			mime = "application/json"
		}
		t := mcp.NewResourceTemplate(k.URITemplate, k.Name, mcp.WithTemplateDescription(k.Description), mcp.WithTemplateMIMEType(mime))
		t.Title = k.Title
		s.AddResourceTemplate(t, rs.reader(k, mime))
	}
	return rs
}

func (rs *resourceSet) reader(k ResourceKind, mime string) server.ResourceTemplateHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		vars := map[string]string{}
		for name, v := range req.Params.Arguments {
			switch x := v.(type) {
			case string:
				vars[name] = x
			case []string:
				if len(x) > 0 {
					vars[name] = x[0]
				}
			default:
				vars[name] = fmt.Sprint(x)
			}
		}
		text, err := k.Read(ctx, req.Params.URI, vars)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", req.Params.URI, err)
		}
		if rs.redact != nil {
			text = rs.redact(text)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mime, Text: text}}, nil
	}
}

// refresh lists every kind's resources and replaces the server's list when it changed, which sends
// list_changed to connected clients. A kind that cannot list (no store yet) is logged and skipped.
func (rs *resourceSet) refresh(ctx context.Context) {
	if rs == nil || len(rs.kinds) == 0 {
		return
	}
	var all []server.ServerResource
	var uris []string
	for _, k := range rs.kinds {
		if k.List == nil {
			continue
		}
		refs, err := k.List(ctx)
		if err != nil {
			if rs.logger != nil {
				rs.logger.Debug("resources not listed", "kind", k.Name, "error", err.Error())
			}
			continue
		}
		mime := k.MIMEType
		if mime == "" {
			mime = "application/json"
		}
		handler := rs.reader(k, mime)
		for _, r := range refs {
			res := mcp.NewResource(r.URI, r.Name, mcp.WithResourceDescription(r.Description), mcp.WithMIMEType(mime))
			uri := r.URI
			kind := k
			all = append(all, server.ServerResource{Resource: res, Handler: func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				// A listed resource is read through its template, with the template's variables.
				t := mcp.NewResourceTemplate(kind.URITemplate, kind.Name)
				req.Params.Arguments = map[string]any{}
				for name, v := range t.URITemplate.Match(uri) {
					req.Params.Arguments[name] = v.String()
				}
				return handler(ctx, req)
			}})
			uris = append(uris, r.URI)
		}
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.uris != nil && slices.Equal(rs.uris, uris) {
		return
	}
	if uris == nil {
		uris = []string{}
	}
	rs.uris = uris
	rs.srv.SetResources(all...)
}

// watch refreshes the list every interval until ctx ends, so a change made by another process
// (dw-quality opening an incident in the shared store) reaches this server's clients too.
func (rs *resourceSet) watch(ctx context.Context, every time.Duration) {
	if rs == nil || len(rs.kinds) == 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rs.refresh(ctx)
		}
	}
}
