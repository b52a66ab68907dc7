package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/store/storetest"
	"github.com/dataworkers/dw/pkg/timeline"
)

func hash(tok string) string { s := sha256.Sum256([]byte(tok)); return hex.EncodeToString(s[:]) }

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func policy() *config.Config {
	return &config.Config{
		Domains: []config.Domain{{
			Name:   "billing",
			Assets: []string{"job:airflow/*", "schema:api-usage-*"},
			Owners: []string{"billing-data-owner"},
			Approvers: []config.Approver{
				{Name: "platform-owner", TokenSHA256: hash("tok-platform")},
				{Name: "billing-data-owner", TokenSHA256: hash("tok-billing")},
			},
			Escalation: []string{"head-of-data", "cto"},
			Autonomy:   "L2",
		}},
		ActionClasses: map[string]config.ActionClass{config.ClassPauseJob: {Expiry: 30 * time.Minute}},
	}
}

func newService(t *testing.T, n notify.Notifier) (*Service, *clock) {
	t.Helper()
	st := storetest.Open(t)
	c := &clock{t: time.Date(2026, 11, 29, 15, 20, 0, 0, time.UTC)}
	cfg := policy()
	// Escalation names resolve to approvers declared in any domain.
	cfg.Domains = append(cfg.Domains, config.Domain{Name: "platform", Assets: []string{"kafka:*"}, Autonomy: "L1",
		Approvers: []config.Approver{{Name: "head-of-data", TokenSHA256: hash("tok-head")}, {Name: "cto", TokenSHA256: hash("tok-cto")}}})
	return New(st, cfg, c.now, n), c
}

var pausePayload = map[string]any{"dag_id": "sync_metered_usage_to_stripe", "is_paused": true}

func pauseProposal() Proposal {
	return Proposal{IncidentID: 1, Class: config.ClassPauseJob, Target: "job:airflow/sync_metered_usage_to_stripe",
		Title: "Pause the 23:00 Stripe sync", Payload: pausePayload}
}

