package graph

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Change types a blast radius can be asked about (names mirror the reference product).
const (
	ChangeColumnDrop       = "column_drop"
	ChangeColumnRename     = "column_rename"
	ChangeColumnTypeChange = "column_type_change"
	ChangeTableDrop        = "table_drop"
	ChangeModelRefactor    = "model_refactor"
)

// BlastRadiusRequest names what changes: an asset as a whole, or some of its fields.
type BlastRadiusRequest struct {
	Asset URN
	// Fields of Asset that change; empty means the whole asset.
	Fields []string
	// ChangeType is one of the Change* constants; column changes need Fields.
	ChangeType   string
	MaxDepth     int
	IncludeStale bool
}

// Impact is one downstream asset.
type Impact struct {
	URN    URN    `json:"urn"`
	System string `json:"system"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Depth  int    `json:"depth"`
	// Fields reached through field-level lineage (empty when reached only as a whole).
	Fields []string `json:"fields,omitempty"`
	// TableLevel: reached through an edge that does not say which fields it reads.
	TableLevel  bool     `json:"table_level,omitempty"`
	Owners      []string `json:"owners,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Criticality string   `json:"criticality,omitempty"`
	Critical    bool     `json:"critical,omitempty"`
	Stale       bool     `json:"stale,omitempty"`
	// Via is the node it was first reached from.
	Via FieldRef `json:"via"`
}

// ScheduledJob is an impacted job with a schedule.
type ScheduledJob struct {
	URN      URN        `json:"urn"`
	Name     string     `json:"name"`
	Schedule string     `json:"schedule"`
	NextRun  *time.Time `json:"next_run,omitempty"`
	// Note explains a missing NextRun (paused job, unparsable schedule).
	Note   string   `json:"note,omitempty"`
	Owners []string `json:"owners,omitempty"`
}

// OwnerNotice is who to tell about which impacted assets.
type OwnerNotice struct {
	Owner  string `json:"owner"`
	Assets []URN  `json:"assets"`
}

// SystemGroup lists impacted assets of one system by kind.
type SystemGroup struct {
	System string           `json:"system"`
	Kinds  map[string][]URN `json:"kinds"`
}

// BlastRadius is everything downstream of a change.
type BlastRadius struct {
	Start []FieldRef `json:"start"`
	// SameAsset are the dbt models that build the asset (a warehouse table): one asset with it.
	SameAsset  []URN  `json:"same_asset,omitempty"`
	ChangeType string `json:"change_type,omitempty"`
	// FieldLevel: assets reached through field-level lineage, with the fields reached.
	FieldLevel []Impact `json:"field_level"`
	// TableLevel: assets reached only through table-level edges (which fields they read is unknown).
	TableLevel    []Impact       `json:"table_level"`
	BySystem      []SystemGroup  `json:"by_system"`
	Owners        []OwnerNotice  `json:"owners_to_notify"`
	Critical      []URN          `json:"critical"`
	ExternalSinks []URN          `json:"external_sinks"`
	ScheduledJobs []ScheduledJob `json:"scheduled_jobs"`
	Total         int            `json:"total"`
	Truncated     bool           `json:"truncated,omitempty"`
	ComputedAt    time.Time      `json:"computed_at"`
}

