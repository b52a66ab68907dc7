// Package impact says what a schema change does downstream: for every removed, renamed, retyped
// or nullability-changed field, each reader the context graph knows (Flink statements with the
// schema version they are pinned to, Tableflow tables, warehouse columns, dbt models, dashboards,
// jobs, external sinks), what happens to it in one sentence, and how much that matters from its
// tags and criticality. A change the registry accepts can still break readers; this finds them.
package impact

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
)

// Severity of a broken reader, lowest first.
type Severity string

// Severities.
const (
	Low      Severity = "low"
	Medium   Severity = "medium"
	High     Severity = "high"
	Critical Severity = "critical"
)

var severityRank = map[Severity]int{Low: 1, Medium: 2, High: 3, Critical: 4}

// ParseSeverity reads a severity name.
func ParseSeverity(s string) (Severity, error) {
	v := Severity(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := severityRank[v]; !ok {
		return "", fmt.Errorf("unknown severity %q: use low, medium, high or critical", s)
	}
	return v, nil
}

// AtLeast reports whether s is as severe as t.
func (s Severity) AtLeast(t Severity) bool { return severityRank[s] >= severityRank[t] }

// Request describes the change: readers were built against Old (version OldVersion); New is the
// registered version NewVersion, or a proposed schema (NewVersion 0).
type Request struct {
	Subject    string
	OldVersion int
	NewVersion int
	Old, New   *schema.Schema
	Policy     compat.Policy
	// Compatibility is the registry-rule verdict of the change, when known.
	Compatibility *compat.Result
	// MaxDepth bounds the walk (0: the graph's default).
	MaxDepth int
	// NewValues are values seen in new records that old ones never had (a new code in a
	// low-cardinality field, e.g. from sample_topic's value counts); enum symbols the change adds
	// are found from the schemas.
	NewValues []ValueChange
}

// Reader is one downstream asset that reads a changed field, directly or through others.
type Reader struct {
	URN    graph.URN `json:"urn"`
	Kind   string    `json:"kind"`
	System string    `json:"system"`
	Name   string    `json:"name"`
	Depth  int       `json:"depth"`
	// Field is the subject field whose change reaches this reader.
	Field  string            `json:"field"`
	Change schema.ChangeKind `json:"change"`
	// Columns of this asset the changed field flows into (empty when reached as a whole).
	Columns []string `json:"columns,omitempty"`
	// TableLevel: reached through an edge that does not say which columns it reads.
	TableLevel bool `json:"table_level,omitempty"`
	// Evidence is how it reads the value: the SQL expression or transformation on the edge.
	Evidence string `json:"evidence,omitempty"`
	// PinnedVersion is the subject version a Flink statement froze at creation (0: unknown or n/a).
	PinnedVersion int  `json:"pinned_version,omitempty"`
	SelectStar    bool `json:"select_star,omitempty"`
	// Via is the asset it gets the value from.
	Via graph.URN `json:"via,omitempty"`
	// Symptom is what its data shows (nulls, zeros, an understated figure, rows missing, statement
	// failed → stale); Sees is the value that reaches it (for a statement pinned to the old schema,
	// by the format's rules).
	Symptom Symptom `json:"symptom,omitempty"`
	Sees    string  `json:"sees,omitempty"`
	// Reads say what its own SQL does with the value, expression by expression.
	Reads []SQLRead `json:"reads,omitempty"`
	// What happens to it, in one sentence.
	Effect string `json:"effect"`
	// Breaks: it will read wrong, missing or unreadable data.
	Breaks         bool       `json:"breaks"`
	Severity       Severity   `json:"severity"`
	SeverityReason string     `json:"severity_reason"`
	Owners         []string   `json:"owners,omitempty"`
	Tags           []string   `json:"tags,omitempty"`
	Criticality    string     `json:"criticality,omitempty"`
	Schedule       string     `json:"schedule,omitempty"`
	NextRun        *time.Time `json:"next_run,omitempty"`
}

// Assessment is the downstream impact of a change.
type Assessment struct {
	Subject    string `json:"subject"`
	OldVersion int    `json:"old_version"`
	// NewVersion is 0 for a proposed schema.
	NewVersion int `json:"new_version,omitempty"`
	// Changes are the field changes that reach readers (removed, renamed, retyped, nullability).
	Changes []schema.Change `json:"changes"`
	Readers []Reader        `json:"readers"`
	// Predicted is, per changed field, what a reader pinned to the old version sees of it in new
	// records by the format's resolution rules (under the default error handling: fail).
	Predicted []View `json:"predicted"`
	// ValueChanges are the new values readers may compare (enum symbols added, codes observed).
	ValueChanges []ValueChange `json:"value_changes,omitempty"`
	// Broken counts the readers that break.
	Broken int `json:"broken_readers"`
	// Compatible is the registry-rule verdict (true when not given).
	Compatible bool `json:"compatible"`
	// Verdict: "incompatible", "compatible but breaks N readers" or "compatible and safe".
	Verdict string `json:"verdict"`
	// LineageKnown: the context graph knows the subject; false means readers could not be looked for.
	LineageKnown bool     `json:"lineage_known"`
	Notes        []string `json:"notes,omitempty"`
	Truncated    bool     `json:"truncated,omitempty"`
}

// Assessor walks the context graph.
type Assessor struct {
	g   *graph.Graph
	now func() time.Time
}

// New returns an Assessor over g; now dates the next run of scheduled jobs.
func New(g *graph.Graph, now func() time.Time) *Assessor {
	return &Assessor{g: g, now: now}
}

// carriers pass values on without reading them: their rows are the subject's records.
func carrier(kind string) bool {
	return kind == graph.KindSchemaSubject || kind == graph.KindKafkaTopic
}

func (r Request) label() string {
	if r.NewVersion > 0 {
		return "v" + strconv.Itoa(r.NewVersion)
	}
	return "proposed-schema"
}

// Assess finds every reader of every reader-affecting field change.
func (a *Assessor) Assess(ctx context.Context, req Request) (Assessment, error) {
	out := Assessment{Subject: req.Subject, OldVersion: req.OldVersion, NewVersion: req.NewVersion,
		Changes: []schema.Change{}, Readers: []Reader{}, Predicted: []View{}, Compatible: true, LineageKnown: true}
	if req.Compatibility != nil {
		out.Compatible = req.Compatibility.Compatible
	}
	var diff []schema.Change
	if req.Old != nil && req.New != nil {
		diff = schema.Diff(req.Old, req.New)
	}
	out.ValueChanges = valueChanges(req, diff)
	for _, c := range diff {
		if c.Kind.AffectsReaders() {
			out.Changes = append(out.Changes, c)
		}
	}
	out.Predicted = Predict(req.Old, req.New, "")
	subj := graph.SubjectURN(req.Subject)
	if _, err := a.g.Get(ctx, subj); err != nil {
		var nf *graph.NotFoundError
		if !errors.As(err, &nf) {
			return Assessment{}, err
		}
		out.LineageKnown = false
		out.Notes = append(out.Notes, fmt.Sprintf("the context graph has no asset %s: import the Flink statements and sync the catalog with dw-context-catalog (sync_catalog, import_flink_statement), then assess again", subj))
	}
	policy := req.Policy
	if policy == "" {
		policy = compat.Strict
	}
	// Readers pinned to the old version read new records with the old schema: that is FORWARD.
	var pinnedReadFails []compat.Incompatibility
	if req.Old != nil && req.New != nil {
		pinnedReadFails = compat.Pair(req.Old, req.New, compat.OldReadsNew, policy)
	}
	added := addedFields(req.Old, req.New)
	if out.LineageKnown {
		for _, c := range out.Changes {
			field := c.Path
			if c.OldPath != "" {
				field = c.OldPath
			}
			readers, truncated, err := a.readersOf(ctx, req, subj, field, c, pinnedReadFails, added)
			if err != nil {
				return Assessment{}, err
			}
			out.Truncated = out.Truncated || truncated
			out.Readers = append(out.Readers, readers...)
		}
		for _, vc := range out.ValueChanges {
			readers, truncated, err := a.valueReaders(ctx, req, subj, vc, out.Predicted)
			if err != nil {
				return Assessment{}, err
			}
			out.Truncated = out.Truncated || truncated
			out.Readers = append(out.Readers, readers...)
		}
	}
	for _, r := range out.Readers {
		if r.Breaks {
			out.Broken++
		}
	}
	switch {
	case !out.Compatible:
		out.Verdict = "incompatible"
	case !out.LineageKnown:
		out.Verdict = "compatible; downstream unknown (the context graph does not know the subject)"
	case out.Broken > 0:
		out.Verdict = fmt.Sprintf("compatible but breaks %d readers", out.Broken)
	default:
		out.Verdict = "compatible and safe"
	}
	return out, nil
}

func addedFields(old, new *schema.Schema) []string {
	if old == nil || new == nil {
		return nil
	}
	var out []string
	for _, c := range schema.Diff(old, new) {
		if c.Kind == schema.FieldAdded && !strings.Contains(c.Path, ".") {
			out = append(out, c.Path)
		}
	}
	return out
}

// effect is what a reader sees of the value, carried down the lineage.
type effect string

const (
	effNull    effect = "null"    // the value reads as NULL
	effShrinks effect = "shrinks" // a sum over it shrinks
	effDrops   effect = "drops"   // a count over it drops
	effZero    effect = "zero"    // COALESCE turns it into a default (often 0)
	effSkews   effect = "skews"   // an average or extreme moves
	effFails   effect = "fails"   // records cannot be read: the reader stops
	effSkips   effect = "skips"   // records that cannot be read are skipped: rows vanish
	effType    effect = "type"    // the value's type changed (converted on read)
	effNone    effect = "none"    // nothing changes for this reader
)

var aggRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(SUM|COUNT|AVG|MIN|MAX|COALESCE|IFNULL|NVL)\s*\(`)
})

// through says what an expression does to an incoming effect.
func through(expr string, in effect) effect {
	if in == effFails || in == effNone || in == effType || in == effSkips {
		return in
	}
	m := aggRE().FindAllStringSubmatch(expr, -1)
	out := in
	for i := len(m) - 1; i >= 0; i-- { // innermost first
		switch strings.ToUpper(m[i][1]) {
		case "COALESCE", "IFNULL", "NVL":
			if out == effNull {
				out = effZero
			}
		case "SUM":
			if out == effNull || out == effZero {
				out = effShrinks
			}
		case "COUNT":
			if out == effNull {
				out = effDrops
			}
		case "AVG", "MIN", "MAX":
			if out == effNull || out == effZero {
				out = effSkews
			}
		}
	}
	return out
}

func aggOf(expr string) string {
	if m := aggRE().FindStringIndex(expr); m != nil {
		// Take the call up to its matching parenthesis.
		depth := 0
		for i := m[0]; i < len(expr); i++ {
			switch expr[i] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					return expr[m[0] : i+1]
				}
			}
		}
	}
	return ""
}

func (a *Assessor) readersOf(ctx context.Context, req Request, subj graph.URN, field string, c schema.Change,
	pinnedReadFails []compat.Incompatibility, added []string) ([]Reader, bool, error) {
	lin, err := a.g.Traverse(ctx, []graph.FieldRef{subj.Field(field)}, graph.TraverseOptions{Direction: graph.Downstream, MaxDepth: req.MaxDepth})
	if err != nil {
		return nil, false, err
	}
	evidence := map[[2]graph.FieldRef]string{}
	for _, h := range lin.Hops {
		var parts []string
		for _, e := range h.Evidence {
			if e.Transformation != "" && !slices.Contains(parts, e.Transformation) {
				parts = append(parts, e.Transformation)
			}
		}
		key := [2]graph.FieldRef{h.From, h.To}
		if prev := evidence[key]; prev != "" && len(parts) > 0 {
			evidence[key] = prev + "; " + strings.Join(parts, "; ")
		} else if len(parts) > 0 {
			evidence[key] = strings.Join(parts, "; ")
		}
	}
	refKey := func(f graph.FieldRef) string { return string(f.Asset) + "#" + strings.ToLower(f.Path) }
	// Every asset the walk reached, in one read of the graph; get reads one it missed.
	assets, err := a.g.GetMany(ctx, reachedAssets(lin))
	if err != nil {
		return nil, false, err
	}
	get := func(u graph.URN) (graph.Asset, error) {
		if x, ok := assets[u]; ok {
			return x, nil
		}
		x, err := a.g.Get(ctx, u)
		if err != nil {
			return graph.Asset{}, err
		}
		assets[u] = x
		return x, nil
	}
	// Effects flow from the start down the Via chain, in depth order.
	order := append([]graph.Reached(nil), lin.Nodes...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Depth < order[j].Depth })
	effects := map[string]effect{}
	symptoms := map[string]View{} // what the data shows, carried down from the first reader
	stops := map[string]string{}  // why a reader reads nothing changed, e.g. pinned after the change
	start := subj.Field(field)
	base := baseEffect(c, pinnedReadFails)
	effects[refKey(start)] = base
	symptoms[refKey(start)] = latestView(c, base)
	byAsset := map[graph.URN]*Reader{}
	var list []graph.URN
	for _, n := range order {
		k := refKey(n.Node)
		parent := effects[refKey(n.Via)]
		if parent == "" {
			parent = base
		}
		asset, err := get(n.Node.Asset)
		if err != nil {
			return nil, false, err
		}
		ev := evidence[[2]graph.FieldRef{n.Via, n.Node}]
		if va, err := get(n.Via.Asset); err == nil {
			n.Via.Path = columnName(va, n.Via.Path)
		}
		n.Node.Path = columnName(asset, n.Node.Path)
		eff := parent
		sym, ok := symptoms[refKey(n.Via)]
		if !ok {
			sym = symptoms[refKey(start)]
		}
		pinned := 0
		if asset.Kind == graph.KindFlinkStatement {
			pinned = pinnedVersion(asset.Attrs["schema_pins"], req.Subject)
			va, _ := get(n.Via.Asset)
			switch {
			case req.NewVersion > 0 && pinned >= req.NewVersion:
				eff = effNone
				sym = View{Field: field, Symptom: SymptomNone, Sees: "the new version", Checks: []string{}}
				stops[k] = fmt.Sprintf("created against v%d, after the change: it does not read %s", pinned, field)
			case carrier(va.Kind) || n.Via.Asset == subj:
				// It decodes the records itself with the schema it was created against.
				if v, ok := pinnedView(req, c, errorHandling(asset, va)); ok {
					sym, eff = v, effectOf(v.Symptom, parent)
				} else if parent == effNull && len(pinnedReadFails) > 0 {
					eff = effFails
				}
			}
		}
		in := sym // what arrives, before this asset's own SQL
		eff = through(ev, eff)
		sym = after(sym, eff)
		effects[k] = eff
		symptoms[k] = sym
		if carrier(asset.Kind) || n.Node.Asset == subj {
			continue
		}
		r := byAsset[n.Node.Asset]
		if r == nil {
			r = &Reader{URN: asset.URN, Kind: asset.Kind, System: asset.System, Name: asset.Name, Depth: n.Depth,
				Field: field, Change: c.Kind, Via: n.Via.Asset, PinnedVersion: pinned,
				SelectStar: strings.EqualFold(asset.Attrs["select_star_expanded"], "true") || strings.Contains(ev, "SELECT *"),
				Owners:     asset.Owners, Tags: asset.Tags, Criticality: asset.Criticality, Schedule: asset.Schedule}
			byAsset[n.Node.Asset] = r
			list = append(list, n.Node.Asset)
			r.Severity, r.SeverityReason = severityOf(asset)
			if asset.Schedule != "" && !strings.EqualFold(asset.Attrs["paused"], "true") {
				if s, err := graph.ParseSchedule(asset.Schedule); err == nil {
					next := s.Next(a.now())
					r.NextRun = &next
				}
			}
			r.Evidence = ev
			r.Symptom, r.Sees = sym.Symptom, in.Sees
			if va, err := get(n.Via.Asset); err == nil && eff != effNone {
				col := n.Via.Path
				if col == "" {
					col = field
				}
				r.Reads = sqlReads(asset, va.Name, col, in, nil)
			}
			r.Breaks = eff != effNone && eff != effType
			viaName := n.Via.Asset.ID()
			if va, err := get(n.Via.Asset); err == nil && va.Name != "" {
				viaName = va.Name
			}
			r.Effect = sentence(req, c, field, asset, r, eff, ev, stops[k], pinnedReadFails, added, n, viaName, in)
		}
		if n.Node.Path == "" {
			r.TableLevel = len(r.Columns) == 0
		} else if !slices.Contains(r.Columns, n.Node.Path) {
			r.Columns = append(r.Columns, n.Node.Path)
			r.TableLevel = false
		}
	}
	// list is in breadth-first order: nearest readers first.
	out := make([]Reader, 0, len(list))
	for _, u := range list {
		out = append(out, *byAsset[u])
	}
	return out, lin.Truncated, nil
}

// columnName spells a traversed path the way the asset declares it (warehouses fold case).
func columnName(a graph.Asset, path string) string {
	for _, f := range a.Fields {
		if strings.EqualFold(f.Path, path) {
			return f.Path
		}
	}
	return path
}

// baseEffect is what the first reader sees of the changed field in new records.
func baseEffect(c schema.Change, pinnedReadFails []compat.Incompatibility) effect {
	switch c.Kind {
	case schema.FieldRemoved, schema.FieldRenamed, schema.ProtobufTagChanged:
		return effNull
	case schema.TypeChanged:
		if len(pinnedReadFails) > 0 {
			return effFails
		}
		return effType
	case schema.NullabilityChanged:
		if c.New != nil && c.New.Nullable {
			return effNull
		}
		return effNone
	}
	return effNone
}

var pinRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(.+?)\s+v(\d+)\s*$`) })

