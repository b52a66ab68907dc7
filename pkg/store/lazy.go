package store

import (
	"context"
	"sync"
)

// Lazy opens the store on first use, so a server answers initialize before touching the disk and
// `tools` never creates a database. A failed open is retried on the next use.
type Lazy struct {
	path string
	opts Options

	mu sync.Mutex
	st *Store
}

// NewLazy prepares, without opening, the store at path (or at opts.URL).
func NewLazy(path string, opts Options) *Lazy {
	return &Lazy{path: path, opts: opts}
}

// Path is the configured store.path (see Store.Path).
func (l *Lazy) Path() string { return l.path }

// Engine is the engine the store will run on, known before it is opened.
func (l *Lazy) Engine() Dialect {
	if l.opts.URL != "" {
		return PostgreSQL
	}
	return SQLite
}

// Where names the store for messages: the SQLite file, or the URL without its password.
func (l *Lazy) Where() string {
	if l.opts.URL != "" {
		return RedactURL(l.opts.URL)
	}
	return l.path
}

// Get opens the store if needed and returns it.
func (l *Lazy) Get(ctx context.Context) (*Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st != nil {
		return l.st, nil
	}
	st, err := Open(ctx, l.path, l.opts)
	if err != nil {
		return nil, err
	}
	l.st = st
	return st, nil
}

// Close closes the store if it was opened.
func (l *Lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st == nil {
		return nil
	}
	err := l.st.Close()
	l.st = nil
	return err
}
