package lake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/hadoop" // registers "hadoop" for the writer
	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/lake/laketest"
)

// restFixture serves the Iceberg REST catalog API's documented shapes over a table written by the
// test: OAuth client credentials at /v1/oauth/tokens, /v1/config with a prefix, paged listings,
// loadTable with the metadata inline, and the error model's JSON for a missing table.
func restFixture(t *testing.T, metaLoc string, meta []byte) (*httptest.Server, *atomic.Int32) {
	var tokens atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/oauth/tokens", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" ||
			r.PostForm.Get("client_id") != "dw-client" || r.PostForm.Get("client_secret") != "s3cret-value" || r.PostForm.Get("scope") != "PRINCIPAL_ROLE:ALL" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"The client is not authorized"}`)
			return
		}
		tokens.Add(1)
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"bearer","expires_in":3600,"issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`, tokens.Load())
	})
	authed := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-") {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error":{"message":"Not authorized","type":"NotAuthorizedException","code":401}}`)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /v1/config", authed(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("warehouse") != "tableflow-wh" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"unknown warehouse","type":"BadRequestException","code":400}}`)
			return
		}
		fmt.Fprint(w, `{"defaults":{"s3.region":"eu-west-1"},"overrides":{"prefix":"wh-1"}}`)
	}))
	mux.HandleFunc("GET /v1/wh-1/namespaces", authed(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("pageToken") == "" {
			fmt.Fprint(w, `{"namespaces":[["lkc-test"]],"next-page-token":"p2"}`)
			return
		}
		fmt.Fprint(w, `{"namespaces":[["other"]]}`)
	}))
	mux.HandleFunc("GET /v1/wh-1/namespaces/{ns}/tables", authed(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("pageToken") == "" {
			fmt.Fprint(w, `{"identifiers":[{"namespace":["lkc-test"],"name":"events_hourly"}],"next-page-token":"t2"}`)
			return
		}
		fmt.Fprint(w, `{"identifiers":[{"namespace":["lkc-test"],"name":"orders"}]}`)
	}))
	mux.HandleFunc("GET /v1/wh-1/namespaces/{ns}/tables/{table}", authed(func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("ns") != "lkc-test" || r.PathValue("table") != "events_hourly" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"message":"Table does not exist: %s","type":"NoSuchTableException","code":404}}`, r.PathValue("table"))
			return
		}
		out, _ := json.Marshal(map[string]any{"metadata-location": metaLoc, "metadata": json.RawMessage(meta), "config": map[string]string{"s3.access-key-id": "vended"}})
		w.Write(out)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &tokens
}

// readBack loads asset through l and checks what every catalog must give: its snapshots, a
// column's records and nulls from the manifests (and a read), and a ping.
func readBack(t *testing.T, l *lake.Lake, asset string, snapshots int, column string, records, nulls int64) *lake.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := l.Load(ctx, asset)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(lake.LoadHistory(tbl)); got != snapshots {
		t.Fatalf("snapshots = %d, want %d", got, snapshots)
	}
	st, err := lake.Stats(ctx, tbl, time.Time{}, time.Now().Add(time.Hour), lake.Want{Columns: []string{column}})
	if err != nil || st.Records != records || st.Columns[0].Nulls != nulls {
		t.Fatalf("stats = %+v, %v", st, err)
	}
	if err := l.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	return tbl
}

func TestRESTCatalog(t *testing.T) {
	src, asset := writeEvents(t)
	ctx := context.Background()
	written, err := src.Load(ctx, asset)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := os.ReadFile(strings.TrimPrefix(written.MetadataLocation(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	srv, tokens := restFixture(t, written.MetadataLocation(), meta)
	cfg := &config.Lake{Catalog: "rest", URI: srv.URL, Warehouse: "tableflow-wh", ClientID: "dw-client", ClientSecret: "s3cret-value",
		Scope: "PRINCIPAL_ROLE:ALL", Namespace: "lkc-test", Timeout: 5 * time.Second}
	l, err := lake.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tbl := readBack(t, l, asset, 3, "bytes", 10, 4)
	if ch := lake.SchemaHistory(tbl); len(ch) != 1 || ch[0].Field != "legacy_code" {
		t.Fatalf("schema history = %+v", ch)
	}
	ids, err := l.Tables(ctx, "")
	if err != nil || len(ids) != 2 || ids[1][1] != "orders" {
		t.Fatalf("paged tables = %v, %v", ids, err)
	}
	if tokens.Load() != 1 {
		t.Fatalf("tokens fetched = %d, want 1 (reused until it expires)", tokens.Load())
	}
	if _, err := l.Load(ctx, "iceberg:lkc-test.nope"); err == nil || !strings.Contains(err.Error(), "no table lkc-test.nope in the rest catalog") {
		t.Fatalf("missing table err = %v", err)
	}

	bad := *cfg
	bad.ClientSecret = "wrong-secret-value"
	_, err = lake.Open(ctx, &bad)
	if err == nil || !strings.Contains(err.Error(), "invalid_client") || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("bad credentials err = %v", err)
	}
	wrongWH := *cfg
	wrongWH.Warehouse = "nope"
	if _, err := lake.Open(ctx, &wrongWH); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("unknown warehouse err = %v", err)
	}
}

func TestHadoopWarehouse(t *testing.T) {
	dir := t.TempDir()
	wh := "file://" + filepath.Join(dir, "wh")
	cat, err := catalog.Load(context.Background(), "dw", iceberg.Properties{"type": "hadoop", "warehouse": wh})
	if err != nil {
		t.Fatal(err)
	}
	w := laketest.CreateIn(t, cat, "lkc-h", "clicks", laketest.Long(1, "id"), laketest.String(2, "page"))
	w.Append(`[{"id":1,"page":"a"},{"id":2,"page":null}]`)
	w.Append(`[{"id":3,"page":"c"}]`)

	l := laketest.Open(t, &config.Lake{Catalog: "hadoop", Warehouse: wh, Namespace: "lkc-h"})
	ctx := context.Background()
	tbl := readBack(t, l, "tableflow:clicks", 2, "page", 3, 1)
	ids, err := l.Tables(ctx, "")
	if err != nil || len(ids) != 1 || ids[0][1] != "clicks" {
		t.Fatalf("tables = %v, %v", ids, err)
	}
	// Without the version hint, the highest metadata version is the current one.
	if err := os.Remove(filepath.Join(dir, "wh", "lkc-h", "clicks", "metadata", "version-hint.text")); err != nil {
		t.Fatal(err)
	}
	if tbl2, err := l.Load(ctx, "tableflow:clicks"); err != nil || tbl2.MetadataLocation() != tbl.MetadataLocation() {
		t.Fatalf("without hint: %v, %s vs %s", err, tbl2.MetadataLocation(), tbl.MetadataLocation())
	}
	if _, err := l.Load(ctx, "tableflow:nope"); err == nil || !strings.Contains(err.Error(), "no table lkc-h.nope") {
		t.Fatalf("missing: %v", err)
	}
}

// glueFixture answers the Glue JSON 1.1 API (X-Amz-Target AWSGlue.<Operation>) for one Iceberg
// table, one non-Iceberg table and a missing one.
func glueFixture(t *testing.T, metaLoc string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var in struct{ DatabaseName, Name string }
		_ = json.Unmarshal(body, &in)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		iceTable := map[string]any{"Name": "events_hourly", "DatabaseName": "lkc-test", "Parameters": map[string]string{"table_type": "ICEBERG", "metadata_location": metaLoc}}
		switch r.Header.Get("X-Amz-Target") {
		case "AWSGlue.GetTable":
			if in.Name != "events_hourly" {
				w.Header().Set("X-Amzn-ErrorType", "EntityNotFoundException")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"__type":"EntityNotFoundException","Message":"Table %s not found."}`, in.Name)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"Table": iceTable})
		case "AWSGlue.GetTables":
			json.NewEncoder(w).Encode(map[string]any{"TableList": []any{iceTable, map[string]any{"Name": "csv_dump", "Parameters": map[string]string{"classification": "csv"}}}})
		case "AWSGlue.GetDatabases":
			fmt.Fprint(w, `{"DatabaseList":[{"Name":"lkc-test"}]}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"InvalidInputException","Message":"unexpected operation"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGlueCatalog(t *testing.T) {
	src, asset := writeEvents(t)
	ctx := context.Background()
	written, err := src.Load(ctx, asset)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	srv := glueFixture(t, written.MetadataLocation())
	l, err := lake.Open(ctx, &config.Lake{Catalog: "glue", Region: "eu-west-1", Namespace: "lkc-test", Properties: map[string]string{"glue.endpoint": srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	readBack(t, l, asset, 3, "bytes", 10, 4)
	ids, err := l.Tables(ctx, "")
	if err != nil || len(ids) != 1 {
		t.Fatalf("Iceberg tables only: %v, %v", ids, err)
	}
	if err := l.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(ctx, "iceberg:lkc-test.nope"); err == nil || !strings.Contains(err.Error(), "no table lkc-test.nope in the glue catalog") {
		t.Fatalf("missing: %v", err)
	}
}

func TestSQLCatalogErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := lake.Open(ctx, &config.Lake{Catalog: "sql", URI: filepath.Join(t.TempDir(), "missing.db")}); err == nil || !strings.Contains(err.Error(), "no sql catalog database") {
		t.Fatalf("missing db: %v", err)
	}
	if _, err := lake.Open(ctx, &config.Lake{Catalog: "nessie"}); err == nil || !strings.Contains(err.Error(), "not rest, glue, sql or hadoop") {
		t.Fatalf("unknown kind: %v", err)
	}
}

// A warehouse path on S3: the version hint, the metadata directory's listing and the metadata
// file are read through the S3 file IO (signed requests to a loopback S3); the table's own files
// are where its writer put them (file://).
func TestHadoopWarehouseOnS3(t *testing.T) {
	dir := t.TempDir()
	cat, err := catalog.Load(context.Background(), "dw", iceberg.Properties{"type": "hadoop", "warehouse": "file://" + filepath.Join(dir, "wh")})
	if err != nil {
		t.Fatal(err)
	}
	w := laketest.CreateIn(t, cat, "lkc-s3", "clicks", laketest.Long(1, "id"), laketest.String(2, "page"))
	w.Append(`[{"id":1,"page":"a"},{"id":2,"page":null}]`)
	w.Append(`[{"id":3,"page":"c"}]`)
	srv := lake.ServeS3Dir(t, "lake", dir)
	l := laketest.Open(t, &config.Lake{Catalog: "hadoop", Warehouse: "s3://lake/wh", Namespace: "lkc-s3", Properties: lake.S3Props(srv.URL)})
	tbl := readBack(t, l, "tableflow:clicks", 2, "page", 3, 1)
	if !strings.HasPrefix(tbl.MetadataLocation(), "s3://lake/wh/lkc-s3/clicks/metadata/v") {
		t.Fatalf("metadata location = %s", tbl.MetadataLocation())
	}
	if ids, err := l.Tables(context.Background(), ""); err != nil || len(ids) != 1 || ids[0][1] != "clicks" {
		t.Fatalf("tables = %v, %v", ids, err)
	}
}
