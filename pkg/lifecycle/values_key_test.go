package lifecycle

import (
	"testing"
	"time"
)

// A record's millisecond timestamp and a warehouse column that keeps whole seconds name the same
// row; different seconds stay different rows.
func TestKeyTextMatchesTimesAtTheWarehousesPrecision(t *testing.T) {
	record := time.Date(2026, 12, 1, 16, 0, 7, 412_000_000, time.UTC)
	held := normalizeCell("2026-12-01 16:00:07", true)
	if a, b := keyText([]any{"faro-1", record}), keyText([]any{"faro-1", held}); a != b {
		t.Fatalf("record key %q, warehouse key %q", a, b)
	}
	if a, b := keyText([]any{"faro-1", record}), keyText([]any{"faro-1", record.Add(time.Second)}); a == b {
		t.Fatalf("two seconds share the key %q", a)
	}
}