// BlastRadius finds every asset downstream of the change, keeping field-level impact apart from
// table-level, with owners, criticality, external sinks and each scheduled job's next run (from
// its cron schedule and the graph's clock).
func (g *Graph) BlastRadius(ctx context.Context, req BlastRadiusRequest) (BlastRadius, error) {
	switch req.ChangeType {
	case "", ChangeTableDrop, ChangeModelRefactor:
	case ChangeColumnDrop, ChangeColumnRename, ChangeColumnTypeChange:
		if len(req.Fields) == 0 {
			return BlastRadius{}, fmt.Errorf("change type %s needs the column: pass column_name (or fields)", req.ChangeType)
		}
	default:
		return BlastRadius{}, fmt.Errorf("change type %q: want column_drop, column_rename, column_type_change, table_drop or model_refactor", req.ChangeType)
	}
	now := g.now()
	// A warehouse table a dbt model builds is that model: whatever reads the model (a job that
	// names it, an exposure) reads the table, so the walk starts from both.
	same, err := g.builtBy(ctx, req.Asset, req.IncludeStale)
	if err != nil {
		return BlastRadius{}, err
	}
	var start []FieldRef
	for _, a := range append([]URN{req.Asset}, same...) {
		if len(req.Fields) == 0 || req.ChangeType == ChangeTableDrop {
			start = append(start, FieldRef{Asset: a})
			continue
		}
		for _, f := range req.Fields {
			start = append(start, a.Field(f))
		}
	}
	opt, err := normalize(start, TraverseOptions{Direction: Downstream, MaxDepth: req.MaxDepth, IncludeStale: req.IncludeStale, SkipHops: true})
	if err != nil {
		return BlastRadius{}, err
	}
	lin, nodeIDs, err := g.traverse(ctx, start, opt)
	if err != nil {
		return BlastRadius{}, err
	}
	br := BlastRadius{Start: start, SameAsset: same, ChangeType: req.ChangeType, Truncated: lin.Truncated, ComputedAt: now,
		FieldLevel: []Impact{}, TableLevel: []Impact{}, BySystem: []SystemGroup{}, Owners: []OwnerNotice{},
		Critical: []URN{}, ExternalSinks: []URN{}, ScheduledJobs: []ScheduledJob{}}

	// Impacts are keyed by the asset ids the walk returned: no URN is hashed or looked up again.
	startAssets := map[URN]bool{req.Asset: true}
	for _, a := range same {
		startAssets[a] = true
	}
	// One Impact per reached asset, in order of first reach; at[id] is its index.
	at := make(map[int64]int32, len(lin.Nodes))
	order := make([]int64, 0, len(lin.Nodes))
	all := make([]Impact, 0, len(lin.Nodes))
	for i, n := range lin.Nodes {
		if startAssets[n.Node.Asset] && n.Node.Path == "" {
			continue
		}
		id := nodeIDs[i]
		k, ok := at[id]
		if !ok {
			k = int32(len(all))
			at[id] = k
			all = append(all, Impact{URN: n.Node.Asset, Depth: n.Depth, Via: n.Via})
			order = append(order, id)
		}
		im := &all[k]
		if n.Node.Path == "" {
			im.TableLevel = true
		} else if !(startAssets[n.Node.Asset] && slices.ContainsFunc(req.Fields, func(f string) bool { return strings.EqualFold(f, n.Node.Path) })) {
			im.Fields = append(im.Fields, n.Node.Path)
		}
	}
	assets, err := g.claimedAssets(ctx, order, func(id int64) URN { return all[at[id]].URN })
	if err != nil {
		return BlastRadius{}, err
	}
	fieldLevel := 0
	for i := range all {
		if len(all[i].Fields) > 0 {
			fieldLevel++
		}
	}
	br.FieldLevel, br.TableLevel = make([]Impact, 0, fieldLevel), make([]Impact, 0, len(order)-fieldLevel)
	groups := map[string]map[string][]URN{}
	owners := map[string][]URN{}
	for k, id := range order {
		im := &all[k]
		u := im.URN
		if startAssets[u] && len(im.Fields) == 0 && !im.TableLevel {
			continue
		}
		var a Asset
		if c := assets[id]; c != nil {
			a = *c
		} else {
			a = referencedAsset(u)
		}
		im.System, im.Kind, im.Name = a.System, a.Kind, a.Name
		im.Owners, im.Tags, im.Criticality, im.Stale = a.Owners, a.Tags, a.Criticality, a.Stale
		im.Critical = criticalityRank[a.Criticality] >= criticalityRank["high"] ||
			contains(a.Tags, TagMoney) || contains(a.Tags, TagCustomerFacing) || contains(a.Tags, TagPII) || contains(a.Tags, TagExternal)
		sort.Strings(im.Fields)
		if len(im.Fields) > 0 {
			br.FieldLevel = append(br.FieldLevel, *im)
		} else {
			br.TableLevel = append(br.TableLevel, *im)
		}
		if groups[a.System] == nil {
			groups[a.System] = map[string][]URN{}
		}
		groups[a.System][a.Kind] = append(groups[a.System][a.Kind], u)
		for _, o := range a.Owners {
			owners[o] = append(owners[o], u)
		}
		if im.Critical {
			br.Critical = append(br.Critical, u)
		}
		if a.Kind == KindExternalSink || a.System == SystemSink {
			br.ExternalSinks = append(br.ExternalSinks, u)
		}
		if a.Schedule != "" {
			job := ScheduledJob{URN: u, Name: a.Name, Schedule: a.Schedule, Owners: a.Owners}
			if strings.EqualFold(a.Attrs["paused"], "true") {
				job.Note = "paused: no run is scheduled until it is unpaused"
			} else if s, err := ParseSchedule(a.Schedule); err != nil {
				job.Note = err.Error()
			} else {
				next := s.Next(now)
				job.NextRun = &next
			}
			br.ScheduledJobs = append(br.ScheduledJobs, job)
		}
		br.Total++
	}
	for sys, kinds := range groups {
		br.BySystem = append(br.BySystem, SystemGroup{System: sys, Kinds: kinds})
	}
	sort.Slice(br.BySystem, func(i, j int) bool { return br.BySystem[i].System < br.BySystem[j].System })
	for o, us := range owners {
		br.Owners = append(br.Owners, OwnerNotice{Owner: o, Assets: us})
	}
	sort.Slice(br.Owners, func(i, j int) bool { return br.Owners[i].Owner < br.Owners[j].Owner })
	sort.Slice(br.ScheduledJobs, func(i, j int) bool {
		a, b := br.ScheduledJobs[i].NextRun, br.ScheduledJobs[j].NextRun
		if a == nil || b == nil {
			return b == nil && a != nil
		}
		return a.Before(*b)
	})
	return br, nil
}