// pinnedVersion reads the statement's schema_pins attribute ("subject vN,other vM").
func pinnedVersion(pins, subject string) int {
	for _, p := range strings.Split(pins, ",") {
		if m := pinRE().FindStringSubmatch(p); m != nil && m[1] == subject {
			n, _ := strconv.Atoi(m[2])
			return n
		}
	}
	return 0
}

// severityOf grades a broken reader by what the graph says it is worth: its criticality, else its
// tags (money, external, customer-facing, PII), else its kind (an external sink leaves the company).
func severityOf(a graph.Asset) (Severity, string) {
	var tagged []string
	for _, t := range []string{graph.TagMoney, graph.TagExternal, graph.TagCustomerFacing, graph.TagPII} {
		if slices.Contains(a.Tags, t) {
			tagged = append(tagged, t)
		}
	}
	if s, err := ParseSeverity(a.Criticality); err == nil {
		if s.AtLeast(High) || len(tagged) == 0 {
			return s, "criticality " + a.Criticality
		}
		return High, "criticality " + a.Criticality + ", raised to high by tags " + strings.Join(tagged, ", ")
	}
	switch {
	case slices.Contains(tagged, graph.TagMoney) && (a.Kind == graph.KindExternalSink || a.Kind == graph.KindJob):
		return Critical, "tagged money and it moves data out (" + a.Kind + ")"
	case len(tagged) > 0:
		return High, "tagged " + strings.Join(tagged, ", ")
	case a.Kind == graph.KindExternalSink:
		return High, "external sink: data leaves the company"
	case a.Kind == graph.KindBIWorkbook || a.Kind == graph.KindJob:
		return Medium, "no criticality or tags; " + a.Kind + " default"
	}
	return Low, "no criticality or tags"
}

