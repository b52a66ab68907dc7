package receipts

import (
	"fmt"
	"strings"
	"time"
)

// A receipt is read in two places: as Markdown (the MCP tools and resources, `dw-incidents
// verify`) and as HTML (the approver console). Both render one Doc built once from the receipt,
// so the two always show the same facts in the same order, and the console needs no Markdown
// parser to turn one into the other.

// SpanKind says how a run of text is set.
type SpanKind string

const (
	// Plain is the receipt's own vocabulary and punctuation (a class, a status, a time, a
	// number). Markdown writes it as it is, everywhere.
	Plain SpanKind = "plain"
	// Prose is free text from outside (a title, a result, an undo note). (Inside a Markdown table
	// cell every kind has its "|" escaped and its line breaks made spaces, so it stays in its cell.)
	Prose SpanKind = "prose"
	// Code is an identifier (an asset URN, a hash, a tool name), set in code.
	Code SpanKind = "code"
	// Strong is a bold lead-in (an evidence kind).
	Strong SpanKind = "strong"
)

// Span is one run of text of one kind.
type Span struct {
	Kind SpanKind
	Text string
}

// Line is inline content: a paragraph, a list item, a table cell.
type Line []Span

// Fact is one entry of the receipt's key/value list (asset, failure, severity, ...).
type Fact struct {
	Key   string
	Value Line
}

// Table is a header and rows of cells; every row has one cell per header.
type Table struct {
	Header []string
	Rows   [][]Line
}

// Section is a titled part of the receipt: paragraphs, then a bullet list, then a table, each
// optional, in that order.
type Section struct {
	Title      string
	Paragraphs []Line
	List       []Line
	Table      *Table
}

// Doc is a receipt laid out for people: the same facts as the signed JSON body, nothing added.
type Doc struct {
	Title    string
	Facts    []Fact
	Sections []Section
	// Footer says when the receipt was written and which chain MACs bind it.
	Footer Line
}

// NewDoc lays out a receipt and its decoded body.
func NewDoc(r Receipt, b Body) Doc {
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
	d := Doc{Title: fmt.Sprintf("Receipt #%d — incident #%d", r.Seq, b.Incident.ID)}
	d.Facts = []Fact{
		{"Asset", Line{{Code, b.Incident.Asset}}},
		{"Failure", Line{{Prose, b.Incident.Summary}, {Plain, " (" + b.Incident.FailureMode + ")"}}},
		{"Severity", Line{{Plain, b.Incident.Severity}}},
		{"Opened", Line{{Plain, ts(b.Incident.OpenedAt)}}},
	}
	if b.Incident.ResolvedAt != nil {
		d.Facts = append(d.Facts, Fact{"Resolved", Line{{Plain, ts(*b.Incident.ResolvedAt)}}})
	}
	d.Facts = append(d.Facts, Fact{"Outcome", Line{{Prose, b.Outcome}}})
	d.Sections = append(d.Sections, Section{Title: "Cause", Paragraphs: []Line{{{Prose, b.Cause}}}})

	if len(b.Evidence) > 0 {
		sec := Section{Title: "Evidence"}
		for _, e := range b.Evidence {
			sec.List = append(sec.List, Line{{Strong, e.Kind}, {Plain, " ("}, {Prose, e.Source}, {Plain, "): "}, {Prose, e.Detail}})
		}
		d.Sections = append(d.Sections, sec)
	}
	if len(b.Proposals) > 0 {
		sec := Section{Title: "Plan", Table: &Table{Header: []string{"#", "Class", "Target", "Executed by", "Proposal", "Approval request", "Undo"}}}
		if b.PlanID != 0 {
			sec.Paragraphs = []Line{{{Plain, fmt.Sprintf("Plan #%d.", b.PlanID)}}}
		}
		for i, p := range b.Proposals {
			n := p.Order
			if n == 0 {
				n = i + 1
			}
			req := "none"
			if p.RequestID != 0 {
				req = fmt.Sprintf("#%d", p.RequestID)
			}
			sec.Table.Rows = append(sec.Table.Rows, []Line{{{Plain, fmt.Sprint(n)}}, {{Plain, p.Class}}, {{Code, p.Target}}, {{Plain, p.Executor}},
				{{Prose, p.Title}}, {{Plain, req}}, {{Prose, p.Undo}}})
		}
		d.Sections = append(d.Sections, sec)
	}
	if len(b.Approvals) > 0 {
		t := &Table{Header: []string{"Request", "Class", "Decision", "By", "When", "Payload SHA-256"}}
		for _, a := range b.Approvals {
			when := ""
			if a.DecidedAt != nil {
				when = ts(*a.DecidedAt)
			}
			t.Rows = append(t.Rows, []Line{{{Plain, fmt.Sprintf("#%d", a.RequestID)}}, {{Plain, a.Class}}, {{Plain, a.Status}}, {{Plain, a.DecidedBy}},
				{{Plain, when}}, {{Code, a.PayloadSHA256}}})
		}
		d.Sections = append(d.Sections, Section{Title: "Approvals", Table: t})
	}
	if len(b.Actions) > 0 {
		t := &Table{Header: []string{"#", "Class", "Target", "Authority", "Result", "Undo"}}
		for _, a := range b.Actions {
			t.Rows = append(t.Rows, []Line{{{Plain, fmt.Sprint(a.ID)}}, {{Plain, a.Class}}, {{Code, a.Target}}, {{Prose, a.AuthorityLine()}},
				{{Plain, a.Status + ": "}, {Prose, a.Result}}, {{Prose, a.Undo}}})
		}
		d.Sections = append(d.Sections, Section{Title: "Actions", Table: t})
	}
	for _, part := range []struct {
		title  string
		checks []Check
	}{{"Checks before", b.ChecksBefore}, {"Checks after", b.ChecksAfter}} {
		if len(part.checks) == 0 {
			continue
		}
		t := &Table{Header: []string{"When", "Asset", "Metric", "Value", "Status", "Why"}}
		for _, c := range part.checks {
			metric := c.Metric
			if c.Subject != "" {
				metric += " (" + c.Subject + ")"
			}
			t.Rows = append(t.Rows, []Line{{{Plain, ts(c.At)}}, {{Code, c.Asset}}, {{Plain, metric}}, {{Plain, fmt.Sprintf("%g", c.Value)}},
				{{Plain, c.Status}}, {{Prose, c.Why}}})
		}
		d.Sections = append(d.Sections, Section{Title: part.title, Table: t})
	}
	if len(b.Undo) > 0 {
		sec := Section{Title: "Undo"}
		for _, u := range b.Undo {
			sec.List = append(sec.List, Line{{Prose, u}})
		}
		d.Sections = append(d.Sections, sec)
	}
	d.Footer = Line{{Plain, "Written " + ts(r.CreatedAt) + " · chain MAC "}, {Code, r.MAC}, {Plain, " (previous "}, {Code, r.PrevMAC},
		{Plain, "). "}, {Code, "verify_receipts"}, {Plain, " checks the whole chain."}}
	return d
}

