package subject_test

import (
	"context"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/registry"
	"github.com/dataworkers/dw/pkg/registry/srtest"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/subject"
)

const (
	v1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int"}]}`
	v2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int","default":0}]}`
	v3 = `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
)

// Deleted versions are never compared (docs/reference/schema-rules.md): dropping b fails FORWARD_TRANSITIVE
// against v1 (b had no default) until v1 is soft-deleted; the registry and we agree both times.
func TestSoftDeletedVersionsAreNeverCompared(t *testing.T) {
	ctx := context.Background()
	srv, err := srtest.Start(srtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := registry.New(&config.SchemaRegistry{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetSubjectLevel(ctx, "r-value", compat.ForwardTransitive); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{v1, v2} {
		if _, err := c.Register(ctx, "r-value", schema.Avro, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	proposed, err := schema.Parse(schema.Avro, v3)
	if err != nil {
		t.Fatal(err)
	}
	check := func(wantCompatible bool) {
		t.Helper()
		s, err := subject.Load(ctx, c, "r-value")
		if err != nil {
			t.Fatal(err)
		}
		if s.Level != compat.ForwardTransitive || s.LevelSource != "registry subject config" {
			t.Fatalf("level %s from %s", s.Level, s.LevelSource)
		}
		ours := compat.Check(s.Level, s.Policy, proposed, s.Previous(0))
		theirs, err := c.CheckCompatibility(ctx, "r-value", schema.Avro, v3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ours.Compatible != wantCompatible || theirs.Compatible != wantCompatible {
			t.Fatalf("ours %v (compared %v), registry %v, want %v", ours.Compatible, ours.Compared, theirs.Compatible, wantCompatible)
		}
	}
	check(false)
	if err := c.SR.DeleteSubjectByVersion("r-value", 1, false); err != nil {
		t.Fatal(err)
	}
	check(true)
	s, _ := subject.Load(ctx, c, "r-value")
	if len(s.Versions) != 2 || !s.Versions[0].Deleted || s.NextVersion() != 3 {
		t.Fatalf("versions %+v", s.Versions)
	}
	if v, err := s.Get(0); err != nil || v.Version != 2 {
		t.Fatalf("latest %+v %v", v, err)
	}
}

func TestOfflineSubject(t *testing.T) {
	s, err := subject.Offline("r-value", "", "", []subject.Given{{Version: 4, Format: schema.Avro, Text: v2}, {Version: 3, Format: schema.Avro, Text: v1}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Level != compat.Backward || s.Versions[0].Version != 3 || s.Live {
		t.Fatalf("%+v", s)
	}
	if prev := s.Previous(4); len(prev) != 1 || prev[0].Version != 3 {
		t.Fatalf("previous %+v", prev)
	}
	if _, err := s.Get(7); err == nil {
		t.Fatal("version 7 does not exist")
	}
	if _, err := subject.Offline("x", "", "", []subject.Given{{Version: 1, Format: schema.Avro, Text: v1}, {Version: 1, Format: schema.Avro, Text: v2}}); err == nil {
		t.Fatal("duplicate version accepted")
	}
	if _, err := subject.Offline("x", "", "", []subject.Given{{Format: schema.Avro, Text: "{"}}); err == nil {
		t.Fatal("malformed version accepted")
	}
}
