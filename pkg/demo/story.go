package demo

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"
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
		s.gate, s.rollout, s.connections, s.detect, s.diagnose, s.blast, s.impact,
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
	if err := writeConfig(s.res.Config, s.peers, s.art, store, whPath, sum); err != nil {
		return err
	}
	s.agents = newAgents(s.opts.Bin, []string{"DW_CONFIG=" + s.res.Config, "DW_HOME=" + s.dir, "DW_LOG_LEVEL=info"}, filepath.Join(s.dir, "logs"))
	if s.wh, err = sql.Open("sqlite3", whPath+"?_busy_timeout=10000&_journal_mode=WAL"); err != nil {
		return err
	}
	s.events = s.tl.Events()
	s.ids = map[int]int{11: v11SchemaID}
	var v11 []Event
	for _, e := range s.events {
		if e.Version == 11 {
			v11 = append(v11, e)
		}
	}
	if err := produce(ctx, s.peers.Kafka, EventsTopic, v11, s.art.Schemas, s.ids); err != nil {
		return err
	}
	history := Rollup(s.events, s.tl.HistStart, s.tl.StoryStart, PinnedV11)
	if err := land(ctx, s.wh, warehouseTable, history); err != nil {
		return err
	}
	s.step("setup", "peers", fmt.Sprintf("kfake %s, Schema Registry %s (%s v11, BACKWARD), Connect, Confluent Cloud (Flink %s, Tableflow %s), Airflow (%s unpaused), dbt Cloud, SQLite warehouse %s",
		s.peers.Kafka.BootstrapServers[0], s.peers.Registry.URL, Subject, rollupName, HourlyTopic, StripeDAG, whPath))
	s.step("setup", "produce + land", fmt.Sprintf("%d v11 events on %s since %s; %d hourly rows landed in %s (a week of history, egress_bytes never null)",
		len(v11), EventsTopic, s.tl.HistStart.Format("Jan 2 15:04"), len(history), warehouseTable))

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
	if err := s.call(ctx, "dw-context-catalog", "import_dbt_manifest", map[string]any{}, nil); err != nil {
		return err
	}
	s.step("dw-context-catalog", "sync_catalog", "context graph from the running stand-ins and the catalog files, plus the dbt manifest: "+s.pinOf(ctx))

	for _, w := range s.tl.BaselineWindows() {
		var rep qualityReport
		if err := s.call(ctx, "dw-quality", "run_quality_check", s.checkArgs(w[0], w[1]), &rep); err != nil {
			return err
		}
		if rep.Failed {
			return fmt.Errorf("baseline check over %s failed: %s", rep.Window.Label, rep.Summary)
		}
	}
	s.step("dw-quality", "run_quality_check ×6", fmt.Sprintf("clean checks of %s over the same %d hours on each of the 6 days before: egress_bytes 0%% null every time",
		warehouseTable, storyHours))
	return nil
}

// pinOf reads the statement's schema pin from the graph, as the catalog recorded it.
func (s *story) pinOf(ctx context.Context) string {
	var a struct {
		Asset struct {
			Attrs map[string]string `json:"attrs"`
		} `json:"asset"`
		Attrs map[string]string `json:"attrs"`
	}
	if err := s.call(ctx, "dw-context-catalog", "get_asset", map[string]any{"asset_id": "flink:statement/" + rollupName}, &a); err != nil {
		return "statement " + rollupName + " not readable: " + err.Error()
	}
	attrs := a.Asset.Attrs
	if attrs == nil {
		attrs = a.Attrs
	}
	return fmt.Sprintf("flink:statement/%s pins %s (%s)", rollupName, attrs["schema_pins"], attrs["schema_pin_source"])
}

type qualityReport struct {
	Asset   string `json:"asset"`
	Failed  bool   `json:"failed"`
	Summary string `json:"summary"`
	Window  struct {
		Label string `json:"label"`
	} `json:"window"`
	Results []struct {
		Check   string  `json:"check"`
		Metric  string  `json:"metric"`
		Subject string  `json:"subject"`
		Value   float64 `json:"value"`
		Status  string  `json:"status"`
		Why     string  `json:"why"`
	} `json:"results"`
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
	if s.zone() != s.tl.Zone() {
		return s.checkArgs(s.tl.StoryStart, s.opts.Now())
	}
	a := s.checkArgs(s.tl.StoryStart, s.opts.Now())
	delete(a, "since")
	delete(a, "until")
	a["window"], a["time_zone"] = "today", s.zone()
	return a
}

