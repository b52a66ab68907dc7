package incidents

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store/storetest"
)

func newStore(t *testing.T) (*Store, *time.Time) {
	t.Helper()
	st := storetest.Open(t)
	now := time.Date(2026, 11, 29, 15, 5, 0, 0, time.UTC)
	return New(st, func() time.Time { return now }), &now
}

const usage = "warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY"

func TestASecondFailureOfTheSameKindJoinsTheOpenIncident(t *testing.T) {
	s, now := newStore(t)
	ctx := context.Background()
	first, err := s.Open(ctx, usage, "null_rate", "sev2", "egress_bytes 18% null", "dw-quality")
	if err != nil || !first.Opened {
		t.Fatalf("%+v %v", first, err)
	}
	*now = now.Add(time.Hour)
	second, _ := s.Open(ctx, usage, "null_rate", "sev2", "egress_bytes 21% null", "dw-quality")
	if second.Opened || second.ID != first.ID {
		t.Fatalf("second failure opened a new incident: %+v", second)
	}
	other, _ := s.Open(ctx, usage, "volume", "sev2", "rows low", "dw-quality")
	if !other.Opened || other.ID == first.ID {
		t.Fatalf("another failure mode must open its own incident: %+v", other)
	}
	inc, err := s.Get(ctx, first.ID)
	if err != nil || inc.Occurrences != 2 || inc.Summary != "egress_bytes 21% null" || len(inc.Events) != 2 || inc.Events[1].Kind != "joined" {
		t.Fatalf("%+v %v", inc, err)
	}
}

func TestConcurrentFailuresOpenExactlyOneIncident(t *testing.T) {
	s, _ := newStore(t)
	var wg sync.WaitGroup
	ids := make([]int64, 10)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.Open(context.Background(), usage, "null_rate", "sev2", "x", "dw-quality")
			if err != nil {
				t.Error(err)
			}
			ids[i] = o.ID
		}()
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("ids %v", ids)
		}
	}
}

func TestStatusLifecycleAndHistory(t *testing.T) {
	s, now := newStore(t)
	ctx := context.Background()
	o, _ := s.Open(ctx, usage, "null_rate", "sev2", "egress_bytes 18% null", "dw-quality")
	if err := s.RecordDiagnosis(ctx, o.ID, `{"cause":"v12"}`, "v12 of api-usage-value removed response_bytes", "dw-incidents"); err != nil {
		t.Fatal(err)
	}
	inc, _ := s.Get(ctx, o.ID)
	if inc.Status != StatusInvestigating || inc.Cause == "" {
		t.Fatalf("diagnosis did not move the incident: %+v", inc)
	}
	if _, err := s.SetStatus(ctx, o.ID, "closed", "x", ""); err == nil || !strings.Contains(err.Error(), "use one of") {
		t.Fatalf("bad status: %v", err)
	}
	*now = now.Add(8 * time.Hour)
	inc, err := s.SetStatus(ctx, o.ID, StatusResolved, "dw-incidents", "v13 registered; usage-hourly-v2 verified")
	if err != nil || inc.ResolvedAt == nil || inc.Resolution == "" {
		t.Fatalf("%+v %v", inc, err)
	}
	if _, err := s.SetStatus(ctx, o.ID, StatusOpen, "x", ""); err == nil {
		t.Fatal("a resolved incident was reopened")
	}
	// A new failure after resolution opens a new incident; history shows both with cause and resolution.
	again, _ := s.Open(ctx, usage, "null_rate", "sev2", "again", "dw-quality")
	if !again.Opened {
		t.Fatal("a failure after resolution joined the closed incident")
	}
	hist, err := s.History(ctx, Query{Assets: []string{usage, "dbt:model.billing.fct_billable_egress"}})
	if err != nil || len(hist) != 2 || hist[0].ID != again.ID || hist[1].Cause == "" || hist[1].Resolution == "" {
		t.Fatalf("%+v %v", hist, err)
	}
	closed, _ := s.History(ctx, Query{Status: "closed"})
	if len(closed) != 1 || closed[0].ID != o.ID {
		t.Fatalf("closed: %+v", closed)
	}
}

