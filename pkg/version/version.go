// Package version is the release of the Data Workers binaries.
package version

// Version is overridden at build time with -ldflags "-X github.com/dataworkers/dw/pkg/version.Version=…".
var Version = "0.1.0-dev"

// Commit is the git commit the binary was built from; start-agent.sh sets it with
// -ldflags "-X github.com/dataworkers/dw/pkg/version.Commit=…" (Go's own VCS stamp is used when present).
var Commit = ""
