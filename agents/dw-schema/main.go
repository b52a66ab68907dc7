// Command dw-schema is the MCP server for schema subjects, diffs, compatibility exactly as the registry judges it, downstream impact and the CI gate.
package main

import (
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/startgc" // no collection until the first answer
)

func main() {
	mcpkit.Main(mcpkit.Agent{Name: "dw-schema", AfterStart: startgc.Restore, Instructions: instructions, Tools: tools, Prompts: prompts})
}
