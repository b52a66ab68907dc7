package blackbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dataworkers/dw/pkg/incidents"
	"github.com/dataworkers/dw/pkg/store"
)

// TestIncidentResourcesFollowTheSharedStore: dw-incidents over stdio lists the store's incidents as
// dw://incidents/{id}, reads one, and tells its client (list_changed) when another process opens an
// incident in the same store.
func TestIncidentResourcesFollowTheSharedStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	home := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(home, "dw.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	incs := incidents.New(st, time.Now)
	if _, err := incs.Open(ctx, "warehouse:sqlite/main.orders_hourly", "null_rate", "sev2", "amount_cents null in 30% of rows", "dw-quality"); err != nil {
		t.Fatal(err)
	}

	env := append(os.Environ(), "DW_HOME="+home, "DW_CONFIG=", "DW_LOG_LEVEL=warn")
	c, err := client.NewStdioMCPClient(startAgent(), env, "dw-incidents")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var changed atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourcesListChanged {
			changed.Add(1)
		}
	})
	if err := c.Start(ctx); err != nil { // installs the notification handler
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "blackbox-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "dw://incidents/1" || !strings.Contains(list.Resources[0].Name, "null_rate") {
		t.Fatalf("resources: %v %+v", err, list)
	}
	var rd mcp.ReadResourceRequest
	rd.Params.URI = "dw://incidents/1"
	got, err := c.ReadResource(ctx, rd)
	if err != nil {
		t.Fatal(err)
	}
	var inc incidents.Incident
	if err := json.Unmarshal([]byte(got.Contents[0].(mcp.TextResourceContents).Text), &inc); err != nil || inc.Asset != "warehouse:sqlite/main.orders_hourly" {
		t.Fatalf("read: %v %+v", err, inc)
	}
	rd.Params.URI = "dw://incidents/99"
	if _, err := c.ReadResource(ctx, rd); err == nil {
		t.Error("a missing incident was read")
	}

	// Another process (here, this test) opens a second incident in the shared store.
	time.Sleep(200 * time.Millisecond) // let the first listing's own notification arrive
	before := changed.Load()
	if _, err := incs.Open(ctx, "warehouse:sqlite/main.orders_daily", "volume", "sev3", "no rows since 06:00", "dw-quality"); err != nil {
		t.Fatal(err)
	}
	for changed.Load() == before && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if changed.Load() == before {
		t.Fatal("no list_changed after another process opened an incident")
	}
	list, err = c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(list.Resources) != 2 {
		t.Fatalf("after the second incident: %v %+v", err, list)
	}
	tpl, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || len(tpl.ResourceTemplates) != 3 {
		t.Fatalf("templates: %v %+v", err, tpl)
	}
}
