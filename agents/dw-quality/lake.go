package main

import (
	"context"
	"slices"

	"github.com/dataworkers/dw/pkg/lake"
	"github.com/dataworkers/dw/pkg/quality"
)

// lakeCheck checks a tableflow:/iceberg: asset from its Iceberg metadata where it lands, with no
// warehouse: freshness and volume from snapshots, null rates and numeric columns' min, max, zeros
// and negatives from manifests (files whose metrics do not answer are read), and the schema
// changes committed in the window.
func (d *deps) lakeCheck(ctx context.Context, asset string, req quality.Request) (*quality.Report, error) {
	l, err := lake.Open(ctx, d.env.Config.Lake)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	tbl, err := l.Load(ctx, asset)
	if err != nil {
		return nil, err
	}
	want := lake.Want{Columns: req.Columns, Values: len(req.Checks) == 0 || slices.Contains(req.Checks, quality.Column)}
	st, err := lake.Stats(ctx, tbl, req.Window.Since, req.Window.Until, want)
	if err != nil {
		return nil, err
	}
	f := quality.LakeFacts{Asset: asset, Table: tbl.Identifier()[len(tbl.Identifier())-1], Records: st.Records, Files: st.Files, ScannedFiles: st.ScannedFiles}
	if loads := lake.LoadHistory(tbl); len(loads) > 0 {
		newest := loads[len(loads)-1].CommittedAt
		f.Newest = &newest
	}
	for _, c := range st.Columns {
		f.Columns = append(f.Columns, quality.LakeColumn{Name: c.Column, Values: c.Values, Nulls: c.Nulls,
			Min: c.Min, Max: c.Max, Zeros: c.Zeros, Negatives: c.Negatives, FromMetadata: c.FromMetadata, Scanned: c.Scanned})
	}
	for _, ch := range lake.SchemaHistory(tbl) {
		if !ch.At.Before(req.Window.Since) && ch.At.Before(req.Window.Until) {
			f.SchemaChanges = append(f.SchemaChanges, ch.Describe(asset))
		}
	}
	hist, err := d.history(ctx)
	if err != nil {
		return nil, err
	}
	return quality.NewChecker(nil, hist, d.now).RunLake(ctx, f, req)
}
