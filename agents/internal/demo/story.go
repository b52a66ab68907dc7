package demo

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

const (
	warehouseTable   = "usage_hourly"
	warehouseTableV2 = "usage_hourly_v2"
	gateway          = "gateway team"
	owner            = Approver + " (owner)"
)

// run is the story, in order. Each step checks its facts.
func (s *story) run(ctx context.Context) error {
	if err := s.setup(ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	f := &fixState{}
	for _, step := range []func(context.Context) error{
		s.gate, s.rollout, s.connections, s.detect, s.lakeCheck, s.diagnose, s.blast, s.impact,
		func(ctx context.Context) error { return s.propose(ctx, f) },
		func(ctx context.Context) error { return s.requestApproval(ctx, f) },
		func(ctx context.Context) error { return s.approve(ctx, f) },
		func(ctx context.Context) error { return s.hold(ctx, f) },
		func(ctx context.Context) error { return s.ownerSide(ctx, f) },
		func(ctx context.Context) error { return s.reruns(ctx, f) },
		s.verify, s.receipt,
	} {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// setup is the week before: the peers at v11, the history produced and landed, the context graph
// synced, and clean checks over the same hours of the six days before.
func (s *story) setup(ctx context.Context) error {
	tok, sum, err := newToken()
	if err != nil {
		return err
	}
	s.token = tok
	if s.peers, err = StartPeers(ctx, s.art); err != nil {
		return err
	}
	s.res.Listeners = s.peers.Listeners()
	if s.art.Manifest, err = checkoutDBT(s.dir, s.art.Manifest); err != nil {
		return err
	}
	store := filepath.Join(s.dir, "dw.db")
	whPath := filepath.Join(s.dir, "warehouse.db")
	lakeCfg := lakeConfig(s.dir)
	if s.lake, err = createLakeTable(ctx, lakeCfg); err != nil {
		return fmt.Errorf("the lake: %w", err)
	}
	if err := writeConfig(s.res.Config, s.peers, s.art, store, whPath, lakeCfg, sum); err != nil {
		return err
	}
	agentEnv := []string{"DW_CONFIG=" + s.res.Config, "DW_HOME=" + s.dir, "DW_LOG_LEVEL=info"}
	if s.opts.StoreURL != "" {
		u, err := freshPGStore(ctx, s.opts.StoreURL)
		if err != nil {
			return err
		}
		agentEnv = append(agentEnv, "DW_STORE_URL="+u)
		s.res.StoreURL = u
	}
	s.agents = newAgents(s.opts.Bin, agentEnv, filepath.Join(s.dir, "logs"))
	s.agents.onProgress = s.opts.onProgress
	if s.v11Reader, err = avro.ParseWithCache(s.art.Schemas[11], "", &avro.SchemaCache{}); err != nil {
		return fmt.Errorf("v11 reader schema: %w", err)
	}
	if s.wh, err = sql.Open("sqlite3", whPath+"?_busy_timeout=10000&_journal_mode=WAL"); err != nil {
		return err
	}
	s.events = s.tl.Events()
	s.ids = map[int]int{11: v11SchemaID}
	v11 := s.eventsOf(11)
	if err := produce(ctx, s.peers.Kafka, EventsTopic, v11, s.art.Schemas, s.ids); err != nil {
		return err
	}
	// The history is what the v11-pinned statement computes from the topic as the broker serves it.
	readings, err := readUsage(ctx, s.peers, EventsTopic, s.v11Reader, pinnedReader)
	if err != nil {
		return err
	}
	history := RollupReadings(readings, s.tl.HistStart, s.tl.StoryStart)
	if NullShare(history) != 0 {
		return fmt.Errorf("the history read back from %s has null egress in %s of rows", EventsTopic, pct(NullShare(history)))
	}
	if err := land(ctx, s.wh, warehouseTable, history); err != nil {
		return err
	}
	if err := s.lake.append(ctx, history); err != nil {
		return err
	}
	s.step("setup", "peers", fmt.Sprintf("kfake %s, Schema Registry %s (%s v11, BACKWARD), Connect, Confluent Cloud (Flink %s, Tableflow %s), Airflow (%s unpaused), dbt Cloud, SQLite warehouse %s",
		s.peers.Kafka.BootstrapServers[0], s.peers.Registry.URL, Subject, rollupName, HourlyTopic, StripeDAG, whPath))
	s.step("setup", "produce + land", fmt.Sprintf("%d v11 events on %s since %s, read back with the v11 reader: %d hourly rows landed in %s (a week of history, egress_bytes null in %s)",
		len(v11), EventsTopic, s.tl.HistStart.Format("Jan 2 15:04"), len(history), warehouseTable, pct(NullShare(history))))

	var sync struct {
		Systems []struct {
			System string `json:"system"`
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"systems"`
	}
	if err := s.call(ctx, "dw-context-catalog", "sync_catalog", map[string]any{}, &sync); err != nil {
		return err
	}
	for _, sys := range sync.Systems {
		if sys.Status != "synced" {
			return fmt.Errorf("sync_catalog: %s %s: %s", sys.System, sys.Status, sys.Error)
		}
	}
	if err := s.call(ctx, "dw-context-catalog", "import_dbt_manifest", map[string]any{}, nil); err != nil {
		return err
	}
	pin, err := s.pinOf(ctx)
	if err != nil {
		return err
	}
	s.step("dw-context-catalog", "sync_catalog", fmt.Sprintf("context graph from the running stand-ins (%d systems synced) and the catalog files, plus the dbt manifest: %s", len(sync.Systems), pin))

	var nulls []string
	for _, w := range s.tl.BaselineWindows() {
		var rep qualityReport
		if err := s.call(ctx, "dw-quality", "run_quality_check", s.checkArgs(w[0], w[1]), &rep); err != nil {
			return err
		}
		if rep.Failed {
			return fmt.Errorf("baseline check over %s failed: %s", rep.Window.Label, rep.Summary)
		}
		r, ok := rep.result("null_rate", "egress_bytes")
		if !ok {
			return fmt.Errorf("baseline check over %s has no egress_bytes null_rate result", rep.Window.Label)
		}
		if r.Value != 0 || r.Status != "pass" {
			return fmt.Errorf("baseline check over %s: egress_bytes null rate %v (%s), want 0: %s", rep.Window.Label, r.Value, r.Status, r.Why)
		}
		nulls = append(nulls, fmt.Sprintf("%g", 100*r.Value))
	}
	s.step("dw-quality", "run_quality_check ×6", fmt.Sprintf("clean checks of %s over the same %d hours on each of the 6 days before: egress_bytes null %% per day %s",
		warehouseTable, storyHours, strings.Join(nulls, ", ")))
	return nil
}

// eventsOf is the generated events written with schema version v.
func (s *story) eventsOf(v int) []Event {
	var out []Event
	for _, e := range s.events {
		if e.Version == v {
			out = append(out, e)
		}
	}
	return out
}

// pinOf reads the statement's schema pin from the graph, as the catalog recorded it, and checks
// that it is v11.
func (s *story) pinOf(ctx context.Context) (string, error) {
	var a struct {
		Asset struct {
			Attrs map[string]string `json:"attrs"`
		} `json:"asset"`
		Attrs map[string]string `json:"attrs"`
	}
	if err := s.call(ctx, "dw-context-catalog", "get_asset", map[string]any{"asset_id": "flink:statement/" + rollupName}, &a); err != nil {
		return "", err
	}
	attrs := a.Asset.Attrs
	if attrs == nil {
		attrs = a.Attrs
	}
	if want := Subject + " v11"; attrs["schema_pins"] != want {
		return "", fmt.Errorf("flink:statement/%s pins %q in the graph, want %q", rollupName, attrs["schema_pins"], want)
	}
	return fmt.Sprintf("flink:statement/%s pins %s (%s)", rollupName, attrs["schema_pins"], attrs["schema_pin_source"]), nil
}

// result is the report's result for one metric on one subject.
func (r qualityReport) result(metric, subject string) (qualityResult, bool) {
	for _, x := range r.Results {
		if x.Metric == metric && x.Subject == subject {
			return x, true
		}
	}
	return qualityResult{}, false
}

type qualityResult struct {
	Check   string  `json:"check"`
	Metric  string  `json:"metric"`
	Subject string  `json:"subject"`
	Value   float64 `json:"value"`
	Status  string  `json:"status"`
	Why     string  `json:"why"`
}

type qualityReport struct {
	Asset   string `json:"asset"`
	Failed  bool   `json:"failed"`
	Summary string `json:"summary"`
	Window  struct {
		Label string `json:"label"`
	} `json:"window"`
	Results   []qualityResult `json:"results"`
	Incidents []struct {
		ID          int64  `json:"id"`
		FailureMode string `json:"failure_mode"`
		Opened      bool   `json:"opened"`
	} `json:"incidents"`
}

func (s *story) checkArgs(since, until time.Time) map[string]any {
	return map[string]any{"table": warehouseTable, "timestamp_column": "hour", "key_columns": []string{"account_id", "hour"},
		"metrics": []string{"null_rate", "volume", "uniqueness", "freshness"},
		"since":   since.UTC().Format(time.RFC3339), "until": until.UTC().Format(time.RFC3339)}
}

// todayArgs checks the story's day: "today" in the story's zone (the story window up to now).
func (s *story) todayArgs() map[string]any {
	a := s.checkArgs(s.tl.StoryStart, s.opts.Now())
	delete(a, "since")
	delete(a, "until")
	a["window"], a["time_zone"] = "today", s.tl.Zone()
	return a
}

// exitBlocked is the binaries' exit code for a verdict that blocks (mcpkit.ExitBlocked).
const exitBlocked = 100

// gate is the L4 variant: had the producer's CI run check_schema_change, v12 would have been
// stopped before registration, and v13 (response_bytes kept beside response_kib) lets through.
func (s *story) gate(ctx context.Context) error {
	run := func(v int) (int, string, error) {
		// The producer's checkout: tools read files only under the config's directory (or MCP roots).
		file := filepath.Join(s.dir, "schemas", fmt.Sprintf("api-usage-value.v%d.avsc", v))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return 0, "", err
		}
		if err := os.WriteFile(file, []byte(s.art.Schemas[v]), 0o600); err != nil {
			return 0, "", err
		}
		args := fmt.Sprintf(`{"subject":%q,"schema_file":%q}`, Subject, file)
		out, code, err := s.agents.run(ctx, "dw-schema", nil, "call", "check_schema_change", args)
		if code != 0 && code != exitBlocked {
			return code, out, err
		}
		// Kept under calls/ beside the MCP results: the CI log of the gate.
		s.calls++
		name := filepath.Join(s.dir, "calls", fmt.Sprintf("%02d-dw-schema-call-check_schema_change-v%d.json", s.calls, v))
		if err := os.WriteFile(name, []byte(out), 0o600); err != nil {
			return code, out, err
		}
		return code, out, nil
	}
	c12, out12, err := run(12)
	if err != nil {
		return err
	}
	c13, out13, err := run(13)
	if err != nil {
		return err
	}
	s.res.GateV12, s.res.GateV13 = c12, c13
	if c12 != exitBlocked || c13 != 0 {
		return fmt.Errorf("L4 gate: v12 exit %d (want 100, blocked), v13 exit %d (want 0):\n%s\n%s", c12, c13, out12, out13)
	}
	s.step("dw-schema (CI)", "call check_schema_change", fmt.Sprintf("L4 gate in the producer's CI: v12 exits 100 (blocked: %s); v13 exits 0. The story below is what happens without the gate.",
		verdictOf(out12)))
	return nil
}

func verdictOf(out string) string {
	var v struct {
		Verdict string `json:"verdict"`
		Summary string `json:"summary"`
		Reason  string `json:"reason"`
	}
	_ = jsonUnmarshal(out, &v)
	for _, x := range []string{v.Summary, v.Verdict, v.Reason} {
		if x != "" {
			return x
		}
	}
	return "see calls/"
}

// rollout: the gateway team registers v12 (BACKWARD passes), producers roll out, and the pinned
// statement lands shrunken hourly sums.
func (s *story) rollout(ctx context.Context) error {
	id, version, err := s.peers.registerAsGateway(ctx, s.art.Schemas[12])
	if err != nil {
		return fmt.Errorf("register v12: %w", err)
	}
	if version != 12 {
		return fmt.Errorf("v12 registered as version %d", version)
	}
	s.ids[12] = id
	s.step(gateway, "POST /subjects/…/versions", fmt.Sprintf("registers %s v12 (id %d): drops optional response_bytes, adds response_kib; BACKWARD passes. Rollout at %s.",
		Subject, id, s.tl.Rollout.Format("15:04")))
	v12 := s.eventsOf(12)
	if err := produce(ctx, s.peers.Kafka, EventsTopic, v12, s.art.Schemas, s.ids); err != nil {
		return err
	}
	// The pinned statement: every record read back from the broker with the v11 reader schema.
	readings, err := readUsage(ctx, s.peers, EventsTopic, s.v11Reader, pinnedReader)
	if err != nil {
		return err
	}
	read12, null12 := 0, 0
	for _, r := range readings {
		if r.Version == 12 {
			read12++
			if r.Egress == nil {
				null12++
			}
		}
	}
	if read12 != len(v12) || null12 != read12 {
		return fmt.Errorf("read %d v12 records back from %s (%d produced); the v11 reader found response_bytes null in %d", read12, EventsTopic, len(v12), null12)
	}
	rows := RollupReadings(readings, s.tl.StoryStart, s.tl.StoryEnd)
	if err := land(ctx, s.wh, warehouseTable, rows); err != nil {
		return err
	}
	if err := s.lake.append(ctx, rows); err != nil {
		return err
	}
	s.res.NullShare = NullShare(rows)
	s.step("Flink + Tableflow", rollupName, fmt.Sprintf("%d v12 records read back from %s with the v11 reader: response_bytes null in %d of them; %d hourly rows landed %s–%s, egress_bytes null in %s",
		read12, EventsTopic, null12, len(rows), s.tl.StoryStart.Format("15:04"), s.tl.StoryEnd.Format("15:04"), pct(s.res.NullShare)))
	return nil
}

func (s *story) connections(ctx context.Context) error {
	var rep struct {
		Backends []struct {
			Backend    string `json:"backend"`
			Configured bool   `json:"configured"`
			Reachable  bool   `json:"reachable"`
			Error      string `json:"error"`
		} `json:"backends"`
	}
	if err := s.call(ctx, "dw-connectors", "check_connections", map[string]any{}, &rep); err != nil {
		return err
	}
	// The demo stands in for no monitoring; those backends are left unconfigured (dw-connectors
	// does not probe the lake: the agents that read it do).
	notStoodIn := map[string]bool{"prometheus": true, "confluent_metrics": true, "datadog": true, "lake": true}
	var ok, bad []string
	for _, b := range rep.Backends {
		if !b.Configured && notStoodIn[b.Backend] {
			continue
		}
		if b.Configured && b.Reachable {
			ok = append(ok, b.Backend)
		} else {
			bad = append(bad, fmt.Sprintf("%s (%s)", b.Backend, b.Error))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("check_connections: not every stand-in answers: %v", bad)
	}
	s.step("dw-connectors", "check_connections", "reachable: "+strings.Join(ok, ", "))
	var sample topicSample
	if err := s.call(ctx, "dw-connectors", "sample_topic", map[string]any{"topic": EventsTopic}, &sample); err != nil {
		return err
	}
	found, err := sample.check()
	if err != nil {
		return fmt.Errorf("sample_topic %s: %w", EventsTopic, err)
	}
	s.step("dw-connectors", "sample_topic", found)

	var sync struct {
		Systems []struct {
			System      string   `json:"system"`
			Status      string   `json:"status"`
			Changed     []string `json:"changed"`
			MarkedStale struct {
				Fields int `json:"fields"`
			} `json:"marked_stale"`
		} `json:"systems"`
	}
	if err := s.call(ctx, "dw-context-catalog", "sync_catalog", map[string]any{}, &sync); err != nil {
		return err
	}
	schemaChange := ""
	for _, sys := range sync.Systems {
		if sys.System == "schema_registry" && slices.Contains(sys.Changed, "schema:"+Subject) {
			schemaChange = fmt.Sprintf("schema_registry reports schema:%s changed (%d %s marked stale)", Subject,
				sys.MarkedStale.Fields, plural(sys.MarkedStale.Fields, "field", "fields"))
		}
	}
	if schemaChange == "" {
		return fmt.Errorf("the re-sync after v12 does not report schema:%s changed: %+v", Subject, sync.Systems)
	}
	pin, err := s.pinOf(ctx)
	if err != nil {
		return err
	}
	s.step("dw-context-catalog", "sync_catalog", "re-synced: "+schemaChange+"; "+pin)
	return nil
}

// topicSample is the part of sample_topic's result the story checks.
type topicSample struct {
	Records  int `json:"records"`
	Versions []struct {
		Label     string    `json:"label"`
		Version   int       `json:"version"`
		Share     float64   `json:"share"`
		FirstSeen time.Time `json:"first_seen"`
	} `json:"versions"`
	Fields []struct {
		Field           string             `json:"field"`
		NullRateVersion map[string]float64 `json:"null_rate_by_version"`
	} `json:"fields"`
}

// check requires v12 in the sample and response_bytes null or missing in every v12 record.
func (t topicSample) check() (string, error) {
	label, share, first := "", 0.0, time.Time{}
	for _, v := range t.Versions {
		if v.Version == 12 {
			label, share, first = v.Label, v.Share, v.FirstSeen
		}
	}
	if share <= 0 {
		return "", fmt.Errorf("no v12 records in a sample of %d: %+v", t.Records, t.Versions)
	}
	rate, found := 0.0, false
	for _, f := range t.Fields {
		if f.Field == "response_bytes" {
			rate, found = f.NullRateVersion[label]
		}
	}
	if !found || rate != 1 {
		return "", fmt.Errorf("response_bytes null or missing in %s of %s records (found %v), want 100%%", pct(rate), label, found)
	}
	return fmt.Sprintf("%d records sampled: %s first seen %s UTC, %s of the sample; response_bytes null or missing in %s of its records",
		t.Records, label, first.UTC().Format("15:04"), pct(share), pct(rate)), nil
}

// detect: the check fails and opens the incident; a second failing check joins it.
func (s *story) detect(ctx context.Context) error {
	var rep qualityReport
	if err := s.call(ctx, "dw-quality", "run_quality_check", s.todayArgs(), &rep); err != nil {
		return err
	}
	var egress string
	var others []string
	for _, r := range rep.Results {
		if r.Metric == "null_rate" && r.Subject == "egress_bytes" {
			egress = r.Why
			if r.Status != "fail" {
				return fmt.Errorf("egress_bytes null rate %v is %s, want fail: %s", r.Value, r.Status, r.Why)
			}
			continue
		}
		if r.Status == "fail" {
			return fmt.Errorf("%s %s failed too (only egress_bytes should): %s", r.Metric, r.Subject, r.Why)
		}
		name := r.Check
		if r.Subject != "" && r.Check == "null_rate" {
			name += " " + r.Subject
		}
		others = append(others, name+" "+r.Status)
	}
	if egress == "" {
		return fmt.Errorf("the check has no egress_bytes null_rate result: %+v", rep.Results)
	}
	if !rep.Failed || len(rep.Incidents) != 1 || !rep.Incidents[0].Opened {
		return fmt.Errorf("the failing check did not open one incident: %+v", rep)
	}
	s.res.IncidentID, s.res.Opened = rep.Incidents[0].ID, true
	s.step("dw-quality", "run_quality_check", fmt.Sprintf("FAIL egress_bytes: %s; %s → incident #%d opened", egress, strings.Join(others, ", "), s.res.IncidentID))

	var again qualityReport
	if err := s.call(ctx, "dw-quality", "run_quality_check", s.todayArgs(), &again); err != nil {
		return err
	}
	if !again.Failed || len(again.Incidents) != 1 || again.Incidents[0].ID != s.res.IncidentID || again.Incidents[0].Opened {
		return fmt.Errorf("the second failing check did not join incident #%d: %+v", s.res.IncidentID, again.Incidents)
	}
	s.res.Joined = true
	s.step("dw-quality", "run_quality_check", fmt.Sprintf("fails again → joins incident #%d (no second incident)", s.res.IncidentID))
	return nil
}

func (s *story) diagnose(ctx context.Context) error {
	var d struct {
		Cause     string `json:"cause"`
		Diagnosis struct {
			Conclusion string `json:"conclusion"`
			Candidates []struct {
				Cause    string   `json:"cause"`
				Kind     string   `json:"kind"`
				Source   string   `json:"source"`
				Evidence []string `json:"evidence"`
			} `json:"candidates"`
			Unchecked []string `json:"unchecked"`
		} `json:"diagnosis"`
	}
	if err := s.call(ctx, "dw-incidents", "diagnose_incident", map[string]any{"incident_id": s.res.IncidentID}, &d); err != nil {
		return err
	}
	if len(d.Diagnosis.Candidates) == 0 {
		return fmt.Errorf("diagnosis named no cause: %s", d.Diagnosis.Conclusion)
	}
	top := d.Diagnosis.Candidates[0]
	s.res.Cause, s.res.CauseEvidence = d.Cause, top.Evidence
	ev := strings.Join(top.Evidence, "\n")
	for _, want := range []string{"response_bytes", "v12", rollupName, "v11"} {
		if !strings.Contains(top.Cause+"\n"+top.Source+"\n"+ev, want) {
			return fmt.Errorf("diagnosis does not name %q: cause %q, evidence:\n%s", want, top.Cause, ev)
		}
	}
	s.step("dw-incidents", "diagnose_incident", fmt.Sprintf("%s (%s); %s", d.Cause, top.Source, pinnedLine(top.Evidence)))
	return nil
}

func pinnedLine(ev []string) string {
	for _, e := range ev {
		if strings.Contains(e, "pinned") {
			return e
		}
	}
	if len(ev) > 0 {
		return ev[0]
	}
	return ""
}

func (s *story) blast(ctx context.Context) error {
	var b struct {
		FieldLevel []struct {
			URN  string `json:"urn"`
			Name string `json:"name"`
		} `json:"field_level"`
		TableLevel []struct {
			URN string `json:"urn"`
		} `json:"table_level"`
		ExternalSinks []string `json:"external_sinks"`
		ScheduledJobs []struct {
			URN     string     `json:"urn"`
			NextRun *time.Time `json:"next_run"`
		} `json:"scheduled_jobs"`
		Total int `json:"total"`
	}
	if err := s.call(ctx, "dw-context-catalog", "blast_radius_analysis", map[string]any{"asset_id": "schema:" + Subject, "change_type": "column_drop", "column_name": "response_bytes"}, &b); err != nil {
		return err
	}
	all := map[string]bool{}
	for _, i := range b.FieldLevel {
		s.res.BlastRadius = append(s.res.BlastRadius, i.URN)
		all[i.URN] = true
	}
	for _, i := range b.TableLevel {
		s.res.BlastRadius = append(s.res.BlastRadius, i.URN)
		all[i.URN] = true
	}
	s.res.ExternalSinks = b.ExternalSinks
	var next string
	for _, j := range b.ScheduledJobs {
		s.res.ScheduledJobs = append(s.res.ScheduledJobs, j.URN)
		if j.URN == "job:airflow/"+StripeDAG && j.NextRun != nil {
			next = j.NextRun.UTC().Format("Jan 2 15:04")
			s.stripeNext = *j.NextRun
		}
	}
	for _, want := range []string{"dbt:model.billing.fct_billable_egress", "bi:sigma/revenue-today", "job:airflow/" + StripeDAG, "sink:stripe"} {
		if !all[want] {
			return fmt.Errorf("blast radius lacks %s: %v", want, s.res.BlastRadius)
		}
	}
	if next == "" {
		return fmt.Errorf("blast radius gives the Stripe DAG no next run: %+v", b.ScheduledJobs)
	}
	s.step("dw-context-catalog", "blast_radius_analysis", fmt.Sprintf("%d assets downstream of response_bytes, incl. fct_billable_egress, the workbook \"Revenue today\", %s (next run %s UTC) → sink:stripe",
		b.Total, StripeDAG, next))
	return nil
}

func (s *story) impact(ctx context.Context) error {
	var m struct {
		Compatible    bool   `json:"compatible"`
		Level         string `json:"level"`
		BrokenReaders int    `json:"broken_readers"`
		Readers       []struct {
			URN           string `json:"urn"`
			Breaks        bool   `json:"breaks"`
			PinnedVersion int    `json:"pinned_version"`
			Effect        string `json:"effect"`
		} `json:"readers"`
	}
	if err := s.call(ctx, "dw-schema", "assess_impact", map[string]any{"subject": Subject, "version": 12}, &m); err != nil {
		return err
	}
	if !m.Compatible || m.BrokenReaders < 1 {
		return fmt.Errorf("assess_impact of v12: compatible=%v, %d broken readers; want compatible under %s and at least one broken reader", m.Compatible, m.BrokenReaders, m.Level)
	}
	effect := ""
	for _, r := range m.Readers {
		if r.URN == "flink:statement/"+rollupName && r.Breaks && r.PinnedVersion == 11 {
			effect = r.Effect
		}
	}
	if effect == "" {
		return fmt.Errorf("assess_impact of v12 does not list flink:statement/%s as a broken reader pinned to v11: %+v", rollupName, m.Readers)
	}
	s.step("dw-schema", "assess_impact", fmt.Sprintf("v12 is %s-compatible yet breaks %d readers, first %s: %s", m.Level, m.BrokenReaders, rollupName, effect))
	return nil
}
