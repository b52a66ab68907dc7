// Command dw-incidents is the MCP server for incidents, diagnosis, proposals, approvals, remediation and receipts.
package main

import (
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/startgc"        // no collection until the first answer
	_ "github.com/dataworkers/dw/pkg/warehouse/snowflake" // this agent queries the warehouse
)

func main() {
	mcpkit.Main(mcpkit.Agent{Name: "dw-incidents", AfterStart: startgc.Restore, Instructions: instructions, Tools: tools, Commands: humanCommands(),
		Prompts: prompts, Resources: resources})
}
