package console

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/dataworkers/dw/pkg/incidents"
)

// The person's decisions beyond approving: the org-wide stop, an incident's severity and status,
// and settling an action a crashed process left running. Each is the same domain call the CLI
// makes, by the signed-in approver, behind the same session, CSRF and Host checks.

func (s *Server) redirectFlash(w http.ResponseWriter, r *http.Request, path, msg string) {
	http.Redirect(w, r, path+"?flash="+template.URLQueryEscaper(msg), http.StatusSeeOther)
}

func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, path string, err error) {
	http.Redirect(w, r, path+"?error="+template.URLQueryEscaper(err.Error()), http.StatusSeeOther)
}

// setStop turns the org-wide stop on or off. It asks for the token again: the stop halts every
// dispatch at once, so a session left open is not enough.
func (s *Server) setStop(on bool) handler {
	return func(w http.ResponseWriter, r *http.Request, sess session) {
		reason := strings.TrimSpace(r.FormValue("reason"))
		if on && reason == "" {
			s.redirectError(w, r, "/", errors.New("say why you stop everything (the reason is shown to everyone)"))
			return
		}
		st, err := s.approvals.SetStop(r.Context(), sess.approver, r.FormValue("token"), on, reason)
		if err != nil {
			s.redirectError(w, r, "/", err)
			return
		}
		if st.Stopped {
			s.redirectFlash(w, r, "/", "Org-wide stop is ON, set by "+st.By+": nothing is dispatched until an approver resumes")
			return
		}
		s.redirectFlash(w, r, "/", "Org-wide stop lifted by "+sess.approver)
	}
}

func (s *Server) setSeverity(w http.ResponseWriter, r *http.Request, sess session) {
	id, err := pathID(r, "id")
	if err != nil || s.incidents == nil {
		http.NotFound(w, r)
		return
	}
	back := fmt.Sprintf("/incidents/%d", id)
	sev, why := r.FormValue("severity"), strings.TrimSpace(r.FormValue("reason"))
	if !incidents.ValidSeverity(sev) {
		s.redirectError(w, r, back, fmt.Errorf("severity %q: use sev1, sev2, sev3 or sev4", sev))
		return
	}
	if err := s.incidents.SetSeverity(r.Context(), id, sev, sess.approver, why); err != nil {
		s.redirectError(w, r, back, err)
		return
	}
	s.redirectFlash(w, r, back, fmt.Sprintf("Incident #%d is %s, set by %s", id, sev, sess.approver))
}

func (s *Server) setStatus(w http.ResponseWriter, r *http.Request, sess session) {
	id, err := pathID(r, "id")
	if err != nil || s.incidents == nil {
		http.NotFound(w, r)
		return
	}
	back := fmt.Sprintf("/incidents/%d", id)
	status, why := r.FormValue("status"), strings.TrimSpace(r.FormValue("reason"))
	if err := incidents.CheckPersonStatus(status); err != nil {
		s.redirectError(w, r, back, err)
		return
	}
	if why == "" {
		s.redirectError(w, r, back, errors.New("say why (recorded on the incident's timeline)"))
		return
	}
	inc, err := s.incidents.SetStatus(r.Context(), id, status, sess.approver, why)
	if err != nil {
		s.redirectError(w, r, back, err)
		return
	}
	s.redirectFlash(w, r, back, fmt.Sprintf("Incident #%d is %s, set by %s", inc.ID, inc.Status, sess.approver))
}

// actions lists the actions a stopped process left running, each with the form that settles it.
func (s *Server) actions(w http.ResponseWriter, r *http.Request, sess session) {
	if s.actionsExec == nil {
		http.NotFound(w, r)
		return
	}
	list, err := s.actionsExec.Interrupted(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.render(w, "actions.html", map[string]any{"Approver": sess.approver, "CSRF": sess.csrf, "Actions": list,
		"Flash": r.URL.Query().Get("flash"), "Error": r.URL.Query().Get("error")})
}

// settle records what the target system shows for an interrupted action, and notes it on the
// incident's timeline, as `dw-incidents actions settle` does.
func (s *Server) settle(w http.ResponseWriter, r *http.Request, sess session) {
	id, err := pathID(r, "id")
	if err != nil || s.actionsExec == nil {
		http.NotFound(w, r)
		return
	}
	outcome, why := r.FormValue("outcome"), strings.TrimSpace(r.FormValue("reason"))
	if why == "" {
		s.redirectError(w, r, "/actions", errors.New("say what the target system shows (recorded on the action)"))
		return
	}
	a, err := s.actionsExec.Settle(r.Context(), id, outcome, sess.approver, why)
	if err != nil {
		s.redirectError(w, r, "/actions", err)
		return
	}
	if a.IncidentID != 0 && s.incidents != nil {
		_ = s.incidents.AddEvent(r.Context(), a.IncidentID, "action", sess.approver,
			fmt.Sprintf("#%d %s on %s settled as %s: %s", a.ID, a.Class, a.Target, a.Status, why))
	}
	s.redirectFlash(w, r, "/actions", fmt.Sprintf("Action #%d (%s on %s) settled as %s by %s", a.ID, a.Class, a.Target, a.Status, sess.approver))
}