func TestTheRuleSetsSeverityButNeverLowersAPersons(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	o, err := s.Open(ctx, usage, "null_rate", "sev2", "egress_bytes 18% null", "dw-quality")
	if err != nil {
		t.Fatal(err)
	}
	// The rule may lower the opening default: no person set it.
	if sev, err := s.SetDomainAndSeverity(ctx, o.ID, "billing", "sev3", "dw-incidents", "nothing downstream"); err != nil || sev != "sev3" {
		t.Fatalf("%s %v", sev, err)
	}
	inc, _ := s.Get(ctx, o.ID)
	if inc.Severity != "sev3" || inc.Domain != "billing" || inc.Events[len(inc.Events)-1].Detail != "sev2 → sev3: nothing downstream" {
		t.Fatalf("%+v", inc)
	}
	// An unchanged decision writes nothing.
	if _, err := s.SetDomainAndSeverity(ctx, o.ID, "billing", "sev3", "dw-incidents", "again"); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Get(ctx, o.ID); len(again.Events) != len(inc.Events) {
		t.Errorf("an unchanged severity added an event: %+v", again.Events)
	}
	if err := s.SetSeverity(ctx, o.ID, "sev1", "alice@example.com", "finance escalated"); err != nil {
		t.Fatal(err)
	}
	if sev, who := PersonSeverity(mustGet(t, s, o.ID)); sev != "sev1" || who != "alice@example.com" {
		t.Errorf("person severity %s by %s", sev, who)
	}
	sev, err := s.SetDomainAndSeverity(ctx, o.ID, "billing", "sev2", "dw-incidents", "downstream models")
	if err != nil || sev != "sev1" || mustGet(t, s, o.ID).Severity != "sev1" {
		t.Fatalf("a person's sev1 was lowered to %s (%v)", sev, err)
	}
	// A person's lower severity does not stop the rule raising it.
	if err := s.SetSeverity(ctx, o.ID, "sev4", "bob@example.com", "looks harmless"); err != nil {
		t.Fatal(err)
	}
	if sev, _ := s.SetDomainAndSeverity(ctx, o.ID, "billing", "sev1", "dw-incidents", "sink:stripe"); sev != "sev1" {
		t.Errorf("rule could not raise above a person's sev4: %s", sev)
	}
	for _, bad := range []string{"", "SEV1", "sev5", "critical"} {
		if err := s.SetSeverity(ctx, o.ID, bad, "alice", "x"); err == nil {
			t.Errorf("severity %q accepted", bad)
		}
		if _, err := s.SetDomainAndSeverity(ctx, o.ID, "", bad, "dw-incidents", "x"); err == nil {
			t.Errorf("rule severity %q accepted", bad)
		}
	}
	if err := s.SetSeverity(ctx, o.ID, "sev1", " ", "x"); err == nil {
		t.Error("a person's severity without a name was accepted")
	}
	if err := s.SetSeverity(ctx, 999, "sev1", "alice", "x"); err == nil {
		t.Error("unknown incident accepted")
	}
}

func mustGet(t *testing.T, s *Store, id int64) Incident {
	t.Helper()
	inc, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return inc
}

func TestAnExplicitOpeningSeverityIsNeverLoweredByTheRule(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	o, err := s.OpenWithSeverity(ctx, usage, "null_rate", "sev1", "egress_bytes 18% null", "oncall-bot")
	if err != nil || !o.Opened {
		t.Fatalf("%+v %v", o, err)
	}
	if sev, who := PersonSeverity(mustGet(t, s, o.ID)); sev != "sev1" || who != "oncall-bot" {
		t.Fatalf("the opening severity is not recorded as set: %s by %s", sev, who)
	}
	sev, err := s.RecordDiagnosisAndSeverity(ctx, o.ID, `{"cause":"x"}`, "v12 removed response_bytes", "billing", "sev3", "dw-incidents", "nothing downstream")
	if err != nil || sev != "sev1" {
		t.Fatalf("the rule lowered an explicit sev1 to %s (%v)", sev, err)
	}
	inc := mustGet(t, s, o.ID)
	if inc.Severity != "sev1" || inc.Domain != "billing" || inc.Cause != "v12 removed response_bytes" || inc.Status != StatusInvestigating {
		t.Fatalf("%+v", inc)
	}
	if d, _ := s.Diagnosis(ctx, o.ID); d != `{"cause":"x"}` {
		t.Errorf("diagnosis %q", d)
	}
	// Joining with a milder severity keeps the open incident's; a worse one raises it.
	if _, err := s.OpenWithSeverity(ctx, usage, "null_rate", "sev3", "again", "oncall-bot"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, o.ID).Severity; got != "sev1" {
		t.Errorf("joining with sev3 changed sev1 to %s", got)
	}
	o2, _ := s.OpenWithSeverity(ctx, "warehouse:snowflake/X.Y.Z", "volume", "sev3", "low", "oncall-bot")
	if _, err := s.OpenWithSeverity(ctx, "warehouse:snowflake/X.Y.Z", "volume", "sev2", "lower", "oncall-bot"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, o2.ID).Severity; got != "sev2" {
		t.Errorf("joining with a worse sev2 left %s", got)
	}
	if _, err := s.OpenWithSeverity(ctx, usage, "volume", "sev9", "x", "a"); err == nil {
		t.Error("sev9 accepted")
	}
	// No severity computed: the incident keeps its own; an unknown incident writes nothing.
	if sev, err := s.RecordDiagnosisAndSeverity(ctx, o2.ID, "{}", "c", "", "", "dw-incidents", "unknown"); err != nil || sev != "sev2" {
		t.Errorf("%s %v", sev, err)
	}
	if _, err := s.RecordDiagnosisAndSeverity(ctx, 999, "{}", "c", "", "sev2", "dw-incidents", "x"); err == nil {
		t.Error("unknown incident accepted")
	}
}

// History lists the newest incidents from an index whatever the filters, never by sorting every
// incident: the start-time index (migration 0018) for every asset, the asset index for named ones.
// On SQLite, by EXPLAIN QUERY PLAN.
func TestHistoryIsReadNewestFirstFromAnIndex(t *testing.T) {
	st := storetest.Open(t)
	for name, c := range map[string]struct {
		q     Query
		index string
	}{
		"every incident": {Query{}, "incidents_by_opened"},
		"open ones":      {Query{Status: "open", Limit: 20}, "incidents_by_opened"},
		"since":          {Query{Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, "incidents_by_opened"},
		"one asset":      {Query{Assets: []string{usage}}, "incidents_by_asset"},
	} {
		clause, args := historySelection(c.q)
		if p := storetest.ExplainSQLite(t, st, "SELECT id FROM incidents "+clause, args...); !strings.Contains(p, "INDEX "+c.index) || strings.Contains(p, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s: incidents are listed with %q, want %s newest first with no sort", name, p, c.index)
		}
	}
}
