// Package dist embeds Flotilla's own plugins, built by `make plugins` into
// plugins/dist/<name>.wasm.zst (zstd, as `flotilla plugin push` stores them). The
// Default ones are installed on start: the FeedbackExtractors by the klusterlet on its
// managed cluster (klusterlet/plugins), the others by the hub (hub/plugininstall).
// dist_test.go rebuilds them and fails if a committed artifact no longer matches its
// sources.
package dist

import (
	"embed"
	"encoding/json"
	"fmt"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/plugins/internal/build"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

//go:embed *.wasm.zst manifest.json
var files embed.FS

// Manifest is plugins/dist/manifest.json; Entry describes one artifact in it.
type (
	Manifest = build.Manifest
	Entry    = build.Entry
)

// Plugin is one embedded plugin.
type Plugin struct {
	Name        string
	Type        abi.PluginType
	Default     bool
	Description string
	// SHA256 is the digest of the uncompressed module.
	SHA256 string
	// Compressed is the module as stored under the ConfigMap key plugin.wasm.zst.
	Compressed []byte
}

// Wasm returns the uncompressed module.
func (p Plugin) Wasm() ([]byte, error) {
	return wasm.Decompress(p.Name, wasm.KeyZstd, p.Compressed, 0)
}

// ReadManifest returns the embedded manifest.
func ReadManifest() (Manifest, error) {
	var m Manifest
	b, err := files.ReadFile("manifest.json")
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("plugins/dist/manifest.json: %w", err)
	}
	return m, nil
}

// Plugins returns every embedded plugin, in catalog order.
func Plugins() ([]Plugin, error) {
	man, err := ReadManifest()
	if err != nil {
		return nil, err
	}
	digests := map[string]string{}
	for _, e := range man.Plugins {
		digests[e.Name] = e.SHA256
	}
	var out []Plugin
	for _, s := range build.Catalog() {
		zst, err := files.ReadFile(s.Name + ".wasm.zst")
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w (run `make plugins`)", s.Name, err)
		}
		out = append(out, Plugin{Name: s.Name, Type: s.Type, Default: s.Default, Description: s.Description,
			SHA256: digests[s.Name], Compressed: zst})
	}
	return out, nil
}

// Get returns the embedded plugin called name.
func Get(name string) (Plugin, error) {
	all, err := Plugins()
	if err != nil {
		return Plugin{}, err
	}
	for _, p := range all {
		if p.Name == name {
			return p, nil
		}
	}
	return Plugin{}, fmt.Errorf("no embedded plugin %q", name)
}

// ZstdBytes is the compressed size.
func (p Plugin) ZstdBytes() int { return len(p.Compressed) }

// Bundled describes p for wasmplugin.Installer, with pluginConfig config (nil for none).
func (p Plugin) Bundled(config []byte) wasmplugin.Bundled {
	return wasmplugin.Bundled{Name: p.Name, Type: p.Type, SHA256: p.SHA256, Compressed: p.Compressed, Config: config}
}
