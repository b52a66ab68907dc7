package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dataworkers/dw/pkg/confluent/confluenttest"
	"github.com/dataworkers/dw/pkg/plans"
)

// planProposal is one proposal of the stored plan, as propose_remediation returns it.
type planProposal struct {
	Order    int            `json:"order"`
	Class    string         `json:"class"`
	Target   string         `json:"target"`
	Title    string         `json:"title"`
	Payload  map[string]any `json:"payload"`
	Executor string         `json:"executor"`
	Origin   string         `json:"origin"`
}

type approvalRequest struct {
	ID            int64          `json:"id"`
	Class         string         `json:"class"`
	Target        string         `json:"target"`
	Title         string         `json:"title"`
	Payload       map[string]any `json:"payload"`
	PayloadSHA256 string         `json:"payload_sha256"`
	Approvers     []string       `json:"approvers"`
	Copied        []string       `json:"copied"`
	Status        string         `json:"status"`
	DecidedBy     string         `json:"decided_by"`
}

// fixState carries the plan and approvals between the steps of the fix.
type fixState struct {
	planID    int64
	proposals []planProposal
	requests  []approvalRequest
	v2Table   string // the warehouse table the corrected data lands in
}

func (f *fixState) request(class string) (approvalRequest, bool) {
	for _, r := range f.requests {
		if r.Class == class {
			return r, true
		}
	}
	return approvalRequest{}, false
}

// propose asks dw-incidents for the plan, adding one client-authored step: the dbt Cloud rerun
// of the model once the owner's changes are in.
func (s *story) propose(ctx context.Context, f *fixState) error {
	var out struct {
		Plan struct {
			ID        int64          `json:"id"`
			Proposals []planProposal `json:"proposals"`
			Checks    []plans.Check  `json:"checks"`
			Notes     []string       `json:"notes"`
		} `json:"plan"`
	}
	rerun := map[string]any{"class": "trigger_dbt_run", "target": "dbt:model.billing.fct_billable_egress",
		"title":   "Rebuild fct_billable_egress in dbt Cloud once the corrected table and the dbt change are in",
		"payload": map[string]any{"job_id": DBTJob}, "why": "queue the rerun so Revenue today and the 23:00 Stripe push read corrected egress",
		"undo": "a finished run is rebuilt by the next run"}
	err := s.call(ctx, "dw-incidents", "propose_remediation", map[string]any{"incident_id": s.res.IncidentID,
		"from": s.tl.StoryStart.Format(time.RFC3339), "proposals": []any{rerun}}, &out)
	if err != nil {
		return err
	}
	f.planID, f.proposals = out.Plan.ID, out.Plan.Proposals
	s.res.PlanID = f.planID
	var lines []string
	classes := map[string]bool{}
	for _, p := range f.proposals {
		who := "Data Workers"
		if p.Executor == "owner" {
			who = "owner"
		}
		lines = append(lines, fmt.Sprintf("%s %s (%s)", p.Class, shortTarget(p.Target), who))
		classes[p.Class] = true
	}
	for _, want := range []string{"pause_job", "register_schema", "flink_statement", "dbt_code"} {
		if !classes[want] {
			return fmt.Errorf("plan #%d has no %s proposal: %s; notes: %s", f.planID, want, strings.Join(lines, "; "), strings.Join(out.Plan.Notes, "; "))
		}
	}
	for _, c := range out.Plan.Checks {
		if c.Supersedes != "" {
			f.v2Table = tableOfURN(c.Asset)
		}
	}
	if f.v2Table == "" {
		return fmt.Errorf("plan #%d names no check on the corrected table (no check supersedes %s)", f.planID, warehouseTable)
	}
	var sql, sink string
	var start statementStart
	for _, p := range f.proposals {
		if p.Class == "flink_statement" {
			sql, _ = p.Payload["sql"].(string)
			sink, _ = p.Payload["sink"].(string)
			start, err = startOf(p.Payload)
			if err != nil {
				return fmt.Errorf("plan #%d: %w", f.planID, err)
			}
		}
	}
	if !coalesceRE.MatchString(sql) {
		return fmt.Errorf("the corrected statement does not sum COALESCE(response_kib * 1024, response_bytes):\n%s", sql)
	}
	if start.Mode != "specific-offsets" || len(start.offsets) == 0 {
		return fmt.Errorf("the corrected statement starts %q at %q, want specific-offsets", start.Mode, start.Offsets)
	}
	if !strings.Contains(sql, start.Offsets) {
		return fmt.Errorf("the corrected statement's SQL does not start at its payload's offsets %s:\n%s", start.Offsets, sql)
	}
	s.step("dw-incidents", "propose_remediation", fmt.Sprintf("plan #%d, in order: %s. The statement sums COALESCE(response_kib * 1024, response_bytes) into %s, start mode %s at %s (%s); %d checks to re-run on %s",
		f.planID, strings.Join(lines, " → "), sink, start.Mode, start.Offsets, start.From, len(out.Plan.Checks), f.v2Table))
	return nil
}

