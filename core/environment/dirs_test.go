package environment

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestResetOwnedDir(t *testing.T) {
	t.Run("creates a missing directory and marks it", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "new")
		if err := resetOwnedDir(dir); err != nil {
			t.Fatal(err)
		}
		if pid, ok := readMarker(dir); !ok || pid != os.Getpid() {
			t.Errorf("marker pid = %d, %v; want %d", pid, ok, os.Getpid())
		}
	})
	t.Run("refuses a non-empty directory it did not create", func(t *testing.T) {
		dir := t.TempDir()
		precious := filepath.Join(dir, "precious.txt")
		if err := os.WriteFile(precious, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := resetOwnedDir(dir)
		if err == nil || !strings.Contains(err.Error(), "not created by flotilla") {
			t.Fatalf("resetOwnedDir on a foreign directory: got %v", err)
		}
		if _, err := os.Stat(precious); err != nil {
			t.Errorf("foreign file was touched: %v", err)
		}
	})
	t.Run("wipes a directory a dead process created", func(t *testing.T) {
		dir := t.TempDir()
		// A pid beyond Linux's maximum pid_max (2^22) can never be alive.
		if err := os.WriteFile(filepath.Join(dir, markerFile), []byte("2147483647\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		stale := filepath.Join(dir, "etcd.log")
		if err := os.WriteFile(stale, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := resetOwnedDir(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(stale); !os.IsNotExist(err) {
			t.Errorf("stale file survived: %v", err)
		}
	})
	t.Run("refuses a directory a live process uses", func(t *testing.T) {
		dir := t.TempDir()
		// Our parent (go test or the shell) is alive and is not us.
		if err := os.WriteFile(filepath.Join(dir, markerFile), []byte(strconv.Itoa(os.Getppid())+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := resetOwnedDir(dir); err == nil || !strings.Contains(err.Error(), "in use by running process") {
			t.Fatalf("resetOwnedDir on a live process's directory: got %v", err)
		}
	})
}

func TestBinDir(t *testing.T) {
	t.Run("environment variable wins", func(t *testing.T) {
		t.Setenv(BinDirEnv, "/opt/flotilla/bin")
		got, err := BinDir()
		if err != nil || got != "/opt/flotilla/bin" {
			t.Errorf("BinDir() = %q, %v", got, err)
		}
	})
	t.Run("repository bin directory", func(t *testing.T) {
		t.Setenv(BinDirEnv, "")
		got, err := BinDir()
		if err != nil {
			t.Fatal(err)
		}
		root, err := RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		if got != filepath.Join(root, "bin") {
			t.Errorf("BinDir() = %q, want %q", got, filepath.Join(root, "bin"))
		}
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
			t.Errorf("RepoRoot() = %q has no go.mod: %v", root, err)
		}
	})
	t.Run("missing binary names the make target", func(t *testing.T) {
		_, err := binaryPath(t.TempDir(), KubeAPIServerBinary)
		if err == nil || !strings.Contains(err.Error(), "make controlplane") {
			t.Errorf("binaryPath on an empty directory: got %v", err)
		}
	})
}

func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := freePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: invalid or repeated %d", ports, p)
		}
		seen[p] = true
	}
}
