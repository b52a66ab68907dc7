package graph

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Direction of a traversal.
type Direction string

// Directions.
const (
	Downstream Direction = "downstream"
	Upstream   Direction = "upstream"
)

// DefaultMaxDepth bounds a traversal when the caller gives no depth; MaxDepthLimit is the ceiling.
const (
	DefaultMaxDepth = 50
	MaxDepthLimit   = 200
)

// TraverseOptions tune Traverse.
type TraverseOptions struct {
	Direction Direction
	// MaxDepth in hops; 0 means DefaultMaxDepth.
	MaxDepth int
	// IncludeStale follows edges their source no longer reports.
	IncludeStale bool
	// Systems, when set, limits the reported nodes and hops to these systems (traversal still
	// passes through the others).
	Systems []string
	// SkipHops reports reached nodes only (blast radius needs no per-edge evidence).
	SkipHops bool
	// MaxHops caps the recorded hops (0 means 10,000); Truncated says when it was hit.
	MaxHops int
}

// Reached is a node found by a traversal. Field is empty when the asset was reached as a whole
// (through a table-level edge), which is less precise than a field-level reach.
type Reached struct {
	Node  FieldRef `json:"node"`
	Depth int      `json:"depth"`
	// Via is the node it was first reached from.
	Via FieldRef `json:"via"`
}

// Hop is one followed step with the evidence for it.
type Hop struct {
	Depth    int        `json:"depth"`
	From     FieldRef   `json:"from"`
	To       FieldRef   `json:"to"`
	Kind     EdgeKind   `json:"kind"`
	System   string     `json:"system"` // of To
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one source's assertion of an edge.
type Evidence struct {
	Source         string    `json:"source"`
	Transformation string    `json:"transformation,omitempty"`
	ObservedAt     time.Time `json:"observed_at"`
	Stale          bool      `json:"stale,omitempty"`
}

// Lineage is the result of a traversal.
type Lineage struct {
	Direction Direction  `json:"direction"`
	Start     []FieldRef `json:"start"`
	Nodes     []Reached  `json:"nodes"`
	Hops      []Hop      `json:"hops,omitempty"`
	// Truncated: MaxDepth or MaxHops stopped the walk before it ran out of edges.
	Truncated bool `json:"truncated,omitempty"`
}

// Downstream walks everything fed by start (field or table level).
func (g *Graph) Downstream(ctx context.Context, start []FieldRef, maxDepth int) (Lineage, error) {
	return g.Traverse(ctx, start, TraverseOptions{Direction: Downstream, MaxDepth: maxDepth})
}

// Upstream walks everything start is fed by.
func (g *Graph) Upstream(ctx context.Context, start []FieldRef, maxDepth int) (Lineage, error) {
	return g.Traverse(ctx, start, TraverseOptions{Direction: Upstream, MaxDepth: maxDepth})
}

// assetIDs maps start refs to row ids; an unknown URN is a *NotFoundError.
func assetIDs(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, refs []FieldRef) ([]int64, error) {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		err := q.QueryRowContext(ctx, `SELECT id FROM graph_assets WHERE urn = ?`, string(r.Asset)).Scan(&ids[i])
		if errors.Is(err, sql.ErrNoRows) {
			return nil, &NotFoundError{Name: string(r.Asset)}
		}
		if err != nil {
			return nil, fmt.Errorf("graph: find %s: %w", r.Asset, err)
		}
	}
	return ids, nil
}
