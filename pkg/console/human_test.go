package console

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/store"
)

// browser starts headless Chromium for one test.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelT)
	return ctx
}

func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func signInAs(t *testing.T, ctx context.Context, base, name, token, waitFor string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/login"), chromedp.SendKeys("#approver-name", name),
		chromedp.SendKeys("#token", token), chromedp.Click("#sign-in"), chromedp.WaitVisible(waitFor)); err != nil {
		t.Fatal(err)
	}
}

// interruptedAction records an action as a crashed process leaves it: running, never finished.
func interruptedAction(t *testing.T, st *store.Store, incidentID int64) int64 {
	t.Helper()
	var id int64
	err := st.Write(context.Background(), func(tx *sql.Tx) error {
		return tx.QueryRow(`INSERT INTO actions(request_id, incident_id, class, target, payload, approved_by, status,
			started_at, finished_at, result, error, undo, steps, authority, rule, record, payload_sha256, plan_id, plan_order)
			VALUES (1, ?, 'pause_job', ?, '{"dag_id":"sync_metered_usage_to_stripe","is_paused":true}', 'streaming-platform-owner', 'running',
			?, ?, 'null', '', '{}', '[]', 'approval', '', '[]', '', NULL, NULL) RETURNING id`,
			incidentID, stripeDAG, store.Timestamp(time.Now().Add(-time.Hour)), store.Timestamp(time.Time{})).Scan(&id)
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAnApproverStopsResumesTriagesSettlesAndReadsAReceiptInChromium drives every decision the
// console offers besides approving, in a real browser, and checks each in the store.
func TestAnApproverStopsResumesTriagesSettlesAndReadsAReceiptInChromium(t *testing.T) {
	ctx := browser(t)
	_, svc, st := scenario(t)
	exec := remediation.New(st, &config.Config{}, svc, remediation.Backends{}, time.Now)
	actionID := interruptedAction(t, st, 1)
	key, err := receipts.LoadOrCreateKey(receipts.KeyPath(st.Path()))
	if err != nil {
		t.Fatal(err)
	}
	chain, err := receipts.Open(context.Background(), st, key, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	body := receipts.Body{Incident: receipts.IncidentSummary{ID: 1, Asset: usageTable, FailureMode: "null_rate", Severity: "sev1"},
		Cause: "v12 dropped response_bytes, which a statement pinned to v11 <b>sums</b>", Outcome: "resolved",
		Actions: []receipts.Action{{ID: 1, Class: config.ClassPauseJob, Target: stripeDAG, Status: "succeeded",
			Result: "paused <script>document.title='owned'</script> | done", Undo: "unpause", Authority: receipts.AuthorityApproval, RequestID: 1, ApprovedBy: "streaming-platform-owner"}}}
	rc, err := chain.Append(context.Background(), 1, body)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Sources{Approvals: svc, Receipts: chain, Incidents: incidents.New(st, time.Now), Store: st, Actions: exec}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	signInAs(t, ctx, ts.URL, "streaming-platform-owner", ownerToken, "#pending")

	// The org-wide stop: it asks for the token again, and a wrong one changes nothing.
	if err := chromedp.Do(ctx, chromedp.Click("#stop-panel summary"), chromedp.SendKeys("#stop-reason", "billing numbers wrong"),
		chromedp.SendKeys("#stop-token", "not-it"), chromedp.Click("#stop"), chromedp.WaitVisible("#error")); err != nil {
		t.Fatal(err)
	}
	if stop, _ := svc.Stop(context.Background()); stop.Stopped {
		t.Fatal("a wrong token stopped dispatch")
	}
	if err := chromedp.Do(ctx, chromedp.Click("#stop-panel summary"), chromedp.SendKeys("#stop-reason", "billing numbers wrong"),
		chromedp.SendKeys("#stop-token", ownerToken), chromedp.Click("#stop"), chromedp.WaitVisible("#resume")); err != nil {
		t.Fatal(err)
	}
	if banner := textOf(t, ctx, "#org-stop"); !strings.Contains(banner, "ON") || !strings.Contains(banner, "billing numbers wrong") {
		t.Errorf("stop banner %q", banner)
	}
	if err := svc.CheckNotStopped(context.Background()); err == nil {
		t.Fatal("the stop is not on in the store")
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys("#resume-token", ownerToken), chromedp.Click("#resume"), chromedp.WaitVisible("#stop-panel")); err != nil {
		t.Fatal(err)
	}
	if flash := textOf(t, ctx, "#flash"); !strings.Contains(flash, "lifted by streaming-platform-owner") {
		t.Errorf("resume flash %q", flash)
	}
	if err := svc.CheckNotStopped(context.Background()); err != nil {
		t.Fatalf("still stopped: %v", err)
	}

	// Severity and status on the incident page.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/incidents/1"), chromedp.WaitVisible("#severity-form"),
		chromedp.SetValue("#severity-select", "sev2"), chromedp.SendKeys("#severity-reason", "invoices go out next week"),
		chromedp.Click("#set-severity"), chromedp.WaitVisible("#flash")); err != nil {
		t.Fatal(err)
	}
	if sev := textOf(t, ctx, "#severity"); sev != "sev2" {
		t.Errorf("severity shown %q", sev)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/incidents/1"), chromedp.WaitVisible("#status-form"), chromedp.SetValue("#status-select", "investigating"), chromedp.SendKeys("#status-reason", "looking at the statement"),
		chromedp.Click("#set-status"), chromedp.WaitVisible("#flash")); err != nil {
		t.Fatal(err)
	}
	inc, err := incidents.New(st, time.Now).Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if inc.Severity != "sev2" || inc.Status != "investigating" {
		t.Errorf("incident after the forms: %s %s", inc.Severity, inc.Status)
	}
	timeline := textOf(t, ctx, "#timeline")
	for _, want := range []string{"streaming-platform-owner", "invoices go out next week", "looking at the statement"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("timeline lacks %q:\n%s", want, timeline)
		}
	}
	if opts := textOf(t, ctx, "#status-select"); strings.Contains(opts, "resolved") {
		t.Errorf("a person is offered resolved: %q", opts)
	}

	// Settling the interrupted action.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible("#interrupted")); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, ctx, "#interrupted"); !strings.Contains(got, "1 interrupted action") {
		t.Errorf("index: %q", got)
	}
	sel := func(s string) string { return s + "-" + itoa64(actionID) }
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/actions"), chromedp.WaitVisible("#actions"),
		chromedp.SendKeys(sel("#settle-reason"), "the DAG shows no run since 22:00"), chromedp.Click(sel("#settle-failed")),
		chromedp.WaitVisible("#flash")); err != nil {
		t.Fatal(err)
	}
	if flash := textOf(t, ctx, "#flash"); !strings.Contains(flash, "settled as failed by streaming-platform-owner") {
		t.Errorf("settle flash %q", flash)
	}
	if left, err := exec.Interrupted(context.Background()); err != nil || len(left) != 0 {
		t.Errorf("still interrupted: %v %v", left, err)
	}

	// The receipt reads as a document, and markup inside a value stays text.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/receipts/"+itoa64(rc.Seq)), chromedp.WaitVisible("#receipt")); err != nil {
		t.Fatal(err)
	}
	receiptText := textOf(t, ctx, "#receipt")
	if !strings.Contains(receiptText, "v12 dropped response_bytes") || strings.Contains(receiptText, `"cause"`) {
		t.Errorf("receipt text:\n%s", receiptText)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#receipt h1, #receipt h2, #receipt h3").length`)); err != nil || n == 0 {
		t.Errorf("the receipt has no headings (%v)", err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#receipt b, #receipt script").length`)); err != nil || n != 0 {
		t.Errorf("markup from a value was rendered (%d, %v)", n, err)
	}
	// The actions table, with the hostile result as text in its cell.
	cell, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#receipt table td")].map(td => td.textContent).join("\n")`))
	if err != nil || !strings.Contains(cell, "succeeded: paused <script>document.title='owned'</script> | done") {
		t.Errorf("the actions table lacks the result as text (%v):\n%s", err, cell)
	}
	if title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.title`)); err != nil || title == "owned" {
		t.Errorf("a script from a value ran (%q, %v)", title, err)
	}
	if footer := textOf(t, ctx, "#receipt p:last-child"); !strings.Contains(footer, "chain MAC "+rc.MAC) || !strings.Contains(footer, "previous "+rc.PrevMAC) {
		t.Errorf("footer %q lacks the chain MACs", footer)
	}
}

// TestTheReceiptPageRendersTheDocAsEscapedHTML reads the receipt page's HTML itself: the headings,
// the tables with one cell per column, code for identifiers, the footer's MACs, and every hostile
// value escaped as text, never markup.
func TestTheReceiptPageRendersTheDocAsEscapedHTML(t *testing.T) {
	srv, _, _ := scenario(t)
	hostile := "a | b `tick` <script>alert(1)</script>\nnext line"
	body := receipts.Body{Incident: receipts.IncidentSummary{ID: 1, Asset: usageTable, FailureMode: "null_rate", Severity: "sev1", Summary: hostile},
		PlanID: 2, Cause: "cause " + hostile, Outcome: "resolved",
		Evidence:  []receipts.Evidence{{Kind: "schema_diff", Source: "registry", Detail: hostile}},
		Proposals: []receipts.Proposal{{Order: 1, Class: config.ClassPauseJob, Target: stripeDAG, Title: "Pause " + hostile, Executor: "data_workers", RequestID: 1}},
		Actions: []receipts.Action{{ID: 5, Class: config.ClassPauseJob, Target: stripeDAG, Status: "succeeded", Result: hostile, Undo: "unpause",
			Authority: receipts.AuthorityApproval, RequestID: 1, ApprovedBy: "streaming-platform-owner"}},
		Undo: []string{"unpause " + hostile}}
	rc, err := srv.receipts.Append(context.Background(), 1, body)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	client := &http.Client{Jar: &cookieJar{}}
	if resp, err := client.PostForm(ts.URL+"/login", url.Values{"approver": {"streaming-platform-owner"}, "token": {ownerToken}}); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %v %v", resp, err)
	}
	resp, err := client.Get(ts.URL + "/receipts/" + itoa64(rc.Seq))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("receipt page: %v %v", resp, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	page := string(raw)
	start, end := strings.Index(page, `<article id="receipt"`), strings.Index(page, "</article>")
	if start < 0 || end < start {
		t.Fatalf("no receipt article:\n%s", page)
	}
	article := page[start:end]
	escaped := "a | b `tick` &lt;script&gt;alert(1)&lt;/script&gt;\nnext line"
	for _, want := range []string{
		"<h1>Receipt #" + itoa64(rc.Seq) + " — incident #1</h1>",
		"<li><strong>Asset:</strong> <code>" + usageTable + "</code></li>",
		"<h2>Cause</h2>", "<p>cause " + escaped + "</p>",
		"<li><strong>schema_diff</strong> (registry): " + escaped + "</li>",
		"<h2>Plan</h2>", "<p>Plan #2.</p>",
		"<th>Approval request</th>", "<td>Pause " + escaped + "</td>", "<td>#1</td>",
		"<h2>Actions</h2>", "<td><code>" + stripeDAG + "</code></td>", "<td>succeeded: " + escaped + "</td>",
		"<td>approval #1 by streaming-platform-owner</td>",
		"<h2>Undo</h2>", "<li>unpause " + escaped + "</li>",
		"chain MAC <code>" + rc.MAC + "</code> (previous <code>" + rc.PrevMAC + "</code>). <code>verify_receipts</code> checks the whole chain.",
	} {
		if !strings.Contains(article, want) {
			t.Errorf("the receipt lacks %q:\n%s", want, article)
		}
	}
	if strings.Contains(article, "<script>") {
		t.Errorf("a value's markup reached the page:\n%s", article)
	}
	// Each table row has one cell per header, whatever "|" the values hold.
	for _, table := range strings.Split(article, "<table>")[1:] {
		table = table[:strings.Index(table, "</table>")]
		cols := strings.Count(table[:strings.Index(table, "</thead>")], "<th>")
		for _, row := range strings.Split(table, "<tr>")[2:] {
			if n := strings.Count(row, "<td>"); n != cols {
				t.Errorf("a row has %d cells for %d columns: %s", n, cols, row)
			}
		}
	}
}

// TestWithoutApproversTheConsoleSaysSoInChromium: no sign-in form nobody can pass, the fix named,
// and no approver name told to whoever tries names.
func TestWithoutApproversTheConsoleSaysSoInChromium(t *testing.T) {
	ctx := browser(t)
	_, svc, st := scenario(t)
	srv, err := New(Sources{Approvals: svc, Store: st, Config: &config.Config{Domains: []config.Domain{{Name: "billing", Assets: []string{"*"}}}}}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible("#no-approvers")); err != nil {
		t.Fatal(err)
	}
	page := textOf(t, ctx, "#no-approvers")
	if !strings.Contains(page, "names no approvers") || !strings.Contains(page, "domains[].approvers") {
		t.Errorf("page: %s", page)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("form#login").length`)); err != nil || n != 0 {
		t.Errorf("a sign-in form is offered (%d, %v)", n, err)
	}
	// A posted sign-in is refused the same way.
	resp, err := http.PostForm(ts.URL+"/login", url.Values{"approver": {"streaming-platform-owner"}, "token": {ownerToken}})
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-in without approvers: %v %v", resp.Status, err)
	}
}

