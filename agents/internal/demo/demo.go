// Package demo replays the design's acceptance story on one machine: it starts loopback stand-ins
// for Kafka (kfake), Schema Registry (srfake with our compatibility checker), Kafka Connect,
// Confluent Cloud (Flink statements, Tableflow), Airflow and dbt Cloud, and a SQLite warehouse;
// loads the scenario's real-format artifacts; produces the gateway's v11 and v12 events, reads them
// back from the broker and lands the hourly rows the v11-pinned statement computes from them
// (decoded with the v11 reader schema); then drives the five built agents
// over stdio exactly as an MCP client does, and the approver's steps through the human CLI. Every
// step's facts are checked: Run fails when one does not hold.
package demo

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	_ "time/tzdata" // the story's Etc/GMT±N zone loads on machines without /usr/share/zoneinfo

	"github.com/hamba/avro/v2"
	_ "github.com/mattn/go-sqlite3"
)

// Options configure a run.
type Options struct {
	// Root is the repository (scenario artifacts); Bin holds the five built agents.
	Root, Bin string
	// Home is DW_HOME; the run writes under Home/demo and never touches Home's own store.
	Home string
	// StoreURL, when set (DW_STORE_URL), puts the agents' store on that PostgreSQL database, in a
	// schema of its own (dw_demo) that each run empties; the receipts key stays under Home/demo.
	StoreURL string
	// Out receives the timeline as it happens (nil: nothing is printed).
	Out io.Writer
	// Now is the clock the story's data is anchored to (default time.Now). The agents keep their
	// own clocks, so it must stay the real time; tests use it only to pin a run's anchor.
	Now func() time.Time

	// onProgress (tests) sees each progress notification an agent sends during a tool call.
	onProgress func(agent, message string)
}

// Result is what the run established; every field was checked before Run returned it.
type Result struct {
	Dir string `json:"dir"`
	// StoreURL is the PostgreSQL store the agents used ("" for the SQLite file under Dir); never
	// printed, since it may hold a password.
	StoreURL   string   `json:"-"`
	Config     string   `json:"config"`
	Timeline   Timeline `json:"timeline"`
	IncidentID int64    `json:"incident_id"`
	// The first failing check opened the incident; the second joined it.
	Opened, Joined bool
	NullShare      float64 `json:"null_share"`
	// LakeNullShare is the same share, read from the Iceberg table's manifests.
	LakeNullShare float64 `json:"lake_null_share"`
	Cause         string  `json:"cause"`
	// CauseEvidence is the top candidate's evidence lines.
	CauseEvidence []string `json:"cause_evidence"`
	BlastRadius   []string `json:"blast_radius"`
	ExternalSinks []string `json:"external_sinks"`
	ScheduledJobs []string `json:"scheduled_jobs"`
	// PlanID is the stored plan the approvals came from (0: proposals authored by the demo).
	PlanID      int64   `json:"plan_id"`
	RequestIDs  []int64 `json:"request_ids"`
	DAGPaused   bool    `json:"dag_paused"`
	OwnerSteps  []string
	V13Version  int    `json:"v13_version"`
	Resolved    bool   `json:"resolved"`
	ReceiptSeq  int64  `json:"receipt_seq"`
	ReceiptsOK  bool   `json:"receipts_ok"`
	ReceiptMD   string `json:"receipt_markdown"`
	ReceiptJSON string `json:"receipt_json"`
	// GateV12 and GateV13 are the exit codes of `dw-schema call check_schema_change` (L4, before registration).
	GateV12, GateV13 int
	// PIDs are every process the run started, Listeners every stand-in's host:port (all gone
	// when Run returns).
	PIDs      []int    `json:"pids"`
	Listeners []string `json:"listeners"`
	// Stopped maps each stand-in's listener to its own shutdown result ("" once it closed
	// cleanly); filled when Run returns.
	Stopped map[string]string `json:"stopped"`
}

// Run replays the story. It cleans up every process and listener it started, also on error or
// when ctx is cancelled.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Home == "" || opts.Root == "" || opts.Bin == "" {
		return nil, errors.New("demo: Root, Bin and Home are required")
	}
	for _, a := range AgentNames {
		if _, err := os.Stat(filepath.Join(opts.Bin, a)); err != nil {
			return nil, fmt.Errorf("demo: agent binary missing: %w (build with ./start-agent.sh %s version)", err, a)
		}
	}
	art, err := LoadArtifacts(opts.Root)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(opts.Home, "demo")
	if err := freshDir(dir); err != nil {
		return nil, err
	}
	s := &story{opts: opts, art: art, dir: dir, res: &Result{Dir: dir, Config: filepath.Join(dir, "dw-demo.yaml")},
		tl: NewClock(opts.Now())}
	defer func() {
		if s.agents != nil {
			s.agents.Close()
			s.res.PIDs = s.agents.PIDs()
		}
		if s.peers != nil {
			s.res.Stopped = s.peers.Close()
		}
		if s.wh != nil {
			s.wh.Close()
		}
		if s.lake != nil {
			s.lake.close()
		}
		res = s.res
	}()
	if err := s.run(ctx); err != nil {
		return s.res, err
	}
	return s.res, nil
}

// The files a run writes under Home/demo; a new run removes exactly these first.
var runFiles = []string{"dw.db", "dw.db-wal", "dw.db-shm", "warehouse.db", "warehouse.db-wal", "warehouse.db-shm",
	"receipts.key", "dw-demo.yaml", "stand-in.catalog.yaml", "dbt", "timeline.txt", "timeline.json", "logs", "calls", "lake"}

func freshDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range runFiles {
		if err := os.RemoveAll(filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "receipt-incident-*"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	for _, d := range []string{"logs", "calls"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// story is one run's state.
type story struct {
	opts   Options
	art    *Artifacts
	dir    string
	tl     Clock
	peers  *Peers
	agents *agents
	wh     *sql.DB
	lake   *lakeTable
	res    *Result
	token  string
	events []Event
	ids    map[int]int
	calls  int
	// v11Reader is the schema the pinned statement reads api-usage with.
	v11Reader avro.Schema
	// stripeNext is the Stripe DAG's next run, as blast_radius_analysis reported it.
	stripeNext time.Time
}

func (s *story) step(actor, tool, found string) {
	st := Step{At: time.Now().UTC(), Actor: actor, Tool: tool, Found: found}
	s.res.Timeline = append(s.res.Timeline, st)
	if s.opts.Out != nil {
		Timeline{st}.writeRows(s.opts.Out)
	}
}

// call runs one tool and keeps its raw result under calls/ for anyone who wants the details.
func (s *story) call(ctx context.Context, agent, tool string, args any, out any) error {
	var raw json.RawMessage
	err := s.agents.call(ctx, agent, tool, args, &raw)
	s.calls++
	name := filepath.Join(s.dir, "calls", fmt.Sprintf("%02d-%s-%s.json", s.calls, agent, tool))
	body := raw
	var te *toolError
	if errors.As(err, &te) {
		body, _ = json.Marshal(map[string]any{"is_error": true, "text": te.Text})
	}
	if len(body) > 0 {
		_ = os.WriteFile(name, body, 0o600)
	}
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

func joinMax(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:n], ", ") + fmt.Sprintf(" and %d more", len(list)-n)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
