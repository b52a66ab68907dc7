package lifecycle

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/dataworkers/dw/configs"
	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/notify"
	"github.com/dataworkers/dw/pkg/orchestrators"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/quality"
	"github.com/dataworkers/dw/pkg/receipts"
	"github.com/dataworkers/dw/pkg/remediation"
	"github.com/dataworkers/dw/pkg/store"
	"github.com/dataworkers/dw/pkg/store/storetest"
	"github.com/dataworkers/dw/pkg/warehouse"
)

// estate is a store and the embedded default config in a temporary home, with a clock the test moves.
type estate struct {
	cfg   *config.Config
	st    *store.Store
	clock *time.Time
	incs  *incidents.Store
}

func newEstate(t *testing.T) *estate {
	t.Helper()
	home := t.TempDir()
	cfg, err := config.Load("", configs.Local, configs.LocalName, func(k string) (string, bool) {
		if k == "DW_HOME" {
			return home, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	_, opts := storetest.Location(t) // the engine under test: SQLite, or PostgreSQL in CI's second pass
	cfg.Store.URL = opts.URL
	st, err := store.Open(context.Background(), cfg.Store.Path, store.Options{URL: cfg.Store.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &estate{cfg: cfg, st: st, clock: new(time.Time)}
	*e.clock = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	e.incs = incidents.New(st, e.now)
	return e
}

func (e *estate) now() time.Time { return *e.clock }

// approvals is the approvals service, telling n (may be nil) about requests.
func (e *estate) approvals(n notify.Notifier) *approvals.Service {
	return approvals.New(e.st, e.cfg, e.now, n)
}

// executor runs actions on the orchestrators the config names.
func (e *estate) executor(svc *approvals.Service) *remediation.Executor {
	return remediation.New(e.st, e.cfg, svc, remediation.Backends{
		Airflow:  func() (*orchestrators.Airflow, error) { return orchestrators.NewAirflow(e.cfg.Airflow) },
		DBTCloud: func() (*orchestrators.DBTCloud, error) { return orchestrators.NewDBTCloud(e.cfg.DBT) },
	}, e.now)
}

// chain opens the receipt chain with its key beside the store.
func (e *estate) chain(ctx context.Context) (*receipts.Chain, error) {
	key, err := receipts.LoadOrCreateKey(receipts.KeyPath(e.st.Path()))
	if err != nil {
		return nil, err
	}
	return receipts.Open(ctx, e.st, key, e.now)
}

// service is the lifecycle over the estate; n, when set, is the Slack notifier.
func (e *estate) service(t *testing.T, n notify.Notifier) *Service {
	t.Helper()
	svc := e.approvals(n)
	src := plans.Sources{Store: e.st, Graph: graph.New(e.st, e.now), Config: e.cfg, Now: e.now}
	s, err := New(Deps{Store: e.st, Config: e.cfg, Approvals: svc, Executor: e.executor(svc), Receipts: e.chain, Plans: &src,
		Notifier: func() (notify.Notifier, error) { return n, nil }, Now: e.now, Actor: "dw-incidents"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// usageWarehouse points the estate at a SQLite warehouse with a week of hourly usage up to today's
// noon; today's egress_bytes is null in every other hour (the incident's data).
func (e *estate) usageWarehouse(t *testing.T, today time.Time) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wh.db")
	rw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rw.Close() })
	if _, err := rw.Exec(`CREATE TABLE usage_hourly (usage_id TEXT NOT NULL UNIQUE, account_id INTEGER, hour TEXT NOT NULL, egress_bytes BIGINT)`); err != nil {
		t.Fatal(err)
	}
	tx, err := rw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for h := today.Add(-6 * 24 * time.Hour); h.Before(today.Add(12 * time.Hour)); h = h.Add(time.Hour) {
		for acct := 1; acct <= 2; acct++ {
			var egress any = 1000 * acct
			if !h.Before(today) && h.Hour()%2 == 1 {
				egress = nil
			}
			if _, err := tx.Exec(`INSERT INTO usage_hourly VALUES (?, ?, ?, ?)`, fmt.Sprintf("u-%d-%s", acct, h.Format("2006010215")), acct, h.Format("2006-01-02 15:04:05"), egress); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e.cfg.Warehouse = &config.Warehouse{Engine: "sqlite", DSN: path, StatementTimeout: 10 * time.Second, MaxSampleRows: 5}
	return rw
}

// seedHistory runs checks on usage_hourly at noon on each of the six days before today and today,
// as dw-quality's monitor would, and returns today's report. It leaves the clock at today's noon.
func (e *estate) seedHistory(t *testing.T, today time.Time, checks ...quality.Check) *quality.Report {
	t.Helper()
	ctx := context.Background()
	wh, err := warehouse.Connect(e.cfg.Warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	checker := quality.NewChecker(wh, quality.NewHistory(e.st), e.now)
	var rep *quality.Report
	for day := 6; day >= 0; day-- {
		*e.clock = today.Add(time.Duration(-day)*24*time.Hour + 12*time.Hour)
		w, err := quality.ParseWindow(quality.WindowSpec{}, *e.clock)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err = checker.Run(ctx, quality.Request{Table: "usage_hourly", TimestampColumn: "hour", Window: w, Checks: checks}); err != nil {
			t.Fatal(err)
		}
	}
	return rep
}

// fixUsage fills today's missing egress_bytes of table.
func fixUsage(t *testing.T, rw *sql.DB, table string) {
	t.Helper()
	if _, err := rw.Exec(`UPDATE ` + table + ` SET egress_bytes = 1000 * account_id WHERE egress_bytes IS NULL`); err != nil {
		t.Fatal(err)
	}
}

// slackHook is a loopback incoming webhook that keeps what it was sent (Slack answers a plain "ok").
type slackHook struct {
	mu    sync.Mutex
	texts []string
}

func (h *slackHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]string
	if r.Method != http.MethodPost || r.URL.Path != "/services/T000/B000/XXXX" || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.texts = append(h.texts, body["text"])
	h.mu.Unlock()
	w.Write([]byte("ok"))
}

func (h *slackHook) sent() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.texts...)
}

// notifierFor serves a slackHook on loopback and returns the Slack notifier posting to it.
func notifierFor(t *testing.T, h *slackHook) notify.Notifier {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	n, err := notify.NewSlack(&config.Slack{WebhookURL: srv.URL + "/services/T000/B000/XXXX"})
	if err != nil || n == nil {
		t.Fatalf("slack notifier: %v", err)
	}
	return n
}

func tokenHash(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}
