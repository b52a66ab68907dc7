package config

import (
	"strings"
	"testing"
)

// FuzzParseStrictKeys: any document is either a config or an error; an unknown-key error always names its line.
func FuzzParseStrictKeys(f *testing.F) {
	for _, seed := range []string{
		"store:\n  path: /tmp/x.db\n",
		"action_classes:\n  pause_job:\n    expires: 2h\n",
		"domains:\n  - name: a\n    autonomyy: L2\n",
		"kafka: {bootstrap_servers: [a], sasl: {mechansim: PLAIN}}\n",
		"a: &x {b: 1}\nstore: *x\n",
		"monitors:\n  - name: a\n    tabel: t\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		_, err := Parse([]byte(doc), env(map[string]string{"HOME": "/home/ann"}))
		if err != nil && strings.Contains(err.Error(), "unknown key") && !strings.Contains(err.Error(), "line ") {
			t.Fatalf("unknown key without a line: %v", err)
		}
	})
}
