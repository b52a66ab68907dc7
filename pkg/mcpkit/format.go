package mcpkit

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Formats `call` can print a result in. json is the structured result itself; the others are
// summaries for people (text, markdown) and for CI systems (github annotations, JUnit XML), all
// read generically from the result's JSON so every tool gets them without code of its own.
var Formats = []string{"json", "text", "markdown", "github", "junit"}

// Check statuses of a summary line.
const (
	statusPass = "pass"
	statusWarn = "warn"
	statusFail = "fail"
	statusSkip = "skip"
)

// summary is what the human and CI formats say about one result.
type summary struct {
	Agent, Tool string
	// Verdict is the result's own one-line verdict, or one derived from its flags.
	Verdict string
	// Failed is set by a result's "failed": true (a blocking gate, a failing monitor).
	Failed bool
	// Gate is set for a result that decides whether a change may go ahead (it names its blocking
	// readers): its failure is reported as "blocked" rather than "failed".
	Gate bool
	// Unhealthy is set by "healthy": false (check_connections with a configured backend down).
	Unhealthy bool
	Reasons   []string
	Checks    []check
	// Next is what to do about it: the result's own next_steps, then the owners to talk to.
	Next []string
	// File is the file the call was about (its schema_file or file argument), for annotations.
	File string
}

// check is one line of a summary and one JUnit test case.
type check struct {
	Name    string
	Status  string
	Message string
	// Field names what to look for in File to place an annotation.
	Field string
}

func (s summary) blocks() bool { return s.Failed || s.Unhealthy }

// failureWord is what the logs say about a failed verdict: "blocked" for a gate, else "failed".
func (s summary) failureWord() string {
	if s.Gate {
		return "blocked"
	}
	return "failed"
}

// summarize reads a structured result generically: a verdict and failed/healthy flags, reasons,
// and lists of findings under names shared across tools (incompatibilities, blocking_readers and
// impact.readers, backends and store, runs or results with a status).
func summarize(agent, tool string, args map[string]any, raw json.RawMessage) summary {
	s := summary{Agent: agent, Tool: tool}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if f, ok := args["schema_file"].(string); ok {
		s.File = f
	} else if f, ok := args["file"].(string); ok {
		s.File = f
	}
	s.Failed, _ = m["failed"].(bool)
	_, s.Gate = m["blocking_readers"]
	if h, ok := m["healthy"].(bool); ok && !h {
		s.Unhealthy = true
	}
	s.Verdict, _ = m["verdict"].(string)
	if s.Verdict == "" {
		s.Verdict, _ = m["summary"].(string)
	}
	if s.Verdict == "" {
		switch {
		case s.Unhealthy:
			s.Verdict = "unhealthy: a configured backend or the store does not answer"
		case m["healthy"] == true:
			s.Verdict = "healthy"
		case s.Failed:
			s.Verdict = "failed"
		case m["failed"] == false:
			s.Verdict = "passed"
		default:
			s.Verdict = "ok"
		}
	}
	s.Reasons = stringList(m["reasons"])
	s.Next = stringList(m["next_steps"])

	if list, ok := m["incompatibilities"].([]any); ok {
		for _, it := range objects(list) {
			name := "incompatible: " + str(it["type"])
			if f := str(it["field"]); f != "" {
				name += " (" + f + ")"
			}
			msg := strings.TrimSpace(str(it["message"]) + " at " + str(it["path"]))
			if v, ok := it["old_version"].(float64); ok && v > 0 {
				msg += fmt.Sprintf(" against version %d", int(v))
			}
			s.Checks = append(s.Checks, check{Name: name, Status: statusFail, Message: msg, Field: str(it["field"])})
		}
		if len(list) == 0 && m["compatible"] == true {
			s.Checks = append(s.Checks, check{Name: "compatibility", Status: statusPass, Message: "compatible under " + str(m["level"])})
		}
	}
	s.Checks = append(s.Checks, readerChecks(m)...)
	s.Checks = append(s.Checks, backendChecks(m)...)
	for _, key := range []string{"runs", "results"} {
		list, _ := m[key].([]any)
		for _, it := range objects(list) {
			st := str(it["status"])
			if st == "" {
				continue
			}
			name := firstNonEmpty(str(it["monitor"]), str(it["name"]), str(it["check"]))
			if sub := str(it["subject"]); sub != "" {
				name += " " + sub
			}
			if t := str(it["table"]); t != "" && name != t {
				name += " on " + t
			}
			msg := firstNonEmpty(str(it["error"]), str(it["why"]), str(it["summary"]), str(it["message"]), st)
			s.Checks = append(s.Checks, check{Name: name, Status: statusOf(st), Message: msg, Field: str(it["subject"])})
		}
	}
	var owners []string
	for _, c := range blockingReaders(m) {
		for _, o := range stringList(c["owners"]) {
			if !slices.Contains(owners, o) {
				owners = append(owners, o)
			}
		}
	}
	if len(owners) > 0 {
		s.Next = append(s.Next, "Agree the change with the owners of the blocking readers: "+strings.Join(owners, ", ")+".")
	}
	if s.blocks() && len(s.Next) == 0 {
		for _, c := range s.Checks {
			if c.Status == statusFail {
				s.Next = append(s.Next, "Fix "+c.Name+": "+c.Message)
			}
		}
	}
	return s
}

