package demo

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/kafka/kafkatest"
)

// The gateway's traffic in the demo: seven accounts, each calling the API four times an hour.
// From the rollout minute on, the producers serving the last three accounts run v12 (no
// response_bytes, response_kib instead); the others stay on v11 for the whole story window.
const (
	accounts        = 7
	callsPerHour    = 4
	v12Accounts     = 3
	historyDays     = 7
	storyHours      = 12
	rolloutAfter    = 6*time.Hour + 8*time.Minute
	baselineWindows = 6
)

// Event is one metered API call as the gateway produced it.
type Event struct {
	UsageID   string
	AccountID string
	Time      time.Time
	Version   int // 11 or 12
	// Bytes is the response size; v11 carries it as response_bytes, v12 as response_kib (rounded).
	Bytes int64
}

// KiB is what a v12 producer writes in response_kib.
func (e Event) KiB() int64 { return (e.Bytes + 512) / 1024 }

// Clock fixes the demo's time: the story window is the last storyHours closed hours before now,
// with a week of clean history before it, and v12 rolled out rolloutAfter into the window.
type Clock struct {
	Now        time.Time
	StoryStart time.Time // first hour of the story window
	StoryEnd   time.Time // end of the last closed hour (exclusive)
	Rollout    time.Time // when the v12 producers started
	HistStart  time.Time
}

// NewClock anchors the story at now.
func NewClock(now time.Time) Clock {
	end := now.UTC().Truncate(time.Hour)
	start := end.Add(-storyHours * time.Hour)
	return Clock{Now: now.UTC(), StoryStart: start, StoryEnd: end, Rollout: start.Add(rolloutAfter),
		HistStart: start.Add(-historyDays * 24 * time.Hour)}
}

// Zone is the fixed-offset IANA zone whose midnight is the story's first hour, so "today" there is
// exactly the story window whatever the hour of the run (a run just after 00:00 UTC would
// otherwise find no corrected rows "today"). UTC when the story starts at 00:00 UTC.
func (tl Clock) Zone() string {
	h := tl.StoryStart.UTC().Hour()
	switch {
	case h == 0:
		return "UTC"
	case h <= 12:
		return fmt.Sprintf("Etc/GMT+%d", h) // POSIX sign: Etc/GMT+6 is UTC−6
	default:
		return fmt.Sprintf("Etc/GMT-%d", 24-h)
	}
}

// BaselineWindows are the same hours on earlier days, the windows the earlier clean checks ran over.
func (tl Clock) BaselineWindows() [][2]time.Time {
	var out [][2]time.Time
	for d := baselineWindows; d >= 1; d-- {
		off := time.Duration(d) * 24 * time.Hour
		out = append(out, [2]time.Time{tl.StoryStart.Add(-off), tl.StoryEnd.Add(-off)})
	}
	return out
}

func accountID(i int) string { return fmt.Sprintf("acct-%02d", i+1) }

// Events generates every call from the start of the history to the end of the story window,
// deterministic for a given timeline.
func (tl Clock) Events() []Event {
	var out []Event
	n := 0
	for h := tl.HistStart; h.Before(tl.StoryEnd); h = h.Add(time.Hour) {
		for a := range accounts {
			for c := range callsPerHour {
				at := h.Add(time.Duration(c*15+a+1) * time.Minute)
				e := Event{UsageID: fmt.Sprintf("u-%06d", n), AccountID: accountID(a), Time: at, Version: 11,
					Bytes: int64(20_000 + (a*7919+c*104_729+int(h.Unix()/3600)*31)%80_000)}
				if a >= accounts-v12Accounts && !at.Before(tl.Rollout) {
					e.Version = 12
				}
				out = append(out, e)
				n++
			}
		}
	}
	return out
}

// Row is one hourly row of usage_hourly (or usage_hourly_v2).
type Row struct {
	AccountID    string
	Hour         time.Time
	EgressBytes  *int64 // nil when every call of the hour had no value for the reader
	RequestCount int64
}