// claimedAssets merges the claims of the given assets by the row ids the traversal returned (so no
// URN is looked up again). Only assets with a claim are in the map: the rest are known by
// reference alone (see referencedAsset). FirstSeen is left unset: an impact does not report it.
func (g *Graph) claimedAssets(ctx context.Context, ids []int64, urnOf func(id int64) URN) (map[int64]*Asset, error) {
	byID := map[int64]*Asset{}
	if len(ids) == 0 {
		return byID, nil
	}
	err := g.mergeClaims(ctx, jsonIDs(ids), func(id int64) *Asset {
		a := byID[id]
		if a == nil {
			u := urnOf(id)
			a = &Asset{URN: u, System: u.System(), Referenced: true}
			byID[id] = a
		}
		return a
	})
	if err != nil {
		return nil, err
	}
	for _, a := range byID {
		a.finish()
	}
	return byID, nil
}

// referencedAsset is what the graph knows of an asset no source has described: its URN.
func referencedAsset(u URN) Asset {
	a := Asset{URN: u, System: u.System(), Referenced: true}
	a.finish()
	return a
}

// builtBy are the dbt models whose materialization is u (model → relation materializes edges):
// the model and the table it builds are one asset for a blast radius.
func (g *Graph) builtBy(ctx context.Context, u URN, includeStale bool) ([]URN, error) {
	if u.System() != SystemWarehouse {
		return nil, nil
	}
	edges, _, err := g.Neighbours(ctx, u, Upstream)
	if err != nil {
		if _, nf := err.(*NotFoundError); nf {
			return nil, nil
		}
		return nil, err
	}
	var out []URN
	for _, e := range edges {
		if e.Kind == EdgeMaterializes && e.From.Asset.System() == SystemDBT && (includeStale || !e.Stale) && !slices.Contains(out, e.From.Asset) {
			out = append(out, e.From.Asset)
		}
	}
	return out, nil
}
