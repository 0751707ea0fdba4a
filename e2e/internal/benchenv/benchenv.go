// Package benchenv is what the make bench-* commands share: their context, the flotilla binary
// they run, and the hub as its own process (so its CPU and memory can be read).
package benchenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

// Context is cancelled by Ctrl-C or after timeout.
func Context(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, func() { cancel(); stop() }
}

// Binary is the flotilla binary to run: flag when set, else the control-plane bin directory's.
func Binary(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return environment.FlotillaBinary()
}

// Exit prints err as the bench's failure and exits 1.
func Exit(bench string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", bench, err)
	os.Exit(1)
}

// Hub is a `flotilla hub` process.
type Hub struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
}

// StartHub runs `binary hub --kubeconfig kubeconfig args...` with its output to logw.
func StartHub(ctx context.Context, binary, kubeconfig string, logw io.Writer, args ...string) (*Hub, error) {
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, binary, append([]string{"hub", "--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = logw, logw
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("starting %s hub: %w", binary, err)
	}
	return &Hub{cmd: cmd, cancel: cancel}, nil
}

// Pid is the hub's process id.
func (h *Hub) Pid() int { return h.cmd.Process.Pid }

// Stop kills the hub and waits for it.
func (h *Hub) Stop() {
	h.cancel()
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

// Client is an admin client of cp with the rate limits a bench needs (2,000 QPS, burst
// 4,000), its config and scheme.
func Client(cp *environment.ControlPlane) (client.Client, *rest.Config, *runtime.Scheme, error) {
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	scheme, err := manager.NewScheme()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, cfg, scheme, err
}
