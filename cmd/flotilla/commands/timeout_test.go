package commands

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A hub that accepts connections and never answers fails render mwrs and rollout status once
// --timeout has passed, naming the flag, instead of hanging.
func TestReadCommandsGiveUpAfterTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stuck := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stuck)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: hub, context: {cluster: hub, user: u}}]
current-context: hub
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"render", "mwrs", "default/web", "--cluster", "cluster1", "--kubeconfig", kubeconfig, "--timeout", "300ms"},
		{"rollout", "status", "default/web", "--kubeconfig", kubeconfig, "--timeout", "300ms"},
	} {
		_, _, err := flotilla(ctx, args...)
		if err == nil || !strings.Contains(err.Error(), "gave up after 300ms (--timeout)") {
			t.Errorf("flotilla %s: err = %v, want it to give up after 300ms naming --timeout", strings.Join(args[:2], " "), err)
		}
		if ctx.Err() != nil {
			t.Fatalf("flotilla %s still ran when the test's deadline passed", strings.Join(args[:2], " "))
		}
	}
}
