// Schema restore: register a version that brings back what a known reader reads.

package plans

import (
	"context"
	"fmt"
	"strings"

	"github.com/dataworkers/dw/pkg/config"
	"github.com/dataworkers/dw/pkg/diagnosis"
	"github.com/dataworkers/dw/pkg/graph"
	"github.com/dataworkers/dw/pkg/schema"
	"github.com/dataworkers/dw/pkg/schema/compat"
	"github.com/dataworkers/dw/pkg/schema/fix"
	"github.com/dataworkers/dw/pkg/store"
)

type registeredSchema struct {
	schema *schema.Schema
	how    string
}

type restoreDraft struct {
	subject string
	version int
	schema  *schema.Schema
	topics  []string
}

// storedSchemas reads the subject's recorded versions, oldest first.
func storedSchemas(ctx context.Context, st *store.Store, subject string) ([]int, map[int]*schema.Schema, error) {
	rows, err := st.DB.QueryContext(ctx, `SELECT version, schema_type, schema FROM schema_versions WHERE subject = ? AND deleted = 0 ORDER BY version`, subject)
	if err != nil {
		return nil, nil, fmt.Errorf("read schema versions of %s: %w", subject, err)
	}
	defer rows.Close()
	var order []int
	out := map[int]*schema.Schema{}
	for rows.Next() {
		var v int
		var typ, text string
		if err := rows.Scan(&v, &typ, &text); err != nil {
			return nil, nil, err
		}
		f, err := schema.ParseFormat(typ)
		if err != nil {
			continue
		}
		s, err := schema.Parse(f, text)
		if err != nil {
			continue // an unparsable stored version is left out; the diff names it
		}
		order = append(order, v)
		out[v] = s
	}
	return order, out, rows.Err()
}

func (dc *draftContext) level(ctx context.Context, subject string) (compat.Level, string, error) {
	if dc.src.Level == nil {
		return compat.Backward, "schema_registry not configured: judged under BACKWARD, the registry default (set schema_registry.url to use the subject's own rule)", nil
	}
	l, err := dc.src.Level(ctx, subject)
	if err != nil {
		return "", "", err
	}
	return l, "the subject's rule from the registry", nil
}

func (dc *draftContext) schemaRestore(ctx context.Context, sc diagnosis.SchemaChange, reader diagnosis.Reader) (Proposal, bool, error) {
	order, versions, err := storedSchemas(ctx, dc.src.Store, sc.Subject)
	if err != nil {
		return Proposal{}, false, err
	}
	broken := versions[sc.Version]
	base := reader.PinnedVersion
	if versions[base] == nil {
		base = 0
		for _, v := range order {
			if v < sc.Version {
				base = v
			}
		}
	}
	if broken == nil || versions[base] == nil {
		dc.note(fmt.Sprintf("no schema restore generated: %s v%d or the version before it is not stored (list the subject with dw-schema get_subject so its versions are recorded)", sc.Subject, sc.Version))
		return Proposal{}, false, nil
	}
	r, err := fix.Restore(versions[base], broken)
	if err != nil {
		dc.note(fmt.Sprintf("no schema restore generated for %s v%d: %v", sc.Subject, sc.Version, err))
		return Proposal{}, false, nil
	}
	proposed, err := schema.Parse(r.Format, r.Text, broken.References...)
	if err != nil {
		return Proposal{}, false, fmt.Errorf("the restoring schema of %s does not parse (a bug): %w", sc.Subject, err)
	}
	next := order[len(order)-1] + 1
	lvl, how, err := dc.level(ctx, sc.Subject)
	if err != nil {
		return Proposal{}, false, err
	}
	var prev []compat.Version
	for _, v := range order {
		prev = append(prev, compat.Version{Version: v, Schema: versions[v]})
	}
	res := compat.Check(lvl, compat.Strict, proposed, prev)
	if !res.Compatible {
		dc.note(fmt.Sprintf("no schema restore generated: the restoring version of %s is not compatible under %s (%d incompatibilities); restore by hand", sc.Subject, lvl, len(res.Incompatibilities)))
		return Proposal{}, false, nil
	}
	var restored []string
	for _, f := range r.Restored {
		restored = append(restored, f.Path)
	}
	dc.restore = &restoreDraft{subject: sc.Subject, version: next, schema: proposed}
	dc.registered[sc.Subject] = registeredSchema{schema: proposed, how: fmt.Sprintf("%s v%d (the restoring version this plan registers first)", sc.Subject, next)}
	subj := graph.SubjectURN(sc.Subject)
	blast := []string{string(subj)}
	if reader.URN != "" {
		blast = append(blast, reader.URN)
	}
	return Proposal{Class: config.ClassRegisterSchema, Target: string(subj),
		Title:    fmt.Sprintf("Register %s v%d: %s back as optional beside what v%d added", sc.Subject, next, strings.Join(restored, ", "), sc.Version),
		Payload:  map[string]any{"subject": sc.Subject, "schema_type": string(proposed.Format), "schema": proposed.Text},
		Executor: dc.executor(config.ClassRegisterSchema), Reversible: true,
		Undo: fmt.Sprintf("soft-delete %s v%d once no producer uses it; records written with it stay readable", sc.Subject, next),
		Why: fmt.Sprintf("v%d removed %s, which %s (pinned to v%d) still reads; v%d restores it so readers pinned to v%d find it again",
			sc.Version, strings.Join(restored, ", "), reader.URN, reader.PinnedVersion, next, base),
		BlastRadius: blast, Origin: OriginGenerated,
		Validation: fmt.Sprintf("pkg/schema/fix restoration of v%d→v%d; parses as %s; compatible under %s with versions %v (%s)", base, sc.Version, proposed.Format, lvl, res.Compared, how)}, true, nil
}
