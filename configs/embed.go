// Package configs carries the embedded default configuration, so every binary runs from any
// directory without a config file.
package configs

import _ "embed"

// LocalName is how the embedded default is named in messages and check_connections.
const LocalName = "configs/local.yaml"

// Local is configs/local.yaml, compiled into every binary.
//
//go:embed local.yaml
var Local []byte
