package lifecycle

import (
	"context"
	"errors"
	"fmt"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/incidents"
)

// History lists incidents for q; lineageOf, when set, adds the asset and every asset upstream or
// downstream of it in the context graph to q's assets ("has this feed broken before?").
func (s *Service) History(ctx context.Context, q incidents.Query, lineageOf graph.URN) ([]incidents.Incident, error) {
	if lineageOf != "" {
		path, err := s.lineagePath(ctx, lineageOf)
		if err != nil {
			return nil, err
		}
		q.Assets = append(q.Assets, path...)
	}
	list, err := s.incidents.History(ctx, q)
	if list == nil {
		list = []incidents.Incident{}
	}
	return list, err
}

// maxPathAssets bounds the assets one history query names (SQLite binds at most 32,766 values).
const maxPathAssets = 20000

// lineagePath is the asset and every asset upstream or downstream of it, at table level: an
// incident anywhere on the path is part of the feed's history.
func (s *Service) lineagePath(ctx context.Context, asset graph.URN) ([]string, error) {
	g := graph.New(s.d.Store, s.d.Now)
	out := []string{string(asset)}
	seen := map[graph.URN]bool{asset: true}
	for _, dir := range []graph.Direction{graph.Upstream, graph.Downstream} {
		lin, err := g.Traverse(ctx, []graph.FieldRef{{Asset: asset}}, graph.TraverseOptions{Direction: dir, SkipHops: true})
		var nf *graph.NotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("lineage_of %s: not in the context graph (run sync_catalog or import_dbt_manifest, or pass assets)", asset)
		}
		if err != nil {
			return nil, fmt.Errorf("lineage of %s: %w", asset, err)
		}
		for _, n := range lin.Nodes {
			if !seen[n.Node.Asset] {
				seen[n.Node.Asset] = true
				out = append(out, string(n.Node.Asset))
			}
		}
	}
	if len(out) > maxPathAssets {
		return nil, fmt.Errorf("lineage_of %s reaches %d assets, more than %d: pass assets or a domain instead", asset, len(out), maxPathAssets)
	}
	return out, nil
}
