package timeline

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

// Events of one record come back oldest first, and in the order written when they share an instant.
func TestEventsReadBackInTheOrderTheyHappened(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.DB.Exec(`CREATE TABLE note_events (id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL, at TEXT NOT NULL, kind TEXT NOT NULL, actor TEXT NOT NULL, detail TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	log := Log{Table: "note_events", Key: "note_id"}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	write := []Event{
		{At: at.Add(time.Minute), Kind: "later", Actor: "b"},
		{At: at, Kind: "first", Actor: "a", Detail: "x"},
		{At: at, Kind: "second", Actor: "a"},
	}
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		for _, e := range write {
			if err := log.Append(ctx, tx, 1, e); err != nil {
				return err
			}
		}
		return log.Append(ctx, tx, 2, Event{At: at, Kind: "other", Actor: "c"})
	}); err != nil {
		t.Fatal(err)
	}
	got, err := log.Read(ctx, st.DB, 1)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	if len(got) != 3 || kinds[0] != "first" || kinds[1] != "second" || kinds[2] != "later" || got[0].Detail != "x" || !got[2].At.Equal(at.Add(time.Minute)) {
		t.Fatalf("%+v", got)
	}
	if none, err := log.Read(ctx, st.DB, 3); err != nil || len(none) != 0 {
		t.Fatalf("%+v %v", none, err)
	}
}
