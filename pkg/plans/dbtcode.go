package plans

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dataworkers/dw/pkg/sqlparse"
)

// dbtModel is a model of the manifest as the diff needs it: its file and current code.
type dbtModel struct {
	UniqueID string
	Path     string // original_file_path, relative to the project
	Code     string
	// FromFile: Code was read from the project's file (else the manifest's raw_code).
	FromFile bool
}

type manifestLite struct {
	Nodes map[string]struct {
		ResourceType     string `json:"resource_type"`
		RawCode          string `json:"raw_code"`
		RawSQL           string `json:"raw_sql"`
		OriginalFilePath string `json:"original_file_path"`
		DependsOn        struct {
			Nodes []string `json:"nodes"`
		} `json:"depends_on"`
	} `json:"nodes"`
	Sources map[string]struct {
		SourceName string `json:"source_name"`
		Name       string `json:"name"`
	} `json:"sources"`
}

// maxManifest bounds the manifest read (large projects reach tens of MB).
const maxManifest = 256 << 20

// manifestCache reads the manifest once per plan: a Build may look up several models in a
// manifest of tens of MB.
type manifestCache struct {
	path   string
	loaded bool
	m      manifestLite
	err    error
}

// model reads model uniqueID from the manifest at manifestPath (read on first use).
func (c *manifestCache) model(manifestPath, uniqueID string) (dbtModel, manifestLite, error) {
	if !c.loaded || c.path != manifestPath {
		c.path, c.loaded = manifestPath, true
		c.m, c.err = readManifest(manifestPath)
	}
	if c.err != nil {
		return dbtModel{}, c.m, c.err
	}
	md, err := modelOf(c.m, manifestPath, uniqueID)
	return md, c.m, err
}

func readManifest(manifestPath string) (manifestLite, error) {
	var m manifestLite
	fi, err := os.Stat(manifestPath)
	if err != nil {
		return m, fmt.Errorf("read dbt manifest (dbt.manifest_path): %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxManifest {
		return m, fmt.Errorf("dbt manifest %s is not a regular file of at most %d bytes", manifestPath, maxManifest)
	}
	raw, err := os.ReadFile(manifestPath)
	if err != nil {
		return m, fmt.Errorf("read dbt manifest (dbt.manifest_path): %w", err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("dbt manifest %s: %w", manifestPath, err)
	}
	return m, nil
}

// modelOf finds model uniqueID in the manifest. The code is the project's file (the manifest
// sits in <project>/target/) when it is there, so the diff applies to the code as it is now;
// else the manifest's raw_code.
func modelOf(m manifestLite, manifestPath, uniqueID string) (dbtModel, error) {
	n, ok := m.Nodes[uniqueID]
	if !ok {
		return dbtModel{}, fmt.Errorf("dbt manifest %s has no node %s (re-run dbt compile and import_dbt_manifest)", manifestPath, uniqueID)
	}
	md := dbtModel{UniqueID: uniqueID, Path: n.OriginalFilePath, Code: n.RawCode}
	if md.Code == "" {
		md.Code = n.RawSQL
	}
	if n.OriginalFilePath != "" && !filepath.IsAbs(n.OriginalFilePath) && !strings.Contains(n.OriginalFilePath, "..") {
		root := filepath.Dir(filepath.Dir(manifestPath))
		if b, err := os.ReadFile(filepath.Join(root, n.OriginalFilePath)); err == nil {
			md.Code, md.FromFile = string(b), true
		}
	}
	if md.Path == "" {
		md.Path = "models/" + uniqueID + ".sql"
	}
	return md, nil
}

// sourceRef matches a Jinja {{ source('src', 'table') }} call with either quote style.
func sourceRef(src, table string) *regexp.Regexp {
	q := `['"]`
	return regexp.MustCompile(`\{\{\s*source\(\s*` + q + regexp.QuoteMeta(src) + q + `\s*,\s*` + q + regexp.QuoteMeta(table) + q + `\s*\)\s*\}\}`)
}

// followedByAlias reports whether the text after a table reference starts with an alias (an
// identifier that is not a clause keyword), so the union keeps that alias instead of adding one.
var clauseWords = map[string]bool{"where": true, "group": true, "order": true, "join": true, "left": true, "right": true, "inner": true,
	"full": true, "cross": true, "on": true, "union": true, "limit": true, "having": true, "qualify": true, "window": true, "natural": true, "lateral": true}

func followedByAlias(rest string) bool {
	ts, _ := sqlparse.Tokens(rest) // only the first token matters; Jinja later on may not lex
	if len(ts) == 0 || ts[0].Kind != sqlparse.TokenIdent && ts[0].Kind != sqlparse.TokenQuoted {
		return false
	}
	return ts[0].IsKeyword("AS") || !clauseWords[strings.ToLower(ts[0].Text)]
}

// splitModelCode points every reference to the old table at a union: rows before from from
// the old table, rows from from on from the new one (the corrected statement's sink).
func splitModelCode(code string, ref *regexp.Regexp, newRelation, timeColumn, alias string, from time.Time) (string, int) {
	lit := fmt.Sprintf("cast('%s' as timestamp)", from.UTC().Format("2006-01-02 15:04:05"))
	locs := ref.FindAllStringIndex(code, -1)
	if len(locs) == 0 {
		return code, 0
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		indent := lineIndent(code, l[0])
		b.WriteString(code[last:l[0]])
		fmt.Fprintf(&b, "(\n%s    -- before %s: the old table; from then on: %s, written by the corrected statement\n", indent, from.UTC().Format(time.RFC3339), newRelation)
		fmt.Fprintf(&b, "%s    select * from %s where %s < %s\n", indent, code[l[0]:l[1]], timeColumn, lit)
		fmt.Fprintf(&b, "%s    union all\n", indent)
		fmt.Fprintf(&b, "%s    select * from %s where %s >= %s\n", indent, newRelation, timeColumn, lit)
		fmt.Fprintf(&b, "%s)", indent)
		if !followedByAlias(code[l[1]:]) {
			b.WriteString(" as " + alias)
		}
		last = l[1]
	}
	b.WriteString(code[last:])
	return b.String(), len(locs)
}

func lineIndent(s string, at int) string {
	start := strings.LastIndexByte(s[:at], '\n') + 1
	i := start
	for i < at && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[start:i]
}