// TestSignInDoesNotTellWhichNamesExist: a wrong token and an unknown name get the same answer.
func TestSignInDoesNotTellWhichNamesExist(t *testing.T) {
	srv, _, _ := scenario(t)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	answer := func(name, token string) string {
		resp, err := http.PostForm(ts.URL+"/login", url.Values{"approver": {name}, "token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: %s", name, resp.Status)
		}
		return b.String()
	}
	known, unknown := answer("streaming-platform-owner", "wrong"), answer("nobody-here", "wrong")
	if known != unknown || strings.Contains(known, "streaming-platform-owner") {
		t.Errorf("the answers differ or name the approver:\n%s\n---\n%s", known, unknown)
	}
}

// TestDecisionFormsNeedCSRF: the new forms are refused without the session's CSRF token.
func TestDecisionFormsNeedCSRF(t *testing.T) {
	srv, svc, _ := scenario(t)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	client := &http.Client{Jar: &cookieJar{}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := client.PostForm(ts.URL+"/login", url.Values{"approver": {"streaming-platform-owner"}, "token": {ownerToken}}); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %v", err)
	}
	for path, form := range map[string]url.Values{
		"/stop":                 {"reason": {"x"}, "token": {ownerToken}},
		"/incidents/1/severity": {"severity": {"sev4"}, "reason": {"x"}},
		"/incidents/1/status":   {"status": {"expected"}, "reason": {"x"}},
	} {
		resp, err := client.PostForm(ts.URL+path, form)
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s without csrf: %v %v", path, resp.Status, err)
		}
	}
	if stop, _ := svc.Stop(context.Background()); stop.Stopped {
		t.Error("a forged form stopped dispatch")
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
