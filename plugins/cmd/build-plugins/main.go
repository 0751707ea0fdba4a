// Command build-plugins builds every plugin of the catalog to
// <out>/<name>.wasm.zst and writes <out>/manifest.json (digests and sizes).
// `make plugins` runs it from the repository root.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/plugins/internal/build"
)

func main() {
	root := flag.String("root", ".", "repository root")
	out := flag.String("out", "plugins/dist", "output directory")
	flag.Parse()
	if err := run(context.Background(), *root, *out); err != nil {
		fmt.Fprintln(os.Stderr, "build-plugins:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, root, out string) error {
	man := build.Manifest{Go: runtime.Version()}
	for _, s := range build.Catalog() {
		mod, err := build.Wasm(ctx, root, s.Package)
		if err != nil {
			return err
		}
		zst, err := wasm.Compress(mod)
		if err != nil {
			return fmt.Errorf("plugin %s: %w", s.Name, err)
		}
		path := filepath.Join(out, s.Name+".wasm.zst")
		if err := os.WriteFile(path, zst, 0o644); err != nil {
			return err
		}
		man.Plugins = append(man.Plugins, build.Entry{Name: s.Name, Type: s.Type, SHA256: wasm.Digest(mod), WasmBytes: len(mod), ZstdBytes: len(zst)})
		fmt.Printf("%-22s %-12s wasm %8d B  zstd %7d B (%.0f KiB)  sha256 %s\n", s.Name, s.Type, len(mod), len(zst), float64(len(zst))/1024, wasm.Digest(mod)[:12])
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "manifest.json"), append(b, '\n'), 0o644)
}