// statementStart is a flink_statement payload's start: the mode and the per-partition offsets.
type statementStart struct {
	Mode    string `json:"mode"`
	From    string `json:"from"`
	Offsets string `json:"offsets"`
	offsets map[int32]int64
}

// startOf reads a flink_statement payload's start and parses its offsets
// ("partition:0,offset:2016;partition:1,offset:1344").
func startOf(payload map[string]any) (statementStart, error) {
	var st statementStart
	raw, err := json.Marshal(payload["start"])
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("flink_statement payload start %s: %w", raw, err)
	}
	st.offsets = map[int32]int64{}
	for _, part := range strings.Split(st.Offsets, ";") {
		if part == "" {
			continue
		}
		var p int32
		var o int64
		if _, err := fmt.Sscanf(part, "partition:%d,offset:%d", &p, &o); err != nil {
			return st, fmt.Errorf("flink_statement start offsets %q: %w", st.Offsets, err)
		}
		st.offsets[p] = o
	}
	return st, nil
}

// coalesceRE matches COALESCE(response_kib * 1024, response_bytes), however the kib side is cast.
var coalesceRE = regexp.MustCompile(`(?i)COALESCE\(\s*(CAST\(\s*)?response_kib(\s+AS\s+\w+\s*\))?\s*\*\s*1024\s*,\s*response_bytes\s*\)`)

// shortTarget drops a URN's system prefix for the timeline.
func shortTarget(u string) string {
	if i := strings.LastIndexAny(u, "/:"); i >= 0 {
		return u[i+1:]
	}
	return u
}

// tableOfURN is the table name of a warehouse URN such as warehouse:sqlite/main.usage_hourly_v2.
func tableOfURN(u string) string {
	i := strings.LastIndex(u, ".")
	return strings.Trim(u[i+1:], `"`)
}

func (s *story) requestApproval(ctx context.Context, f *fixState) error {
	var out struct {
		Requests []approvalRequest `json:"requests"`
	}
	if err := s.call(ctx, "dw-incidents", "request_approval", map[string]any{"incident_id": s.res.IncidentID, "plan_id": f.planID,
		"owners": []string{BillingOwner}}, &out); err != nil {
		return err
	}
	if len(out.Requests) != len(f.proposals) {
		return fmt.Errorf("request_approval made %d requests for %d proposals", len(out.Requests), len(f.proposals))
	}
	f.requests = out.Requests
	for i, r := range out.Requests {
		p := f.proposals[i]
		if r.Class != p.Class || r.Target != p.Target {
			return fmt.Errorf("request #%d routes %s on %s, the plan's step %d is %s on %s", r.ID, r.Class, r.Target, i+1, p.Class, p.Target)
		}
		if !slices.Contains(r.Approvers, Approver) || !slices.Contains(r.Copied, BillingOwner) || r.Status != "pending" {
			return fmt.Errorf("request #%d: approvers %v, copied %v, status %s; want %s approving, %s copied, pending", r.ID, r.Approvers, r.Copied, r.Status, Approver, BillingOwner)
		}
		s.res.RequestIDs = append(s.res.RequestIDs, r.ID)
	}
	s.step("dw-incidents", "request_approval", fmt.Sprintf("%d requests (#%d–#%d) routed to %s, the %s; %s copied; each bound to its payload's SHA-256; nothing runs yet",
		len(out.Requests), out.Requests[0].ID, out.Requests[len(out.Requests)-1].ID, Approver, ApproverRole, BillingOwner))
	return nil
}

