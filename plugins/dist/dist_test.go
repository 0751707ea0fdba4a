package dist

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/plugins/internal/build"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

// TestArtifactsAreCurrent rebuilds every plugin and compares it with the committed
// artifact, so plugins/dist cannot silently lag behind its sources.
func TestArtifactsAreCurrent(t *testing.T) {
	man, err := ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	plugins, err := Plugins()
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Plugins) != len(plugins) {
		t.Fatalf("manifest.json lists %d plugins, the catalog %d: run `make plugins`", len(man.Plugins), len(plugins))
	}
	root := filepath.Join("..", "..")
	for i, p := range plugins {
		t.Run(p.Name, func(t *testing.T) {
			mod, err := p.Wasm()
			if err != nil {
				t.Fatal(err)
			}
			if got := wasm.Digest(mod); got != p.SHA256 || man.Plugins[i].Name != p.Name {
				t.Fatalf("plugins/dist/%s.wasm.zst has sha256 %s, manifest.json says %s for %s: run `make plugins`", p.Name, got, p.SHA256, man.Plugins[i].Name)
			}
			built, err := build.Wasm(context.Background(), root, build.Catalog()[i].Package)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(built, mod) {
				t.Fatalf("plugins/dist/%s.wasm.zst is stale: its sources now build to sha256 %s (committed %s, built with %s, this is %s): run `make plugins` and commit plugins/dist",
					p.Name, wasm.Digest(built), p.SHA256, man.Go, runtime.Version())
			}
		})
	}
}

// TestArtifactsLoad loads every embedded plugin through the host, which checks the
// exports its type requires, its ABI version and validate_config.
func TestArtifactsLoad(t *testing.T) {
	plugins, err := Plugins()
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]string{
		"csr-autoapprove":     `{"clusterNamePatterns":["dev-*"],"users":["system:serviceaccount:open-cluster-management:agent-registration-bootstrap"]}`,
		"prioritizer-builtin": `{"prioritizer":"Balance"}`,
	}
	for _, p := range plugins {
		t.Run(p.Name, func(t *testing.T) {
			if p.ZstdBytes() > 700<<10 {
				t.Errorf("%s is %d bytes compressed, above the 700 KiB budget", p.Name, p.ZstdBytes())
			}
			mod, err := p.Wasm()
			if err != nil {
				t.Fatal(err)
			}
			var cfg []byte
			if c, ok := configs[p.Name]; ok {
				cfg = []byte(c)
			}
			m := wasmrun.Load(t, mod, p.Type, cfg)
			if m.ABIVersion() != abi.Version {
				t.Errorf("ABI version %d, want %d", m.ABIVersion(), abi.Version)
			}
		})
	}
}
