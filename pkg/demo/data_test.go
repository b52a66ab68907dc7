package demo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPinnedReaderSumsOnlyV11AndIsNullWhenAnHourHasNoV11Call(t *testing.T) {
	h := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	events := []Event{
		{AccountID: "a", Time: h.Add(time.Minute), Version: 11, Bytes: 1000},
		{AccountID: "a", Time: h.Add(2 * time.Minute), Version: 12, Bytes: 2048},
		{AccountID: "b", Time: h.Add(3 * time.Minute), Version: 12, Bytes: 4096},
		{AccountID: "b", Time: h.Add(time.Hour), Version: 12, Bytes: 4096}, // outside [h, h+1h)
	}
	pinned := Rollup(events, h, h.Add(time.Hour), PinnedV11)
	if len(pinned) != 2 || *pinned[0].EgressBytes != 1000 || pinned[0].RequestCount != 2 || pinned[1].EgressBytes != nil || pinned[1].RequestCount != 1 {
		t.Fatalf("pinned: %+v", pinned)
	}
	if NullShare(pinned) != 0.5 {
		t.Errorf("null share %v", NullShare(pinned))
	}
	fixed := Rollup(events, h, h.Add(time.Hour), Corrected)
	if *fixed[0].EgressBytes != 1000+2048 || *fixed[1].EgressBytes != 4096 || NullShare(fixed) != 0 {
		t.Fatalf("corrected: %+v", fixed)
	}
}

func TestClockPutsTheRolloutInsideTheStoryAndTheBaselinesBeforeIt(t *testing.T) {
	tl := NewClock(time.Date(2026, 11, 29, 1, 30, 0, 0, time.UTC))
	if !tl.StoryEnd.Equal(time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)) || tl.StoryEnd.Sub(tl.StoryStart) != storyHours*time.Hour {
		t.Errorf("story %v–%v", tl.StoryStart, tl.StoryEnd)
	}
	if !tl.Rollout.After(tl.StoryStart) || !tl.Rollout.Before(tl.StoryEnd) {
		t.Errorf("rollout %v outside the story", tl.Rollout)
	}
	ws := tl.BaselineWindows()
	if len(ws) < 5 || !ws[len(ws)-1][1].Before(tl.StoryStart) || ws[0][0].Before(tl.HistStart) {
		t.Errorf("baseline windows %v", ws)
	}
	rows := Rollup(tl.Events(), tl.StoryStart, tl.StoryEnd, PinnedV11)
	if len(rows) != storyHours*accounts || NullShare(rows) < 0.1 {
		t.Errorf("%d rows, null share %v", len(rows), NullShare(rows))
	}
	if NullShare(Rollup(tl.Events(), tl.HistStart, tl.StoryStart, PinnedV11)) != 0 {
		t.Error("the history has nulls")
	}
}

func TestZoneStartsTheDayAtTheStorysFirstHour(t *testing.T) {
	for h := range 24 {
		tl := NewClock(time.Date(2026, 11, 29, h, 30, 0, 0, time.UTC))
		loc, err := time.LoadLocation(tl.Zone())
		if err != nil {
			t.Skipf("no tzdata here: %v", err)
		}
		local := tl.StoryStart.In(loc)
		if local.Hour() != 0 || local.Minute() != 0 {
			t.Errorf("run at %02d:30 UTC: %s puts the story start %s at %s local", h, tl.Zone(), tl.StoryStart, local)
		}
		if !tl.Now.In(loc).Truncate(time.Hour).After(tl.StoryStart.In(loc)) || tl.Now.In(loc).Day() != local.Day() {
			t.Errorf("run at %02d:30 UTC: now is not on the story's day in %s", h, tl.Zone())
		}
	}
}

func TestCheckoutDBTWritesModelsWithSourceCalls(t *testing.T) {
	root := repo(t)
	a, err := LoadArtifacts(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := checkoutDBT(dir, a.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	if m != filepath.Join(dir, "dbt", "target", "manifest.json") {
		t.Errorf("manifest at %s", m)
	}
	code, err := os.ReadFile(filepath.Join(dir, "dbt", "models", "marts", "fct_billable_egress.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(code), "from {{ source('usage', 'usage_hourly') }}") || strings.Contains(string(code), "ANALYTICS.USAGE.USAGE_HOURLY") {
		t.Errorf("model code:\n%s", code)
	}
	if len(a.Statements) < 2 || a.Schemas[12] == "" {
		t.Errorf("artifacts: %d statements", len(a.Statements))
	}
}

func TestFindRootRefusesADirectoryOutsideTheRepository(t *testing.T) {
	if _, err := FindRoot(t.TempDir()); err == nil || !strings.Contains(err.Error(), "start-agent.sh demo") {
		t.Errorf("err = %v", err)
	}
}

func TestWrapKeepsWordsWhole(t *testing.T) {
	got := wrap("aaa bbb ccc dddd", 7)
	if strings.Join(got, "|") != "aaa bbb|ccc|dddd" {
		t.Errorf("%q", got)
	}
}
