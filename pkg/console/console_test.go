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
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func sum(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

const ownerToken = "platform-owner-token-1"

const (
	usageTable = "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY"
	stripeDAG  = "job:airflow/sync_metered_usage_to_stripe"
)

// scenario builds the story's approvals: the four proposals of the afternoon, routed to the
// streaming platform owner with the billing data owner copied.
func scenario(t *testing.T) (*Server, *approvals.Service, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t)
	cfg := &config.Config{Domains: []config.Domain{{
		Name:      "usage-billing",
		Assets:    []string{"job:airflow/*", "schema:api-usage-value", "flink:statement/*", "dbt:model.billing.*"},
		Owners:    []string{"billing-data-owner"},
		Approvers: []config.Approver{{Name: "streaming-platform-owner", TokenSHA256: sum(ownerToken)}},
		Autonomy:  "L2",
	}}}
	svc := approvals.New(st, cfg, time.Now, nil)

	// The incident, and the context graph downstream of its table: the dbt model, the Sigma
	// workbook, and the 23:00 DAG that pushes usage to Stripe.
	inc, err := incidents.New(st, time.Now).Open(ctx, usageTable, "null_rate", "sev1", "egress_bytes null in 18% of today's rows against 0% before", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	ref := func(u string) graph.FieldRef { return graph.FieldRef{Asset: graph.URN(u)} }
	_, err = graph.New(st, time.Now).Import(ctx, graph.Batch{Source: "catalog:test",
		Assets: []graph.Asset{
			{URN: usageTable, System: "warehouse", Kind: "table", Name: "USAGE_HOURLY"},
			{URN: "dbt:model.billing.fct_billable_egress", System: "dbt", Kind: "model", Name: "fct_billable_egress", Owners: []string{"billing-data-owner"}},
			{URN: "bi:sigma/revenue-today", System: "bi", Kind: "workbook", Name: "Revenue today", Tags: []string{"customer-facing"}},
			{URN: stripeDAG, System: "job", Kind: "airflow_dag", Name: "sync_metered_usage_to_stripe", Schedule: "0 23 * * *", Tags: []string{"money"}},
			{URN: "sink:stripe", System: "sink", Kind: "external_sink", Name: "Stripe"},
		},
		Edges: []graph.Edge{
			{From: ref(usageTable), To: ref("dbt:model.billing.fct_billable_egress"), Kind: graph.EdgeReads},
			{From: ref("dbt:model.billing.fct_billable_egress"), To: ref("bi:sigma/revenue-today"), Kind: graph.EdgeExposes},
			{From: ref("dbt:model.billing.fct_billable_egress"), To: ref(stripeDAG), Kind: graph.EdgeReads},
			{From: ref(stripeDAG), To: ref("sink:stripe"), Kind: graph.EdgeSyncsTo},
		}})
	if err != nil {
		t.Fatal(err)
	}
	steps := []plans.Proposal{
		{Class: config.ClassPauseJob, Target: stripeDAG, Title: "Pause the 23:00 Stripe sync", Executor: plans.ExecutorDataWorkers, Reversible: true,
			Undo: "unpause sync_metered_usage_to_stripe", Payload: map[string]any{"dag_id": "sync_metered_usage_to_stripe", "is_paused": true}},
		{Class: config.ClassRegisterSchema, Target: "schema:api-usage-value", Title: "Register v13: response_bytes back as optional beside response_kib", Executor: plans.ExecutorDataWorkers,
			Payload: map[string]any{"subject": "api-usage-value", "schema": `{"type":"record","name":"ApiUsage","fields":[{"name":"response_bytes","type":["null","long"],"default":null}]}`}},
		{Class: config.ClassFlinkStatement, Target: "flink:statement/usage-hourly-rollup", Title: "Corrected statement into usage-hourly-v2 from today's 00:00 offsets", Executor: plans.ExecutorOwner,
			Payload: map[string]any{"statement": "INSERT INTO `usage-hourly-v2`\nSELECT account_id, SUM(COALESCE(response_kib * 1024, response_bytes)) AS egress_bytes\nFROM `api-usage` GROUP BY account_id"}},
		{Class: config.ClassDBTCode, Target: "dbt:model.billing.fct_billable_egress", Title: "Read today's hours from usage_hourly_v2", Executor: plans.ExecutorOwner,
			Payload: map[string]any{"diff": "--- a/models/fct_billable_egress.sql\n+++ b/models/fct_billable_egress.sql\n@@ -1,2 +1,2 @@\n- from {{ source('usage', 'usage_hourly') }}\n+ from {{ source('usage', 'usage_hourly_v2') }}\n"}},
	}
	for i := range steps {
		steps[i].Order = i + 1
		steps[i].Origin = plans.OriginGenerated
		if steps[i].Class == config.ClassDBTCode {
			steps[i].Origin = plans.OriginClient
		}
		p := steps[i]
		if _, err := svc.Request(ctx, approvals.Proposal{IncidentID: inc.ID, Class: p.Class, Target: p.Target, Title: p.Title, Payload: p.Payload}, "dw-incidents", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := plans.Save(ctx, st, plans.Plan{IncidentID: inc.ID, CreatedBy: "dw-incidents", Proposals: steps}, time.Now()); err != nil {
		t.Fatal(err)
	}
	key, err := receipts.LoadOrCreateKey(receipts.KeyPath(st.Path()))
	if err != nil {
		t.Fatal(err)
	}
	chain, err := receipts.Open(ctx, st, key, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Sources{Approvals: svc, Receipts: chain, Incidents: incidents.New(st, time.Now), Graph: graph.New(st, time.Now), Store: st}, time.Now)
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
	if errText := text("#error"); !strings.Contains(errText, "do not match an approver") {
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
	// The incident is listed, and its page shows the blast radius and the four proposals readably.
	incidentsList := text("#incidents")
	for _, want := range []string{usageTable, "sev1", "open"} {
		if !strings.Contains(incidentsList, want) {
			t.Errorf("incident list lacks %q:\n%s", want, incidentsList)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#incidents a[href="/incidents/1"]`), chromedp.WaitVisible("#blast-radius")); err != nil {
		t.Fatal(err)
	}
	blast, proposals := text("#blast-radius"), text("#proposals")
	for _, want := range []string{stripeDAG, "0 23 * * *", "sink:stripe", "dbt:model.billing.fct_billable_egress", "bi:sigma/revenue-today"} {
		if !strings.Contains(blast, want) {
			t.Errorf("blast radius lacks %q:\n%s", want, blast)
		}
	}
	for _, want := range []string{"1. Pause the 23:00 Stripe sync", "2. Register v13", "3. Corrected statement", "4. Read today's hours",
		"SUM(COALESCE(response_kib * 1024, response_bytes))", "+ from {{ source('usage', 'usage_hourly_v2') }}", `"name": "response_bytes"`} {
		if !strings.Contains(proposals, want) {
			t.Errorf("proposals lack %q:\n%s", want, proposals)
		}
	}
	if cards, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#proposals section.proposal-card").length`)); err != nil || cards != 4 {
		t.Fatalf("%d proposal cards (%v)", cards, err)
	}
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#proposal-3 pre.sql").innerText.includes("\nSELECT account_id") && !!document.querySelector("#proposal-4 pre.diff span.add")`)); err != nil || !ok {
		t.Fatalf("the statement and the diff are not preformatted (%v)", err)
	}
	// The first two are approved beside their payloads on the incident page, the others on their request pages.
	for id := 1; id <= 2; id++ {
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/incidents/1"), chromedp.WaitVisible("#proposals"),
			chromedp.Click(fmt.Sprintf("#approve-%d", id)), chromedp.WaitVisible("#flash")); err != nil {
			t.Fatalf("approve %d on the incident page: %v", id, err)
		}
		if flash := text("#flash"); !strings.Contains(flash, fmt.Sprintf("Request #%d approved by streaming-platform-owner", id)) {
			t.Fatalf("request %d: flash %q", id, flash)
		}
	}
	for id := 3; id <= 4; id++ {
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
	// The incident page now shows every proposal approved, with no form left.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/incidents/1"), chromedp.WaitVisible("#proposals")); err != nil {
		t.Fatal(err)
	}
	if got := text("#proposals"); strings.Count(got, "approved by streaming-platform-owner") != 4 || strings.Contains(got, "Approve this payload") {
		t.Errorf("after approving:\n%s", got)
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
