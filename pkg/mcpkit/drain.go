package mcpkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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

	wmu     sync.Mutex
	mu      sync.Mutex
	pending map[string]bool
	changed chan struct{}
	buf     []byte // unread rest of the current input line
	// initialized: an initialize request has come in (Read runs on one goroutine).
	initialized bool
	partial     []byte // unterminated output line
	// answered runs after each answer is written (the start-up's end, see Agent.AfterStart).
	answered func()
}

// newDrain wraps the streams; answered (may be nil) runs after each answer is written.
func newDrain(ctx context.Context, in io.Reader, out io.Writer, answered func()) *drain {
	if answered == nil {
		answered = func() {}
	}
	return &drain{ctx: ctx, in: bufio.NewReaderSize(in, 64<<10), out: out, pending: map[string]bool{}, changed: make(chan struct{}, 1), answered: answered}
}

type rpcEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// stateless: a request of the 2026-07-28 protocol, which has no initialize: the client learns the
// versions with server/discover and names its version in every request's _meta.
func (e rpcEnvelope) stateless() bool {
	_, ok := e.Params.Meta[mcp.MetaKeyProtocolVersion]
	return ok || e.Method == string(mcp.MethodServerDiscover)
}

func (d *drain) Read(p []byte) (int, error) {
	for len(d.buf) == 0 {
		line, err := d.in.ReadBytes('\n')
		if len(line) > 0 {
			var env rpcEnvelope
			if json.Unmarshal(bytes.TrimSpace(line), &env) == nil && len(env.ID) > 0 && string(env.ID) != "null" {
				if refusal := d.refuse(env); refusal != nil {
					d.Write(refusal) // the server never sees the line
					continue
				}
				if env.Method != "" {
					d.mu.Lock()
					d.pending[string(env.ID)] = true
					d.mu.Unlock()
				}
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

// refuse answers, in the order the client sent them, the requests the protocol forbids: an id
// that is not a string or a number (JSON-RPC 2.0), and any request but initialize and ping before
// initialize (the MCP lifecycle; a stateless 2026-07-28 request needs none). Checking the stream's order, not the server's state, keeps a
// script that pipes initialize and a call without waiting working.
func (d *drain) refuse(env rpcEnvelope) []byte {
	var id any = json.RawMessage(env.ID)
	msg := ""
	switch {
	case !validID(env.ID):
		id, msg = nil, "invalid request: id must be a string or a number"
	case env.Method == "initialize":
		d.initialized = true
	case env.Method != "" && env.Method != "ping" && !d.initialized && !env.stateless():
		msg = fmt.Sprintf("%s before initialize: send initialize first (MCP lifecycle)", ellipsize(env.Method, 64))
	}
	if msg == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32600, "message": msg}})
	return append(b, '\n')
}

// validID: a JSON string or number.
func validID(id json.RawMessage) bool {
	switch id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
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
	d.wmu.Lock() // the server's answers and drain's own refusals never interleave
	n, err := d.out.Write(p)
	d.wmu.Unlock()
	d.mu.Lock()
	d.partial = append(d.partial, p[:n]...)
	sawAnswer := false
	for {
		i := bytes.IndexByte(d.partial, '\n')
		if i < 0 {
			break
		}
		var env rpcEnvelope
		if json.Unmarshal(d.partial[:i], &env) == nil && env.Method == "" && len(env.ID) > 0 {
			delete(d.pending, string(env.ID))
			sawAnswer = true
		}
		d.partial = d.partial[i+1:]
	}
	d.mu.Unlock()
	if sawAnswer {
		d.answered()
	}
	select {
	case d.changed <- struct{}{}:
	default:
	}
	return n, err
}

// ellipsize cuts s to at most n runes, marking the cut.
func ellipsize(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
