// Package estates holds end-to-end scenarios on estates unlike the demo's: each test seeds its own
// registry, Kafka topic, context graph and warehouse on loopback, drives the five built servers
// over stdio as an MCP client does, and asserts the diagnosis, the per-reader sentences, the plan
// and the verification from what the tools return. The package has no code outside its tests.
package estates
