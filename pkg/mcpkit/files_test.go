package mcpkit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/receipts"
)

// storeEnv is an Env whose store lives in a fresh directory holding a database file and a key.
func storeEnv(t *testing.T) (*Env, string) {
	t.Helper()
	dir := t.TempDir()
	storePath := filepath.Join(dir, "dw.db")
	writeFile(t, storePath, "SQLite format 3\x00")
	writeFile(t, storePath+"-wal", "wal")
	if _, err := receipts.LoadOrCreateKey(receipts.KeyPath(storePath)); err != nil {
		t.Fatal(err)
	}
	e := &Env{Config: &config.Config{Store: config.Store{Path: storePath}}}
	e.Roots.Allow(filepath.Dir(dir)) // the test's scratch directories
	return e, dir
}

func TestCheckPathRefusesPrivateFilesHoweverNamed(t *testing.T) {
	e, dir := storeEnv(t)
	key := receipts.KeyPath(filepath.Join(dir, "dw.db"))
	other := t.TempDir()
	link := filepath.Join(other, "schema.avsc")
	if err := os.Symlink(key, link); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(other, "store")
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	rel, _ := filepath.Rel(wd, key)
	refused := map[string]string{
		"key":                 key,
		"db":                  filepath.Join(dir, "dw.db"),
		"wal":                 filepath.Join(dir, "dw.db-wal"),
		"shm (not yet there)": filepath.Join(dir, "dw.db-shm"),
		"journal":             filepath.Join(dir, "dw.db-journal"),
		"key being written":   filepath.Join(dir, ".receipts.key.123456"),
		"symlink to key":      link,
		"through a dir link":  filepath.Join(dirLink, "receipts.key"),
		"dotdot":              filepath.Join(dir, "sub", "..", "receipts.key"),
		"dotdot missing dir":  filepath.Join(dir, "nope", "..", "receipts.key"),
		"relative":            rel,
	}
	for how, p := range refused {
		err := e.CheckPath(p)
		if !errors.Is(err, ErrPrivateFile) {
			t.Errorf("%s (%s): got %v, want ErrPrivateFile", how, p, err)
			continue
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error should name the path given: %v", how, err)
		}
		if _, err := e.ReadFile(p, 1<<20); !errors.Is(err, ErrPrivateFile) {
			t.Errorf("ReadFile %s: got %v", how, err)
		}
	}
	ok := filepath.Join(dir, "schema.avsc") // beside the store, but not the store's
	writeFile(t, ok, `"string"`)
	for _, p := range []string{ok, filepath.Join(dir, "missing.avsc"), filepath.Join(other, "x.json")} {
		if err := e.CheckPath(p); err != nil {
			t.Errorf("CheckPath(%s) = %v, want nil", p, err)
		}
	}
	if b, err := e.ReadFile(ok, 100); err != nil || string(b) != `"string"` {
		t.Errorf("ReadFile(ok) = %q, %v", b, err)
	}
}

func TestCheckPathRefusesAHardLinkToTheKey(t *testing.T) {
	e, dir := storeEnv(t)
	hard := filepath.Join(t.TempDir(), "k.avsc")
	if err := os.Link(receipts.KeyPath(filepath.Join(dir, "dw.db")), hard); err != nil {
		t.Skipf("no hard links across these directories: %v", err)
	}
	if err := e.CheckPath(hard); !errors.Is(err, ErrPrivateFile) {
		t.Errorf("hard link: %v", err)
	}
}

func TestReadFileRefusesDevicesDirectoriesAndHugeFiles(t *testing.T) {
	e, dir := storeEnv(t)
	big := filepath.Join(dir, "big.json")
	writeFile(t, big, strings.Repeat(" ", 101))
	for _, c := range []struct{ path, want string }{
		{"/dev/null", "outside the directories tools may read"},
		{dir, "not a regular file"},
		{big, "larger than 100 bytes"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		if _, err := e.ReadFile(c.path, 100); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadFile(%s) = %v, want %q", c.path, err, c.want)
		}
	}
}

