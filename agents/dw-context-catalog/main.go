// Command dw-context-catalog is the MCP server for the context graph: search, cross-platform lineage and blast radius.
package main

import (
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/startgc"        // no collection until the first answer
	_ "github.com/dataworkers/dw/pkg/warehouse/snowflake" // this agent queries the warehouse
)

func main() {
	mcpkit.Main(mcpkit.Agent{Name: "dw-context-catalog", AfterStart: startgc.Restore, Instructions: instructions, Tools: tools, Resources: resources})
}