// RollupReadings is the hourly statement over records as its reader decoded them: per account
// and closed hour in [from, to), SUM(egress) (NULL when no record had one) and COUNT(*).
func RollupReadings(rs []Reading, from, to time.Time) []Row {
	type key struct {
		acct string
		hour time.Time
	}
	rows := map[key]*Row{}
	for _, e := range rs {
		if e.Time.Before(from) || !e.Time.Before(to) {
			continue
		}
		k := key{e.AccountID, e.Time.UTC().Truncate(time.Hour)}
		r := rows[k]
		if r == nil {
			r = &Row{AccountID: k.acct, Hour: k.hour}
			rows[k] = r
		}
		r.RequestCount++
		if v := e.Egress; v != nil {
			sum := *v
			if r.EgressBytes != nil {
				sum += *r.EgressBytes
			}
			r.EgressBytes = &sum
		}
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Hour.Equal(out[j].Hour) {
			return out[i].Hour.Before(out[j].Hour)
		}
		return out[i].AccountID < out[j].AccountID
	})
	return out
}

// NullShare is the share of rows whose egress_bytes is null.
func NullShare(rows []Row) float64 {
	if len(rows) == 0 {
		return 0
	}
	n := 0
	for _, r := range rows {
		if r.EgressBytes == nil {
			n++
		}
	}
	return float64(n) / float64(len(rows))
}

// record encodes e in the Confluent wire format with the scenario schema of its version.
func record(e Event, schemas map[int]string, ids map[int]int) (*kgo.Record, error) {
	rec := map[string]any{"usage_id": e.UsageID, "account_id": e.AccountID, "event_time": e.Time,
		"endpoint": "/v1/search", "status_code": 200}
	if e.Version == 12 {
		rec["response_kib"] = e.KiB()
	} else {
		rec["response_bytes"] = e.Bytes
	}
	value, err := kafkatest.EncodeWire(schemas[e.Version], uint32(ids[e.Version]), rec)
	if err != nil {
		return nil, fmt.Errorf("encode %s (v%d): %w", e.UsageID, e.Version, err)
	}
	return &kgo.Record{Key: []byte(e.AccountID), Value: value, Timestamp: e.Time}, nil
}

// produce writes the events to topic, each encoded with its version's schema id.
func produce(ctx context.Context, kc *config.Kafka, topic string, events []Event, schemas map[int]string, ids map[int]int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.BootstrapServers...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, len(events))
	for _, e := range events {
		r, err := record(e, schemas, ids)
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce to %s: %w", topic, err)
	}
	return nil
}

// Warehouse tables, as SQLite would hold what Tableflow lands: one row per account and hour.
const createUsageTable = `CREATE TABLE IF NOT EXISTS %s (
  account_id TEXT NOT NULL,
  hour TEXT NOT NULL,
  egress_bytes BIGINT,
  request_count BIGINT NOT NULL,
  PRIMARY KEY (account_id, hour)
)`

// land writes rows into table (created when missing), in one transaction.
func land(ctx context.Context, db *sql.DB, table string, rows []Row) error {
	if _, err := db.ExecContext(ctx, fmt.Sprintf(createUsageTable, table)); err != nil {
		return fmt.Errorf("create %s: %w", table, err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, fmt.Sprintf(`INSERT OR REPLACE INTO %s (account_id, hour, egress_bytes, request_count) VALUES (?, ?, ?, ?)`, table))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range rows {
		var egress any
		if r.EgressBytes != nil {
			egress = *r.EgressBytes
		}
		if _, err := stmt.ExecContext(ctx, r.AccountID, r.Hour.UTC().Format("2006-01-02 15:04:05"), egress, r.RequestCount); err != nil {
			return fmt.Errorf("land into %s: %w", table, err)
		}
	}
	return tx.Commit()
}