func blockingReaders(m map[string]any) []map[string]any {
	list, _ := m["blocking_readers"].([]any)
	return objects(list)
}

// readerChecks lists the blocking readers as failures, then the other readers the change breaks
// (as warnings: they do not block under the policy).
func readerChecks(m map[string]any) []check {
	var out []check
	seen := map[string]bool{}
	add := func(r map[string]any, status string) {
		key := str(r["urn"]) + "\x00" + str(r["field"])
		if seen[key] {
			return
		}
		seen[key] = true
		name := firstNonEmpty(str(r["name"]), str(r["urn"]))
		if k := str(r["kind"]); k != "" {
			name = k + " " + name
		}
		if f := str(r["field"]); f != "" {
			name += " (" + f + " " + str(r["change"]) + ")"
		}
		msg := str(r["effect"])
		if sev := str(r["severity"]); sev != "" {
			msg = strings.TrimSpace(fmt.Sprintf("[%s] %s", sev, msg))
			if why := str(r["severity_reason"]); why != "" {
				msg += " (" + why + ")"
			}
		}
		out = append(out, check{Name: name, Status: status, Message: msg, Field: str(r["field"])})
	}
	for _, r := range blockingReaders(m) {
		add(r, statusFail)
	}
	imp, _ := m["impact"].(map[string]any)
	list, _ := imp["readers"].([]any)
	for _, r := range objects(list) {
		if r["breaks"] == true {
			add(r, statusWarn)
		}
	}
	return out
}

func backendChecks(m map[string]any) []check {
	var out []check
	if st, ok := m["store"].(map[string]any); ok {
		if okv, isBool := st["ok"].(bool); isBool {
			c := check{Name: "store " + str(st["path"]), Status: statusPass, Message: "answers"}
			if !okv {
				c.Status, c.Message = statusFail, firstNonEmpty(str(st["error"]), "does not answer")
			}
			out = append(out, c)
		}
	}
	list, _ := m["backends"].([]any)
	for _, b := range objects(list) {
		c := check{Name: str(b["backend"])}
		switch {
		case b["configured"] != true:
			c.Status, c.Message = statusSkip, "not configured (set "+str(b["config_key"])+")"
		case b["reachable"] == true:
			c.Status, c.Message = statusPass, "answers"
			if ep := str(b["endpoint"]); ep != "" {
				c.Message += " at " + ep
			}
		case b["reachable"] == false:
			c.Status, c.Message = statusFail, firstNonEmpty(str(b["error"]), "does not answer")+" (config "+str(b["config_key"])+")"
		default:
			c.Status, c.Message = statusSkip, firstNonEmpty(str(b["note"]), "configured, not probed")
		}
		out = append(out, c)
	}
	return out
}

