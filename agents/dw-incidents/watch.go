package main

import (
	"context"
	"time"

	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/metrics"
)

// withWatch adds the configured monitoring (the first of metrics' sources) and lake to a
// diagnosis. With neither configured the diagnosis is left as it was.
func withWatch(env *mcpkit.Env, g *diagnosis.Gatherer) *diagnosis.Gatherer {
	cfg := env.Config
	if cfg.Metrics == nil && cfg.Lake == nil {
		return g
	}
	var w diagnosis.Watch
	if sources := cfg.Metrics.Sources(); len(sources) > 0 {
		w.Lag = func(ctx context.Context, group string, from, to time.Time) ([]metrics.Series, error) {
			src, err := metrics.Open(cfg.Metrics, sources[0], env.Now)
			if err != nil {
				return nil, err
			}
			res, err := src.Lag(ctx, metrics.Query{Group: group, Start: from, End: to, Step: 5 * time.Minute})
			return res.Series, err
		}
	}
	if cfg.Lake != nil {
		w.LakeSchema = func(ctx context.Context, asset string) ([]diagnosis.LakeSchemaChange, error) {
			l, err := lake.Open(ctx, cfg.Lake)
			if err != nil {
				return nil, err
			}
			defer l.Close()
			tbl, err := l.Load(ctx, asset)
			if err != nil {
				return nil, err
			}
			var out []diagnosis.LakeSchemaChange
			for _, c := range lake.SchemaHistory(tbl) {
				out = append(out, diagnosis.LakeSchemaChange{Field: c.Field, Change: c.Change, Type: c.Type, SnapshotID: c.SnapshotID, At: c.At, ToSchema: c.ToSchema})
			}
			return out, nil
		}
	}
	return g.WithWatch(w)
}
