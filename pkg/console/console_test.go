package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/store"
)

func sum(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

const ownerToken = "platform-owner-token-1"

// scenario builds the story's approvals: the four proposals of the afternoon, routed to the
// streaming platform owner with the billing data owner copied.
func scenario(t *testing.T) (*Server, *approvals.Service, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := &config.Config{Domains: []config.Domain{{
		Name:      "usage-billing",
		Assets:    []string{"job:airflow/*", "schema:api-usage-value", "flink:statement/*", "dbt:model.billing.*"},
		Owners:    []string{"billing-data-owner"},
		Approvers: []config.Approver{{Name: "streaming-platform-owner", TokenSHA256: sum(ownerToken)}},
		Autonomy:  "L2",
	}}}
	svc := approvals.New(st, cfg, time.Now, nil)
	props := []approvals.Proposal{
		{Class: config.ClassPauseJob, Target: "job:airflow/sync_metered_usage_to_stripe", Title: "Pause the 23:00 Stripe sync",
			Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe", "is_paused": true}},
		{Class: config.ClassRegisterSchema, Target: "schema:api-usage-value", Title: "Register v13: response_bytes back as optional beside response_kib",
			Payload: map[string]any{"subject": "api-usage-value", "schema": `{"type":"record","name":"ApiUsage","fields":[]}`}},
		{Class: config.ClassFlinkStatement, Target: "flink:statement/usage-hourly-rollup", Title: "Corrected statement into usage-hourly-v2 from today's 00:00 offsets",
			Payload: map[string]any{"statement": "INSERT INTO `usage-hourly-v2` SELECT account_id, SUM(COALESCE(response_kib * 1024, response_bytes)) ..."}},
		{Class: config.ClassDBTCode, Target: "dbt:model.billing.fct_billable_egress", Title: "Read today's hours from usage_hourly_v2",
			Payload: map[string]any{"diff": "- from {{ source('usage', 'usage_hourly') }}\n+ from {{ source('usage', 'usage_hourly_v2') }}"}},
	}
	for _, p := range props {
		p.IncidentID = 1
		if _, err := svc.Request(ctx, p, "dw-incidents", nil); err != nil {
			t.Fatal(err)
		}
	}
	key, err := receipts.LoadOrCreateKey(receipts.KeyPath(st.Path()))
	if err != nil {
		t.Fatal(err)
	}
	chain, err := receipts.Open(ctx, st, key, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(svc, chain, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return srv, svc, st
}

func chromium(t *testing.T) string {
	for _, p := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is missing: .ci/run must install Debian's chromium")
	}
	t.Skip("chromium not installed (apt-get install chromium)")
	return ""
}

func TestAnApproverSignsInSeesTheFourProposalsAndApprovesThemInChromium(t *testing.T) {
	bin := chromium(t)
	srv, svc, _ := scenario(t)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	signIn := func(token, waitFor string) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.Navigate(ts.URL+"/login"),
			chromedp.SendKeys("#approver-name", "streaming-platform-owner"),
			chromedp.SendKeys("#token", token),
			chromedp.Click("#sign-in"),
			chromedp.WaitVisible(waitFor),
		); err != nil {
			t.Fatal(err)
		}
	}
	// A wrong token is refused.
	signIn("not-the-token", "#error")
	if errText := text("#error"); !strings.Contains(errText, "wrong token") {
		t.Fatalf("login error %q", errText)
	}

	signIn(ownerToken, "#pending")
	pending, who := text("#pending"), text("#approver")
	for _, want := range []string{"Pause the 23:00 Stripe sync", "Register v13", "usage-hourly-v2", "usage_hourly_v2"} {
		if !strings.Contains(pending, want) {
			t.Errorf("pending list lacks %q:\n%s", want, pending)
		}
	}
	if who != "streaming-platform-owner" {
		t.Errorf("signed in as %q", who)
	}
	for id := 1; id <= 4; id++ {
		if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/requests/%d", ts.URL, id)), chromedp.WaitVisible("#payload")); err != nil {
			t.Fatalf("request %d: %v", id, err)
		}
		payload := text("#payload")
		if err := chromedp.Do(ctx, chromedp.Click("#approve"), chromedp.WaitVisible("#flash")); err != nil {
			t.Fatalf("approve %d: %v", id, err)
		}
		flash := text("#flash")
		if payload == "" || !strings.Contains(flash, fmt.Sprintf("Request #%d approved by streaming-platform-owner", id)) {
			t.Fatalf("request %d: flash %q", id, flash)
		}
	}
	for id := int64(1); id <= 4; id++ {
		r, err := svc.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != approvals.StatusApproved || r.DecidedBy != "streaming-platform-owner" || r.DecidedAt == nil || time.Since(*r.DecidedAt) > time.Minute {
			t.Errorf("request %d: %s by %q at %v", id, r.Status, r.DecidedBy, r.DecidedAt)
		}
	}
}

func TestFormsNeedTheSessionsCSRFTokenAndTheShownHash(t *testing.T) {
	srv, svc, _ := scenario(t)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	jar := &cookieJar{}
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(ts.URL+"/login", url.Values{"approver": {"streaming-platform-owner"}, "token": {ownerToken}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %v %v", resp.Status, err)
	}
	r, _ := svc.Get(context.Background(), 1)
	// No CSRF token: refused.
	resp, _ = client.PostForm(ts.URL+"/requests/1/decide", url.Values{"decision": {"approve"}, "payload_sha256": {r.PayloadSHA256}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("decide without csrf: %s", resp.Status)
	}
	if got, _ := svc.Get(context.Background(), 1); got.Status != approvals.StatusPending {
		t.Fatal("a forged form decided a request")
	}
	// A foreign Host header (DNS rebinding) is refused.
	req, _ := http.NewRequest("GET", ts.URL+"/login", nil)
	req.Host = "evil.example"
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("foreign host: %s", resp.Status)
	}
	// Without a session every page redirects to sign-in.
	if resp, _ := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(ts.URL + "/requests/1"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("anonymous: %s", resp.Status)
	}
}

func TestConsoleListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", "192.168.1.4:80", ":8080"} {
		if CheckLoopback(addr) == nil {
			t.Errorf("%s accepted", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:8080", "localhost:9"} {
		if err := CheckLoopback(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }
