package mcpkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// drainTimeout bounds how long a closed stdin waits for in-flight requests to be answered.
const drainTimeout = 60 * time.Second

// drain sits between the stdio server and the process's streams. mcp-go cancels every in-flight
// request the moment stdin reaches EOF, so a script that pipes requests and closes stdin would lose
// the answers to its last calls. drain withholds the EOF until every request it has passed on has
// been answered on stdout (or the timeout or ctx ends the wait).
type drain struct {
	ctx context.Context
	in  *bufio.Reader
	out io.Writer

	mu      sync.Mutex
	pending map[string]bool
	changed chan struct{}
	buf     []byte // unread rest of the current input line
	partial []byte // unterminated output line
}

func newDrain(ctx context.Context, in io.Reader, out io.Writer) *drain {
	return &drain{ctx: ctx, in: bufio.NewReaderSize(in, 64<<10), out: out, pending: map[string]bool{}, changed: make(chan struct{}, 1)}
}

type rpcEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (d *drain) Read(p []byte) (int, error) {
	if len(d.buf) == 0 {
		line, err := d.in.ReadBytes('\n')
		if len(line) > 0 {
			var env rpcEnvelope
			if json.Unmarshal(bytes.TrimSpace(line), &env) == nil && env.Method != "" && len(env.ID) > 0 && string(env.ID) != "null" {
				d.mu.Lock()
				d.pending[string(env.ID)] = true
				d.mu.Unlock()
			}
			d.buf = line
		} else if err != nil {
			if err == io.EOF {
				d.waitAnswered()
			}
			return 0, err
		}
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

func (d *drain) waitAnswered() {
	deadline := time.NewTimer(drainTimeout)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		n := len(d.pending)
		d.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-d.changed:
		case <-deadline.C:
			return
		case <-d.ctx.Done():
			return
		}
	}
}

func (d *drain) Write(p []byte) (int, error) {
	n, err := d.out.Write(p)
	d.mu.Lock()
	d.partial = append(d.partial, p[:n]...)
	for {
		i := bytes.IndexByte(d.partial, '\n')
		if i < 0 {
			break
		}
		var env rpcEnvelope
		if json.Unmarshal(d.partial[:i], &env) == nil && env.Method == "" && len(env.ID) > 0 {
			delete(d.pending, string(env.ID))
		}
		d.partial = d.partial[i+1:]
	}
	d.mu.Unlock()
	select {
	case d.changed <- struct{}{}:
	default:
	}
	return n, err
}