// approve is the owner at her terminal: she reviews each request and approves it by its hash,
// through the human CLI no agent can reach.
func (s *story) approve(ctx context.Context, f *fixState) error {
	tok := []string{"DW_APPROVER_TOKEN=" + s.token}
	for i, r := range f.requests {
		if _, _, err := s.agents.run(ctx, "dw-incidents", nil, "approvals", "show", fmt.Sprint(r.ID)); err != nil {
			return err
		}
		if _, _, err := s.agents.run(ctx, "dw-incidents", tok, "approvals", "approve", fmt.Sprint(r.ID), "--as", Approver, "--sha256", r.PayloadSHA256,
			"--comment", "reviewed in the demo"); err != nil {
			return err
		}
		f.requests[i].Status = "approved"
	}
	var st struct {
		Requests []approvalRequest `json:"requests"`
	}
	if err := s.call(ctx, "dw-incidents", "get_approval_status", map[string]any{"incident_id": s.res.IncidentID}, &st); err != nil {
		return err
	}
	for _, r := range st.Requests {
		if r.Status != "approved" || r.DecidedBy != Approver {
			return fmt.Errorf("request #%d is %s by %q after approval", r.ID, r.Status, r.DecidedBy)
		}
	}
	s.step(Approver, "dw-incidents approvals approve", fmt.Sprintf("reviews and approves all %d by payload hash, with her token (get_approval_status: %d approved by %s)",
		len(f.requests), len(st.Requests), Approver))
	return nil
}

type actionOut struct {
	ID     int64          `json:"id"`
	Class  string         `json:"class"`
	Target string         `json:"target"`
	Status string         `json:"status"`
	Steps  []string       `json:"steps"`
	Result map[string]any `json:"result"`
	Error  string         `json:"error"`
}

// hold runs what Data Workers may run now (the pause) and hands the owner-only steps over.
func (s *story) hold(ctx context.Context, f *fixState) error {
	var ids []int64
	for _, r := range f.requests {
		switch r.Class {
		case "register_schema", "trigger_dbt_run":
			// register_schema runs through dw-schema; the rerun waits for the owner's changes.
		default:
			ids = append(ids, r.ID)
		}
	}
	var out struct {
		Actions     []actionOut `json:"actions"`
		NeedsPerson string      `json:"needs_person"`
		OwnerSteps  []string    `json:"owner_steps_outstanding"`
	}
	if err := s.call(ctx, "dw-incidents", "remediate", map[string]any{"incident_id": s.res.IncidentID, "request_ids": ids,
		"timestamp_column": "hour", "window": s.window()}, &out); err != nil {
		return err
	}
	var done []string
	handed := 0
	for _, a := range out.Actions {
		switch a.Status {
		case "succeeded":
			done = append(done, fmt.Sprintf("%s %s", a.Class, a.Target))
		case "owner_steps":
			handed++
			s.res.OwnerSteps = append(s.res.OwnerSteps, a.Steps...)
		default:
			return fmt.Errorf("action %s on %s: %s %s", a.Class, a.Target, a.Status, a.Error)
		}
	}
	s.res.DAGPaused = s.peers.Airflow.Paused(StripeDAG)
	if !s.res.DAGPaused {
		return fmt.Errorf("%s is not paused on the Airflow stand-in after remediate", StripeDAG)
	}
	if s.peers.Airflow.Paused(OtherDAG) {
		return fmt.Errorf("%s was paused too", OtherDAG)
	}
	if handed != 2 {
		return fmt.Errorf("remediate handed over %d owner-only steps, want the statement and the dbt change", handed)
	}
	if !s.opts.Now().Before(s.stripeNext) {
		return fmt.Errorf("%s paused at %s, not before its next run %s", StripeDAG, s.opts.Now().UTC().Format(time.RFC3339), s.stripeNext.Format(time.RFC3339))
	}
	found := fmt.Sprintf("ran %s: the Airflow stand-in reports %s paused before its %s UTC run; %d owner-only %s (statement, dbt change) handed to %s",
		strings.Join(done, ", "), StripeDAG, s.stripeNext.UTC().Format("15:04"), handed, plural(handed, "step", "steps"), Approver)
	if out.NeedsPerson != "" {
		return fmt.Errorf("remediate paged a person while the owner's steps were outstanding: %s", out.NeedsPerson)
	}
	if len(out.OwnerSteps) > 0 {
		found += fmt.Sprintf(". Its re-check waits for the owner's %d outstanding %s (%s does not exist yet): nobody is paged",
			len(out.OwnerSteps), plural(len(out.OwnerSteps), "step", "steps"), f.v2Table)
	}
	s.step("dw-incidents", "remediate", found)
	return nil
}

// window is the verify/remediate window: whole hours back to the story's first hour.
func (s *story) window() string {
	h := math.Ceil(s.opts.Now().Sub(s.tl.StoryStart).Hours())
	return fmt.Sprintf("%dh", int(h))
}