func TestSanitizeExcerpts(t *testing.T) {
	key := "2597e547aa00bb11cc22dd33ee44ff5566778899aabbccddeeff001122334455"
	for _, c := range []struct {
		name, msg, path string
		content         []byte
		want            string
	}{
		{"avro unknown type", "avro: unknown type: " + key, "k.avsc", []byte(key + "\n"), "avro: unknown type: … (at line 1, column 1)"},
		{"quoted", `unknown type "` + key + `" (want one of string)`, "", []byte(key), `unknown type "…" (want one of string) (at line 1, column 1)`},
		{"a word of the file is masked", "line 3: field owner not found", "", []byte("x: 1\nowner: x"), "line 3: field … not found (at line 2, column 1)"},
		{"shadow line split by colons", "field root:*:20228:0:99999:7:: not found", "", []byte("root:*:20228:0:99999:7:::\n"), "field … not found (at line 1, column 1)"},
		{"KEY=VALUE line", `unknown key "DB_PASSWORD=hunter22"`, "", []byte("HOME=/x\nDB_PASSWORD=hunter22\n"), `unknown key "…" (at line 2, column 1)`},
		{"line without a separator", "yaml: line 1: cannot unmarshal !!str `-----BEGIN OPENSSH PRIVATE KEY-----` into catalogfile.File", "", []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"), "yaml: line 1: cannot unmarshal !!str `… … … KEY-----` into catalogfile.File (at line 1, column 1)"},
		{"long words not from the file stay", "cannot unmarshal into catalogfile.assetEntry", "", []byte("x"), "cannot unmarshal into catalogfile.assetEntry"},
		{"the path stays", "/very/long/path/to/schemas/orders-value.avsc: bad", "/very/long/path/to/schemas/orders-value.avsc", []byte("/very/long/path/to/schemas/orders-value.avsc"), "/very/long/path/to/schemas/orders-value.avsc: bad"},
		{"no content: long words cut", `parsing time "` + key + `"`, "", nil, `parsing time "2597e547…"`},
		{"no content: file names stay", "/tmp/events/run-2026-11-29.json: bad", "", nil, "/tmp/events/run-2026-11-29.json: bad"},
		{"control characters", "bad\x00\x1b[31m " + key, "", []byte(key), "bad  [31m … (at line 1, column 1)"},
	} {
		if got := SanitizeExcerpts(c.msg, c.path, c.content); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	long := strings.Repeat("word ", 200)
	if got := SanitizeExcerpts(long, "", nil); utf8.RuneCountInString(got) != maxErrorText+1 {
		t.Errorf("long message not bounded: %d runes", utf8.RuneCountInString(got))
	}
	base := errors.New("avro: unknown type: " + key)
	err := ContentError(base, "k.avsc", []byte(key))
	if strings.Contains(err.Error(), key) || !errors.Is(err, base) {
		t.Errorf("ContentError = %v (Is base: %v)", err, errors.Is(err, base))
	}
	raw := []byte("{\n  \"type\": \"record\",\n  \"name\" \"x\"\n}")
	var v any
	jerr := json.Unmarshal(raw, &v)
	if got := ContentError(jerr, "s.avsc", raw).Error(); !strings.Contains(got, "(at line 3, column 10)") {
		t.Errorf("JSON syntax error should carry its line and column: %s", got)
	}
	if clean := errors.New("fine"); ContentError(clean, "", nil) != clean {
		t.Error("an error with nothing to cut should come back as it was")
	}
}

// FuzzSanitizeExcerpts: never panics, stays bounded, and no word it keeps that is longer than an
// excerpt occurs in the content.
func FuzzSanitizeExcerpts(f *testing.F) {
	f.Add("avro: unknown type: 2597e547aa00bb11cc22dd33ee44ff55", "2597e547aa00bb11cc22dd33ee44ff55")
	f.Add(`unknown type "abcdefghijklmnopqrstuvwxyz"`, `{"type":"abcdefghijklmnopqrstuvwxyz"}`)
	f.Add("\xff\xfe bad utf8 \x00 aaaaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaa")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, msg, content string) {
		got := SanitizeExcerpts(msg, "", []byte(content))
		if n := utf8.RuneCountInString(got); n > maxErrorText+1 {
			t.Fatalf("%d runes", n)
		}
		// No word of the content of 4 or more characters survives, unless it is the parser's
		// vocabulary ("field", "expected").
		words := strings.FieldsFunc(got, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
		if len(words) > 0 {
			words = words[:len(words)-1] // the last may be cut by the bound
		}
		for _, w := range words {
			if utf8.RuneCountInString(w) >= minQuoted && !parserWords[strings.ToLower(w)] && strings.Contains(content, w) && !strings.Contains(" at line column ", " "+w+" ") {
				t.Fatalf("kept %q from the content in %q", w, got)
			}
		}
	})
}

// When the store path is a symlink, SQLite writes its journals beside the real file: those are
// private too, and so is a receipts key being written under another letter case.
func TestCheckPathFollowsAStoreSymlinkToItsJournals(t *testing.T) {
	real := t.TempDir()
	writeFile(t, filepath.Join(real, "dw.db"), "SQLite format 3\x00")
	writeFile(t, filepath.Join(real, "dw.db-wal"), "recent records")
	home := t.TempDir()
	storePath := filepath.Join(home, "dw.db")
	if err := os.Symlink(filepath.Join(real, "dw.db"), storePath); err != nil {
		t.Fatal(err)
	}
	e := &Env{Config: &config.Config{Store: config.Store{Path: storePath}}}
	e.Roots.Allow(filepath.Dir(real))
	for _, p := range []string{filepath.Join(real, "dw.db-wal"), filepath.Join(real, "dw.db-shm"), filepath.Join(home, ".RECEIPTS.KEY.42")} {
		if err := e.CheckPath(p); !errors.Is(err, ErrPrivateFile) {
			t.Errorf("CheckPath(%s) = %v, want ErrPrivateFile", p, err)
		}
	}
	if err := e.CheckPath(filepath.Join(real, "schema.avsc")); err != nil {
		t.Errorf("a file beside the real store was refused: %v", err)
	}
}

func TestCheckPathConfinesFilesToTheAllowedRoots(t *testing.T) {
	confDir, outside, client := t.TempDir(), t.TempDir(), t.TempDir()
	cfgPath := filepath.Join(confDir, "dw.yaml")
	writeFile(t, cfgPath, "")
	inside := filepath.Join(confDir, "schemas", "orders.avsc")
	if err := os.MkdirAll(filepath.Dir(inside), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, inside, `"string"`)
	secret := filepath.Join(outside, "shadow")
	writeFile(t, secret, "root:*:20228:0:99999:7:::\n")
	link := filepath.Join(confDir, "schemas", "link.avsc")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	e := &Env{Config: &config.Config{Source: cfgPath, Store: config.Store{Path: filepath.Join(confDir, "dw.db")}}}

	for _, p := range []string{inside, filepath.Join(confDir, "schemas", "..", "dw.yaml"), filepath.Join(confDir, "not-yet.json")} {
		if err := e.CheckPath(p); err != nil {
			t.Errorf("CheckPath(%s) = %v, want nil (under the config file's directory)", p, err)
		}
	}
	for how, p := range map[string]string{
		"outside":         secret,
		"symlink out":     link,
		"dotdot out":      filepath.Join(confDir, "..", filepath.Base(outside), "shadow"),
		"absolute system": "/etc/passwd",
	} {
		err := e.CheckPath(p)
		if !errors.Is(err, ErrOutsideRoots) {
			t.Errorf("%s (%s): got %v, want ErrOutsideRoots", how, p, err)
			continue
		}
		if !strings.Contains(err.Error(), "--config") || !strings.Contains(err.Error(), "MCP root") || strings.Contains(err.Error(), "root:*") {
			t.Errorf("%s: the refusal should name the settings and nothing of the file: %v", how, err)
		}
		if _, err := e.ReadFile(p, 1<<20); !errors.Is(err, ErrOutsideRoots) {
			t.Errorf("ReadFile %s: %v", how, err)
		}
	}

	// Directories the config names are roots too, and so are the client's MCP roots.
	manifest := filepath.Join(outside, "proj", "target", "manifest.json")
	e.Config.DBT = &config.DBT{ManifestPath: manifest}
	if err := e.CheckPath(filepath.Join(outside, "proj", "models", "x.sql")); err != nil {
		t.Errorf("the dbt project above target/ should be a root: %v", err)
	}
	inClient := filepath.Join(client, "a.avsc")
	if err := e.CheckPath(inClient); !errors.Is(err, ErrOutsideRoots) {
		t.Fatalf("before the client declares roots: %v", err)
	}
	e.Roots.SetClient(FileURIPaths([]string{"file://" + filepath.ToSlash(client), "https://example.com/x", "file://other-host/x"}))
	if err := e.CheckPath(inClient); err != nil {
		t.Errorf("an MCP root should be allowed: %v", err)
	}
	e.Roots.SetClient(nil)
	if err := e.CheckPath(inClient); !errors.Is(err, ErrOutsideRoots) {
		t.Errorf("a root the client withdrew is still allowed: %v", err)
	}
}

func TestFileURIPaths(t *testing.T) {
	got := FileURIPaths([]string{"file:///home/me/proj", "file://localhost/srv/x/", "file:///a%20b", "http://x/y", "file://host/z", "::"})
	want := []string{"/home/me/proj", "/srv/x", "/a b"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("FileURIPaths = %q, want %q", got, want)
	}
}
