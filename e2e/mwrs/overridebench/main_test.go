package main

import (
	"context"
	"testing"
	"time"
)

// TestRender keeps the bench's in-process half working (make bench-overrides is not in CI):
// the transform-sidecar module builds, the 5 rules compile and each changes every one of 20
// clusters' renders (renderP50 fails otherwise).
func TestRender(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	module, err := build(defaultPluginDir())
	if err != nil {
		t.Fatalf("building transform-sidecar: %v", err)
	}
	if _, err := renderP50(ctx, module, 20, 1); err != nil {
		t.Fatal(err)
	}
}
