package mcpkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	if err := checkPath(e.Config.Store.Path, path, nil); err != nil {
		return err
	}
	return e.checkRoots(path)
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

// maxExcerpt is the longest word an error about content nobody gave us may keep whole.
const maxExcerpt = 16

// maxErrorText bounds a parse error's text: enough to find the problem, never a file.
const maxErrorText = 400

// minQuoted is the shortest run of a file's content that is masked in an error: shorter runs are
// punctuation and fragments that say nothing about what the file holds.
const minQuoted = 4

// parserWords are the words parsers describe problems with. They stay in a message even when the
// file happens to contain them, so "field … not found" still says what kind of problem it is.
var parserWords = map[string]bool{
	"line": true, "column": true, "offset": true, "at": true, "expected": true, "unexpected": true,
	"field": true, "fields": true, "key": true, "value": true, "type": true, "unknown": true,
	"invalid": true, "string": true, "number": true, "object": true, "array": true, "mapping": true,
	"sequence": true, "cannot": true, "unmarshal": true, "into": true, "found": true, "not": true,
	"missing": true, "required": true, "end": true, "of": true, "input": true, "token": true,
	"character": true, "literal": true, "in": true, "did": true, "find": true, "after": true,
	"before": true, "duplicate": true, "name": true, "must": true, "be": true, "is": true,
}

// ContentError returns err with its text made safe to show a caller when err came from parsing
// file content a caller named: parsers quote what they choke on (an Avro "unknown type" quotes the
// whole token, a YAML error the line), so every run of the message that occurs in content is
// masked with "…" and the place is given as line:column instead; what is left is the kind of
// problem. With content nil, words longer than a short excerpt that name no file are cut. Control
// characters are dropped and the whole is bounded. errors.Is/As still see err.
func ContentError(err error, path string, content []byte) error {
	if err == nil {
		return nil
	}
	msg := SanitizeExcerpts(err.Error(), path, content)
	if content != nil {
		if line, col, ok := syntaxPosition(err, content); ok && !strings.Contains(msg, "(at line ") {
			msg += fmt.Sprintf(" (at line %d, column %d)", line, col)
		}
	}
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

// syntaxPosition is the line and column of a JSON decoding error's offset in content.
func syntaxPosition(err error, content []byte) (int, int, bool) {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var off int64 = -1
	switch {
	case errors.As(err, &syn):
		off = syn.Offset - 1 // the offending byte is the last one read
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 || off >= int64(len(content)) {
		return 0, 0, false
	}
	line, col := lineColumn(content, int(off))
	return line, col, true
}

// lineColumn is the 1-based line and column (in runes) of byte offset off.
func lineColumn(content []byte, off int) (int, int) {
	before := content[:off]
	line := 1 + bytes.Count(before, []byte{'\n'})
	if i := bytes.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, 1 + utf8.RuneCount(before)
}

// SanitizeExcerpts is ContentError on a message.
func SanitizeExcerpts(msg, path string, content []byte) string {
	if r := []rune(msg); len(r) > 2*maxErrorText { // bound the work as well as the answer
		msg = string(r[:2*maxErrorText])
	}
	var out string
	if content != nil {
		out = maskContent(msg, path, content)
	} else {
		out = cutLongWords(msg, path)
	}
	out = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' || r == utf8.RuneError {
			return ' '
		}
		return r
	}, out)
	if r := []rune(out); len(r) > maxErrorText {
		out = string(r[:maxErrorText]) + "…"
	}
	return out
}

// maxMatched is the most content a word of an error is looked up in, and maxLookups the most
// look-ups one error gets; past either, each word that is not the parser's vocabulary is masked
// unchecked, so the work stays bounded (a few milliseconds) whatever the file and the message.
const (
	maxMatched = 1 << 20
	maxLookups = 64
)

