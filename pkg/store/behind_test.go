package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recordCall is a write behind an answer: one tool_calls row named by i.
func recordCall(st *Store, i int) func(context.Context) error {
	return func(ctx context.Context) error {
		return st.RecordToolCall(ctx, ToolCall{At: time.Now(), Agent: "behind", Tool: "t", Outcome: "ok", ArgsSHA256: strconv.Itoa(i)})
	}
}

// writtenCalls lists the args digests of the behind agent's rows in the order they were written.
func writtenCalls(t *testing.T, st *Store) []string {
	t.Helper()
	rows, err := st.DB.Query(`SELECT args_sha256 FROM tool_calls WHERE agent = 'behind' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestWritesBehindAreWrittenInOrderBeforeFlushReturns(t *testing.T) {
	engines(t, func(t *testing.T, d Dialect) {
		st := openOn(t, d)
		var want []string
		for i := 0; i < 40; i++ {
			st.WriteBehind(recordCall(st, i))
			want = append(want, strconv.Itoa(i))
		}
		if err := st.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := writtenCalls(t, st); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("written %v, want %v in order", got, want)
		}
	})
}

func TestAwaitWritesReturnsOnceTheQueueIsWritten(t *testing.T) {
	st := openTemp(t)
	release := make(chan struct{})
	st.WriteBehind(func(ctx context.Context) error { <-release; return recordCall(st, 1)(ctx) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := st.AwaitWrites(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AwaitWrites with a write in flight = %v, want the context's deadline", err)
	}
	close(release)
	if err := st.AwaitWrites(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := writtenCalls(t, st); len(got) != 1 {
		t.Fatalf("after AwaitWrites %d rows are written, want 1", len(got))
	}
}

func TestAFailedWriteBehindStaysQueuedWithThoseAfterItUntilFlushWritesThem(t *testing.T) {
	st := openTemp(t)
	st.behind.pause = time.Hour // the retry after a pause waits 30 s: only Flush writes again here
	var attempts atomic.Int32
	st.WriteBehind(func(ctx context.Context) error {
		if attempts.Add(1) == 1 {
			return errors.New("disk full")
		}
		return recordCall(st, 0)(ctx)
	})
	st.WriteBehind(recordCall(st, 1))
	if err := st.AwaitWrites(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.BehindFailure(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("BehindFailure = %v, want the failed write's error", err)
	}
	// A write queued behind a failure waits for Flush rather than overtake it.
	st.WriteBehind(recordCall(st, 2))
	if err := st.AwaitWrites(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := writtenCalls(t, st); len(got) != 0 {
		t.Fatalf("rows %v were written past a failed write", got)
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(writtenCalls(t, st), ","); got != "0,1,2" {
		t.Fatalf("after Flush the rows are %q, want 0,1,2", got)
	}
	if err := st.BehindFailure(); err != nil {
		t.Fatalf("BehindFailure after a clean Flush = %v", err)
	}
}

func TestFlushReportsAWriteThatStillFailsAndHowManyWait(t *testing.T) {
	st := openTemp(t)
	st.behind.pause = time.Hour
	st.WriteBehind(func(context.Context) error { return errors.New("store unreachable") })
	st.WriteBehind(recordCall(st, 1))
	st.WriteBehind(recordCall(st, 2))
	err := st.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "store unreachable") || !strings.Contains(err.Error(), "2 later writes wait behind it") {
		t.Fatalf("Flush = %v, want the failure and the two writes behind it", err)
	}
	if got := writtenCalls(t, st); len(got) != 0 {
		t.Fatalf("rows %v were written past a failed write", got)
	}
}

func TestCloseWritesWhatIsStillQueued(t *testing.T) {
	path, opts := location(t, SQLite)
	st, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	st.WriteBehind(func(ctx context.Context) error {
		time.Sleep(30 * time.Millisecond) // still queued when Close is called
		return recordCall(st, 7)(ctx)
	})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if got := writtenCalls(t, st2); len(got) != 1 || got[0] != "7" {
		t.Fatalf("after Close the store holds %v, want the queued row", got)
	}

	// A queued write that cannot be written is reported by Close, not dropped silently.
	st3, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	st3.WriteBehind(func(context.Context) error { return errors.New("refused") })
	if err := st3.Close(); err == nil || !strings.Contains(err.Error(), "was lost: refused") {
		t.Fatalf("Close = %v, want the lost write named", err)
	}
}

// insertRun inserts a check_runs row, with the given id or (0) the store's.
func insertRun(t *testing.T, st *Store, id int64) int64 {
	t.Helper()
	cols, marks, args := "", "", []any{}
	if id != 0 {
		cols, marks, args = "id, ", "?, ", []any{id}
	}
	args = append(args, "warehouse:sqlite/t", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z")
	var got int64
	err := st.Write(context.Background(), func(tx *sql.Tx) error {
		return tx.QueryRow(`INSERT INTO check_runs (`+cols+`asset, started_at, finished_at, status) VALUES (`+marks+`?, ?, ?, 'pass') RETURNING id`, args...).Scan(&got)
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestReservedIDsAreNeverGivenToAnInsert(t *testing.T) {
	engines(t, func(t *testing.T, d Dialect) {
		path, opts := location(t, d)
		open := func() *Store {
			st, err := Open(context.Background(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		a, b := open(), open() // two processes' handles on one store
		// On an empty table (no sqlite_sequence row yet) and after rows.
		first, err := a.ReserveIDs(context.Background(), "check_runs", 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 3 || first[0] < 1 || first[1] != first[0]+1 && d == SQLite {
			t.Fatalf("reserved %v, want three ids from 1", first)
		}
		auto := insertRun(t, b, 0)
		if auto <= first[2] {
			t.Fatalf("an insert got id %d, inside the reserved %v", auto, first)
		}
		// The reserved ids insert as themselves, out of order and after later rows.
		for _, id := range []int64{first[2], first[0]} {
			if got := insertRun(t, a, id); got != id {
				t.Fatalf("insert with reserved id %d got %d", id, got)
			}
		}
		// Concurrent reservations from both handles never overlap, nor later inserts.
		var mu sync.Mutex
		seen := map[int64]bool{auto: true, first[0]: true, first[1]: true, first[2]: true}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := a
				if i%2 == 1 {
					st = b
				}
				ids, err := st.ReserveIDs(context.Background(), "check_runs", 4)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range ids {
					if seen[id] {
						t.Errorf("id %d was handed out twice", id)
					}
					seen[id] = true
				}
			}()
		}
		wg.Wait()
		if next := insertRun(t, b, 0); seen[next] {
			t.Fatalf("an insert got the reserved id %d", next)
		}
	})
}

func TestReserveIDsRefusesAnythingButATableName(t *testing.T) {
	st := openTemp(t)
	for _, table := range []string{"check_runs; DROP TABLE incidents", "", "Check_Runs", "a b"} {
		if _, err := st.ReserveIDs(context.Background(), table, 1); err == nil || !strings.Contains(err.Error(), "is not a table name") {
			t.Errorf("ReserveIDs(%q) = %v, want a refusal", table, err)
		}
	}
	if _, err := st.ReserveIDs(context.Background(), "check_runs", 0); err == nil {
		t.Error("ReserveIDs of 0 ids succeeded")
	}
}

func TestAFailedWriteBehindIsWrittenAgainAfterAPause(t *testing.T) {
	st := openTemp(t)
	var attempts atomic.Int32
	st.WriteBehind(func(ctx context.Context) error {
		if attempts.Add(1) <= 2 {
			return errors.New("database is locked")
		}
		return recordCall(st, 0)(ctx)
	})
	st.WriteBehind(recordCall(st, 1)) // an audit line behind the failed record
	deadline := time.Now().Add(5 * time.Second)
	for len(writtenCalls(t, st)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d attempts the queue is still unwritten: %v", attempts.Load(), st.BehindFailure())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.Join(writtenCalls(t, st), ","); got != "0,1" || st.BehindFailure() != nil {
		t.Fatalf("written %q, failure %v; want 0,1 and none", got, st.BehindFailure())
	}
}

func TestAwaitWritesDoesNotWaitForWritesQueuedAfterIt(t *testing.T) {
	st := openTemp(t)
	releaseFirst, releaseSecond := make(chan struct{}), make(chan struct{})
	defer close(releaseSecond)
	st.WriteBehind(func(ctx context.Context) error { <-releaseFirst; return recordCall(st, 0)(ctx) })
	awaited := make(chan error)
	go func() { awaited <- st.AwaitWrites(context.Background()) }()
	time.Sleep(20 * time.Millisecond) // AwaitWrites has counted the first write
	st.WriteBehind(func(context.Context) error { <-releaseSecond; return nil })
	select {
	case <-awaited:
		t.Fatal("AwaitWrites returned before the write queued before it was written")
	case <-time.After(20 * time.Millisecond):
	}
	close(releaseFirst)
	select {
	case err := <-awaited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AwaitWrites waited for a write queued after it")
	}
	if got := writtenCalls(t, st); len(got) != 1 {
		t.Fatalf("when AwaitWrites returned %d rows were written, want the first", len(got))
	}
}

func TestFlushWritesOnItsOwnContext(t *testing.T) {
	st := openTemp(t)
	st.behind.pause = time.Hour
	st.WriteBehind(func(context.Context) error { return errors.New("busy") })
	st.WriteBehind(recordCall(st, 1))
	if err := st.AwaitWrites(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A cancelled caller stops waiting; the writes are not run on its context.
	_ = st.Flush(ctx)
	st.behind.mu.Lock()
	st.behind.queue[0] = func(context.Context) error { return nil }
	st.behind.mu.Unlock()
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := writtenCalls(t, st); len(got) != 1 {
		t.Fatalf("the audit line behind the failed write: written %v, want it once", got)
	}
}