// ownerSide is the owner doing the Confluent side exactly as the plan's payloads say: v13
// through dw-schema with its approval, the -v2 topic, the corrected statement, Tableflow on the
// new topic (whose hourly rows land in the warehouse), and the dbt change.
func (s *story) ownerSide(ctx context.Context, f *fixState) error {
	reg, ok := f.request("register_schema")
	if !ok {
		return fmt.Errorf("no register_schema request")
	}
	schemaText, _ := reg.Payload["schema"].(string)
	if !strings.Contains(schemaText, "response_bytes") || !strings.Contains(schemaText, "response_kib") {
		return fmt.Errorf("the approved schema does not keep response_bytes beside response_kib:\n%s", schemaText)
	}
	var r struct {
		Action actionOut `json:"action"`
	}
	if err := s.call(ctx, "dw-schema", "register_stream_schema", map[string]any{"subject": Subject, "schema": schemaText,
		"schema_type": reg.Payload["schema_type"], "approval_request_id": reg.ID}, &r); err != nil {
		return err
	}
	if r.Action.Status != "succeeded" {
		return fmt.Errorf("register_stream_schema: %s %s", r.Action.Status, r.Action.Error)
	}
	v, _ := r.Action.Result["version"].(float64)
	s.res.V13Version = int(v)
	if s.res.V13Version != 13 {
		return fmt.Errorf("the restored schema registered as version %d, want 13", s.res.V13Version)
	}
	s.step(owner, "dw-schema register_stream_schema", fmt.Sprintf("registers %s v13 with approval #%d (response_bytes back as optional beside response_kib)", Subject, reg.ID))

	st, ok := f.request("flink_statement")
	if !ok {
		return fmt.Errorf("no flink_statement request")
	}
	name, _ := st.Payload["statement_name"].(string)
	sqlText, _ := st.Payload["sql"].(string)
	sink, _ := st.Payload["sink"].(string)
	if name == "" || sqlText == "" || sink == "" {
		return fmt.Errorf("flink_statement payload lacks statement_name, sql or sink: %v", st.Payload)
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(s.peers.Kafka.BootstrapServers...))
	if err != nil {
		return err
	}
	_, err = kadm.NewClient(adm).CreateTopic(ctx, 3, 1, nil, sink)
	adm.Close()
	if err != nil {
		return fmt.Errorf("create topic %s: %w", sink, err)
	}
	stmts := s.peers.Confluent.Statements()
	pool := ""
	for _, x := range stmts {
		if x.Name == rollupName {
			pool = x.ComputePoolID
		}
	}
	stmts = append(stmts, confluenttest.Statement{Name: name, SQL: sqlText, Phase: "RUNNING", CreatedAt: time.Now().UTC(), ComputePoolID: pool,
		Labels: map[string]string{"team": "streaming-platform", "incident": fmt.Sprint(s.res.IncidentID)}, SQLKind: "INSERT_INTO"})
	s.peers.Confluent.SetStatements(stmts)
	s.peers.Confluent.SetTableflow(append(s.peers.Confluent.Tableflows(),
		confluenttest.Tableflow{Topic: sink, Phase: "RUNNING", TableFormats: []string{"ICEBERG"}, TablePath: tableflowPath + sink}))
	// The corrected statement: each record from the approved offsets on, read back from the broker
	// with its writer's schema, summing COALESCE(response_kib * 1024, response_bytes).
	start, err := startOf(st.Payload)
	if err != nil {
		return err
	}
	all, err := readUsage(ctx, s.peers, EventsTopic, nil, correctedReader)
	if err != nil {
		return err
	}
	var from []Reading
	for _, r := range all {
		if o, ok := start.offsets[r.Partition]; ok && r.Offset >= o {
			from = append(from, r)
		}
	}
	rows := RollupReadings(from, s.tl.StoryStart, s.tl.StoryEnd)
	if err := land(ctx, s.wh, f.v2Table, rows); err != nil {
		return err
	}
	if len(rows) == 0 || NullShare(rows) != 0 {
		return fmt.Errorf("%d corrected rows, egress_bytes null in %s", len(rows), pct(NullShare(rows)))
	}
	s.step(owner, "Confluent Cloud (stand-in)", fmt.Sprintf("creates topic %s and statement %s exactly as approved, enables Tableflow on it; %d records of %s read from offsets %s, each with its writer schema: %d corrected hourly rows land in %s, egress_bytes null in %s",
		sink, name, len(from), EventsTopic, start.Offsets, len(rows), f.v2Table, pct(NullShare(rows))))

	dc, ok := f.request("dbt_code")
	if !ok {
		return fmt.Errorf("no dbt_code request")
	}
	diff, _ := dc.Payload["diff"].(string)
	path, _ := dc.Payload["path"].(string)
	if diff == "" || path == "" {
		return fmt.Errorf("dbt_code payload lacks diff or path: %v", dc.Payload)
	}
	if filepath.IsAbs(path) || strings.Contains(path, "..") {
		return fmt.Errorf("dbt_code path %q is outside the project", path)
	}
	dest := filepath.Join(filepath.Dir(filepath.Dir(s.art.Manifest)), filepath.FromSlash(path))
	code, err := os.ReadFile(dest)
	if err != nil {
		return err
	}
	changed, _, err := plans.ApplyDiff(string(code), diff)
	if err != nil {
		return fmt.Errorf("the approved dbt diff does not apply to %s: %w", path, err)
	}
	if !strings.Contains(changed, f.v2Table) {
		return fmt.Errorf("the dbt change does not read %s:\n%s", f.v2Table, changed)
	}
	if err := os.WriteFile(dest, []byte(changed), 0o600); err != nil {
		return err
	}
	s.step(owner, "dbt project (git apply)", fmt.Sprintf("applies the approved diff to %s: hours from %s read %s → %s",
		path, s.tl.StoryStart.Format("15:04"), f.v2Table, dest))

	if err := s.call(ctx, "dw-context-catalog", "sync_catalog", map[string]any{}, nil); err != nil {
		return err
	}
	// The lineage the graph now holds: statement → sink topic → Tableflow → the v2 warehouse table.
	lineage := []string{"flink:statement/" + name}
	for _, next := range []string{"kafka:topic/" + sink, "tableflow:" + sink, "." + f.v2Table} {
		down, err := s.downstreamOf(ctx, lineage[len(lineage)-1])
		if err != nil {
			return err
		}
		hop := ""
		for _, d := range down {
			if d == next || strings.HasPrefix(next, ".") && strings.HasPrefix(d, "warehouse:") && strings.HasSuffix(d, next) {
				hop = d
			}
		}
		if hop == "" {
			return fmt.Errorf("the graph has no edge from %s toward %s: downstream %v", lineage[len(lineage)-1], strings.TrimPrefix(next, "."), down)
		}
		lineage = append(lineage, hop)
	}
	s.step("dw-context-catalog", "sync_catalog + get_asset", "re-synced; lineage in the context graph: "+strings.Join(lineage, " → "))
	return nil
}

