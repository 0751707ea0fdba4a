// Package wasmtest builds the test guest modules under core/wasm/testdata/guests for
// tests of the host, the WasmPlugin controller and the CLI. Builds are cached by a hash
// of the sources, flags and Go version under the user cache directory, so only the first
// run on a machine pays for the wasip1 compile.
package wasmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Guest variants of the misbehave module (see testdata/guests/misbehave/main.go).
type Variant struct {
	// Version is returned by the "version" export and prefixes "score" output.
	Version string
	// ABIVersion is returned by flotilla_abi_version.
	ABIVersion string
}

// V1 is the default misbehave module.
var V1 = Variant{Version: "v1", ABIVersion: "1"}

var buildMu sync.Mutex

// GuestsDir is the module holding the test guests.
func GuestsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "guests")
}

// TB is the part of testing.TB (or Ginkgo's GinkgoT()) the helpers use.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Misbehave returns the misbehave module built for v.
func Misbehave(tb TB, v Variant) []byte {
	tb.Helper()
	flags := fmt.Sprintf("-X main.version=%s -X main.abiVersion=%s", v.Version, v.ABIVersion)
	b, err := Build("misbehave", flags)
	if err != nil {
		tb.Fatalf("building test guest: %v", err)
	}
	return b
}

// CSR returns the csr module, a well-behaved CSRApproval plugin.
func CSR(tb TB) []byte {
	tb.Helper()
	b, err := Build("csr", "")
	if err != nil {
		tb.Fatalf("building test guest: %v", err)
	}
	return b
}

// Build compiles package dir (relative to GuestsDir) with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared and the given -ldflags, returning the module bytes.
func Build(dir, ldflags string) ([]byte, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	root := GuestsDir()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", runtime.Version(), dir, ldflags)
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || filepath.Base(p) == "go.mod") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		cacheDir = os.TempDir()
	}
	cacheDir = filepath.Join(cacheDir, "flotilla", "wasm-test-guests")
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(cacheDir, hex.EncodeToString(h.Sum(nil))[:32]+".wasm")
	if b, err := os.ReadFile(out); err == nil {
		return b, nil
	}
	tmp := out + fmt.Sprintf(".tmp%d", os.Getpid())
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags="+ldflags, "-o", tmp, "./"+dir)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s (GOOS=wasip1 GOARCH=wasm): %v\n%s", dir, err, msg)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}
