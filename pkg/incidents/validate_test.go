package incidents

import (
	"strings"
	"testing"
)

func TestValidateOpenRefusesHostileIdentitiesAndText(t *testing.T) {
	for _, ok := range []string{"warehouse:snowflake/ANALYTICS.USAGE.USAGE_HOURLY", "kafka:topic/usage-events", "openlineage:s3://bucket/key", `warehouse:sqlite/main.Odd "Name"`} {
		if err := ValidateOpen(ok, "egress_bytes 18% null today\nagainst 0% before"); err != nil {
			t.Errorf("ValidateOpen(%q) = %v", ok, err)
		}
	}
	huge := strings.Repeat("a", 1<<20)
	for name, c := range map[string]struct{ asset, summary, want string }{
		"traversal":      {"../../../../etc/passwd", "s", "not a URN"},
		"dot segments":   {"file:/srv/../../etc/passwd", "s", "'..' path segments"},
		"huge asset":     {"kafka:" + huge, "s", "bytes; a URN is at most"},
		"NUL":            {"kafka:topic/a\x00b", "s", "U+0000"},
		"bidi override":  {"kafka:topic/\u202eevil", "s", "U+202E"},
		"zero width":     {"kafka:topic/a\u200bb", "s", "U+200B"},
		"empty":          {"", "s", "required"},
		"huge summary":   {"kafka:topic/a", huge, "characters; at most 4000"},
		"summary escape": {"kafka:topic/a", "ok \x1b[2J", "U+001B"},
		"bad utf8":       {"kafka:topic/a", "\xff\xfe", "UTF-8"},
	} {
		err := ValidateOpen(c.asset, c.summary)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
			continue
		}
		if len(err.Error()) > 400 || strings.Contains(err.Error(), "aaaaaaaa") || strings.Contains(err.Error(), "passwd") {
			t.Errorf("%s: the error echoes the input: %.200q", name, err.Error())
		}
	}
}

func FuzzValidateOpen(f *testing.F) {
	f.Add("kafka:topic/a", "summary")
	f.Add("../../etc/passwd", "\x00")
	f.Fuzz(func(t *testing.T, asset, summary string) {
		err := ValidateOpen(asset, summary)
		if err != nil && len(err.Error()) > 600 {
			t.Fatalf("error of %d bytes", len(err.Error()))
		}
		if err == nil && (len(asset) > MaxAssetBytes || strings.ContainsAny(asset+summary, "\x00\u202e")) {
			t.Fatalf("accepted %q / %q", asset, summary)
		}
	})
}
