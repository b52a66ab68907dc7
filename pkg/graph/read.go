package graph

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/dataworkers/dw/pkg/store"
)

// NotFoundError says no asset matched; Suggestions are near matches, if any.
type NotFoundError struct {
	Name        string
	Suggestions []URN
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no asset named %q in the context graph", e.Name)
	if len(e.Suggestions) > 0 {
		s := make([]string, len(e.Suggestions))
		for i, u := range e.Suggestions {
			s[i] = string(u)
		}
		return msg + "; did you mean one of: " + strings.Join(s, ", ") + "? Pass the full URN."
	}
	return msg + "; use search_catalog to find it, or import its source first"
}

// AmbiguousError says a name matched several assets: the caller must pick one by URN.
type AmbiguousError struct {
	Name       string
	Candidates []Candidate
}

// Candidate is one asset an ambiguous name could mean.
type Candidate struct {
	URN  URN    `json:"urn"`
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
}

func (e *AmbiguousError) Error() string {
	s := make([]string, len(e.Candidates))
	for i, c := range e.Candidates {
		s[i] = string(c.URN)
	}
	return fmt.Sprintf("%q is ambiguous: it names %d assets (%s); pass one of these URNs", e.Name, len(e.Candidates), strings.Join(s, ", "))
}

// Get returns the merged view of one asset with its fields and claims.
func (g *Graph) Get(ctx context.Context, urn URN) (Asset, error) {
	var id int64
	err := g.st.DB.QueryRowContext(ctx, `SELECT id FROM graph_assets WHERE urn = ?`, string(urn)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Asset{}, &NotFoundError{Name: string(urn)}
	}
	if err != nil {
		return Asset{}, fmt.Errorf("graph: get %s: %w", urn, err)
	}
	m, err := g.loadAssets(ctx, []int64{id}, true)
	if err != nil {
		return Asset{}, err
	}
	return *m[id], nil
}

