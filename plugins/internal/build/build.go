// Package build knows Flotilla's own Go plugins and how to build them
// reproducibly: the same sources and Go toolchain give byte-identical modules, so
// the artifacts committed under plugins/dist can be checked for staleness.
package build

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Spec describes one plugin built into plugins/dist.
type Spec struct {
	// Name is the artifact name (plugins/dist/<Name>.wasm.zst) and the suggested WasmPlugin name.
	Name string
	// Package is the plugin's main package, relative to the repository root.
	Package string
	Type    abi.PluginType
	// Default plugins are installed on start (they need no pluginConfig) by the component
	// that calls their type: FeedbackExtractors by the klusterlet on its managed cluster, the
	// others by the hub.
	Default     bool
	Description string
}

// Catalog lists the plugins of plugins/dist.
func Catalog() []Spec {
	return []Spec{
		{Name: "csr-renewal", Package: "./plugins/csr-renewal", Type: abi.TypeCSRApproval, Default: true,
			Description: "approves certificate renewals of accepted clusters' agents"},
		{Name: "csr-addon", Package: "./plugins/csr-addon", Type: abi.TypeCSRApproval, Default: true,
			Description: "approves the CSRs of add-on agents enabled on accepted clusters (the add-on's default identity, or a custom signer's registered subject)"},
		{Name: "csr-autoapprove", Package: "./plugins/csr-autoapprove", Type: abi.TypeCSRApproval,
			Description: "approves first registrations of clusters matching name globs from listed users (needs pluginConfig)"},
		{Name: "prioritizer-affinity", Package: "./plugins/prioritizers/affinity", Type: abi.TypePrioritizer, Default: true,
			Description: "scores clusters by label and claim values and by a resource's amount"},
		// Not Default: it needs a pluginConfig. The hub installs it once per OCM BuiltIn
		// prioritizer (hub/plugininstall), as WasmPlugins placement-<builtin, lower case>.
		{Name: "prioritizer-builtin", Package: "./plugins/prioritizers/builtin", Type: abi.TypePrioritizer,
			Description: `OCM's BuiltIn prioritizers Balance, Steady, ResourceAllocatableCPU and ResourceAllocatableMemory, one per pluginConfig {"prioritizer": "<name>"}`},
		{Name: "feedback-wellknown", Package: "./plugins/feedback/wellknown", Type: abi.TypeFeedbackExtractor, Default: true,
			Description: "WellKnownStatus feedback of Deployments, Jobs, Pods, DaemonSets and StatefulSets (installed by the klusterlet)"},
	}
}

// GoFlags are the flags every plugin is built with. -trimpath and -buildvcs=false
// keep paths and VCS state out of the module so builds are reproducible.
var GoFlags = []string{"-buildmode=c-shared", "-trimpath", "-buildvcs=false"}

// Wasm builds the main package pkg (relative to the repository root) for
// GOOS=wasip1 GOARCH=wasm and returns the module.
func Wasm(ctx context.Context, root, pkg string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "flotilla-plugin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "plugin.wasm")
	args := append([]string{"build"}, GoFlags...)
	args = append(args, "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("plugin package %s: go build (GOOS=wasip1 GOARCH=wasm): %v\n%s", pkg, err, msg)
	}
	return os.ReadFile(out)
}

// Manifest is plugins/dist/manifest.json.
type Manifest struct {
	// Go is the toolchain that built the artifacts; another version builds different bytes.
	Go      string  `json:"go"`
	Plugins []Entry `json:"plugins"`
}

// Entry describes one artifact.
type Entry struct {
	Name string         `json:"name"`
	Type abi.PluginType `json:"type"`
	// SHA256 is the digest of the uncompressed module (a WasmPlugin's spec.sha256).
	SHA256    string `json:"sha256"`
	WasmBytes int    `json:"wasmBytes"`
	ZstdBytes int    `json:"zstdBytes"`
}