func TestRequestRoutesToNamedApproversAndCopiesOwners(t *testing.T) {
	s, _ := newService(t, nil)
	r, err := s.Request(context.Background(), pauseProposal(), "dw-incidents", []string{"catalog-owner"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusPending || r.Domain != "billing" || r.Executor != config.ExecutorDataWorkers ||
		strings.Join(r.Approvers, ",") != "platform-owner,billing-data-owner" || strings.Join(r.Copied, ",") != "catalog-owner" {
		t.Fatalf("%+v", r)
	}
	var reordered map[string]any
	json.Unmarshal([]byte(`{ "is_paused": true, "dag_id": "sync_metered_usage_to_stripe" }`), &reordered)
	_, h, _ := Canonical(reordered)
	if r.PayloadSHA256 != h {
		t.Error("key order or spacing changed the payload hash")
	}
	if len(r.Events) != 1 || r.Events[0].Kind != "requested" {
		t.Errorf("events = %+v", r.Events)
	}
}

func TestRequestsOutsideAnyDomainOrClassAreRefused(t *testing.T) {
	s, _ := newService(t, nil)
	p := pauseProposal()
	p.Target = "job:dagster/other"
	if _, err := s.Request(context.Background(), p, "dw-incidents", nil); err == nil || !strings.Contains(err.Error(), "no domain") {
		t.Errorf("err = %v", err)
	}
	p = pauseProposal()
	p.Class = "drop_table"
	if _, err := s.Request(context.Background(), p, "dw-incidents", nil); err == nil || !strings.Contains(err.Error(), "unknown action class") {
		t.Errorf("err = %v", err)
	}
	p = pauseProposal()
	p.Payload = nil
	if _, err := s.Request(context.Background(), p, "dw-incidents", nil); err == nil || !strings.Contains(err.Error(), "payload is empty") {
		t.Errorf("empty payload: %v", err)
	}
}

func TestApprovalIsBoundToTheExactPayload(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	r, _ := s.Request(ctx, pauseProposal(), "dw-incidents", nil)
	// The approver must name the hash they reviewed.
	if _, err := s.Decide(ctx, Decision{RequestID: r.ID, Approver: "platform-owner", Token: "tok-platform", Approve: true, PayloadSHA256: strings.Repeat("0", 64)}); !errors.Is(err, ErrNotAuthorized) {
		t.Fatalf("approving another hash: %v", err)
	}
	got, err := s.Decide(ctx, Decision{RequestID: r.ID, Approver: "platform-owner", Token: "tok-platform", Approve: true, PayloadSHA256: r.PayloadSHA256, Comment: "hold it"})
	if err != nil || got.Status != StatusApproved || got.DecidedBy != "platform-owner" || got.DecidedAt == nil {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := s.Authorize(ctx, r.ID, map[string]any{"is_paused": true, "dag_id": "sync_metered_usage_to_stripe"}); err != nil {
		t.Fatalf("the same payload must stay authorized: %v", err)
	}
	edited := map[string]any{"dag_id": "sync_metered_usage_to_stripe", "is_paused": false}
	if _, err := s.Authorize(ctx, r.ID, edited); !errors.Is(err, ErrVoided) {
		t.Fatalf("an edited payload must void the approval: %v", err)
	}
}

func TestWrongTokenSelfApprovalAndOutsidersAreRefused(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	r, _ := s.Request(ctx, pauseProposal(), "platform-owner", nil)
	cases := []struct {
		d    Decision
		want string
	}{
		{Decision{Approver: "billing-data-owner", Token: "guess"}, "wrong token"},
		{Decision{Approver: "platform-owner", Token: "tok-platform"}, "cannot decide it"},
		{Decision{Approver: "head-of-data", Token: "tok-head"}, "not an approver of request"},
		{Decision{Approver: "dw-incidents", Token: ""}, "not a named approver"},
	}
	for _, c := range cases {
		c.d.RequestID, c.d.Approve, c.d.PayloadSHA256 = r.ID, true, r.PayloadSHA256
		if _, err := s.Decide(ctx, c.d); !errors.Is(err, ErrNotAuthorized) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.d.Approver, err, c.want)
		}
	}
	got, _ := s.Get(ctx, r.ID)
	if got.Status != StatusPending {
		t.Fatalf("refused decisions changed the status to %s", got.Status)
	}
	refused := 0
	for _, e := range got.Events {
		if e.Kind == "refused" {
			refused++
		}
	}
	if refused != len(cases) {
		t.Errorf("%d refusals recorded, want %d", refused, len(cases))
	}
}

func TestExpiryEscalatesThenExpiresAndNeverGrants(t *testing.T) {
	s, c := newService(t, nil)
	ctx := context.Background()
	r, _ := s.Request(ctx, pauseProposal(), "dw-incidents", nil)
	if !r.ExpiresAt.Equal(c.t.Add(30 * time.Minute)) {
		t.Fatalf("expiry %v", r.ExpiresAt)
	}
	c.advance(31 * time.Minute)
	got, _ := s.Get(ctx, r.ID)
	if got.Status != StatusPending || got.EscalationLevel != 1 || !slices.Contains(got.Approvers, "head-of-data") || len(got.Escalation) != 1 {
		t.Fatalf("after one expiry: %+v", got)
	}
	// head-of-data may now decide.
	if _, err := s.Decide(ctx, Decision{RequestID: r.ID, Approver: "head-of-data", Token: "tok-head", Approve: false, Comment: "not yet"}); err != nil {
		t.Fatal(err)
	}
	// A second request left alone runs through the whole chain and expires, never approved.
	r2, _ := s.Request(ctx, pauseProposal(), "dw-incidents", nil)
	c.advance(24 * time.Hour)
	got, _ = s.Get(ctx, r2.ID)
	if got.Status != StatusExpired || got.EscalationLevel != 2 || got.DecidedBy != "" {
		t.Fatalf("after the chain ran out: %+v", got)
	}
	if _, err := s.Authorize(ctx, r2.ID, pausePayload); err == nil {
		t.Fatal("an expired request authorized execution")
	}
	if _, err := s.Decide(ctx, Decision{RequestID: r2.ID, Approver: "platform-owner", Token: "tok-platform", Approve: true, PayloadSHA256: got.PayloadSHA256}); err == nil {
		t.Fatal("an expired request was approved")
	}
	kinds := []string{}
	for _, e := range got.Events {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != "requested,escalated,escalated,expired" {
		t.Errorf("events %v", kinds)
	}
}

func TestStopNeedsAnAuthenticatedApproverAndBlocksDispatch(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	if err := s.CheckNotStopped(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetStop(ctx, "platform-owner", "wrong", true, "x"); !errors.Is(err, ErrNotAuthorized) {
		t.Fatalf("stop with a wrong token: %v", err)
	}
	if _, err := s.SetStop(ctx, "platform-owner", "tok-platform", true, "billing numbers wrong"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckNotStopped(ctx); !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "platform-owner") {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.SetStop(ctx, "billing-data-owner", "tok-billing", false, "fixed"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckNotStopped(ctx); err != nil {
		t.Fatal(err)
	}
}

// slackFixture is an incoming webhook: POST a JSON {"text": …}, answer "ok".
func slackFixture(t *testing.T, status int) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Text string }
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, body.Text)
		mu.Unlock()
		w.WriteHeader(status)
		if status == 200 {
			w.Write([]byte("ok"))
		} else {
			w.Write([]byte("no_service"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestRequestsAndEscalationsAreAnnouncedOnSlack(t *testing.T) {
	srv, got := slackFixture(t, 200)
	sl, err := notify.NewSlack(&config.Slack{WebhookURL: srv.URL + "/services/T000/B000/secretpath"})
	if err != nil {
		t.Fatal(err)
	}
	s, c := newService(t, sl)
	r, _ := s.Request(context.Background(), pauseProposal(), "dw-incidents", nil)
	c.advance(31 * time.Minute)
	s.Get(context.Background(), r.ID)
	if len(*got) != 2 || !strings.Contains((*got)[0], "Approval needed (#1, pause_job)") || !strings.Contains((*got)[1], "Escalated to head-of-data") {
		t.Fatalf("slack got %q", *got)
	}
}

func TestAFailingWebhookIsRecordedNotFatalAndKeepsItsSecret(t *testing.T) {
	srv, _ := slackFixture(t, 404)
	sl, _ := notify.NewSlack(&config.Slack{WebhookURL: srv.URL + "/services/T000/B000/secretpath"})
	s, _ := newService(t, sl)
	r, err := s.Request(context.Background(), pauseProposal(), "dw-incidents", nil)
	if err != nil {
		t.Fatal(err)
	}
	var failed timeline.Event
	for _, e := range r.Events {
		if e.Kind == "notify_failed" {
			failed = e
		}
	}
	if failed.Kind == "" || strings.Contains(failed.Detail, "secretpath") || !strings.Contains(failed.Detail, "no_service") {
		t.Fatalf("events %+v", r.Events)
	}
}

// L0 answers questions only and L1 changes nothing: nothing is routed for them; L2 and above route.
func TestRequestNeedsEveryCoveringDomainAtL2OrAbove(t *testing.T) {
	for _, tc := range []struct {
		level string
		ok    bool
	}{{"L0", false}, {"L1", false}, {"L2", true}, {"L3", true}, {"L4", true}} {
		t.Run(tc.level, func(t *testing.T) {
			s, _ := newService(t, nil)
			s.cfg.Domains[0].Autonomy = tc.level
			r, err := s.Request(context.Background(), pauseProposal(), "dw-incidents", nil)
			if tc.ok {
				if err != nil || r.Status != StatusPending {
					t.Fatalf("%+v %v", r, err)
				}
				return
			}
			if !errors.Is(err, ErrAutonomy) || !strings.Contains(err.Error(), `domain billing`) || !strings.Contains(err.Error(), `"`+tc.level+`"`) ||
				!strings.Contains(err.Error(), "domains[0].autonomy") {
				t.Fatalf("err = %v, want ErrAutonomy naming the domain, its level and domains[0].autonomy", err)
			}
			if rs, _ := s.List(context.Background(), "", 0); len(rs) != 0 {
				t.Fatalf("%d requests stored", len(rs))
			}
		})
	}
	// The first domain routes the request, but every domain covering the target must allow changes.
	s, _ := newService(t, nil)
	s.cfg.Domains = append(s.cfg.Domains, config.Domain{Name: "observed", Assets: []string{"job:airflow/sync_*"}, Autonomy: "L1"})
	if _, err := s.Request(context.Background(), pauseProposal(), "dw-incidents", nil); !errors.Is(err, ErrAutonomy) || !strings.Contains(err.Error(), "domains[2].autonomy") {
		t.Fatalf("err = %v", err)
	}
}

// The config may be lowered after an approval: Authorize, which every execution path calls right
// before running, refuses then, and the same approval is good again once the domain is back at L2.
func TestAuthorizeRefusesOnceTheDomainIsBelowL2(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, nil)
	r, err := s.Request(ctx, pauseProposal(), "dw-incidents", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, Decision{RequestID: r.ID, Approver: "platform-owner", Token: "tok-platform", Approve: true, PayloadSHA256: r.PayloadSHA256}); err != nil {
		t.Fatal(err)
	}
	s.cfg.Domains[0].Autonomy = "L1"
	if _, err := s.Authorize(ctx, r.ID, pausePayload); !errors.Is(err, ErrAutonomy) || !strings.Contains(err.Error(), "domains[0].autonomy") {
		t.Fatalf("err = %v", err)
	}
	// A target no domain covers any more has no named approver: refused too.
	s.cfg.Domains[0].Assets = []string{"job:dagster/*"}
	if _, err := s.Authorize(ctx, r.ID, pausePayload); !errors.Is(err, ErrAutonomy) || !strings.Contains(err.Error(), "no domain in the config covers") {
		t.Fatalf("err = %v", err)
	}
	s.cfg.Domains[0].Assets, s.cfg.Domains[0].Autonomy = []string{"job:airflow/*"}, "L2"
	if _, err := s.Authorize(ctx, r.ID, pausePayload); err != nil {
		t.Fatal(err)
	}
}

// Over HTTP an agent requests on a person's behalf ("dw-incidents for platform-owner"): that person
// caused the request and may not approve it, while another approver still may.
func TestApproverCannotDecideARequestTheirOwnCallCaused(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	r, err := s.Request(ctx, pauseProposal(), "dw-incidents for platform-owner", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, Decision{RequestID: r.ID, Approver: "platform-owner", Token: "tok-platform", Approve: true, PayloadSHA256: r.PayloadSHA256}); !errors.Is(err, ErrNotAuthorized) || !strings.Contains(err.Error(), "cannot decide it") {
		t.Fatalf("self-approval through an agent: %v", err)
	}
	if !r.IsRequester("platform-owner") || r.IsRequester("billing-data-owner") || r.IsRequester("") {
		t.Fatalf("IsRequester wrong for %q", r.RequestedBy)
	}
	if got, err := s.Decide(ctx, Decision{RequestID: r.ID, Approver: "billing-data-owner", Token: "tok-billing", Approve: true, PayloadSHA256: r.PayloadSHA256}); err != nil || got.Status != StatusApproved {
		t.Fatalf("another approver: %+v %v", got, err)
	}
}

// Decided lists the newest decided requests, newest first, up to its limit, and never a pending
// one; the lists by status and incident read only the filters given.
func TestDecidedListsTheNewestDecisionsAndStopsAtItsLimit(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	var ids []int64
	for i := range 5 {
		r, err := s.Request(ctx, pauseProposal(), "dw-incidents", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		if i == 3 {
			continue // left pending
		}
		if _, err := s.Decide(ctx, Decision{RequestID: r.ID, Approver: "platform-owner", Token: "tok-platform", Approve: i%2 == 0, PayloadSHA256: r.PayloadSHA256}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Decided(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []int64
	for _, r := range got {
		gotIDs = append(gotIDs, r.ID)
	}
	if want := []int64{ids[4], ids[2], ids[1]}; fmt.Sprint(gotIDs) != fmt.Sprint(want) {
		t.Errorf("decided %v, want the newest three decided %v", gotIDs, want)
	}
	if _, err := s.Decided(ctx, 0); err == nil {
		t.Error("a limit of 0 was accepted")
	}
	pending, err := s.List(ctx, StatusPending, 0)
	if err != nil || len(pending) != 1 || pending[0].ID != ids[3] {
		t.Errorf("pending %+v, %v", pending, err)
	}
	if all, err := s.List(ctx, "", 0); err != nil || len(all) != 5 || all[0].ID != ids[4] {
		t.Errorf("every request: %d, %v", len(all), err)
	}
}
