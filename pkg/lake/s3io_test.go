package lake

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// ServeS3Dir is serveS3Dir for the package's external tests.
var ServeS3Dir = serveS3Dir

// serveS3Dir answers S3's REST API, path-style, for one bucket whose objects are the files
// under dir: HEAD and GET (with Range, through http.ServeContent) of an object, and
// ListObjectsV2 with a prefix and the "/" delimiter. Every request must be signed (SigV4).
func serveS3Dir(t testing.TB, bucket, dir string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=test-key/") {
			http.Error(w, "unsigned", http.StatusForbidden)
			return
		}
		b, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if b != bucket {
			http.Error(w, "<Error><Code>NoSuchBucket</Code></Error>", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
			listS3Dir(w, dir, r.URL.Query().Get("prefix"))
			return
		}
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(key)))
		var st os.FileInfo
		if err == nil {
			defer f.Close()
			st, err = f.Stat()
		}
		if err != nil || st.IsDir() {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			if r.Method == http.MethodGet {
				io.WriteString(w, "<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>")
			}
			return
		}
		http.ServeContent(w, r, st.Name(), st.ModTime(), f)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func listS3Dir(w http.ResponseWriter, root, prefix string) {
	type object struct {
		Key  string `xml:"Key"`
		Size int64  `xml:"Size"`
	}
	type commonPrefix struct {
		Prefix string `xml:"Prefix"`
	}
	res := struct {
		XMLName  xml.Name       `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
		Prefix   string         `xml:"Prefix"`
		KeyCount int            `xml:"KeyCount"`
		Trunc    bool           `xml:"IsTruncated"`
		Contents []object       `xml:"Contents"`
		Prefixes []commonPrefix `xml:"CommonPrefixes"`
	}{Prefix: prefix}
	dir := strings.TrimSuffix(prefix, "/")
	entries, _ := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		key := e.Name()
		if dir != "" {
			key = dir + "/" + key
		}
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		if e.IsDir() {
			res.Prefixes = append(res.Prefixes, commonPrefix{key + "/"})
			continue
		}
		info, _ := e.Info()
		res.Contents = append(res.Contents, object{Key: key, Size: info.Size()})
	}
	res.KeyCount = len(res.Contents) + len(res.Prefixes)
	w.Header().Set("Content-Type", "application/xml")
	xml.NewEncoder(w).Encode(res)
}

// S3Props are the file IO properties that reach a serveS3Dir server.
func S3Props(endpoint string) map[string]string {
	return map[string]string{"s3.endpoint": endpoint, "s3.region": "eu-west-1", "s3.access-key-id": "test-key", "s3.secret-access-key": "test-secret"}
}

// An object read whole, in ranges and after seeks; a prefix listed; a missing key not found.
func TestS3FileIO(t *testing.T) {
	dir := t.TempDir()
	body := []byte("0123456789abcdefghij")
	if err := os.MkdirAll(filepath.Join(dir, "wh", "ns", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"wh/ns/data.bin", "wh/ns/sub/x"} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveS3Dir(t, "lake", dir)
	ctx := context.Background()
	fsys, err := loadFS(ctx, S3Props(srv.URL), "s3://lake/wh")
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open("s3://lake/wh/ns/data.bin")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 20 || st.IsDir() {
		t.Fatalf("stat = %v, %v", st, err)
	}
	all, err := io.ReadAll(f)
	if err != nil || string(all) != string(body) {
		t.Fatalf("read all = %q, %v", all, err)
	}
	p := make([]byte, 4)
	if n, err := f.ReadAt(p, 10); n != 4 || err != nil || string(p) != "abcd" {
		t.Fatalf("ReadAt(10) = %d %q %v", n, p, err)
	}
	if n, err := f.ReadAt(p, 18); n != 2 || !errors.Is(err, io.EOF) || string(p[:n]) != "ij" {
		t.Fatalf("ReadAt(18) = %d %q %v", n, p[:n], err)
	}
	if off, err := f.Seek(-5, io.SeekEnd); off != 15 || err != nil {
		t.Fatalf("seek = %d, %v", off, err)
	}
	if rest, _ := io.ReadAll(f); string(rest) != "fghij" {
		t.Fatalf("after seek = %q", rest)
	}
	d, err := fsys.Open("s3://lake/wh/ns/")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := d.(fs.ReadDirFile).ReadDir(-1)
	if err != nil || len(entries) != 2 || entries[0].Name() != "sub" || !entries[0].IsDir() || entries[1].Name() != "data.bin" || entries[1].IsDir() {
		t.Fatalf("ReadDir = %v, %v", entries, err)
	}
	if _, err := fsys.Open("s3://lake/wh/none.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing object: %v", err)
	}
	if _, err := loadFS(ctx, map[string]string{"s3.access-key-id": "only-the-key"}, "s3://lake/wh"); err == nil {
		t.Fatal("an access key without its secret was taken")
	}
}

// Keys are taken as written (a partition value URL-encoded into the key stays encoded), a file read
// front to back is one GET however small the reader's buffer, and a missing file is a HEAD, not a
// listing.
func TestS3KeysAsWrittenAndOneGetPerSequentialRead(t *testing.T) {
	dir := t.TempDir()
	key := "wh/t/data/name=a+b%3Ac/part-0.avro"
	body := []byte(strings.Repeat("manifest bytes ", 20000)) // 300 KB
	if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(path.Dir(key))), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(key)), body, 0o644); err != nil {
		t.Fatal(err)
	}
	backend := serveS3Dir(t, "lake", dir)
	target, _ := url.Parse(backend.URL)
	var gets, lists atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
			lists.Add(1)
		case r.Method == http.MethodGet:
			gets.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	fsys, err := loadFS(context.Background(), S3Props(front.URL), "s3://lake/wh")
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open("s3://lake/" + key)
	if err != nil {
		t.Fatalf("a key holding + and %%3A: %v", err)
	}
	defer f.Close()
	got, err := io.ReadAll(iotestSmallReads{f})
	if err != nil || string(got) != string(body) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("a sequential read of %d bytes took %d GETs, want 1", len(body), n)
	}
	if _, err := fsys.Open("s3://lake/wh/t/metadata/version-hint.text"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if n := lists.Load(); n != 0 {
		t.Errorf("a missing file was looked for with %d listings", n)
	}
}

// iotestSmallReads reads through 4 KiB at a time, as a bufio.Reader over the file does.
type iotestSmallReads struct{ r io.Reader }

func (s iotestSmallReads) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), 4096)]) }

// A table's reads share one S3 client (its configuration and credentials resolved once), each
// read with its own caller's context.
func TestATableBuildsOneS3Client(t *testing.T) {
	srv := serveS3Dir(t, "lake", t.TempDir())
	tbl := &Table{meta: &Metadata{Location: "s3://lake/wh/t"}, ioProps: S3Props(srv.URL)}
	type key struct{}
	ctx1 := context.WithValue(context.Background(), key{}, 1)
	ctx2 := context.WithValue(context.Background(), key{}, 2)
	a, err := tbl.FS(ctx1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tbl.FS(ctx2)
	if err != nil {
		t.Fatal(err)
	}
	fa, fb := a.(*s3FS), b.(*s3FS)
	if fa.client != fb.client {
		t.Error("each FS call built its own S3 client")
	}
	if fa.ctx != ctx1 || fb.ctx != ctx2 {
		t.Error("a read does not run under its own caller's context")
	}
}
