package srtest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/dataworkers/dw/pkg/registry/srtest"
)

func post(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/vnd.schemaregistry.v1+json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

const (
	v1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	v2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int"}]}`
)

func TestCompatibilityEndpointsJudgeWithOurChecker(t *testing.T) {
	srv, err := srtest.Start(srtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// A new subject has nothing to be incompatible with.
	code, out := post(t, srv.URL+"/compatibility/subjects/r-value/versions", map[string]any{"schema": v2})
	if code != 200 || out["is_compatible"] != true {
		t.Fatalf("%d %v", code, out)
	}
	// …but "latest" of a missing subject is 40401, as the registry answers.
	code, out = post(t, srv.URL+"/compatibility/subjects/r-value/versions/latest", map[string]any{"schema": v2})
	if code != 404 || out["error_code"] != float64(40401) {
		t.Fatalf("%d %v", code, out)
	}
	srv.Registry.SeedSchema("r-value", 1, 1, sr.Schema{Schema: v1})
	code, out = post(t, srv.URL+"/compatibility/subjects/r-value/versions/1?verbose=true", map[string]any{"schema": v2})
	msgs, _ := out["messages"].([]any)
	if code != 200 || out["is_compatible"] != false || len(msgs) == 0 || !strings.Contains(msgs[0].(string), "READER_FIELD_MISSING_DEFAULT_VALUE") {
		t.Fatalf("%d %v", code, out)
	}
	code, out = post(t, srv.URL+"/subjects/r-value/versions", map[string]any{"schema": v2})
	if code != http.StatusConflict || out["error_code"] != float64(40901) {
		t.Fatalf("register: %d %v", code, out)
	}
	code, out = post(t, srv.URL+"/subjects/r-value/versions", map[string]any{"schema": `{"type":"record","name":"R","fields":[{"name":"a","type":"strng"}]}`})
	if code != http.StatusUnprocessableEntity || out["error_code"] != float64(42201) {
		t.Fatalf("invalid: %d %v", code, out)
	}
	// NONE accepts anything.
	if err := srv.Registry.SetCompat("r-value", sr.CompatNone); err != nil {
		t.Fatal(err)
	}
	code, out = post(t, srv.URL+"/subjects/r-value/versions", map[string]any{"schema": v2})
	if code != 200 || out["id"] == nil {
		t.Fatalf("register under NONE: %d %v", code, out)
	}
}

func TestStartRefusesNonLoopbackAndChecksAuth(t *testing.T) {
	if _, err := srtest.Start(srtest.Options{Addr: "0.0.0.0:0"}); err == nil {
		t.Fatal("0.0.0.0 accepted")
	}
	srv, err := srtest.Start(srtest.Options{Username: "k", Password: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/subjects")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/subjects", nil)
	req.SetBasicAuth("k", "s")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with credentials: %d", resp.StatusCode)
	}
}
