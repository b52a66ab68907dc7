package mcpkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/dataworkers/dw/pkg/auth"
	"github.com/dataworkers/dw/pkg/config"
)

// MCPPath is where the Streamable HTTP endpoint is served; HealthPath answers a load balancer.
const (
	MCPPath    = "/mcp"
	HealthPath = "/healthz"
)

// maxRequestBody bounds one JSON-RPC message from a client; tool arguments are small.
const maxRequestBody = 8 << 20

// shutdownTimeout bounds how long SIGTERM waits for in-flight requests before closing connections.
const shutdownTimeout = 30 * time.Second

// HTTPOptions configure an HTTPServer.
type HTTPOptions struct {
	// Name is the agent, shown in the Protected Resource Metadata.
	Name string
	// Auth checks every MCP request; nil serves anonymously (only ever on loopback, see CheckListen).
	Auth     *auth.Authenticator
	Resource auth.Resource
	Logger   *slog.Logger
	// ShutdownTimeout bounds the drain on shutdown (default 30s).
	ShutdownTimeout time.Duration
}

// HTTPServer serves one MCP server to many clients over Streamable HTTP. Each request runs with its
// caller in the context; the tool selection is the MCP server's, so it is the same as on stdio.
type HTTPServer struct {
	http    *http.Server
	mcp     *server.StreamableHTTPServer
	timeout time.Duration
	logger  *slog.Logger
}

// NewHTTPServer wires the endpoint, the health check and the OAuth metadata.
func NewHTTPServer(srv *server.MCPServer, o HTTPOptions) *HTTPServer {
	if o.Resource.Path == "" {
		o.Resource.Path = MCPPath
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &HTTPServer{timeout: o.ShutdownTimeout, logger: o.Logger}
	if h.timeout <= 0 {
		h.timeout = shutdownTimeout
	}
	mux := http.NewServeMux()
	h.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	h.mcp = server.NewStreamableHTTPServer(srv,
		server.WithEndpointPath(MCPPath),
		server.WithStreamableHTTPServer(h.http),
		server.WithStreamableHTTPLogger(o.Logger),
	)
	// Authentication comes first, so an unknown caller cannot make the server read a large body.
	mux.Handle(MCPPath, auth.Require(o.Auth, o.Resource, o.Logger, http.MaxBytesHandler(h.mcp, maxRequestBody)))
	meta := auth.MetadataHandler(o.Auth, o.Resource, o.Name)
	mux.Handle(auth.MetadataPath, meta)
	mux.Handle(auth.MetadataPath+MCPPath, meta)
	mux.HandleFunc(HealthPath, h.health)
	return h
}

// Handler is the whole HTTP surface (for tests and for embedding behind another mux).
func (h *HTTPServer) Handler() http.Handler { return h.http.Handler }

// health says only that this process answers; it needs no token and tells nothing about the
// configuration. On shutdown the listener closes first, so a load balancer sees it go.
func (h *HTTPServer) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]string{"status": "ok"})
}

// Serve answers on ln until ctx ends, then drains: it stops accepting, lets in-flight requests
// finish (up to the shutdown timeout), closes the clients' listening streams and returns.
func (h *HTTPServer) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- h.http.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	h.logger.Info("draining in-flight requests", "timeout", h.timeout.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	defer cancel()
	err := h.mcp.Shutdown(sctx)
	if err != nil {
		_ = h.http.Close()
		return fmt.Errorf("drain: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}

// NewAuthenticator builds the authenticator the http section configures; nil when the section
// allows anonymous access and configures no tokens or issuer.
func NewAuthenticator(ctx context.Context, h *config.HTTP) (*auth.Authenticator, error) {
	if h == nil {
		return auth.New(ctx, auth.Options{})
	}
	o := auth.Options{}
	for _, t := range h.Tokens {
		o.Tokens = append(o.Tokens, auth.Token{Name: t.Name, SHA256: t.SHA256})
	}
	if h.OIDC != nil {
		o.OIDC = &auth.OIDC{Issuer: h.OIDC.Issuer, Audience: h.OIDC.Audience, CallerClaim: h.OIDC.CallerClaim}
	}
	a, err := auth.New(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	if !a.Configured() && h.AllowAnonymous {
		return nil, nil
	}
	return a, nil
}

// CheckListen refuses what would expose the tools to anyone: no way to authenticate at all, or
// anonymous access on an address other hosts can reach.
func CheckListen(listen string, a *auth.Authenticator) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: want host:port, e.g. 127.0.0.1:8080: %w", listen, err)
	}
	anonymous := a == nil
	if !anonymous && !a.Configured() {
		return errors.New("http: no authentication configured; add http.tokens (name + sha256 of each caller's token) or http.oidc (issuer + audience), or set http.allow_anonymous: true on a loopback --listen")
	}
	if anonymous && !loopbackHost(host) {
		return fmt.Errorf("--listen %s: anonymous access (http.allow_anonymous) is only allowed on a loopback address; configure http.tokens or http.oidc to listen on %s", listen, listen)
	}
	return nil
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// serveHTTP is `serve --transport http`: authentication from the http section, the listen check,
// then one server for every client until SIGTERM or SIGINT, which drains.
func serveHTTP(ctx context.Context, srv *server.MCPServer, resources *resourceSet, e *Env, listen string, stdio IO) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go resources.watch(ctx, resourceWatchInterval)
	a, err := NewAuthenticator(ctx, e.Config.HTTP)
	if err == nil {
		err = CheckListen(listen, a)
	}
	if err != nil {
		fmt.Fprintf(stdio.Err, "%s: %v\n", e.Agent, e.Redact(err.Error()))
		return ExitUsage
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(stdio.Err, "%s: listen %s: %v\n", e.Agent, listen, err)
		return ExitUsage
	}
	res := auth.Resource{Path: MCPPath}
	if h := e.Config.HTTP; h != nil {
		res.URL, res.Scopes = h.ResourceURL, h.Scopes
	}
	hs := NewHTTPServer(srv, HTTPOptions{Name: e.Agent, Auth: a, Resource: res, Logger: e.Logger})
	e.Logger.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+MCPPath, "authenticated", a != nil)
	if err := hs.Serve(ctx, ln); err != nil {
		e.Logger.Error("http server stopped", "error", err)
		return ExitToolError
	}
	return ExitOK
}
