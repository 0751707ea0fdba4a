package environment

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BinDirEnv names the environment variable that points at the directory holding etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok. The Makefile exports it.
const BinDirEnv = "FLOTILLA_BIN_DIR"

// ModulePath is the Go module whose go.mod marks the repository root.
const ModulePath = "github.com/flotilla-dev/flotilla"

// Control-plane binaries, as named in bin/.
const (
	EtcdBinary                  = "etcd"
	KubeAPIServerBinary         = "kube-apiserver"
	KubeControllerManagerBinary = "kube-controller-manager"
	// KubeSchedulerBinary and KWOKBinary run on control planes with Workloads.
	KubeSchedulerBinary = "kube-scheduler"
	KWOKBinary          = "kwok"
)

// BinDir returns $FLOTILLA_BIN_DIR, or else the bin/ directory of the repository root
// found by walking up from the working directory, or else the directory of the running
// executable if it holds kube-apiserver (bin/flotilla run from outside the checkout).
func BinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return filepath.Abs(dir)
	}
	root, err := RepoRoot()
	if err == nil {
		return filepath.Join(root, "bin"), nil
	}
	if exe, exeErr := os.Executable(); exeErr == nil {
		dir := filepath.Dir(exe)
		if _, statErr := os.Stat(filepath.Join(dir, KubeAPIServerBinary)); statErr == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("locating control-plane binaries: $%s is unset, the executable's directory has no %s, and %w", BinDirEnv, KubeAPIServerBinary, err)
}

// RepoRoot walks up from the working directory to the directory whose go.mod declares
// module github.com/flotilla-dev/flotilla. Test binaries run in their package directory,
// so this finds the checkout from anywhere inside it.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("reading working directory: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		ok, err := declaresModule(filepath.Join(dir, "go.mod"), ModulePath)
		if err != nil {
			return "", err
		}
		if ok {
			return dir, nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			return "", fmt.Errorf("no go.mod declaring module %s in %s or any parent directory", ModulePath, wd)
		}
	}
}

// declaresModule reports whether the go.mod at path exists and declares module mod.
func declaresModule(path, mod string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == mod, nil
		}
	}
	return false, sc.Err()
}

// binaryPath returns the path of name in dir, checking that it is an executable file.
func binaryPath(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("control-plane binary %s: %w (run `make controlplane`, or point $%s at a directory holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok)", p, err, BinDirEnv)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("control-plane binary %s is not an executable file", p)
	}
	return p, nil
}

// FlotillaBinary is the flotilla binary `make build` puts in BinDir, for benchmarks that run
// a component as its own process.
func FlotillaBinary() (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "flotilla"), nil
}
