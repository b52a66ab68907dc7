package diagnosis

import (
	"strings"
	"testing"
	"time"
)

// An enum symbol the new version declares is a new value before any record carries it: with no
// topic sample the diagnosis still names it, says it comes from the schema, and reads the
// reader's filter with it.
func TestADeclaredSymbolIsANewValueBeforeItIsSampled(t *testing.T) {
	r := Reader{URN: "flink:statement/settled-payouts", PinnedVersion: 3, ReadsFields: []string{"payout_state"}, table: "payouts",
		sql: "INSERT INTO `settled` SELECT merchant, SUM(amount_cents) FROM `payouts` WHERE payout_state IN ('SETTLED', 'PAID') GROUP BY merchant"}
	sc := SchemaChange{Subject: "payouts-value", Version: 4, FirstSeen: t0.Add(-2 * time.Hour), Distance: 2,
		Changes: []FieldChange{{Path: "payout_state", Change: "enum_symbols_added", SymbolsAdded: []string{"SETTLED_PARTIAL"}}},
		OnPath:  []string{"payout_state"}, Readers: []Reader{r}, NewVersionShare: -1, FieldNullRate: -1, OlderNullRate: -1}
	measure(&sc, nil)
	if len(sc.NewValues) != 1 || sc.NewValues[0].From != ValuesFromSchema || strings.Join(sc.NewValues[0].Values, ",") != "SETTLED_PARTIAL" {
		t.Fatalf("new values %+v", sc.NewValues)
	}
	reads := sc.Readers[0].Reads
	if len(reads) == 0 || !strings.Contains(reads[len(reads)-1].Sentence, "the new value SETTLED_PARTIAL is filtered out by `WHERE payout_state IN ('SETTLED', 'PAID')`") {
		t.Fatalf("reads %+v", reads)
	}
	top := Rank(Input{FailureMode: ModeVolume, Onset: t0, PathKnown: true, SchemaChanges: []SchemaChange{sc}}).Candidates[0]
	if has(top.Supports, KindData) || !strings.Contains(strings.Join(top.Evidence, " "), "v4 declares the new symbol(s) SETTLED_PARTIAL of payout_state, not yet seen in a topic sample") {
		t.Fatalf("a declared symbol is named but is not data: %+v", top)
	}
}
