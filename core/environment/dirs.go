package environment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tempPrefix starts the name of every temporary directory this package creates.
const tempPrefix = "flotilla-env-"

// newTempDir creates a marked temporary directory for a control plane. It first removes
// directories left behind by earlier processes that were killed before their cleanup ran
// (their control planes died with them, see spawner).
func newTempDir(name string) (string, error) {
	sweepStaleTempDirs()
	dir, err := os.MkdirTemp("", tempPrefix+name+"-*")
	if err != nil {
		return "", fmt.Errorf("control plane %s: creating temporary directory: %w", name, err)
	}
	if err := writeMarker(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// resetOwnedDir makes dir an empty directory marked as ours. It refuses to wipe a
// directory it did not create, or one a live process is using.
func resetOwnedDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("reading %s: %w", dir, err)
	case len(entries) == 0:
	default:
		pid, ok := readMarker(dir)
		if !ok {
			return fmt.Errorf("%s is not empty and was not created by flotilla (no %s file); refusing to wipe it", dir, markerFile)
		}
		if pid != os.Getpid() && processAlive(pid) {
			return fmt.Errorf("%s is in use by running process %d", dir, pid)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("wiping %s from an earlier run: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return writeMarker(dir)
}

// writeMarker records our pid in dir's marker file.
func writeMarker(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("marking %s: %w", dir, err)
	}
	return nil
}

// readMarker returns the pid recorded in dir's marker file.
func readMarker(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, markerFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// sweepStaleTempDirs removes our temporary directories whose creating process is gone.
// Directories without a readable marker may be in the middle of being created and are
// left alone. Failures only leave garbage behind, so they are ignored.
func sweepStaleTempDirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, dir := range matches {
		if pid, ok := readMarker(dir); ok && !processAlive(pid) {
			os.RemoveAll(dir)
		}
	}
}