// Markdown renders a receipt for people: the same facts as the JSON, nothing added.
func Markdown(r Receipt, b Body) string {
	return NewDoc(r, b).Markdown()
}

// Markdown renders the document. Values are written as they are, except that inside a table cell
// no value can end its cell or row ("|" escaped, line breaks as spaces) and a code span is fenced
// past any backticks its value holds.
func (d Doc) Markdown() string {
	var s strings.Builder
	s.WriteString("# " + d.Title + "\n\n")
	for _, f := range d.Facts {
		s.WriteString("- **" + f.Key + ":** " + f.Value.markdown(false) + "\n")
	}
	for _, sec := range d.Sections {
		s.WriteString("\n## " + sec.Title + "\n\n")
		var blocks []string
		for _, p := range sec.Paragraphs {
			blocks = append(blocks, p.markdown(false)+"\n")
		}
		if len(sec.List) > 0 {
			var l strings.Builder
			for _, item := range sec.List {
				l.WriteString("- " + item.markdown(false) + "\n")
			}
			blocks = append(blocks, l.String())
		}
		if sec.Table != nil {
			blocks = append(blocks, sec.Table.markdown())
		}
		s.WriteString(strings.Join(blocks, "\n"))
	}
	s.WriteString("\n---\n" + d.Footer.markdown(false) + "\n")
	return s.String()
}

func (t *Table) markdown() string {
	var s strings.Builder
	s.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|" + strings.Repeat("---|", len(t.Header)) + "\n")
	for _, row := range t.Rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = c.markdown(true)
		}
		s.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return s.String()
}

func (l Line) markdown(inCell bool) string {
	var s strings.Builder
	for _, sp := range l {
		text := sp.Text
		if inCell {
			text = mdCell(text) // any span: a "|" or a line break would end the cell or the row
		}
		switch sp.Kind {
		case Code:
			s.WriteString(codeSpan(text))
		case Strong:
			s.WriteString("**" + text + "**")
		default:
			s.WriteString(text)
		}
	}
	return s.String()
}

// mdCell keeps a value inside one Markdown table cell: "|" escaped (GFM splits cells on it even
// inside a code span), line breaks as spaces.
func mdCell(s string) string {
	return strings.NewReplacer("|", "\\|", "\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// codeSpan sets s in code whatever backticks it holds (CommonMark: the fence is one backtick
// longer than the longest run inside, padded with a space when s starts or ends with one).
func codeSpan(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
