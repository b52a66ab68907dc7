package mcpkit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dataworkers/dw/pkg/receipts"
)

// Every tool that reads a path its caller names goes through Env.CheckPath or Env.ReadFile, so the
// store's own files — whose contents would let a caller forge receipts or read every record — are
// never read for, or echoed to, a caller.

// ErrPrivateFile is the error (wrapped) for a path that is one of the store's private files.
var ErrPrivateFile = errors.New("is a private file of the Data Workers store (database, journal or receipts key); tools never read it")

// PrivateFiles are the files of the store at storePath that no tool reads for a caller: the SQLite
// file and its -wal, -shm and -journal companions (beside the real file when the path is a symlink),
// and the receipts key beside it.
func PrivateFiles(storePath string) []string {
	if storePath == "" {
		return nil
	}
	out := []string{storePath, storePath + "-wal", storePath + "-shm", storePath + "-journal", receipts.KeyPath(storePath)}
	// SQLite keeps its companions beside the real file, not beside a symlink to it.
	if real, err := filepath.EvalSymlinks(storePath); err == nil && real != storePath {
		out = append(out, real+"-wal", real+"-shm", real+"-journal")
	}
	return out
}

// CheckPath refuses a caller-given path that is, or links to, one of the store's private files
// (or a receipts key being written beside it). Paths are compared cleaned, absolute and with
// symlinks resolved, so ../ and links do not get around it; existing files are also compared by
// identity, so a hard link does not either. The error names the path, never any content.
func (e *Env) CheckPath(path string) error {
	if e == nil || e.Config == nil {
		return nil
	}
	return checkPath(e.Config.Store.Path, path, nil)
}

func checkPath(storePath, path string, opened os.FileInfo) error {
	private := PrivateFiles(storePath)
	if len(private) == 0 {
		return nil
	}
	refuse := fmt.Errorf("%s %w: pass a schema, manifest, events or catalog file instead", path, ErrPrivateFile)
	target := resolve(path)
	keyDir, keyTemp := resolve(filepath.Dir(receipts.KeyPath(storePath))), ".receipts.key."
	if base := filepath.Base(target); filepath.Dir(target) == keyDir && len(base) >= len(keyTemp) && strings.EqualFold(base[:len(keyTemp)], keyTemp) {
		return refuse
	}
	fi := opened
	if fi == nil {
		fi, _ = os.Stat(path)
	}
	for _, p := range private {
		if resolve(p) == target {
			return refuse
		}
		if fi != nil {
			if pfi, err := os.Stat(p); err == nil && os.SameFile(fi, pfi) {
				return refuse
			}
		}
	}
	return nil
}

// resolve is path made absolute, cleaned and with symlinks resolved; for a path that does not exist
// (yet) its nearest existing parent is resolved instead.
func resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	dir, base := filepath.Split(abs)
	if dir = filepath.Clean(dir); dir == abs {
		return abs
	}
	return filepath.Join(resolve(dir), base)
}

// ReadFile reads a caller-given regular file of at most limit bytes after CheckPath. Devices,
// pipes and directories are refused before they are opened (a FIFO must not block the call), and
// the opened file is checked again, so swapping in a link between the check and the read does not
// get around it. Errors name the path, never its content.
func (e *Env) ReadFile(path string, limit int64) ([]byte, error) {
	f, err := e.OpenFile(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

// OpenFile opens a caller-given regular file of at most limit bytes with ReadFile's checks, for a
// reader that streams it (a file too large to hold in memory).
func (e *Env) OpenFile(path string, limit int64) (*os.File, error) {
	if err := e.CheckPath(path); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() { // replaced between the two looks
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if e != nil && e.Config != nil {
		if err := checkPath(e.Config.Store.Path, path, fi); err != nil {
			f.Close()
			return nil, err
		}
	}
	if fi.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return f, nil
}

// maxExcerpt is the longest run of a file's content an error may quote.
const maxExcerpt = 16

// maxErrorText bounds a parse error's text: enough to find the problem, never a file.
const maxErrorText = 400

// ContentError returns err with its text made safe to show a caller when err came from parsing
// file content a caller named: parsers quote what they choke on (an Avro "unknown type" quotes the
// whole token), so each word of the message longer than a short excerpt that occurs in content —
// or, with content nil, any such word that names no file — is cut to its first
// characters, control characters are dropped and the whole is bounded. errors.Is/As still see err.
func ContentError(err error, path string, content []byte) error {
	if err == nil {
		return nil
	}
	msg := SanitizeExcerpts(err.Error(), path, content)
	if msg == err.Error() {
		return err
	}
	return &contentError{msg: msg, err: err}
}

type contentError struct {
	msg string
	err error
}

func (e *contentError) Error() string { return e.msg }
func (e *contentError) Unwrap() error { return e.err }

// SanitizeExcerpts is ContentError on a message.
func SanitizeExcerpts(msg, path string, content []byte) string {
	var b strings.Builder
	word := func(w string) {
		quoted := utf8.RuneCountInString(w) > maxExcerpt && w != path && !strings.HasSuffix(path, w)
		if content != nil {
			quoted = quoted && bytes.Contains(content, []byte(w))
		} else {
			quoted = quoted && !strings.ContainsRune(w, filepath.Separator) // a file named in the message
		}
		if quoted {
			r := []rune(w)
			w = string(r[:8]) + "…"
		}
		b.WriteString(w)
	}
	start := -1
	for i, r := range msg {
		sep := unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("\"'`:,;()[]{}<>=", r)
		switch {
		case !sep && start < 0:
			start = i
		case sep:
			if start >= 0 {
				word(msg[start:i])
				start = -1
			}
			if unicode.IsControl(r) && r != '\n' {
				r = ' '
			}
			b.WriteRune(r)
		}
	}
	if start >= 0 {
		word(msg[start:])
	}
	out := b.String()
	if r := []rune(out); len(r) > maxErrorText {
		out = string(r[:maxErrorText]) + "…"
	}
	return out
}
