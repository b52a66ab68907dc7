package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/plans"
	"github.com/dataworkers/dw/pkg/remediation"
)

// proposalView is one plan step (or a request no plan step accounts for) with the request routed for
// it and whether the signed-in approver may decide it here.
type proposalView struct {
	Order      int
	Class      string
	Target     string
	Title      string
	Executor   string
	Reversible bool
	// Origin is generated (Data Workers drafted it from the diagnosis and the graph) or client (the
	// calling model authored it); empty for a request no plan step accounts for.
	Origin        string
	Undo          string
	Why           string
	Validation    string
	BlastRadius   []string
	Payload       map[string]any
	PayloadSHA256 string
	Request       *approvals.Request
	CanDecide     bool
}

// incident shows one incident: summary, cause, timeline, the blast radius of its asset and its
// latest plan's proposals with their payloads, each next to the form that decides its request.
func (s *Server) incident(w http.ResponseWriter, r *http.Request, sess session) {
	id, err := pathID(r, "id")
	if err != nil || s.incidents == nil {
		http.NotFound(w, r)
		return
	}
	ctx := r.Context()
	inc, err := s.incidents.Get(ctx, id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	data := map[string]any{"Approver": sess.approver, "CSRF": sess.csrf, "I": inc, "Open": incidents.IsOpen(inc.Status),
		"Severities": []string{"sev1", "sev2", "sev3", "sev4"}, "Statuses": incidents.PersonStatuses,
		"Flash": r.URL.Query().Get("flash"), "Error": r.URL.Query().Get("error")}
	// The blast radius is read live from the context graph; a graph that does not know the asset is
	// said so on the page, not hidden.
	if s.graph != nil {
		br, err := s.graph.BlastRadius(ctx, graph.BlastRadiusRequest{Asset: graph.URN(inc.Asset)})
		if err != nil {
			data["BlastError"] = err.Error()
		} else {
			all := append(append([]graph.Impact{}, br.FieldLevel...), br.TableLevel...)
			sort.SliceStable(all, func(i, j int) bool { return all[i].Depth < all[j].Depth })
			data["Blast"], data["Impacts"] = br, all
		}
	}
	reqs, err := s.approvals.List(ctx, "", inc.ID)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].ID < reqs[j].ID })
	var views []proposalView
	used := map[int64]bool{}
	if s.st != nil {
		plan, err := plans.Latest(ctx, s.st, inc.ID)
		switch {
		case errors.Is(err, plans.ErrNoPlan):
		case err != nil:
			data["PlanError"] = err.Error()
		default:
			data["Plan"] = plan
			for _, p := range plan.Proposals {
				v := proposalView{Order: p.Order, Class: p.Class, Target: p.Target, Title: p.Title, Executor: p.Executor, Reversible: p.Reversible,
					Origin: p.Origin, Undo: p.Undo, Why: p.Why, Validation: p.Validation, BlastRadius: p.BlastRadius, Payload: p.Payload}
				if _, h, err := approvals.Canonical(p.Payload); err == nil {
					v.PayloadSHA256 = h
				}
				if i := remediation.RequestFor(p, reqs, used); i >= 0 {
					v.Request = &reqs[i]
				}
				views = append(views, v)
			}
		}
	}
	for i := range reqs {
		q := reqs[i]
		if used[q.ID] {
			continue
		}
		views = append(views, proposalView{Class: q.Class, Target: q.Target, Title: q.Title, Executor: q.Executor,
			Payload: q.Payload, PayloadSHA256: q.PayloadSHA256, Request: &reqs[i]})
	}
	for i := range views {
		if q := views[i].Request; q != nil {
			views[i].CanDecide = q.Status == approvals.StatusPending && slices.Contains(q.Approvers, sess.approver) && !q.IsRequester(sess.approver)
		}
	}
	data["Proposals"] = views
	if s.receipts != nil {
		rs, err := s.receipts.ForIncident(ctx, inc.ID)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		data["Receipts"] = rs
	}
	s.render(w, "incident.html", data)
}

// payloadPart is one key of a payload as a person reads it: short values inline, SQL, diffs, schemas
// and other multi-line text preformatted, a diff with its added and removed lines marked.
type payloadPart struct {
	Key   string
	Value string
	Pre   bool
	Kind  string // sql, diff, schema, json or text
	Lines []diffLine
}

type diffLine struct {
	Class string // add, del, hunk or ""
	Text  string
}

// readablePayload renders a payload for review. The page also shows the payload's SHA-256, and the
// form carries that hash, so what is approved is exactly the stored payload, whatever the rendering.
func readablePayload(p map[string]any) []payloadPart {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []payloadPart
	for _, k := range keys {
		part := payloadPart{Key: k}
		switch v := p[k].(type) {
		case string:
			part.Value = v
			lk := strings.ToLower(k)
			switch {
			case strings.Contains(lk, "diff") || looksLikeDiff(v):
				part.Kind, part.Pre = "diff", true
				for _, l := range strings.Split(strings.TrimRight(v, "\n"), "\n") {
					dl := diffLine{Text: l}
					switch {
					case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---"):
					case strings.HasPrefix(l, "@@"):
						dl.Class = "hunk"
					case strings.HasPrefix(l, "+"):
						dl.Class = "add"
					case strings.HasPrefix(l, "-"):
						dl.Class = "del"
					}
					part.Lines = append(part.Lines, dl)
				}
			case strings.Contains(lk, "schema") && json.Valid([]byte(v)):
				part.Kind, part.Pre = "schema", true
				var buf bytes.Buffer
				if json.Indent(&buf, []byte(v), "", "  ") == nil {
					part.Value = buf.String()
				}
			case strings.Contains(lk, "sql") || strings.Contains(lk, "statement") || strings.Contains(lk, "query"):
				part.Kind, part.Pre = "sql", true
			case strings.Contains(lk, "schema"):
				part.Kind, part.Pre = "schema", true
			case strings.Contains(v, "\n") || len(v) > 100:
				part.Kind, part.Pre = "text", true
			default:
				part.Kind = "text"
			}
		case nil:
			part.Kind, part.Value = "json", "null"
		case bool, float64, json.Number, int, int64:
			part.Kind, part.Value = "json", fmt.Sprint(v)
		default:
			b, _ := json.MarshalIndent(v, "", "  ")
			part.Kind, part.Value, part.Pre = "json", string(b), true
		}
		out = append(out, part)
	}
	return out
}

// looksLikeDiff recognises a unified diff by its headers or hunks.
func looksLikeDiff(s string) bool {
	return strings.HasPrefix(s, "--- ") && strings.Contains(s, "\n+++ ") || strings.Contains(s, "\n@@ ") || strings.HasPrefix(s, "@@ ")
}

func joinURNs(us []graph.URN) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = string(u)
	}
	return strings.Join(s, ", ")
}