// maskContent masks what msg quotes of content, keeping the file's own path and the parser's
// vocabulary: a whitespace-separated field that occurs in content as a whole (a line such as
// root:*:20228:0:99999:7:::) becomes "…", and so does each word of at least minQuoted characters
// that occurs in it. The place of the longest masked text is given as line:column.
func maskContent(msg, path string, content []byte) string {
	seen := map[string]bool{}
	inContent := func(w string) bool {
		if len(content) > maxMatched {
			return true
		}
		v, ok := seen[w]
		if !ok && len(seen) >= maxLookups {
			return true
		}
		if !ok {
			v = bytes.Contains(content, []byte(w))
			seen[w] = v
		}
		return v
	}
	longest := ""
	note := func(w string) {
		if len(w) > len(longest) {
			longest = w
		}
	}
	var b strings.Builder
	for len(msg) > 0 {
		if i := strings.IndexFunc(msg, func(r rune) bool { return !unicode.IsSpace(r) }); i != 0 {
			if i < 0 {
				i = len(msg)
			}
			b.WriteString(msg[:i])
			msg = msg[i:]
			continue
		}
		end := strings.IndexFunc(msg, unicode.IsSpace)
		if end < 0 {
			end = len(msg)
		}
		b.WriteString(maskField(msg[:end], path, inContent, note))
		msg = msg[end:]
	}
	out := b.String()
	if longest != "" {
		if off := bytes.Index(content, []byte(longest)); off >= 0 {
			line, col := lineColumn(content, off)
			out += fmt.Sprintf(" (at line %d, column %d)", line, col)
		}
	}
	return out
}

// maskField masks one whitespace-free field of a message (see maskContent).
func maskField(field, path string, inContent func(string) bool, note func(string)) string {
	if path != "" && strings.Contains(field, path) {
		before, after, _ := strings.Cut(field, path)
		return maskField(before, "", inContent, note) + path + maskField(after, path, inContent, note)
	}
	var masked []string
	for _, w := range strings.FieldsFunc(field, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if utf8.RuneCountInString(w) >= minQuoted && !parserWords[strings.ToLower(w)] && inContent(w) {
			masked = append(masked, w)
		}
	}
	if len(masked) == 0 {
		return field
	}
	core := strings.Trim(field, "\"'`()[]{}<>,;.")
	if lead := strings.Index(field, core); core != "" && utf8.RuneCountInString(core) >= minQuoted && inContent(core) {
		note(core)
		return field[:lead] + "…" + field[lead+len(core):]
	}
	for _, w := range masked {
		note(w)
		field = replaceWord(field, w)
	}
	return field
}

// replaceWord replaces each whole-word occurrence of w in field with "…".
func replaceWord(field, w string) string {
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
	var b strings.Builder
	for {
		i := strings.Index(field, w)
		if i < 0 {
			break
		}
		r0, _ := utf8.DecodeLastRuneInString(field[:i])
		r1, _ := utf8.DecodeRuneInString(field[i+len(w):])
		if (i > 0 && isWord(r0)) || (i+len(w) < len(field) && isWord(r1)) {
			b.WriteString(field[:i+len(w)])
		} else {
			b.WriteString(field[:i] + "…")
		}
		field = field[i+len(w):]
	}
	b.WriteString(field)
	return b.String()
}

// cutLongWords cuts each word longer than maxExcerpt runes that names no file to its first
// characters: the rule for text whose source is not at hand.
func cutLongWords(msg, path string) string {
	var b strings.Builder
	word := func(w string) {
		if utf8.RuneCountInString(w) > maxExcerpt && w != path && !strings.HasSuffix(path, w) && !strings.ContainsRune(w, filepath.Separator) {
			w = string([]rune(w)[:8]) + "…"
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
			b.WriteRune(r)
		}
	}
	if start >= 0 {
		word(msg[start:])
	}
	return b.String()
}