// GetMany returns the merged views (fields and claims) of the assets among urns that the graph
// holds, by URN; one it does not hold is absent. It reads them in a fixed number of statements
// whatever their count: a caller that looks at every asset a walk reached pays one round trip
// per statement, not four per asset.
func (g *Graph) GetMany(ctx context.Context, urns []URN) (map[URN]Asset, error) {
	out := make(map[URN]Asset, len(urns))
	if len(urns) == 0 {
		return out, nil
	}
	names := make([]string, 0, len(urns))
	seen := make(map[URN]bool, len(urns))
	for _, u := range urns {
		if !seen[u] {
			seen[u] = true
			names = append(names, string(u))
		}
	}
	list, err := json.Marshal(names)
	if err != nil {
		return nil, fmt.Errorf("graph: get %d assets: %w", len(names), err)
	}
	rows, err := g.st.DB.QueryContext(ctx, `SELECT id FROM graph_assets WHERE urn IN (SELECT j.value FROM `+g.st.Dialect().JSONValues("?", "j", "TEXT")+`)`, string(list))
	if err != nil {
		return nil, fmt.Errorf("graph: get %d assets: %w", len(names), err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("graph: get %d assets: %w", len(names), err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("graph: get %d assets: %w", len(names), err)
	}
	m, err := g.loadAssets(ctx, ids, true)
	if err != nil {
		return nil, err
	}
	for _, a := range m {
		out[a.URN] = *a
	}
	return out, nil
}

// Resolve turns what a person or model typed into one URN: a URN as is, else an exact
// (case-insensitive) match on an asset's name or on the last segment of its URN. Several matches are
// an *AmbiguousError listing them; none is a *NotFoundError with near matches. It never picks one
// silently.
func (g *Graph) Resolve(ctx context.Context, name string) (URN, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errors.New("empty asset name: pass a URN such as kafka:topic/usage-events or a name")
	}
	if strings.Contains(name, ":") {
		var n int
		if err := g.st.DB.QueryRowContext(ctx, `SELECT count(*) FROM graph_assets WHERE urn = ?`, name).Scan(&n); err != nil {
			return "", fmt.Errorf("graph: resolve %q: %w", name, err)
		}
		if n == 1 {
			return URN(name), nil
		}
	}
	lower := strings.ToLower(name)
	rows, err := g.st.DB.QueryContext(ctx, `SELECT DISTINCT a.id, a.urn FROM graph_assets a
		LEFT JOIN graph_asset_claims c ON c.asset_id = a.id
		WHERE lower(a.urn) = ? OR lower(c.name) = ? OR lower(a.urn) LIKE ? ESCAPE '\' OR lower(a.urn) LIKE ? ESCAPE '\' OR lower(a.urn) LIKE ? ESCAPE '\'
		ORDER BY a.urn LIMIT 200`,
		lower, lower, "%/"+likeEscape(lower), "%."+likeEscape(lower), "%:"+likeEscape(lower))
	if err != nil {
		return "", fmt.Errorf("graph: resolve %q: %w", name, err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		var urn string
		if err := rows.Scan(&id, &urn); err != nil {
			rows.Close()
			return "", err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	switch len(ids) {
	case 1:
		m, err := g.loadAssets(ctx, ids, false)
		if err != nil {
			return "", err
		}
		return m[ids[0]].URN, nil
	case 0:
		found, err := g.Search(ctx, SearchQuery{Text: name, Limit: 5})
		if err != nil {
			return "", err
		}
		nf := &NotFoundError{Name: name}
		for _, h := range found.Hits {
			nf.Suggestions = append(nf.Suggestions, h.URN)
		}
		return "", nf
	}
	m, err := g.loadAssets(ctx, ids, false)
	if err != nil {
		return "", err
	}
	amb := &AmbiguousError{Name: name}
	for _, id := range ids {
		a := m[id]
		amb.Candidates = append(amb.Candidates, Candidate{URN: a.URN, Kind: a.Kind, Name: a.Name})
	}
	return "", amb
}

func likeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// SearchQuery filters search results; empty filters match everything.
type SearchQuery struct {
	Text    string
	Systems []string
	Kinds   []string
	Tags    []string
	// IncludeStale includes assets every source stopped reporting.
	IncludeStale bool
	Limit        int
}

// SearchHit is one matching asset.
type SearchHit struct {
	URN           URN      `json:"urn"`
	System        string   `json:"system"`
	Kind          string   `json:"kind,omitempty"`
	Name          string   `json:"name,omitempty"`
	Description   string   `json:"description,omitempty"`
	Owners        []string `json:"owners,omitempty"`
	Tags          []string `json:"tags,omitempty"`
	MatchedFields []string `json:"matched_fields,omitempty"`
	Stale         bool     `json:"stale,omitempty"`
	Score         int      `json:"score"`
}

// SearchResult is the best matches, and whether more matched than were returned.
type SearchResult struct {
	Hits []SearchHit `json:"results"`
	// Truncated: more assets matched than Hits holds (past Limit, or past the scan cap, in which
	// case the ranking covered only the first matches by URN); narrow the query to see the rest.
	Truncated bool `json:"truncated,omitempty"`
}

// Search finds assets whose URN, name, description, tags or field paths contain every word of
// q.Text (case-insensitive), best first: exact name, then name prefix, then any match. Every filter
// runs in SQL, so the scan cap never hides a match a filter would have kept; hitting it sets
// Truncated.
func (g *Graph) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	if q.Limit <= 0 || q.Limit > 500 {
		q.Limit = 50
	}
	words := strings.Fields(strings.ToLower(q.Text))
	where, args := []string{"1=1"}, []any{}
	for _, w := range words {
		p := "%" + likeEscape(w) + "%"
		where = append(where, `(lower(a.urn) LIKE ? ESCAPE '\' OR EXISTS (SELECT 1 FROM graph_asset_claims c WHERE c.asset_id = a.id
			AND (lower(c.name) LIKE ? ESCAPE '\' OR lower(c.description) LIKE ? ESCAPE '\' OR lower(c.tags) LIKE ? ESCAPE '\'))
			OR EXISTS (SELECT 1 FROM graph_fields f WHERE f.asset_id = a.id AND lower(f.path) LIKE ? ESCAPE '\'))`)
		args = append(args, p, p, p, p, p)
	}
	if len(q.Systems) > 0 {
		where = append(where, "a.system IN ("+placeholders(len(q.Systems))+")")
		for _, s := range q.Systems {
			args = append(args, s)
		}
	}
	// The filters below restate Asset.merge in SQL: an asset is stale when it has claims and all are
	// stale; its kind and tags come from its live claims, or from all of them when none is live.
	if !q.IncludeStale {
		where = append(where, `(NOT EXISTS (SELECT 1 FROM graph_asset_claims c WHERE c.asset_id = a.id)
			OR EXISTS (SELECT 1 FROM graph_asset_claims c WHERE c.asset_id = a.id AND c.stale = 0))`)
	}
	if len(q.Kinds) > 0 {
		kind := `(SELECT c.kind FROM graph_asset_claims c WHERE c.asset_id = a.id AND c.kind <> '' AND ` + effectiveClaim +
			` ORDER BY c.observed_at DESC, c.source LIMIT 1)`
		cond := kind + " IN (" + placeholders(len(q.Kinds)) + ")"
		for _, k := range q.Kinds {
			args = append(args, k)
		}
		var byURN []string
		for _, d := range defaultKinds {
			if contains(q.Kinds, d.kind) {
				byURN = append(byURN, "substr(a.urn, 1, ?) = ?")
				args = append(args, len(d.prefix), d.prefix)
			}
		}
		if len(byURN) > 0 {
			cond += " OR (" + kind + " IS NULL AND (" + strings.Join(byURN, " OR ") + "))"
		}
		where = append(where, "("+cond+")")
	}
	for _, t := range q.Tags {
		where = append(where, `EXISTS (SELECT 1 FROM graph_asset_claims c, `+g.st.Dialect().JSONTextValues("c.tags", "t")+`
			WHERE c.asset_id = a.id AND `+effectiveClaim+` AND t.value = ?)`)
		args = append(args, t)
	}
	args = append(args, g.scanCap+1)
	rows, err := g.st.DB.QueryContext(ctx, `SELECT a.id FROM graph_assets a WHERE `+strings.Join(where, " AND ")+` ORDER BY a.urn LIMIT ?`, args...)
	if err != nil {
		return SearchResult{}, fmt.Errorf("graph: search: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return SearchResult{}, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return SearchResult{}, err
	}
	var res SearchResult
	if len(ids) > g.scanCap {
		ids, res.Truncated = ids[:g.scanCap], true
	}
	assets, err := g.loadAssets(ctx, ids, true)
	if err != nil {
		return SearchResult{}, err
	}
	var hits []SearchHit
	for _, id := range ids {
		a := assets[id]
		h := SearchHit{URN: a.URN, System: a.System, Kind: a.Kind, Name: a.Name, Description: a.Description, Owners: a.Owners, Tags: a.Tags, Stale: a.Stale}
		name := strings.ToLower(a.Name)
		text := strings.ToLower(q.Text)
		switch {
		case text == "":
		case name == text || strings.EqualFold(string(a.URN), q.Text):
			h.Score = 100
		case strings.HasPrefix(name, text):
			h.Score = 50
		case strings.Contains(name, text):
			h.Score = 20
		default:
			h.Score = 10
		}
		for _, f := range a.Fields {
			for _, w := range words {
				if strings.Contains(strings.ToLower(f.Path), w) {
					h.MatchedFields = append(h.MatchedFields, f.Path)
					break
				}
			}
		}
		hits = append(hits, h)
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if len(hits) > q.Limit {
		hits, res.Truncated = hits[:q.Limit], true
	}
	res.Hits = hits
	return res, nil
}

// effectiveClaim holds for a claim c of asset a that counts in the merged view: a live claim, or any
// claim when the asset has no live one.
const effectiveClaim = `(c.stale = 0 OR NOT EXISTS (SELECT 1 FROM graph_asset_claims l WHERE l.asset_id = a.id AND l.stale = 0))`

// Fields returns the merged fields of an asset (empty when none are known).
func (g *Graph) Fields(ctx context.Context, urn URN) ([]Field, error) {
	a, err := g.Get(ctx, urn)
	if err != nil {
		return nil, err
	}
	return a.Fields, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// loadAssets reads and merges the claims (and optionally fields) of the given assets. The ids go
// in as one JSON array (store.Dialect.JSONValues), so a large set costs one bind, not one per id.
func (g *Graph) loadAssets(ctx context.Context, ids []int64, withFields bool) (map[int64]*Asset, error) {
	out := make(map[int64]*Asset, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list := jsonIDs(ids)
	rows, err := g.st.DB.QueryContext(ctx, `SELECT id, urn, system, first_seen FROM graph_assets WHERE id IN (SELECT j.value FROM `+g.st.Dialect().JSONValues("?", "j", "BIGINT")+`)`, list)
	if err != nil {
		return nil, fmt.Errorf("graph: load assets: %w", err)
	}
	for rows.Next() {
		var id int64
		var a Asset
		var urn, first string
		if err := rows.Scan(&id, &urn, &a.System, &first); err != nil {
			rows.Close()
			return nil, err
		}
		a.URN = URN(urn)
		a.FirstSeen, _ = store.ParseTimestamp(first)
		a.Referenced = true
		out[id] = &a
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := g.loadClaims(ctx, list, out, withFields); err != nil {
		return nil, err
	}
	return out, nil
}

// loadClaims merges into out (by asset id; list is its ids as a JSON array) every claim, and
// optionally every field, of those assets, then finishes them.
func (g *Graph) loadClaims(ctx context.Context, list string, out map[int64]*Asset, withFields bool) error {
	ids := make([]int64, 0, len(out))
	for id := range out {
		ids = append(ids, id)
	}
	if err := g.mergeClaims(ctx, jsonIDs(ids), func(id int64) *Asset { return out[id] }); err != nil {
		return err
	}
	if withFields {
		if err := g.loadFields(ctx, list, out); err != nil {
			return err
		}
	}
	for _, a := range out {
		a.finish()
	}
	return nil
}

// mergeClaims merges every claim of the assets list names (their distinct ids as a JSON array)
// into the asset target returns for its id (nil: skip the claim), newest claim first. The list is
// joined, not tested with IN: IN first builds an index of the list, which costs more than the
// lookups when most of the assets have no claim.
func (g *Graph) mergeClaims(ctx context.Context, list string, target func(id int64) *Asset) error {
	rows, err := g.st.DB.QueryContext(ctx, `SELECT c.asset_id, c.source, c.kind, c.name, c.description, c.owners, c.domain,
		c.tags, c.criticality, c.schedule, c.attrs, c.observed_at, c.stale
		FROM `+g.st.Dialect().JSONValues("?", "j", "BIGINT")+` JOIN graph_asset_claims c ON c.asset_id = j.value
		ORDER BY c.asset_id, c.observed_at DESC, c.source`, list)
	if err != nil {
		return fmt.Errorf("graph: load claims: %w", err)
	}
	for rows.Next() {
		var id int64
		var c claimRow
		if err := rows.Scan(&id, &c.source, &c.kind, &c.name, &c.description, &c.owners, &c.domain, &c.tags, &c.criticality,
			&c.schedule, &c.attrs, &c.observed, &c.stale); err != nil {
			rows.Close()
			return err
		}
		if a := target(id); a != nil {
			a.merge(c)
		}
	}
	rows.Close()
	return rows.Err()
}

func jsonIDs(ids []int64) string {
	if len(ids) == 0 {
		return "[]" // not null: an empty list, on both engines
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

type claimRow struct {
	source, kind, name, description, owners, domain, tags, criticality, schedule, attrs, observed string
	stale                                                                                         bool
}

// merge folds one claim in; claims arrive newest first, so the first non-empty value wins. Stale
// claims count only when every claim is stale (the asset is then shown as it was last known).
func (a *Asset) merge(c claimRow) {
	at, _ := store.ParseTimestamp(c.observed)
	a.Claims = append(a.Claims, Claim{Source: c.source, ObservedAt: at, Stale: c.stale})
	if a.Referenced {
		a.Referenced = false
		a.Stale = c.stale
	} else if !c.stale && a.Stale {
		// A live claim after only stale ones: restart the merge from the live claim.
		claims := a.Claims
		*a = Asset{URN: a.URN, System: a.System, FirstSeen: a.FirstSeen}
		a.Claims = claims
	} else if c.stale && !a.Stale {
		return
	}
	if at.After(a.LastSeen) {
		a.LastSeen = at
	}
	first := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	first(&a.Kind, c.kind)
	first(&a.Name, c.name)
	first(&a.Description, c.description)
	first(&a.Domain, c.domain)
	first(&a.Schedule, c.schedule)
	if criticalityRank[c.criticality] > criticalityRank[a.Criticality] {
		a.Criticality = c.criticality
	}
	var list []string
	if json.Unmarshal([]byte(c.owners), &list) == nil {
		a.Owners = union(a.Owners, list)
	}
	list = nil
	if json.Unmarshal([]byte(c.tags), &list) == nil {
		a.Tags = union(a.Tags, list)
	}
	var attrs map[string]string
	if json.Unmarshal([]byte(c.attrs), &attrs) == nil && len(attrs) > 0 {
		if a.Attrs == nil {
			a.Attrs = map[string]string{}
		}
		for k, v := range attrs {
			if _, ok := a.Attrs[k]; !ok {
				a.Attrs[k] = v
			}
		}
	}
}

func (a *Asset) finish() {
	if a.Name == "" {
		a.Name = a.URN.ID()
	}
	if a.Kind == "" {
		a.Kind = defaultKind(a.URN)
	}
	sort.Strings(a.Owners)
	sort.Strings(a.Tags)
}

// defaultKinds is what a URN's prefix alone says an asset is; the first matching prefix wins.
// Search filters on it in SQL, so it is a table rather than code.
var defaultKinds = []struct{ prefix, kind string }{
	{SystemKafka + ":topic/", KindKafkaTopic},
	{SystemSchema + ":", KindSchemaSubject},
	{SystemFlink + ":statement/", KindFlinkStatement},
	{SystemTableflow + ":", KindTableflowTable},
	{SystemWarehouse + ":", KindWarehouseTable},
	{SystemDBT + ":model.", KindDBTModel},
	{SystemDBT + ":source.", KindDBTSource},
	{SystemDBT + ":seed.", KindDBTSeed},
	{SystemDBT + ":snapshot.", KindDBTSnapshot},
	{SystemDBT + ":exposure.", KindDBTExposure},
	{SystemJob + ":", KindJob},
	{SystemSink + ":", KindExternalSink},
	{SystemBI + ":", KindBIWorkbook},
}

// defaultKind guesses nothing beyond what the URN's prefix says, for assets known only by reference.
func defaultKind(u URN) string {
	for _, d := range defaultKinds {
		if strings.HasPrefix(string(u), d.prefix) {
			return d.kind
		}
	}
	return ""
}

func union(a, b []string) []string {
	for _, x := range b {
		if !contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}

func (g *Graph) loadFields(ctx context.Context, idList string, out map[int64]*Asset) error {
	rows, err := g.st.DB.QueryContext(ctx, `SELECT asset_id, path, source, type, nullable, description, tags, ordinal, stale
		FROM graph_fields WHERE asset_id IN (SELECT j.value FROM `+g.st.Dialect().JSONValues("?", "j", "BIGINT")+`) ORDER BY asset_id, ordinal, path, observed_at DESC`, idList)
	if err != nil {
		return fmt.Errorf("graph: load fields: %w", err)
	}
	defer rows.Close()
	idx := map[int64]map[string]int{}
	for rows.Next() {
		var id int64
		var f Field
		var source, tags string
		if err := rows.Scan(&id, &f.Path, &source, &f.Type, &f.Nullable, &f.Description, &tags, &f.Ordinal, &f.Stale); err != nil {
			return err
		}
		a := out[id]
		if a == nil {
			continue
		}
		_ = json.Unmarshal([]byte(tags), &f.Tags)
		f.Asset = a.URN
		f.Sources = []string{source}
		if idx[id] == nil {
			idx[id] = map[string]int{}
		}
		if i, ok := idx[id][f.Path]; ok {
			cur := &a.Fields[i]
			cur.Sources = union(cur.Sources, f.Sources)
			cur.Tags = union(cur.Tags, f.Tags)
			if cur.Stale && !f.Stale {
				srcs, tg := cur.Sources, cur.Tags
				*cur = f
				cur.Sources, cur.Tags = srcs, tg
			}
			continue
		}
		idx[id][f.Path] = len(a.Fields)
		a.Fields = append(a.Fields, f)
	}
	return rows.Err()
}

// Neighbours lists the edges (stale ones included, flagged) that enter (Upstream) or leave
// (Downstream) an asset, with their source and time. truncated says the scan cap cut the list.
func (g *Graph) Neighbours(ctx context.Context, urn URN, dir Direction) (edges []Edge, truncated bool, err error) {
	q := `SELECT fa.urn, e.from_field, ta.urn, e.to_field, e.kind, e.transformation, e.source, e.observed_at, e.stale
		FROM graph_edges e JOIN graph_assets fa ON fa.id = e.from_id JOIN graph_assets ta ON ta.id = e.to_id
		WHERE %s.urn = ? ORDER BY e.stale, fa.urn, ta.urn, e.from_field, e.to_field, e.source LIMIT ?`
	side := "fa"
	if dir == Upstream {
		side = "ta"
	}
	rows, err := g.st.DB.QueryContext(ctx, fmt.Sprintf(q, side), string(urn), g.scanCap+1)
	if err != nil {
		return nil, false, fmt.Errorf("graph: neighbours of %s: %w", urn, err)
	}
	defer rows.Close()
	var out []Edge
	for rows.Next() {
		var e Edge
		var from, to, kind, at string
		if err := rows.Scan(&from, &e.From.Path, &to, &e.To.Path, &kind, &e.Transformation, &e.Source, &at, &e.Stale); err != nil {
			return nil, false, err
		}
		e.From.Asset, e.To.Asset, e.Kind = URN(from), URN(to), EdgeKind(kind)
		e.ObservedAt, _ = store.ParseTimestamp(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	if len(out) > g.scanCap {
		return out[:g.scanCap], true, nil
	}
	return out, false, nil
}

// AssetsClaimedBy lists, by URN, every asset source has a live (not stale) claim on: what a
// complete re-import by that source would mark stale if it no longer asserted them.
func (g *Graph) AssetsClaimedBy(ctx context.Context, source string) ([]URN, error) {
	rows, err := g.st.DB.QueryContext(ctx, `SELECT a.urn FROM graph_asset_claims c JOIN graph_assets a ON a.id = c.asset_id
		WHERE c.source = ? AND c.stale = 0 ORDER BY a.urn`, source)
	if err != nil {
		return nil, fmt.Errorf("graph: assets claimed by %s: %w", source, err)
	}
	defer rows.Close()
	var out []URN
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		out = append(out, URN(u))
	}
	return out, rows.Err()
}
