package lifecycle

import (
	"context"
	"strings"
	"testing"

	"github.com/dataworkers/dw/pkg/approvals"
	"github.com/dataworkers/dw/pkg/auth"
)

// An approval request caused by an authenticated caller (MCP over HTTP) names that caller.
func TestRequestsNameTheCallerTheyAreMadeFor(t *testing.T) {
	e, life := routingEstate(t, "L2")
	ctx := auth.WithCaller(context.Background(), auth.Caller{Name: "alice@example.com", Method: "oidc"})
	out, err := life.Route(ctx, RouteInput{Proposals: []approvals.Proposal{pause("sync_orders")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Requests) != 1 || !strings.HasSuffix(out.Requests[0].RequestedBy, " for alice@example.com") {
		t.Fatalf("%+v", out.Requests)
	}
	var by string
	if err := e.st.DB.QueryRow(`SELECT requested_by FROM approval_requests`).Scan(&by); err != nil || by != out.Requests[0].RequestedBy {
		t.Fatalf("stored requested_by %q (%v)", by, err)
	}
	// Without a caller (stdio) the agent alone is named, as before.
	out, err = life.Route(context.Background(), RouteInput{Proposals: []approvals.Proposal{pause("sandbox_x")}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Requests[0].RequestedBy, " for ") {
		t.Fatalf("stdio request names a caller: %q", out.Requests[0].RequestedBy)
	}
}
