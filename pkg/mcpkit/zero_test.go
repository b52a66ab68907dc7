package mcpkit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type stampIn struct{}

type stampEvent struct {
	What string    `json:"what"`
	At   time.Time `json:"at,omitempty"`
}

type stampOut struct {
	Opened  time.Time    `json:"opened"`
	Closed  time.Time    `json:"closed,omitempty"`
	Next    *time.Time   `json:"next,omitempty"`
	Events  []stampEvent `json:"events"`
	Comment string       `json:"comment"`
}

// TestUnsetTimesNeverReachClients: an optional time that was never set is left out of the
// structured result and its text, at any depth; a required one is kept as the schema promises.
func TestUnsetTimesNeverReachClients(t *testing.T) {
	set := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	a := Agent{Name: "dw-test", Tools: func(*Env) []Tool {
		return []Tool{Read("stamps", "Times, some unset.", func(context.Context, stampIn) (stampOut, error) {
			return stampOut{Events: []stampEvent{{What: "opened", At: set}, {What: "pending"}}, Comment: "0001-01-01T00:00:00Z is only a string here"}, nil
		})}
	}}
	var out, errb strings.Builder
	code := Run(context.Background(), a, []string{"call", "stamps"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb},
		func(k string) (string, bool) {
			if k == "DW_HOME" {
				return t.TempDir(), true
			}
			return "", false
		})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["closed"]; ok {
		t.Errorf("unset optional time kept: %s", out.String())
	}
	if got["opened"] != zeroTime {
		t.Errorf("required time dropped: %s", out.String())
	}
	events := got["events"].([]any)
	if _, ok := events[1].(map[string]any)["at"]; ok || events[0].(map[string]any)["at"] != "2026-03-04T05:06:07Z" {
		t.Errorf("events: %v", events)
	}
	if got["comment"] != "0001-01-01T00:00:00Z is only a string here" {
		t.Errorf("comment: %v", got["comment"])
	}
}

func TestTitleFromName(t *testing.T) {
	for name, want := range map[string]string{
		"check_schema_change":       "Check schema change",
		"get_flink_statement":       "Get Flink statement",
		"list_tableflow_topics":     "List Tableflow topics",
		"import_openlineage_events": "Import OpenLineage events",
		"remediate":                 "Remediate",
	} {
		if got := titleFromName(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
