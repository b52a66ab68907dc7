package demo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The scenario's manifest keeps each model's compiled SQL (raw_code only says "see
// compiled_code"), but a dbt diff applies to the project's model files. The demo checks the
// project out the way dbt compiled it: under dir/dbt, target/manifest.json beside models/…, each
// model file being its compiled SQL with every source relation written back as the
// {{ source('…', '…') }} call dbt compiled it from.

type manifestNodes struct {
	Nodes map[string]struct {
		ResourceType     string `json:"resource_type"`
		OriginalFilePath string `json:"original_file_path"`
		CompiledCode     string `json:"compiled_code"`
	} `json:"nodes"`
	Sources map[string]struct {
		SourceName   string `json:"source_name"`
		Name         string `json:"name"`
		RelationName string `json:"relation_name"`
	} `json:"sources"`
}

// checkoutDBT writes the project under dir and returns its manifest path.
func checkoutDBT(dir, manifest string) (string, error) {
	raw, err := os.ReadFile(manifest)
	if err != nil {
		return "", err
	}
	var m manifestNodes
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("dbt manifest %s: %w", manifest, err)
	}
	project := filepath.Join(dir, "dbt")
	target := filepath.Join(project, "target", "manifest.json")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(target, raw, 0o600); err != nil {
		return "", err
	}
	// Longest relation first, so ANALYTICS.USAGE.USAGE_HOURLY_X never loses to a prefix.
	type src struct{ rel, call string }
	var srcs []src
	for _, s := range m.Sources {
		if s.RelationName != "" {
			srcs = append(srcs, src{s.RelationName, fmt.Sprintf("{{ source('%s', '%s') }}", s.SourceName, s.Name)})
		}
	}
	sort.Slice(srcs, func(i, j int) bool { return len(srcs[i].rel) > len(srcs[j].rel) })
	for id, n := range m.Nodes {
		if n.ResourceType != "model" || n.OriginalFilePath == "" || n.CompiledCode == "" {
			continue
		}
		if filepath.IsAbs(n.OriginalFilePath) || strings.Contains(n.OriginalFilePath, "..") {
			return "", fmt.Errorf("model %s: unsafe path %q", id, n.OriginalFilePath)
		}
		code := n.CompiledCode
		for _, s := range srcs {
			code = strings.ReplaceAll(code, s.rel, s.call)
		}
		p := filepath.Join(project, filepath.FromSlash(n.OriginalFilePath))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(code+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return target, nil
}
