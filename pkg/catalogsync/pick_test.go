package catalogsync

import (
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/registry"
)

func TestPickReadSchemaVersion(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	v := func(n int, seen time.Time, deleted bool) version {
		return version{sv: registry.SubjectVersion{Subject: "s", Version: n, Deleted: deleted}, firstSeen: seen}
	}
	cases := []struct {
		name   string
		hist   []version
		pinned int
		at     time.Time
		want   int
		warned bool
	}{
		{"earlier pin wins", []version{v(11, day(1), false), v(12, day(1), false)}, 11, day(5), 11, false},
		{"latest seen by creation", []version{v(11, day(1), false), v(12, day(10), false)}, 0, day(5), 11, false},
		{"both seen before creation", []version{v(11, day(1), false), v(12, day(2), false)}, 0, day(5), 12, false},
		{"deleted versions are skipped", []version{v(11, day(1), false), v(12, day(2), true)}, 0, day(5), 11, false},
		{"statement predates first look", []version{v(11, day(20), false), v(12, day(20), false)}, 0, day(5), 12, true},
		{"first look then a later version", []version{v(11, day(20), false), v(12, day(29), false)}, 0, day(5), 11, true},
		{"pin of a vanished version falls back", []version{v(11, day(1), false)}, 9, day(5), 11, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, how := pick(c.hist, c.pinned, c.at)
			if got.sv.Version != c.want || (how != "") != c.warned {
				t.Fatalf("pick = v%d (%q), want v%d warned=%v", got.sv.Version, how, c.want, c.warned)
			}
		})
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{"usage-hourly": "usage_hourly", "USAGE_HOURLY": "usage_hourly", "usage..hourly": "usage_hourly", "-x-": "x"} {
		if got := normalizeName(in); got != want {
			t.Errorf("normalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParsePins(t *testing.T) {
	got := parsePins("usage-hourly-value v1, api-usage-value v11,garbage,x vY")
	if len(got) != 2 || got["api-usage-value"] != 11 || got["usage-hourly-value"] != 1 {
		t.Fatalf("parsePins = %v", got)
	}
}
