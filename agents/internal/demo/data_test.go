package demo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

func TestRollupSumsPerAccountAndHourAndIsNullWhenNoRecordHadAValue(t *testing.T) {
	h := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	n := func(v int64) *int64 { return &v }
	rs := []Reading{
		{AccountID: "a", Time: h.Add(time.Minute), Version: 11, Egress: n(1000)},
		{AccountID: "a", Time: h.Add(2 * time.Minute), Version: 12, Egress: nil},
		{AccountID: "b", Time: h.Add(3 * time.Minute), Version: 12, Egress: nil},
		{AccountID: "b", Time: h.Add(time.Hour), Version: 12, Egress: n(4096)}, // outside [h, h+1h)
	}
	rows := RollupReadings(rs, h, h.Add(time.Hour))
	if len(rows) != 2 || *rows[0].EgressBytes != 1000 || rows[0].RequestCount != 2 || rows[1].EgressBytes != nil || rows[1].RequestCount != 1 {
		t.Fatalf("rows: %+v", rows)
	}
	if NullShare(rows) != 0.5 {
		t.Errorf("null share %v", NullShare(rows))
	}
}

// asPinned is what the v11 reader finds in generated events (TestReadUsage… checks the real
// decoding against the broker): response_bytes on v11 records only.
func asPinned(events []Event) []Reading {
	var out []Reading
	for _, e := range events {
		r := Reading{AccountID: e.AccountID, Time: e.Time, Version: e.Version}
		if e.Version == 11 {
			b := e.Bytes
			r.Egress = &b
		}
		out = append(out, r)
	}
	return out
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
	rows := RollupReadings(asPinned(tl.Events()), tl.StoryStart, tl.StoryEnd)
	if len(rows) != storyHours*accounts || NullShare(rows) < 0.1 {
		t.Errorf("%d rows, null share %v", len(rows), NullShare(rows))
	}
	if NullShare(RollupReadings(asPinned(tl.Events()), tl.HistStart, tl.StoryStart)) != 0 {
		t.Error("the history has nulls")
	}
}

func TestZoneStartsTheDayAtTheStorysFirstHour(t *testing.T) {
	for h := range 24 {
		tl := NewClock(time.Date(2026, 11, 29, h, 30, 0, 0, time.UTC))
		loc, err := time.LoadLocation(tl.Zone())
		if err != nil {
			t.Fatalf("%s does not load (agents/internal/demo embeds time/tzdata): %v", tl.Zone(), err)
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

// The pinned statement's view is decoded from the broker: a v12 record read back from kfake with
// the v11 reader schema has no response_bytes (null), while the corrected reader, decoding each
// record with its writer schema, finds response_kib * 1024.
func TestReadUsageDecodesTheTopicWithTheReadersSchema(t *testing.T) {
	ctx := context.Background()
	art, err := LoadArtifacts(repo(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartPeers(ctx, art)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id12, v, err := p.registerAsGateway(ctx, art.Schemas[12])
	if err != nil || v != 12 {
		t.Fatalf("register v12: version %d, %v", v, err)
	}
	ids := map[int]int{11: v11SchemaID, 12: id12}
	at := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	events := []Event{
		{UsageID: "u-1", AccountID: "a", Time: at.Add(time.Minute), Version: 11, Bytes: 1000},
		{UsageID: "u-2", AccountID: "a", Time: at.Add(2 * time.Minute), Version: 12, Bytes: 5000},
	}
	if err := produce(ctx, p.Kafka, EventsTopic, events, art.Schemas, ids); err != nil {
		t.Fatal(err)
	}
	v11, err := avro.ParseWithCache(art.Schemas[11], "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := readUsage(ctx, p, EventsTopic, v11, pinnedReader)
	if err != nil {
		t.Fatal(err)
	}
	corrected, err := readUsage(ctx, p, EventsTopic, nil, correctedReader)
	if err != nil {
		t.Fatal(err)
	}
	byVersion := func(rs []Reading) map[int]*int64 {
		m := map[int]*int64{}
		for _, r := range rs {
			m[r.Version] = r.Egress
		}
		return m
	}
	pv, cv := byVersion(pinned), byVersion(corrected)
	if len(pinned) != 2 || pv[11] == nil || *pv[11] != 1000 || pv[12] != nil {
		t.Errorf("v11 reader: %+v", pinned)
	}
	if len(corrected) != 2 || cv[11] == nil || *cv[11] != 1000 || cv[12] == nil || *cv[12] != events[1].KiB()*1024 {
		t.Errorf("corrected reader: %+v", corrected)
	}
	rows := RollupReadings(pinned, at, at.Add(time.Hour))
	if len(rows) != 1 || rows[0].RequestCount != 2 || *rows[0].EgressBytes != 1000 {
		t.Errorf("pinned rollup %+v", rows)
	}
}

func FuzzStartOf(f *testing.F) {
	for _, s := range []string{"partition:0,offset:2016;partition:1,offset:1344", "", "partition:x", ";;", "partition:0,offset:-1"} {
		f.Add("specific-offsets", s)
	}
	f.Fuzz(func(t *testing.T, mode, offsets string) {
		st, err := startOf(map[string]any{"start": map[string]any{"mode": mode, "offsets": offsets}})
		if err == nil && st.Offsets != offsets {
			t.Errorf("offsets %q read back as %q", offsets, st.Offsets)
		}
	})
}