// sentence says in one line what happens to the reader.
func sentence(req Request, c schema.Change, field string, asset graph.Asset, r *Reader, eff effect, ev, stop string,
	fails []compat.Incompatibility, added []string, n graph.Reached, via string, sym View) string {
	v := req.label()
	if stop != "" {
		return stop
	}
	// one: "column X under-counts"; many: "figures that under-count".
	one := map[effect]string{
		effNull:    "is NULL for " + v + " records",
		effShrinks: "under-counts from the first " + v + " record",
		effDrops:   "under-counts from the first " + v + " record",
		effZero:    "reads its fallback (0) instead of the real value for " + v + " records",
		effSkews:   "is skewed from the first " + v + " record",
		effFails:   "stops updating: " + v + " records cannot be read upstream",
		effSkips:   "misses the rows of " + v + " records, which upstream skips as undecodable",
		effType:    "changes type to " + typeOf(c.New) + " from " + v,
		effNone:    "is unaffected",
	}[eff]
	many := map[effect]string{
		effNull:    "are NULL for " + v + " records",
		effShrinks: "under-count from the first " + v + " record",
		effDrops:   "under-count from the first " + v + " record",
		effZero:    "show the fallback (0) instead of the real value for " + v + " records",
		effSkews:   "are skewed from the first " + v + " record",
		effFails:   "stop updating, because " + v + " records cannot be read upstream",
		effSkips:   "miss the rows of " + v + " records, which upstream skips as undecodable",
		effType:    "change type from " + v,
		effNone:    "are unaffected",
	}[eff]
	agg := aggOf(ev)
	from := via
	if n.Via.Path != "" {
		from = via + "." + n.Via.Path
	}
	switch {
	case asset.Kind == graph.KindFlinkStatement && r.PinnedVersion != 0 || asset.Kind == graph.KindFlinkStatement && n.Depth <= 2:
		pin := "pinned version unknown"
		if r.PinnedVersion > 0 {
			pin = fmt.Sprintf("pinned to v%d", r.PinnedVersion)
		}
		if eff == effFails {
			msg := ""
			switch {
			case sym.Why != "" && sym.Symptom == SymptomStatementFailed:
				msg = " (" + sym.Why + ")"
			case len(fails) > 0:
				msg = " (" + fails[0].Message + ")"
			}
			return fmt.Sprintf("reads %s (%s): %s records cannot be read with its frozen schema%s; the statement fails", field, pin, v, msg)
		}
		if eff == effSkips {
			s := fmt.Sprintf("reads %s (%s): %s records cannot be read with its frozen schema and are skipped (%s)", field, pin, v, sym.Why)
			if agg != "" {
				s += "; " + agg + " shrinks"
			}
			return s
		}
		what := rewordNull(c, v)
		if sym.Symptom == SymptomZeros || sym.Symptom == SymptomDefault {
			what = fmt.Sprintf("%s for %s records, not NULL (%s)", sym.Sees, v, sym.Why)
		}
		s := fmt.Sprintf("reads %s (%s): %s", field, pin, what)
		if agg != "" && eff != effNull {
			s += "; " + agg + " " + verb(eff)
		}
		if r.SelectStar && len(added) > 0 {
			s += "; SELECT * was expanded at creation, so the new " + strings.Join(added, ", ") + " never reaches it"
		}
		return s
	case asset.Kind == graph.KindTableflowTable || asset.Kind == graph.KindWarehouseTable:
		if n.Node.Path == "" {
			return fmt.Sprintf("lands rows from %s whose values %s", via, many)
		}
		return fmt.Sprintf("column %s %s", n.Node.Path, one)
	case strings.HasPrefix(asset.Kind, "dbt_"):
		into := ""
		if n.Node.Path != "" {
			into = " into " + n.Node.Path
		}
		s := fmt.Sprintf("reads %s%s, which %s", from, into, one)
		if agg != "" {
			s += " (" + ev + ")"
		}
		return s
	case asset.Kind == graph.KindBIWorkbook:
		return fmt.Sprintf("shows figures from %s that %s", via, many)
	case asset.Kind == graph.KindJob:
		when := ""
		if r.NextRun != nil {
			when = " at its next run " + r.NextRun.UTC().Format("2006-01-02 15:04 MST")
		}
		return fmt.Sprintf("reads %s%s and would pass on figures that %s", via, when, many)
	case asset.Kind == graph.KindExternalSink:
		return fmt.Sprintf("receives figures from %s that %s", via, many)
	}
	return fmt.Sprintf("reads %s, which %s", from, one)
}

func rewordNull(c schema.Change, v string) string {
	switch c.Kind {
	case schema.FieldRenamed:
		return fmt.Sprintf("NULL for %s records (the value now arrives as %s)", v, c.Path)
	case schema.NullabilityChanged:
		return fmt.Sprintf("may be NULL in %s records", v)
	case schema.TypeChanged:
		return fmt.Sprintf("%s writes %s, converted on read to %s", v, typeOf(c.New), typeOf(c.Old))
	}
	return "NULL for " + v + " records"
}

func verb(e effect) string {
	switch e {
	case effShrinks:
		return "shrinks"
	case effDrops:
		return "drops"
	case effZero:
		return "falls back to its default"
	case effSkews:
		return "is skewed"
	}
	return "changes"
}

func typeOf(f *schema.Field) string {
	if f == nil {
		return "?"
	}
	return f.Type
}

// reachedAssets lists the assets of a walk's nodes and of the nodes they were reached from.
func reachedAssets(lin graph.Lineage) []graph.URN {
	urns := make([]graph.URN, 0, 2*len(lin.Nodes))
	for _, n := range lin.Nodes {
		urns = append(urns, n.Node.Asset, n.Via.Asset)
	}
	return urns
}
