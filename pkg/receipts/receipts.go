// Package receipts keeps the auditor's record of every remediation: cause, evidence, proposals,
// approvals, actions and their results, checks before and after, and the undo. Receipts form a
// chain: each one's MAC covers its own body and the previous receipt's MAC, keyed with a secret kept
// in a file beside (not inside) the store, so editing, removing or reordering any stored receipt,
// or truncating the chain, is detected by Verify.
package receipts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dataworkers/dw/pkg/store"
)

// Receipt is one stored receipt.
type Receipt struct {
	Seq        int64           `json:"seq"`
	IncidentID int64           `json:"incident_id"`
	CreatedAt  time.Time       `json:"created_at"`
	Body       json.RawMessage `json:"body"`
	PrevMAC    string          `json:"prev_mac"`
	MAC        string          `json:"mac"`
}

// Chain appends and verifies receipts in one store, keyed by one secret.
type Chain struct {
	st  *store.Store
	key []byte
	now func() time.Time
}

// KeyPath is where the chain key lives for a store: beside the database file, readable by its owner only.
func KeyPath(storePath string) string {
	return filepath.Join(filepath.Dir(storePath), "receipts.key")
}

// LoadOrCreateKey reads the chain key, creating it on first use. Five processes may race to create
// it: each writes a complete temporary file and hard-links it into place, which fails for all but one,
// so a reader never sees a half-written key and everyone ends with the winner's.
func LoadOrCreateKey(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		return decodeKey(path, b)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".receipts.key.*")
	if err != nil {
		return nil, fmt.Errorf("create receipts key beside %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := tmp.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write receipts key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("install receipts key %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeKey(path, b)
}

func decodeKey(path string, b []byte) ([]byte, error) {
	key, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("receipts key %s is not 64 hex characters: restore it from backup (receipts cannot be verified without it)", path)
	}
	return key, nil
}

