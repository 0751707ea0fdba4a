// Package charts embeds the Helm charts flotilla-hub and flotilla-klusterlet, the single
// source of Flotilla's install manifests: `flotilla init` and `flotilla join` render them
// with core/install, and `helm install` takes them from this directory.
package charts

import "embed"

// FS holds the chart directories flotilla-hub and flotilla-klusterlet. "all:" keeps
// _helpers.tpl, which embed would otherwise skip for its leading underscore.
//
//go:embed all:flotilla-hub all:flotilla-klusterlet
var FS embed.FS
