package registry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/registry/srtest"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func scenario(t *testing.T, v int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "schema", "testdata", "scenario", "api-usage-value.v"+map[int]string{11: "11", 12: "12"}[v]+".avsc"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func start(t *testing.T, opts srtest.Options) (*srtest.Server, *registry.Client) {
	t.Helper()
	srv, err := srtest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := registry.New(&config.SchemaRegistry{URL: srv.URL, Username: opts.Username, Password: opts.Password, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

const requiredRegion = `{"type":"record","name":"ApiUsage","namespace":"com.acme.gateway","fields":[
 {"name":"usage_id","type":"string"},{"name":"region","type":"string"}]}`

func TestRegisterOverHTTPRejectsIncompatibleWith40901(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, srtest.Options{})
	id11, err := c.Register(ctx, "api-usage-value", schema.Avro, scenario(t, 11), nil)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := c.IsCompatibleWithLatest(ctx, "api-usage-value", schema.Avro, scenario(t, 12), nil)
	if err != nil || !ok {
		t.Fatalf("v12 against v11 under BACKWARD: compatible=%v err=%v, want true", ok, err)
	}
	id12, err := c.Register(ctx, "api-usage-value", schema.Avro, scenario(t, 12), nil)
	if err != nil || id12 == id11 {
		t.Fatalf("register v12: id %d err %v", id12, err)
	}
	ok, err = c.IsCompatibleWithLatest(ctx, "api-usage-value", schema.Avro, requiredRegion, nil)
	if err != nil || ok {
		t.Fatalf("a required field without default: compatible=%v err=%v, want false", ok, err)
	}
	v, err := c.CheckCompatibility(ctx, "api-usage-value", schema.Avro, requiredRegion, nil)
	if err != nil || v.Compatible || !strings.Contains(strings.Join(v.Messages, " "), "READER_FIELD_MISSING_DEFAULT_VALUE") {
		t.Fatalf("verbose check: %+v %v", v, err)
	}
	_, err = c.Register(ctx, "api-usage-value", schema.Avro, requiredRegion, nil)
	if !registry.IsCode(err, 40901) || !strings.Contains(err.Error(), "incompatible") {
		t.Fatalf("register incompatible: %v, want error_code 40901", err)
	}
	latest, err := c.Version(ctx, "api-usage-value", 0, false)
	if err != nil || latest.Version != 2 || latest.ID != id12 || latest.Type != schema.Avro {
		t.Fatalf("latest = %+v, %v", latest, err)
	}
}

func TestSubjectConfigFallsBackToGlobalAndReadsOwnLevel(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, srtest.Options{})
	if _, err := c.Register(ctx, "orders-value", schema.Avro, scenario(t, 11), nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.SubjectConfig(ctx, "orders-value")
	if err != nil || cfg.Level != compat.Backward || cfg.Explicit {
		t.Fatalf("inherited config = %+v, %v", cfg, err)
	}
	if err := c.SetSubjectLevel(ctx, "orders-value", compat.FullTransitive); err != nil {
		t.Fatal(err)
	}
	cfg, err = c.SubjectConfig(ctx, "orders-value")
	if err != nil || cfg.Level != compat.FullTransitive || !cfg.Explicit {
		t.Fatalf("own config = %+v, %v", cfg, err)
	}
	g, err := c.GlobalLevel(ctx)
	if err != nil || g != compat.Backward {
		t.Fatalf("global = %v, %v", g, err)
	}
	// FULL_TRANSITIVE now refuses v12 (response_kib is added with a default, response_bytes
	// removed with one: both fine) — but a type change is refused.
	retyped := strings.Replace(scenario(t, 11), `"name": "status_code", "type": "int"`, `"name": "status_code", "type": "string"`, 1)
	if _, err := c.Register(ctx, "orders-value", schema.Avro, retyped, nil); !registry.IsCode(err, 40901) {
		t.Fatalf("retyped under FULL_TRANSITIVE: %v", err)
	}
}

func TestHistoryIncludesSoftDeletedVersionsAndStoreKeepsFirstSeen(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, srtest.Options{})
	for _, v := range []int{11, 12} {
		if _, err := c.Register(ctx, "api-usage-value", schema.Avro, scenario(t, v), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SR.DeleteSubjectByVersion("api-usage-value", 1, false); err != nil {
		t.Fatal(err)
	}
	live, err := c.Versions(ctx, "api-usage-value", false)
	if err != nil || len(live) != 1 || live[0] != 2 {
		t.Fatalf("live versions %v %v", live, err)
	}
	h, err := c.History(ctx, "api-usage-value")
	if err != nil || len(h) != 2 || !h[0].Deleted || h[1].Deleted {
		t.Fatalf("history %+v %v", h, err)
	}
	st := storetest.Open(t)
	t1 := time.Date(2026, 11, 29, 14, 5, 0, 0, time.UTC)
	seen, err := registry.RecordVersions(ctx, st, t1, h)
	if err != nil || !seen[2].FirstSeen.Equal(t1) {
		t.Fatalf("first record: %+v %v", seen, err)
	}
	seen, err = registry.RecordVersions(ctx, st, t1.Add(time.Hour), h)
	if err != nil || !seen[2].FirstSeen.Equal(t1) || !seen[2].LastSeen.Equal(t1.Add(time.Hour)) {
		t.Fatalf("second record must keep first_seen: %+v %v", seen, err)
	}
	var deleted int
	if err := st.DB.QueryRowContext(ctx, `SELECT deleted FROM schema_versions WHERE subject='api-usage-value' AND version=1`).Scan(&deleted); err != nil || deleted != 1 {
		t.Fatalf("deleted flag %d %v", deleted, err)
	}
}

func TestErrorsNameTheCodeAndTheFix(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, srtest.Options{Username: "key", Password: "secret"})
	if _, err := c.Subjects(ctx, "", false); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	_, err := c.Versions(ctx, "nope-value", false)
	if !registry.IsCode(err, 40401) || !strings.Contains(err.Error(), "list_subjects") {
		t.Fatalf("missing subject: %v", err)
	}
	_, err = c.Register(ctx, "bad-value", schema.Avro, `{"type":"record","name":"X","fields":[{"name":"a","type":"nosuchtype"}]}`, nil)
	if !registry.IsCode(err, 42201) {
		t.Fatalf("invalid schema: %v", err)
	}
	bad, err := registry.New(&config.SchemaRegistry{URL: c.URL, Username: "key", Password: "wrong", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Ping(ctx); err == nil || !strings.Contains(err.Error(), "schema_registry.password") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := registry.New(nil); err != registry.ErrNotConfigured {
		t.Fatalf("nil config: %v", err)
	}
	down, _ := registry.New(&config.SchemaRegistry{URL: "http://127.0.0.1:1", Timeout: time.Second})
	if err := down.Ping(ctx); err == nil || !strings.Contains(err.Error(), "schema_registry.url") {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestReferencesResolveForProtobufImports(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, srtest.Options{})
	common := `syntax = "proto3"; package acme; message Money { int64 units = 1; string currency = 2; }`
	if _, err := c.Register(ctx, "money.proto", schema.Protobuf, common, nil); err != nil {
		t.Fatal(err)
	}
	order := `syntax = "proto3"; package acme; import "money.proto"; message Order { string id = 1; acme.Money total = 2; }`
	refs := []registry.Reference{{Name: "money.proto", Subject: "money.proto", Version: 1}}
	if _, err := c.Register(ctx, "orders-value", schema.Protobuf, order, refs); err != nil {
		t.Fatal(err)
	}
	sv, err := c.Version(ctx, "orders-value", 1, false)
	if err != nil || len(sv.References) != 1 || sv.Type != schema.Protobuf {
		t.Fatalf("version %+v %v", sv, err)
	}
	s, err := c.Parse(ctx, sv)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := s.Field("total.currency"); !ok || f.Type != "string" {
		t.Fatalf("fields %+v", s.Fields)
	}
	by, err := c.ReferencedBy(ctx, "money.proto", 1)
	if err != nil || len(by) != 1 {
		t.Fatalf("referencedby %v %v", by, err)
	}
}

func TestSchemaByIDAndTheSubjectsUsingIt(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, srtest.Options{})
	id, err := c.Register(ctx, "api-usage-value", schema.Avro, scenario(t, 11), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, "api-usage-copy-value", schema.Avro, scenario(t, 11), nil); err != nil {
		t.Fatal(err)
	}
	sv, err := c.SchemaByID(ctx, id)
	if err != nil || sv.ID != id || sv.Type != schema.Avro || !strings.Contains(sv.Schema, "response_bytes") {
		t.Fatalf("%+v %v", sv, err)
	}
	subs, err := c.SubjectsByID(ctx, id)
	if err != nil || len(subs) != 2 {
		t.Fatalf("%+v %v", subs, err)
	}
	if _, err := c.SchemaByID(ctx, 9999); !registry.IsCode(err, 40403) {
		t.Fatalf("unknown id: %v", err)
	}
}

// LOGICAL is read as a policy the checker reproduces; a policy it does not know and a
// compatibilityGroup (which needs the proposed schema's metadata to apply) are named as not
// reproduced, never silently dropped. The fixture answers GET /config/{subject} as Confluent's
// registry does.
func TestSubjectConfigNamesWhatIsNotReproduced(t *testing.T) {
	cases := []struct {
		name, body string
		policy     compat.Policy
		want       []string
	}{
		{"strict, no group", `{"compatibilityLevel":"BACKWARD","compatibilityPolicy":"STRICT"}`, compat.Strict, nil},
		{"logical", `{"compatibilityLevel":"BACKWARD","compatibilityPolicy":"LOGICAL"}`, compat.Logical, nil},
		{"unknown policy", `{"compatibilityLevel":"BACKWARD","compatibilityPolicy":"SEMANTIC"}`, compat.Strict, []string{"compatibilityPolicy SEMANTIC"}},
		{"group", `{"compatibilityLevel":"FULL","compatibilityGroup":"application.major.version"}`, compat.Strict, []string{`compatibilityGroup "application.major.version"`}},
		{"both", `{"compatibilityLevel":"FULL","compatibilityPolicy":"LOGICAL","compatibilityGroup":"major"}`, compat.Logical, []string{`compatibilityGroup "major"`}},
		// A subject config with a group but no level of its own takes the global level.
		{"group only", `{"compatibilityGroup":"major"}`, compat.Strict, []string{`compatibilityGroup "major"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := subjectConfigFrom(t, c.body, `{"compatibilityLevel":"FORWARD_TRANSITIVE"}`)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Policy != c.policy || len(cfg.NotReproduced) != len(c.want) || (c.name == "group" && cfg.Group != "application.major.version") ||
				(c.name == "group only" && (cfg.Level != compat.ForwardTransitive || !cfg.Explicit)) {
				t.Fatalf("config = %+v", cfg)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(cfg.NotReproduced[i], "not reproduced: ") || !strings.Contains(cfg.NotReproduced[i], w) {
					t.Errorf("not_reproduced[%d] = %q, want %q", i, cfg.NotReproduced[i], w)
				}
			}
		})
	}
}

// validateFields comes from the subject's config, else the global one, as the registry decides.
func TestSubjectConfigReadsValidateFields(t *testing.T) {
	cases := []struct {
		name, subject, global string
		want                  bool
	}{
		{"subject sets it", `{"compatibilityLevel":"BACKWARD","validateFields":true}`, `{"compatibilityLevel":"BACKWARD"}`, true},
		{"subject turns it off over the global", `{"compatibilityLevel":"BACKWARD","validateFields":false}`, `{"compatibilityLevel":"BACKWARD","validateFields":true}`, false},
		{"inherited from the global", `{"compatibilityLevel":"BACKWARD"}`, `{"compatibilityLevel":"BACKWARD","validateFields":true}`, true},
		{"default off", `{"compatibilityLevel":"BACKWARD"}`, `{"compatibilityLevel":"BACKWARD"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := subjectConfigFrom(t, c.subject, c.global)
			if err != nil || cfg.ValidateFields != c.want {
				t.Fatalf("config = %+v, %v", cfg, err)
			}
		})
	}
}

// subjectConfigFrom reads orders-value's config from a loopback registry that answers the subject's
// and the global /config with the bodies given.
func subjectConfigFrom(t *testing.T, subjectBody, globalBody string) (registry.SubjectConfig, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		switch r.URL.Path {
		case "/config/orders-value":
			_, _ = w.Write([]byte(subjectBody))
		case "/config":
			_, _ = w.Write([]byte(globalBody))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":404,"message":"HTTP 404 Not Found"}`))
		}
	}))
	t.Cleanup(srv.Close)
	cl, err := registry.New(&config.SchemaRegistry{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cl.SubjectConfig(context.Background(), "orders-value")
}
