// Command dw-connectors is the MCP server for live reads of Kafka, Kafka Connect, Confluent Cloud
// (Flink statements, Tableflow) and warehouse metadata.
package main

import (
	"github.com/dataworkers/dw/pkg/mcpkit"
	"github.com/dataworkers/dw/pkg/mcpkit/startgc"        // no collection until the first answer
	_ "github.com/dataworkers/dw/pkg/warehouse/snowflake" // this agent queries the warehouse
)

func main() {
	mcpkit.Main(mcpkit.Agent{Name: "dw-connectors", AfterStart: startgc.Restore, Instructions: instructions, Tools: tools})
}
