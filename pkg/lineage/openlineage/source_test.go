package openlineage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/store/storetest"
)

func runEvent(ns, job, at, in, out string) string {
	return `{"eventType":"COMPLETE","eventTime":"` + at + `","run":{"runId":"r"},"job":{"namespace":"` + ns + `","name":"` + job + `"},` +
		`"inputs":[{"namespace":"postgres://db:5432","name":"` + in + `"}],"outputs":[{"namespace":"postgres://db:5432","name":"` + out + `"}]}`
}

// A job's events in several files are one source keyed by the job's namespace and name: a later
// file's run replaces what the job asserted before, and a same-named job in another namespace is
// untouched.
func TestJobSourcesAreAbsoluteAcrossFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("day1.ndjson",
		runEvent("airflow-prod", "load", "2026-11-01T00:00:00Z", "crm.public.accounts", "dw.public.accounts_v1"),
		runEvent("airflow-staging", "load", "2026-11-01T00:00:00Z", "crm.public.accounts", "dw.public.accounts_staging"),
		`{"dataset":{"namespace":"postgres://db:5432","name":"crm.public.accounts","facets":{"schema":{"fields":[{"name":"id"}]}}}}`)
	second := write("day2.ndjson",
		runEvent("airflow-prod", "load", "2026-11-02T00:00:00Z", "crm.public.accounts", "dw.public.accounts_v2"))

	st := storetest.Open(t)
	g := graph.New(st, func() time.Time { return time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC) })
	load := func(path string) map[string]graph.ImportResult {
		evs, err := ReadPath(path)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := ImportJobs(evs)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]graph.ImportResult{}
		for _, b := range bs {
			res, err := g.Import(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			out[b.Source] = res
		}
		return out
	}
	prod, staging := JobSource("airflow-prod", "load"), JobSource("airflow-staging", "load")
	got := load(first)
	if len(got) != 3 || got[prod].Edges != 2 || got[staging].Edges != 2 || got[DatasetSource("postgres://db:5432", "crm.public.accounts")].Fields != 1 {
		t.Fatalf("first file: %+v", got)
	}
	got = load(second)
	if len(got) != 1 || got[prod].Stale.Edges != 1 {
		t.Fatalf("second file: %+v", got)
	}
	writes := func(job string) map[string]bool {
		edges, _, err := g.Neighbours(ctx, JobURN(job, "load"), graph.Downstream)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, e := range edges {
			out[string(e.To.Asset)] = !e.Stale
		}
		return out
	}
	if w := writes("airflow-prod"); w["warehouse:postgres/dw.public.accounts_v1"] || !w["warehouse:postgres/dw.public.accounts_v2"] {
		t.Errorf("prod writes (live?) = %v", w)
	}
	if w := writes("airflow-staging"); !w["warehouse:postgres/dw.public.accounts_staging"] {
		t.Errorf("staging job was disturbed by prod's re-import: %v", w)
	}
}

func TestSourceKeysAreStable(t *testing.T) {
	if JobSource("a/b", "c") == JobSource("a", "b/c") {
		t.Error("namespace and name are not kept apart")
	}
	if _, err := ImportJobs([]Event{{EventType: "START"}}); err == nil || !strings.Contains(err.Error(), "no job") {
		t.Errorf("event without a job: %v", err)
	}
}