// FileRoots are the directories, beyond those the config names, under which tools read files a
// caller names: the MCP roots the client declares (refreshed by the server) and directories a
// program allows explicitly (a test's scratch directory). The zero value is ready to use.
type FileRoots struct {
	mu     sync.RWMutex
	allow  []string
	client []string
}

// Allow adds directories for the life of the Env.
func (r *FileRoots) Allow(dirs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allow = append(r.allow, dirs...)
}

// SetClient replaces the client's declared roots (file:// URIs already turned into paths).
func (r *FileRoots) SetClient(dirs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.client = slices.Clone(dirs)
}

// AllowWorkingDir adds the working directory: for the `call` subcommand, which a person or a CI
// job runs in their own checkout (no model chooses its arguments). "/" and the home directory are
// never added implicitly: a root that wide would confine nothing.
func (r *FileRoots) AllowWorkingDir() {
	if wd, ok := implicitDir(); ok {
		r.Allow(wd)
	}
}

// implicitDir is the working directory, unless it is "/" or the home directory.
func implicitDir() (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	wd = resolve(wd)
	if home, err := os.UserHomeDir(); err == nil && resolve(home) == wd {
		return "", false
	}
	return wd, wd != string(filepath.Separator)
}

func (r *FileRoots) list() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append(slices.Clone(r.allow), r.client...)
}

// ErrOutsideRoots is the error (wrapped) for a caller-given path outside every allowed directory.
var ErrOutsideRoots = errors.New("is outside the directories tools may read")

// AllowedRoots are the directories a caller-given file must lie under: the config file's
// directory (the working directory when the embedded default config is in use, unless that is "/"
// or the home directory), the dbt project
// (dbt.manifest_path's directory and, for target/, the project above it), the directories of
// catalog.files and catalog.openlineage, and the FileRoots (MCP roots the client declared).
func (e *Env) AllowedRoots() []string {
	var out []string
	add := func(dir string) {
		if dir == "" {
			return
		}
		if r := resolve(dir); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	cfg := e.Config
	if src := cfg.Source; src != "" && !strings.HasPrefix(src, "embedded:") {
		add(filepath.Dir(src))
	} else if wd, ok := implicitDir(); ok {
		add(wd)
	}
	if cfg.DBT != nil && cfg.DBT.ManifestPath != "" {
		dir := filepath.Dir(cfg.DBT.ManifestPath)
		add(dir)
		if filepath.Base(dir) == "target" {
			add(filepath.Dir(dir))
		}
	}
	for _, f := range cfg.Catalog.Files {
		add(filepath.Dir(f))
	}
	for _, p := range cfg.Catalog.OpenLineage {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			add(p)
		} else {
			add(filepath.Dir(p))
		}
	}
	for _, d := range e.Roots.list() {
		add(d)
	}
	return out
}

// checkRoots refuses a path that, made absolute with .. and symlinks resolved, lies under none of
// the allowed roots. The message names the settings that widen them, never the file's content.
func (e *Env) checkRoots(path string) error {
	target := resolve(path)
	roots := e.AllowedRoots()
	for _, root := range roots {
		if within(root, target) {
			return nil
		}
	}
	shown := roots
	if len(shown) > 4 {
		shown = shown[:4]
	}
	more := ""
	if len(roots) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(roots)-len(shown))
	}
	return fmt.Errorf("%s %w (%s%s): move the file under the config file's directory (--config), "+
		"dbt.manifest_path's project or a directory of catalog.files or catalog.openlineage, or declare its directory as an MCP root in the client",
		path, ErrOutsideRoots, strings.Join(shown, ", "), more)
}

// within reports whether target is root or below it; both are resolved absolute paths.
func within(root, target string) bool {
	rel, err := filepath.Rel(root, target)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// FileURIPaths turns the file:// URIs of MCP roots into local paths; other schemes are dropped.
func FileURIPaths(uris []string) []string {
	var out []string
	for _, raw := range uris {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			continue
		}
		out = append(out, filepath.Clean(filepath.FromSlash(u.Path)))
	}
	return out
}