// Open returns the chain over st keyed with key. The first open seals the empty chain with the key,
// so even wiping every receipt and resetting the head is detected.
func Open(ctx context.Context, st *store.Store, key []byte, now func() time.Time) (*Chain, error) {
	c := &Chain{st: st, key: key, now: now}
	err := st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO receipt_chain(id, count, head_mac, head_tag) VALUES (1, 0, '', ?) ON CONFLICT(id) DO NOTHING`,
			c.headTag(0, ""))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open receipt chain: %w", err)
	}
	return c, nil
}

// mac binds the sequence number, incident, time, body and the previous MAC.
func (c *Chain) mac(seq, incident int64, createdAt string, body []byte, prev string) string {
	m := hmac.New(sha256.New, c.key)
	for _, part := range [][]byte{[]byte(strconv.FormatInt(seq, 10)), []byte(strconv.FormatInt(incident, 10)), []byte(createdAt), body, []byte(prev)} {
		m.Write([]byte(strconv.Itoa(len(part))))
		m.Write([]byte{':'})
		m.Write(part)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// canonical encodes body once, compactly; the stored bytes are what the MAC covers.
func canonical(body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Append adds a receipt for incident with body at the head of the chain.
func (c *Chain) Append(ctx context.Context, incidentID int64, body any) (Receipt, error) {
	var r Receipt
	err := c.st.Write(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = c.AppendTx(ctx, tx, incidentID, body)
		return err
	})
	return r, err
}

// AppendTx is Append inside the caller's write transaction: the receipt is written, and the head
// moved, only if the transaction commits.
func (c *Chain) AppendTx(ctx context.Context, tx *sql.Tx, incidentID int64, body any) (Receipt, error) {
	raw, err := canonical(body)
	if err != nil {
		return Receipt{}, fmt.Errorf("receipt body: %w", err)
	}
	var count int64
	var head string
	if err := tx.QueryRowContext(ctx, `SELECT count, head_mac FROM receipt_chain WHERE id = 1`).Scan(&count, &head); err != nil {
		return Receipt{}, fmt.Errorf("read receipt chain head: %w", err)
	}
	at := c.now().UTC()
	r := Receipt{Seq: count + 1, IncidentID: incidentID, CreatedAt: at, Body: raw, PrevMAC: head}
	r.MAC = c.mac(r.Seq, incidentID, store.Timestamp(at), raw, head)
	if _, err := tx.ExecContext(ctx, `INSERT INTO receipts(seq, incident_id, created_at, body, prev_mac, mac) VALUES (?, ?, ?, ?, ?, ?)`,
		r.Seq, incidentID, store.Timestamp(at), string(raw), head, r.MAC); err != nil {
		return Receipt{}, fmt.Errorf("insert receipt: %w", err)
	}
	// The head carries its own MAC so truncating the chain (deleting the newest receipts and
	// rolling the head back) is detected too.
	if _, err := tx.ExecContext(ctx, `UPDATE receipt_chain SET count = ?, head_mac = ?, head_tag = ? WHERE id = 1`,
		r.Seq, r.MAC, c.headTag(r.Seq, r.MAC)); err != nil {
		return Receipt{}, fmt.Errorf("move receipt chain head: %w", err)
	}
	return r, nil
}

func (c *Chain) headTag(count int64, head string) string {
	return c.mac(count, -1, "head", nil, head)
}

// Get returns one receipt by sequence number.
func (c *Chain) Get(ctx context.Context, seq int64) (Receipt, error) {
	rows, err := c.query(ctx, c.st.DB, `WHERE seq = ?`, seq)
	if err != nil {
		return Receipt{}, err
	}
	if len(rows) == 0 {
		return Receipt{}, fmt.Errorf("no receipt #%d", seq)
	}
	return rows[0], nil
}

// Recent returns the newest n receipts, newest first.
func (c *Chain) Recent(ctx context.Context, n int) ([]Receipt, error) {
	rs, err := c.query(ctx, c.st.DB, `WHERE seq > (SELECT COALESCE(MAX(seq), 0) FROM receipts) - ?`, n)
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	return rs, err
}

// ForIncident returns the receipts of one incident, oldest first.
func (c *Chain) ForIncident(ctx context.Context, incidentID int64) ([]Receipt, error) {
	return c.query(ctx, c.st.DB, `WHERE incident_id = ?`, incidentID)
}

// querier is a pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (c *Chain) query(ctx context.Context, q querier, where string, args ...any) ([]Receipt, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, incident_id, created_at, body, prev_mac, mac FROM receipts `+where+` ORDER BY seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("read receipts: %w", err)
	}
	defer rows.Close()
	var out []Receipt
	for rows.Next() {
		var r Receipt
		var at, body string
		if err := rows.Scan(&r.Seq, &r.IncidentID, &at, &body, &r.PrevMAC, &r.MAC); err != nil {
			return nil, err
		}
		if r.CreatedAt, err = store.ParseTimestamp(at); err != nil {
			return nil, err
		}
		r.Body = json.RawMessage(body)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Problem is one verification failure.
type Problem struct {
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

// Verification is the result of walking the whole chain.
type Verification struct {
	OK bool `json:"ok"`
	// Failed is !OK, so `dw-incidents call verify_receipts` exits 1 on tampering.
	Failed   bool      `json:"failed"`
	Receipts int64     `json:"receipts"`
	Problems []Problem `json:"problems"`
}

// Verify recomputes every MAC from the first receipt to the head. The head and the receipts are
// read in one snapshot, so a receipt appended meanwhile is either wholly seen or not at all.
func (c *Chain) Verify(ctx context.Context) (Verification, error) {
	tx, err := c.st.ReadTx(ctx)
	if err != nil {
		return Verification{}, err
	}
	defer tx.Rollback()
	var count int64
	var head, tag string
	if err := tx.QueryRowContext(ctx, `SELECT count, head_mac, head_tag FROM receipt_chain WHERE id = 1`).Scan(&count, &head, &tag); err != nil {
		return Verification{}, fmt.Errorf("read receipt chain head: %w", err)
	}
	rows, err := c.query(ctx, tx, ``)
	if err != nil {
		return Verification{}, err
	}
	v := Verification{Receipts: int64(len(rows)), Problems: []Problem{}}
	bad := func(seq int64, format string, args ...any) {
		v.Problems = append(v.Problems, Problem{Seq: seq, Reason: fmt.Sprintf(format, args...)})
	}
	if !hmac.Equal([]byte(tag), []byte(c.headTag(count, head))) {
		bad(count, "the chain head (count %d) was altered", count)
	}
	prev := ""
	expect := int64(1)
	for _, r := range rows {
		if r.Seq != expect {
			bad(expect, "receipt #%d is missing (next stored is #%d)", expect, r.Seq)
			expect = r.Seq
		}
		if r.PrevMAC != prev {
			bad(r.Seq, "receipt #%d does not follow the receipt before it (removed, reordered or replaced)", r.Seq)
		}
		if want := c.mac(r.Seq, r.IncidentID, store.Timestamp(r.CreatedAt), r.Body, r.PrevMAC); !hmac.Equal([]byte(want), []byte(r.MAC)) {
			bad(r.Seq, "receipt #%d was edited after it was written", r.Seq)
		}
		prev = r.MAC
		expect++
	}
	if count != int64(len(rows)) && (len(rows) == 0 || rows[len(rows)-1].Seq != count) {
		bad(count, "the chain head says %d receipts but %d are stored", count, len(rows))
	} else if count > 0 && prev != head {
		bad(count, "the newest receipt is not the chain head (receipts after #%d were removed)", rows[len(rows)-1].Seq)
	}
	v.OK = len(v.Problems) == 0
	v.Failed = !v.OK
	return v, nil
}
