package mcpkit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

type noteIn struct {
	Text string `json:"text"`
}

type noteOut struct {
	ID int `json:"id"`
}

// notebook is a tiny store the test tools write and the resources read.
type notebook struct {
	mu    sync.Mutex
	notes []string
}

func (n *notebook) kinds() []ResourceKind {
	return []ResourceKind{{
		URITemplate: "dw://notes/{id}", Name: "note", Title: "Note", MIMEType: "text/plain", Description: "One note.",
		Read: func(_ context.Context, _ string, v map[string]string) (string, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			var i int
			if _, err := fmt.Sscan(v["id"], &i); err != nil || i < 1 || i > len(n.notes) {
				return "", fmt.Errorf("no note %q", v["id"])
			}
			return n.notes[i-1] + " secret-token-42", nil
		},
		List: func(context.Context) ([]ResourceRef, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			var refs []ResourceRef
			for i := range n.notes {
				refs = append(refs, ResourceRef{URI: fmt.Sprintf("dw://notes/%d", i+1), Name: fmt.Sprintf("Note %d", i+1)})
			}
			return refs, nil
		},
	}}
}

func startTestServer(t *testing.T, nb *notebook) (*client.Client, *atomic.Int32) {
	t.Helper()
	tools := []Tool{
		Write("add_note", "Add a note.", func(_ context.Context, in noteIn) (noteOut, error) {
			nb.mu.Lock()
			defer nb.mu.Unlock()
			nb.notes = append(nb.notes, in.Text)
			return noteOut{ID: len(nb.notes)}, nil
		}),
		Read("count_notes", "Count.", func(context.Context, struct{}) (noteOut, error) { return noteOut{}, nil }),
	}
	prompts := []Prompt{{
		Name: "write_note", Title: "Write a note", Description: "Walks through add_note.",
		Arguments: []PromptArgument{{Name: "topic", Description: "What about", Required: true}},
		Render: func(_ context.Context, a map[string]string) (string, error) {
			return "Call add_note about " + a["topic"] + " (token secret-token-42).", nil
		},
	}}
	srv := NewServer(tools, ServerOptions{Name: "dw-test", Version: "1", Prompts: prompts, Resources: nb.kinds(),
		Redact: func(s string) string { return strings.ReplaceAll(s, "secret-token-42", "[redacted]") }})
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var changed atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourcesListChanged {
			changed.Add(1)
		}
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatal(err)
	}
	if res.Capabilities.Prompts == nil || res.Capabilities.Resources == nil || !res.Capabilities.Resources.ListChanged {
		t.Fatalf("capabilities: %+v", res.Capabilities)
	}
	return c, &changed
}

func TestPromptsRenderTheirArgumentsAndCheckThem(t *testing.T) {
	c, _ := startTestServer(t, &notebook{})
	ctx := context.Background()
	list, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Title != "Write a note" || !list.Prompts[0].Arguments[0].Required {
		t.Fatalf("%v %+v", err, list)
	}
	var req mcp.GetPromptRequest
	req.Params.Name, req.Params.Arguments = "write_note", map[string]string{"topic": "lag"}
	got, err := c.GetPrompt(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	text := got.Messages[0].Content.(mcp.TextContent).Text
	if text != "Call add_note about lag (token [redacted])." {
		t.Errorf("prompt text %q", text)
	}
	req.Params.Arguments = map[string]string{}
	if _, err := c.GetPrompt(ctx, req); err == nil || !strings.Contains(err.Error(), "needs the argument topic") {
		t.Errorf("missing argument: %v", err)
	}
	req.Params.Arguments = map[string]string{"topic": "x", "tpoic": "y"}
	if _, err := c.GetPrompt(ctx, req); err == nil || !strings.Contains(err.Error(), `no argument "tpoic"`) {
		t.Errorf("unknown argument: %v", err)
	}
}

// TestResourcesFollowTheStore: templates are listed, resources/list shows what exists now, a
// write tool's call that changes it sends list_changed (a read tool's does not), and reads go
// through the template with secrets scrubbed.
func TestResourcesFollowTheStore(t *testing.T) {
	nb := &notebook{notes: []string{"first"}}
	c, changed := startTestServer(t, nb)
	ctx := context.Background()
	tpl, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate.Raw() != "dw://notes/{id}" {
		t.Fatalf("%v %+v", err, tpl)
	}
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "dw://notes/1" {
		t.Fatalf("%v %+v", err, list)
	}
	// The first listing filled the list, which clients are told about too.
	waitFor := func(n int32) {
		deadline := time.Now().Add(5 * time.Second)
		for changed.Load() < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(1)
	time.Sleep(50 * time.Millisecond)
	before := changed.Load()
	var call mcp.CallToolRequest
	call.Params.Name = "count_notes"
	if _, err := c.CallTool(ctx, call); err != nil {
		t.Fatal(err)
	}
	call.Params.Name, call.Params.Arguments = "add_note", map[string]any{"text": "second"}
	if _, err := c.CallTool(ctx, call); err != nil {
		t.Fatal(err)
	}
	waitFor(before + 1)
	time.Sleep(50 * time.Millisecond)
	if changed.Load() != before+1 {
		t.Fatalf("list_changed notifications: %d after the write, want 1", changed.Load()-before)
	}
	list, err = c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(list.Resources) != 2 {
		t.Fatalf("%v %+v", err, list)
	}
	var rd mcp.ReadResourceRequest
	rd.Params.URI = "dw://notes/2"
	got, err := c.ReadResource(ctx, rd)
	if err != nil {
		t.Fatal(err)
	}
	if tc := got.Contents[0].(mcp.TextResourceContents); tc.Text != "second [redacted]" || tc.MIMEType != "text/plain" {
		t.Errorf("read: %+v", tc)
	}
	rd.Params.URI = "dw://notes/9"
	if _, err := c.ReadResource(ctx, rd); err == nil || !strings.Contains(err.Error(), `no note "9"`) {
		t.Errorf("missing note: %v", err)
	}
}
