package hubtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildFlotilla builds the flotilla binary into dir as the Dockerfile builds the image's
// (CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), for suites that run the charts' Deployments as
// processes. Every suite builds it with the same flags, so the build cache serves the others.
// On a cold cache this compiles the whole module beside the rest of `go test ./...`: callers
// give it minutes.
func BuildFlotilla(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "flotilla")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "github.com/flotilla-dev/flotilla/cmd/flotilla")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building flotilla (as the Dockerfile does): %v: %s", err, out)
	}
	return bin, nil
}
