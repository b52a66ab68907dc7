package lakeprobe

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/connections"
	"github.com/dataworkers/dw/pkg/lake/laketest"
	"github.com/dataworkers/dw/pkg/store"
)

func check(t *testing.T, cfg *config.Config) connections.Status {
	t.Helper()
	l := store.NewLazy(filepath.Join(t.TempDir(), "dw.db"), store.Options{})
	t.Cleanup(func() { l.Close() })
	return connections.Check(context.Background(), "dw-test", cfg, l, []connections.Backend{connections.Lake}, Probe).Backends[0]
}

func TestLakeProbeListsTheCatalogsNamespaces(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{Lake: laketest.Config(dir, "lkc-p")}
	l := laketest.Open(t, cfg.Lake)
	laketest.Create(t, l, "lkc-p", "t1", laketest.Long(1, "id"))
	if s := check(t, cfg); s.Reachable == nil || !*s.Reachable || !strings.HasPrefix(s.Endpoint, "sql: file://") {
		t.Fatalf("lake = %+v", s)
	}
	bad := &config.Config{Lake: &config.Lake{Catalog: "rest", URI: "http://127.0.0.1:1", Timeout: 2 * time.Second}}
	if s := check(t, bad); s.Reachable == nil || *s.Reachable || s.Error == "" {
		t.Fatalf("unreachable rest catalog = %+v", s)
	}
	if s := check(t, &config.Config{}); s.Configured || s.ConfigKey != "lake" || s.Error != "" {
		t.Fatalf("unconfigured lake = %+v", s)
	}
}
