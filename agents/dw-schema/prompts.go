package main

import (
	"context"
	"fmt"

	"github.com/dataworkers/dw/pkg/mcpkit"
)

// prompts walk a client through a proposed schema change before it is registered.
func prompts(*mcpkit.Env) []mcpkit.Prompt {
	return []mcpkit.Prompt{{
		Name: "review_schema_change", Title: "Review a schema change",
		Description: "Before registering a schema version: what changed, whether the registry accepts it, which downstream readers break, and the version that would not break them.",
		Arguments: []mcpkit.PromptArgument{
			{Name: "subject", Description: "The Schema Registry subject, e.g. orders-value", Required: true},
			{Name: "schema_file", Description: "Path to the proposed schema (.avsc, .proto, .json)", Required: true},
		},
		Render: func(_ context.Context, a map[string]string) (string, error) {
			return fmt.Sprintf(`Review the proposed schema %[2]s for subject %[1]s with the Data Workers tools, in this order.

1. What changed: diff_schema_versions between the subject's latest version and schema_file %[2]s: fields removed, renamed, retyped, nullability and defaults.
2. Would the registry accept it: check_compatibility under the subject's own level and policy. Quote each incompatibility's message.
3. Who reads the changed fields: assess_impact for the same schema_file: every downstream reader (Flink statements and the version each is pinned to, tables, dbt models, dashboards, jobs, external sinks), what happens to it and its severity.
4. The verdict: check_schema_change, the same gate CI runs (dw-schema call check_schema_change exits 100 when it blocks). A change can pass the registry and still break readers.
5. If it blocks: propose_schema_fix writes the version that keeps removed fields as optional beside the new ones, proven compatible; run check_schema_change on it to show it passes.
6. Report: the verdict, each blocking reader with its owner and why it breaks, and the fix. Do not register anything: register_stream_schema needs a named approval for exactly that subject and schema.`, a["subject"], a["schema_file"]), nil
		},
	}}
}