// downstreamOf is get_asset's downstream URNs of urn.
func (s *story) downstreamOf(ctx context.Context, urn string) ([]string, error) {
	var a struct {
		Downstream []struct {
			URN string `json:"urn"`
		} `json:"downstream"`
	}
	if err := s.call(ctx, "dw-context-catalog", "get_asset", map[string]any{"asset_id": urn}, &a); err != nil {
		return nil, err
	}
	var out []string
	for _, d := range a.Downstream {
		out = append(out, d.URN)
	}
	return out, nil
}

// reruns queues the approved dbt Cloud rerun now that the owner's changes are in.
func (s *story) reruns(ctx context.Context, f *fixState) error {
	r, ok := f.request("trigger_dbt_run")
	if !ok {
		return fmt.Errorf("no trigger_dbt_run request")
	}
	var out struct {
		Actions []actionOut `json:"actions"`
	}
	if err := s.call(ctx, "dw-incidents", "remediate", map[string]any{"incident_id": s.res.IncidentID, "request_ids": []int64{r.ID},
		"timestamp_column": "hour", "window": s.window()}, &out); err != nil {
		return err
	}
	if len(out.Actions) != 1 || out.Actions[0].Status != "succeeded" {
		return fmt.Errorf("dbt rerun: %+v", out.Actions)
	}
	if n := len(s.peers.DBT.Causes()); n != 1 {
		return fmt.Errorf("the dbt Cloud stand-in saw %d runs, want 1", n)
	}
	s.step("dw-incidents", "remediate", fmt.Sprintf("queues the approved rerun: dbt Cloud job %d run %v (%v)", DBTJob, out.Actions[0].Result["run_id"], out.Actions[0].Result["status"]))
	return nil
}

