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

func do(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// srfake keeps only levels; srtest keeps compatibilityGroup and compatibilityPolicy beside them,
// per subject and globally, answers them on GET /config as the registry does, and judges with them.
func TestConfigKeepsGroupAndPolicy(t *testing.T) {
	srv, err := srtest.Start(srtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// A group alone: the subject has no level of its own, and defaultToGlobal fills it in.
	if code, out := do(t, http.MethodPut, srv.URL+"/config/o-value", `{"compatibilityGroup":"major"}`); code != 200 || out["compatibilityGroup"] != "major" {
		t.Fatalf("put group: %d %v", code, out)
	}
	if code, out := do(t, http.MethodGet, srv.URL+"/config/o-value?defaultToGlobal=false", ""); code != 200 || out["compatibilityGroup"] != "major" || out["compatibilityLevel"] != nil {
		t.Fatalf("get own: %d %v", code, out)
	}
	if code, _ := do(t, http.MethodPut, srv.URL+"/config", `{"compatibilityPolicy":"LOGICAL"}`); code != 200 {
		t.Fatalf("global put: %d", code)
	}
	code, out := do(t, http.MethodGet, srv.URL+"/config/o-value?defaultToGlobal=true", "")
	if code != 200 || out["compatibilityLevel"] != "BACKWARD" || out["compatibilityGroup"] != "major" || out["compatibilityPolicy"] != "LOGICAL" {
		t.Fatalf("get effective: %d %v", code, out)
	}
	if code, out := do(t, http.MethodPut, srv.URL+"/config/o-value", `{"compatibility":"FULL","compatibilityPolicy":"lenient"}`); code != 200 || out["compatibility"] != "FULL" || out["compatibilityPolicy"] != "LENIENT" {
		t.Fatalf("put level and policy: %d %v", code, out)
	}
	if code, out := do(t, http.MethodPut, srv.URL+"/config/o-value", `{"compatibilityPolicy":"SEMANTIC"}`); code != http.StatusUnprocessableEntity || out["error_code"] != float64(42203) {
		t.Fatalf("bad policy: %d %v", code, out)
	}
	if code, out := do(t, http.MethodPut, srv.URL+"/config/o-value", `{"compatibility":"SIDEWAYS"}`); code != http.StatusUnprocessableEntity || out["error_code"] != float64(42203) {
		t.Fatalf("bad level: %d %v", code, out)
	}
	if code, _ := do(t, http.MethodDelete, srv.URL+"/config/o-value", ""); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if code, out := do(t, http.MethodGet, srv.URL+"/config/o-value?defaultToGlobal=true", ""); code != 200 || out["compatibilityGroup"] != nil || out["compatibilityPolicy"] != "LOGICAL" {
		t.Fatalf("after delete: %d %v", code, out)
	}
	// Registration follows the group: the breaking schema in a new group is accepted, in the old one refused.
	srv.Registry.SeedSchema("o-value", 1, 1, sr.Schema{Schema: v1, SchemaMetadata: &sr.SchemaMetadata{Properties: map[string]string{"major": "1"}}})
	do(t, http.MethodPut, srv.URL+"/config/o-value", `{"compatibility":"BACKWARD","compatibilityGroup":"major","compatibilityPolicy":"STRICT"}`)
	code, out = post(t, srv.URL+"/subjects/o-value/versions", map[string]any{"schema": v2, "metadata": map[string]any{"properties": map[string]string{"major": "1"}}})
	if code != http.StatusConflict || out["error_code"] != float64(40901) {
		t.Fatalf("same group: %d %v", code, out)
	}
	code, out = post(t, srv.URL+"/subjects/o-value/versions", map[string]any{"schema": v2, "metadata": map[string]any{"properties": map[string]string{"major": "2"}}})
	if code != 200 || out["id"] == nil {
		t.Fatalf("new group: %d %v", code, out)
	}
}
