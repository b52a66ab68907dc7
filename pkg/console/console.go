// Package console is the approver's web page: a local HTTP server on 127.0.0.1 where a named approver
// signs in with their token, sees the incidents (open first) with their timeline, the blast radius of
// each incident's asset and its remediation plan with every payload shown readably, approves or
// rejects the proposals, sets an incident's severity and status, turns the org-wide stop on and off,
// settles actions a crashed process left running, and reads receipts (the same receipts.Doc their
// Markdown is written from, rendered by html/template). It is the human side: nothing here is
// reachable through MCP.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/store"
)

//go:embed templates/*.html
var templateFiles embed.FS

// Sources are what the console reads. Approvals is required; the rest may be nil, which hides the
// part of the page that needs it.
type Sources struct {
	Approvals *approvals.Service
	Receipts  *receipts.Chain
	Incidents *incidents.Store
	Graph     *graph.Graph
	// Store holds the remediation plans.
	Store *store.Store
	// Actions settles interrupted actions; nil hides that page.
	Actions *remediation.Executor
	// Config, when given, is checked for approvers: with none, the console says so instead of a
	// sign-in form nobody can pass.
	Config *config.Config
}

// Server serves the console.
type Server struct {
	approvals *approvals.Service
	receipts  *receipts.Chain // may be nil before any receipt exists
	incidents *incidents.Store
	graph     *graph.Graph
	st        *store.Store
	// actionsExec settles interrupted actions (nil: not offered).
	actionsExec *remediation.Executor
	noApprovers bool
	now         func() time.Time
	tmpl        *template.Template
	ttl         time.Duration

	mu       sync.Mutex
	sessions map[string]session
}

type session struct {
	approver string
	csrf     string
	expires  time.Time
}

// New builds the console over its sources.
func New(src Sources, now func() time.Time) (*Server, error) {
	if src.Approvals == nil {
		return nil, errors.New("console: the approvals service is required")
	}
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"json":    func(v any) string { b, _ := json.MarshalIndent(v, "", "  "); return string(b) },
		"time":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") },
		"join":    strings.Join,
		"payload": readablePayload,
		"urns":    func(us []graph.URN) string { return joinURNs(us) },
	}).ParseFS(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	return &Server{approvals: src.Approvals, receipts: src.Receipts, incidents: src.Incidents, graph: src.Graph, st: src.Store,
		actionsExec: src.Actions, noApprovers: src.Config != nil && !hasApprovers(src.Config),
		now: now, tmpl: tmpl, ttl: 8 * time.Hour, sessions: map[string]session{}}, nil
}

// CheckLoopback refuses any listen address that is not on the loopback interface.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("console address %q is not loopback: the console only listens on 127.0.0.1 or [::1]", addr)
	}
	return nil
}

// Handler is the console's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.authed(s.logout))
	mux.HandleFunc("GET /{$}", s.authed(s.index))
	mux.HandleFunc("GET /requests/{id}", s.authed(s.request))
	mux.HandleFunc("POST /requests/{id}/decide", s.authed(s.decide))
	mux.HandleFunc("GET /receipts/{seq}", s.authed(s.receipt))
	mux.HandleFunc("GET /incidents/{id}", s.authed(s.incident))
	mux.HandleFunc("POST /incidents/{id}/severity", s.authed(s.setSeverity))
	mux.HandleFunc("POST /incidents/{id}/status", s.authed(s.setStatus))
	mux.HandleFunc("POST /stop", s.authed(s.setStop(true)))
	mux.HandleFunc("POST /resume", s.authed(s.setStop(false)))
	mux.HandleFunc("GET /actions", s.authed(s.actions))
	mux.HandleFunc("POST /actions/{id}/settle", s.authed(s.settle))
	return s.guard(mux)
}

// guard rejects requests whose Host is not loopback (DNS rebinding) and sets strict headers.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "the console answers loopback hosts only", http.StatusMisdirectedRequest)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

const cookieName = "dw_console"

type handler func(w http.ResponseWriter, r *http.Request, sess session)

func (s *Server) authed(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		if err == nil {
			s.mu.Lock()
			sess, ok := s.sessions[c.Value]
			s.mu.Unlock()
			if ok && s.now().Before(sess.expires) {
				if r.Method == http.MethodPost && subtle.ConstantTimeCompare([]byte(r.FormValue("csrf")), []byte(sess.csrf)) != 1 {
					http.Error(w, "stale form: reload the page and try again", http.StatusForbidden)
					return
				}
				h(w, r, sess)
				return
			}
		}
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) render(w http.ResponseWriter, name string, data map[string]any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.tmpl.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
	}
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, "login.html", map[string]any{"Error": r.URL.Query().Get("error"), "NoApprovers": s.noApprovers})
}