// gate is the L4 variant: had the producer's CI run check_schema_change, v12 would have been
// stopped before registration, and v13 (response_bytes kept beside response_kib) lets through.
func (s *story) gate(ctx context.Context) error {
	run := func(v int) (int, string, error) {
		args := fmt.Sprintf(`{"subject":%q,"schema_file":%q}`, Subject, filepath.Join(s.art.Root, schemaDir, fmt.Sprintf("api-usage-value.v%d.avsc", v)))
		out, code, err := s.agents.run(ctx, "dw-schema", nil, "call", "check_schema_change", args)
		if code != 0 && code != 1 {
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
	if c12 != 1 || c13 != 0 {
		return fmt.Errorf("L4 gate: v12 exit %d (want 1, blocked), v13 exit %d (want 0):\n%s\n%s", c12, c13, out12, out13)
	}
	s.step("dw-schema (CI)", "call check_schema_change", fmt.Sprintf("L4 gate in the producer's CI: v12 exits 1 (blocked: %s); v13 exits 0. The story below is what happens without the gate.",
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
	var v12 []Event
	for _, e := range s.events {
		if e.Version == 12 {
			v12 = append(v12, e)
		}
	}
	if err := produce(ctx, s.peers.Kafka, EventsTopic, v12, s.art.Schemas, s.ids); err != nil {
		return err
	}
	rows := Rollup(s.events, s.tl.StoryStart, s.tl.StoryEnd, PinnedV11)
	if err := land(ctx, s.wh, warehouseTable, rows); err != nil {
		return err
	}
	s.res.NullShare = NullShare(rows)
	s.step("Flink + Tableflow", rollupName, fmt.Sprintf("%d v12 events produced; the statement pinned to v11 reads response_bytes as null on them: %d hourly rows landed %s–%s, egress_bytes null in %s",
		len(v12), len(rows), s.tl.StoryStart.Format("15:04"), s.tl.StoryEnd.Format("15:04"), pct(s.res.NullShare)))
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
	var ok, bad []string
	for _, b := range rep.Backends {
		if b.Configured && b.Reachable {
			ok = append(ok, b.Backend)
		} else {
			bad = append(bad, fmt.Sprintf("%s (%s)", b.Backend, b.Error))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("check_connections: not every stand-in answers: %v", bad)
	}
	found := "reachable: " + strings.Join(ok, ", ")
	if len(bad) > 0 {
		found += "; not: " + strings.Join(bad, ", ")
	}
	s.step("dw-connectors", "check_connections", found)
	var sample map[string]any
	if err := s.call(ctx, "dw-connectors", "sample_topic", map[string]any{"topic": EventsTopic}, &sample); err != nil {
		s.step("dw-connectors", "sample_topic", "failed: "+err.Error())
	} else {
		s.step("dw-connectors", "sample_topic", describeSample(sample))
	}
	if err := s.call(ctx, "dw-context-catalog", "sync_catalog", map[string]any{}, nil); err != nil {
		return err
	}
	s.step("dw-context-catalog", "sync_catalog", "re-synced: v12 recorded as first seen now; "+s.pinOf(ctx))
	return nil
}

// describeSample keeps the sample's version-mix and null-rate lines.
func describeSample(m map[string]any) string {
	lines, _ := m["summary"].([]any)
	var out []string
	for _, l := range lines {
		if t, ok := l.(string); ok && (strings.Contains(t, "v12") && strings.Contains(t, "appears") || strings.HasPrefix(t, "response_bytes")) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return fmt.Sprint(lines...)
	}
	return strings.Join(out, "; ")
}

// detect: the check fails and opens the incident; a second failing check joins it.
func (s *story) detect(ctx context.Context) error {
	var rep qualityReport
	if err := s.call(ctx, "dw-quality", "run_quality_check", s.todayArgs(), &rep); err != nil {
		return err
	}
	var egress string
	for _, r := range rep.Results {
		if r.Metric == "null_rate" && r.Subject == "egress_bytes" {
			egress = r.Why
			if r.Status != "fail" {
				return fmt.Errorf("egress_bytes null rate %v is %s, want fail: %s", r.Value, r.Status, r.Why)
			}
		} else if r.Status == "fail" {
			return fmt.Errorf("%s %s failed too (only egress_bytes should): %s", r.Metric, r.Subject, r.Why)
		}
	}
	if !rep.Failed || len(rep.Incidents) != 1 || !rep.Incidents[0].Opened {
		return fmt.Errorf("the failing check did not open one incident: %+v", rep)
	}
	s.res.IncidentID, s.res.Opened = rep.Incidents[0].ID, true
	s.step("dw-quality", "run_quality_check", fmt.Sprintf("FAIL egress_bytes: %s; volume, uniqueness and freshness pass → incident #%d opened", egress, s.res.IncidentID))

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
	var m map[string]any
	if err := s.call(ctx, "dw-schema", "assess_impact", map[string]any{"subject": Subject, "version": 12}, &m); err != nil {
		return err
	}
	s.step("dw-schema", "assess_impact", fmt.Sprintf("%v", m["verdict"]))
	return nil
}