func statusOf(s string) string {
	switch strings.ToLower(s) {
	case "pass", "ok", "passed":
		return statusPass
	case "warn", "warning":
		return statusWarn
	case "fail", "failed", "error":
		return statusFail
	}
	return statusSkip
}

func objects(list []any) []map[string]any {
	var out []map[string]any
	for _, it := range list {
		if o, ok := it.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, it := range list {
		if s, ok := it.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case float64:
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func (s summary) headline() string {
	word := "PASS"
	switch {
	case s.Failed && s.Gate:
		word = "BLOCKED"
	case s.Failed:
		word = "FAILED"
	case s.Unhealthy:
		word = "UNHEALTHY"
	}
	return fmt.Sprintf("%s %s: %s — %s", s.Agent, s.Tool, word, s.Verdict)
}

var statusMark = map[string]string{statusPass: "ok  ", statusWarn: "warn", statusFail: "FAIL", statusSkip: "skip"}

func writeText(w io.Writer, s summary) {
	fmt.Fprintln(w, s.headline())
	if len(s.Reasons) > 0 {
		fmt.Fprintln(w, "\nWhy:")
		for _, r := range s.Reasons {
			fmt.Fprintf(w, "  - %s\n", r)
		}
	}
	if len(s.Checks) > 0 {
		fmt.Fprintln(w, "\nChecks:")
		for _, c := range s.Checks {
			fmt.Fprintf(w, "  %s %s: %s\n", statusMark[c.Status], c.Name, c.Message)
		}
	}
	if len(s.Next) > 0 {
		fmt.Fprintln(w, "\nWhat to do:")
		for _, n := range s.Next {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

var statusEmoji = map[string]string{statusPass: "✅ pass", statusWarn: "⚠️ warn", statusFail: "❌ fail", statusSkip: "➖ skip"}

func writeMarkdown(w io.Writer, s summary) {
	fmt.Fprintf(w, "### %s\n\n", mdEscape(s.headline()))
	if s.File != "" {
		fmt.Fprintf(w, "File: `%s`\n\n", s.File)
	}
	mdList(w, "Why", s.Reasons)
	if len(s.Checks) > 0 {
		fmt.Fprintln(w, "| Status | Check | Detail |")
		fmt.Fprintln(w, "|---|---|---|")
		for _, c := range s.Checks {
			fmt.Fprintf(w, "| %s | %s | %s |\n", statusEmoji[c.Status], mdCell(c.Name), mdCell(c.Message))
		}
		fmt.Fprintln(w)
	}
	mdList(w, "What to do", s.Next)
}

// mdList writes a bold heading and a bullet list, or nothing for an empty list.
func mdList(w io.Writer, heading string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "**%s**\n\n", heading)
	for _, it := range items {
		fmt.Fprintf(w, "- %s\n", mdEscape(it))
	}
	fmt.Fprintln(w)
}

func mdEscape(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(mdEscape(s))
}

// writeGitHub prints workflow commands (one ::error per failing check, ::warning per warning,
// placed on the line of the file that names the check's field when there is one) and appends the
// markdown summary to $GITHUB_STEP_SUMMARY when the job sets it.
func writeGitHub(w io.Writer, s summary, env func(string) string) error {
	file := s.File
	if ws := env("GITHUB_WORKSPACE"); file != "" && ws != "" && filepath.IsAbs(file) {
		if rel, err := filepath.Rel(ws, file); err == nil && !strings.HasPrefix(rel, "..") {
			file = rel
		}
	}
	for _, c := range s.Checks {
		level := map[string]string{statusFail: "error", statusWarn: "warning"}[c.Status]
		if level == "" {
			continue
		}
		props := []string{"title=" + ghProperty(s.Tool+": "+c.Name)}
		if file != "" {
			props = append([]string{"file=" + ghProperty(file)}, props...)
			if line := lineOf(s.File, c.Field); line > 0 {
				props = append(props[:1], append([]string{fmt.Sprintf("line=%d", line)}, props[1:]...)...)
			}
		}
		fmt.Fprintf(w, "::%s %s::%s\n", level, strings.Join(props, ","), ghData(c.Message))
	}
	if s.blocks() {
		fmt.Fprintf(w, "::error title=%s::%s\n", ghProperty(s.Agent+" "+s.Tool), ghData(s.headline()))
	} else {
		fmt.Fprintf(w, "::notice title=%s::%s\n", ghProperty(s.Agent+" "+s.Tool), ghData(s.headline()))
	}
	path := env("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
	}
	writeMarkdown(f, s)
	return f.Close()
}

// ghData and ghProperty escape a workflow command's message and properties as the runner expects.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// lineOf is the first line of path that quotes word (a field's name), 0 when none does or the
// file cannot be read. It reads at most a few megabytes.
func lineOf(path, word string) int {
	if path == "" || word == "" {
		return 0
	}
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 4<<20))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	quoted := `"` + word + `"`
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), quoted) {
			return n
		}
	}
	return 0
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// writeJUnit gives one test case per check (a blocking reader, an incompatibility, a backend, a
// monitor) and one for the verdict itself, so a CI system shows the verdict even with no checks.
func writeJUnit(w io.Writer, s summary) error {
	suite := junitSuite{Name: s.Agent + " " + s.Tool}
	class := s.Agent + "." + s.Tool
	verdict := junitCase{Name: "verdict", Classname: class, SystemOut: s.Verdict}
	if s.blocks() {
		verdict.Failure = &junitMessage{Message: s.Verdict, Type: "blocked", Text: strings.Join(append(s.Reasons, s.Next...), "\n")}
	}
	suite.Cases = append(suite.Cases, verdict)
	for _, c := range s.Checks {
		tc := junitCase{Name: c.Name, Classname: class}
		switch c.Status {
		case statusFail:
			tc.Failure = &junitMessage{Message: c.Message, Type: "fail"}
		case statusSkip:
			tc.Skipped = &junitMessage{Message: c.Message}
		default:
			tc.SystemOut = c.Status + ": " + c.Message
		}
		suite.Cases = append(suite.Cases, tc)
	}
	for _, c := range suite.Cases {
		suite.Tests++
		if c.Failure != nil {
			suite.Failures++
		}
		if c.Skipped != nil {
			suite.Skipped++
		}
	}
	return encodeJUnit(w, junitSuites{Name: s.Agent, Tests: suite.Tests, Failures: suite.Failures, Suites: []junitSuite{suite}})
}

func encodeJUnit(w io.Writer, doc junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// writeFormatted prints a successful result in the chosen format.
func writeFormatted(w io.Writer, format string, s summary, raw json.RawMessage, env func(string) string) error {
	switch format {
	case "", "json":
		writeJSON(w, raw)
	case "text":
		writeText(w, s)
	case "markdown":
		writeMarkdown(w, s)
	case "github":
		return writeGitHub(w, s, env)
	case "junit":
		return writeJUnit(w, s)
	default:
		return fmt.Errorf("unknown format %q: use %s", format, strings.Join(Formats, ", "))
	}
	return nil
}

// writeFormattedError prints a tool error (the call did not produce a verdict) in the chosen format.
func writeFormattedError(w io.Writer, format, agent, tool, msg string) {
	switch format {
	case "text":
		fmt.Fprintf(w, "%s %s: ERROR — %s\n", agent, tool, msg)
	case "markdown":
		fmt.Fprintf(w, "### %s %s: ERROR\n\n%s\n", agent, tool, mdEscape(msg))
	case "github":
		fmt.Fprintf(w, "::error title=%s::%s\n", ghProperty(agent+" "+tool), ghData(msg))
	case "junit":
		class := agent + "." + tool
		_ = encodeJUnit(w, junitSuites{Name: agent, Tests: 1, Suites: []junitSuite{{Name: agent + " " + tool, Tests: 1,
			Cases: []junitCase{{Name: "call", Classname: class, Error: &junitMessage{Message: msg, Type: "tool_error"}}}}}})
	default:
		writeJSON(w, map[string]any{"isError": true, "error": msg})
	}
}