// signInRefused is the one answer to a failed sign-in: whether the name exists is not told to
// whoever is trying names.
const signInRefused = "Sign-in refused: that name and token do not match an approver of this console."

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	name, token := strings.TrimSpace(r.FormValue("approver")), r.FormValue("token")
	if s.noApprovers {
		w.WriteHeader(http.StatusForbidden)
		s.render(w, "login.html", map[string]any{"NoApprovers": true})
		return
	}
	if err := s.approvals.Authenticate(name, token); err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, "login.html", map[string]any{"Error": signInRefused})
		return
	}
	id := randomHex(32)
	s.mu.Lock()
	s.sessions[id] = session{approver: name, csrf: randomHex(16), expires: s.now().Add(s.ttl)}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: int(s.ttl.Seconds())})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ session) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// decidedShown is how many decided requests the home page lists, newest first (each incident's
// page and get_approval_status show the rest).
const decidedShown = 50

func (s *Server) index(w http.ResponseWriter, r *http.Request, sess session) {
	ctx := r.Context()
	pending, err := s.approvals.List(ctx, approvals.StatusPending, 0)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	decided, err := s.approvals.Decided(ctx, decidedShown)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	stop, err := s.approvals.Stop(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var rs []receipts.Receipt
	if s.receipts != nil {
		if rs, err = s.receipts.Recent(ctx, 20); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	var incs []incidents.Incident
	if s.incidents != nil {
		// Open incidents first, then the most recently closed.
		open, err := s.incidents.History(ctx, incidents.Query{Status: "open", Limit: 100})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		closed, err := s.incidents.History(ctx, incidents.Query{Status: "closed", Limit: 20})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		incs = append(open, closed...)
	}
	var interrupted int
	if s.actionsExec != nil {
		list, err := s.actionsExec.Interrupted(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		interrupted = len(list)
	}
	s.render(w, "index.html", map[string]any{"Approver": sess.approver, "CSRF": sess.csrf, "Pending": pending, "Decided": decided, "DecidedShown": decidedShown,
		"Stop": stop, "Receipts": rs, "Flash": r.URL.Query().Get("flash"), "Error": r.URL.Query().Get("error"),
		"ShowIncidents": s.incidents != nil, "Incidents": incs, "ShowActions": s.actionsExec != nil, "Interrupted": interrupted})
}

func pathID(r *http.Request, key string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue(key), 10, 64)
	if err != nil || id <= 0 {
		return 0, errors.New("not a valid id")
	}
	return id, nil
}

func (s *Server) request(w http.ResponseWriter, r *http.Request, sess session) {
	id, err := pathID(r, "id")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	q, err := s.approvals.Get(r.Context(), id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	s.render(w, "request.html", map[string]any{"Approver": sess.approver, "CSRF": sess.csrf, "R": q,
		"CanDecide": q.Status == approvals.StatusPending && slices.Contains(q.Approvers, sess.approver) && !q.IsRequester(sess.approver),
		"Error":     r.URL.Query().Get("error")})
}

// decide records the decision. The token was proven at sign-in; the session binds the approver's
// name, and the form carries the payload hash the page showed, which must still be the stored one.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, sess session) {
	id, err := pathID(r, "id")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	approve := r.FormValue("decision") == "approve"
	q, err := s.approvals.DecideAuthenticated(r.Context(), approvals.Decision{RequestID: id, Approver: sess.approver, Approve: approve,
		PayloadSHA256: r.FormValue("payload_sha256"), Comment: r.FormValue("comment")})
	if err != nil {
		http.Redirect(w, r, fmt.Sprintf("/requests/%d?error=%s", id, template.URLQueryEscaper(err.Error())), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/?flash="+template.URLQueryEscaper(fmt.Sprintf("Request #%d %s by %s", q.ID, q.Status, q.DecidedBy)), http.StatusSeeOther)
}

func (s *Server) receipt(w http.ResponseWriter, r *http.Request, sess session) {
	seq, err := pathID(r, "seq")
	if err != nil || s.receipts == nil {
		http.NotFound(w, r)
		return
	}
	rc, err := s.receipts.Get(r.Context(), seq)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	var body any
	_ = json.Unmarshal(rc.Body, &body)
	b, err := receipts.DecodeBody(rc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// The page renders the same Doc the Markdown is written from, through html/template, so every
	// value in it is escaped as text.
	s.render(w, "receipt.html", map[string]any{"Approver": sess.approver, "CSRF": sess.csrf, "R": rc, "Body": body, "Doc": receipts.NewDoc(rc, b)})
}

func hasApprovers(cfg *config.Config) bool {
	for _, d := range cfg.Domains {
		if len(d.Approvers) > 0 {
			return true
		}
	}
	return false
}

// Serve listens on addr (loopback only) until ctx ends.
func (s *Server) Serve(ctx context.Context, addr string, ready func(url string)) error {
	if err := CheckLoopback(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if ready != nil {
		ready("http://" + ln.Addr().String() + "/")
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