func (s *story) verify(ctx context.Context) error {
	var out struct {
		Resolved   bool  `json:"resolved"`
		Failed     bool  `json:"failed"`
		ReceiptSeq int64 `json:"receipt_seq"`
		Checks     []struct {
			Asset   string  `json:"asset"`
			Check   string  `json:"check"`
			Subject string  `json:"subject"`
			Status  string  `json:"status"`
			Value   float64 `json:"value"`
			Why     string  `json:"why"`
		} `json:"checks"`
	}
	// The plan's checks read "today": in the story's zone that is the story window (see Clock.Zone).
	args := map[string]any{"incident_id": s.res.IncidentID, "timestamp_column": "hour", "window": "today", "time_zone": s.tl.Zone()}
	if err := s.call(ctx, "dw-incidents", "verify_incident", args, &out); err != nil {
		return err
	}
	var lines []string
	for _, c := range out.Checks {
		lines = append(lines, fmt.Sprintf("%s %s %s %s", tableOfURN(c.Asset), c.Check, c.Subject, c.Status))
	}
	if !out.Resolved || out.Failed || out.ReceiptSeq == 0 {
		return fmt.Errorf("verify_incident did not resolve incident #%d: %s", s.res.IncidentID, strings.Join(lines, "; "))
	}
	s.res.Resolved, s.res.ReceiptSeq = true, out.ReceiptSeq
	s.step("dw-incidents", "verify_incident", fmt.Sprintf("re-checks the story's day (today in %s, from %s UTC) pass: %s → incident #%d resolved, receipt #%d written",
		s.tl.Zone(), s.tl.StoryStart.Format("15:04"), joinMax(lines, 6), s.res.IncidentID, out.ReceiptSeq))
	return nil
}

func (s *story) receipt(ctx context.Context) error {
	var md, js struct {
		Receipts []struct {
			Seq      int64           `json:"seq"`
			MAC      string          `json:"mac"`
			Body     json.RawMessage `json:"body"`
			Markdown string          `json:"markdown"`
		} `json:"receipts"`
	}
	if err := s.call(ctx, "dw-incidents", "get_receipt", map[string]any{"incident_id": s.res.IncidentID, "format": "markdown"}, &md); err != nil {
		return err
	}
	if err := s.call(ctx, "dw-incidents", "get_receipt", map[string]any{"incident_id": s.res.IncidentID}, &js); err != nil {
		return err
	}
	if len(md.Receipts) != 1 || len(js.Receipts) != 1 {
		return fmt.Errorf("incident #%d has %d receipts", s.res.IncidentID, len(md.Receipts))
	}
	text := md.Receipts[0].Markdown
	for _, want := range []string{"response_bytes", Approver, StripeDAG} {
		if !strings.Contains(text, want) {
			return fmt.Errorf("the receipt does not mention %s", want)
		}
	}
	s.res.ReceiptMD = filepath.Join(s.dir, fmt.Sprintf("receipt-incident-%d.md", s.res.IncidentID))
	s.res.ReceiptJSON = filepath.Join(s.dir, fmt.Sprintf("receipt-incident-%d.json", s.res.IncidentID))
	if err := os.WriteFile(s.res.ReceiptMD, []byte(text), 0o600); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(js.Receipts[0], "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.res.ReceiptJSON, raw, 0o600); err != nil {
		return err
	}
	var sections []string
	for _, l := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			sections = append(sections, strings.TrimSpace(h))
		}
	}
	for _, want := range []string{"Cause", "Evidence", "Approvals", "Actions", "Checks before", "Checks after", "Undo"} {
		if !slices.Contains(sections, want) {
			return fmt.Errorf("the receipt has no %q section: %v", want, sections)
		}
	}
	s.step("dw-incidents", "get_receipt", fmt.Sprintf("receipt #%d, sections: %s → %s (+ .json)", js.Receipts[0].Seq, strings.Join(sections, ", "), s.res.ReceiptMD))

	var v struct {
		OK       bool  `json:"ok"`
		Receipts int64 `json:"receipts"`
	}
	if err := s.call(ctx, "dw-incidents", "verify_receipts", map[string]any{}, &v); err != nil {
		return err
	}
	if !v.OK {
		return fmt.Errorf("verify_receipts: the chain does not verify")
	}
	s.res.ReceiptsOK = true
	s.step("dw-incidents", "verify_receipts", fmt.Sprintf("chain of %d %s verifies from the first MAC to the head", v.Receipts, plural(int(v.Receipts), "receipt", "receipts")))
	return nil
}
