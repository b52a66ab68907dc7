// Command dw-quality is the MCP server for warehouse quality checks with baselines from check history.
package main

import (
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/startgc"        // no collection until the first answer
	_ "github.com/dataworkers/dw/pkg/warehouse/snowflake" // this agent queries the warehouse
)

func main() {
	mcpkit.Main(mcpkit.Agent{Name: "dw-quality", AfterStart: startgc.Restore, Instructions: instructions, Tools: tools})
}
