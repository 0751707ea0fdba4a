// Package benchenv is what the make bench-* commands share: their context, the flotilla binary
// they run, the hub API server and the hub as its own process (so its CPU and memory can be
// read), simulated clusters and work agents, and the reading of Prometheus metrics.
package benchenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

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

// Main is the main function of a bench of the hub as its own process. Besides the flags the
// bench defined it has -flotilla (the binary, see Binary), -timeout (default timeout, see
// Context) and -v (the hub's output to stderr); it parses them, calls run, and prints the
// line run returns, the bench's result, as its last line. A failure exits as Exit does.
func Main(bench string, timeout time.Duration, run func(ctx context.Context, binary string, verbose bool) (string, error)) {
	binary := flag.String("flotilla", "", "the flotilla binary to run the hub with (default: flotilla in the control-plane bin directory)")
	flag.DurationVar(&timeout, "timeout", timeout, "give up after this long")
	verbose := flag.Bool("v", false, "log the hub's output to stderr")
	flag.Parse()
	ctx, cancel := Context(timeout)
	defer cancel()
	line, err := func() (string, error) {
		bin, err := Binary(*binary)
		if err != nil {
			return "", err
		}
		return run(ctx, bin, *verbose)
	}()
	if err != nil {
		Exit(bench, err)
	}
	fmt.Println(line)
}

// Log is where the output of the processes and components a bench runs goes: stderr when
// verbose, else nowhere.
func Log(verbose bool) io.Writer {
	if verbose {
		return os.Stderr
	}
	return io.Discard
}

// ControlPlane is a bench's hub API server and an admin client of it.
type ControlPlane struct {
	*environment.ControlPlane
	// Client is an admin client with the rate limits a bench needs (2,000 QPS, burst 4,000);
	// ClientConfig is its config.
	Client       client.Client
	ClientConfig *rest.Config
	Scheme       *runtime.Scheme
}

// StartControlPlane starts the hub API server with every Flotilla CRD (opts may ask for more,
// such as Profiling), saying so on stderr, and discards controller-runtime's log (only the
// bench's own clients write to it). Stop it with Stop.
func StartControlPlane(ctx context.Context, opts environment.ControlPlaneOptions) (*ControlPlane, error) {
	ctrllog.SetLogger(logr.Discard())
	fmt.Fprintln(os.Stderr, "starting the hub API server")
	opts.Name, opts.AllCRDs = environment.HubName, true
	cp, err := environment.StartControlPlane(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &ControlPlane{ControlPlane: cp, ClientConfig: rest.CopyConfig(cp.Config)}
	out.ClientConfig.QPS, out.ClientConfig.Burst = 2000, 4000
	if out.Scheme, err = manager.NewScheme(); err == nil {
		out.Client, err = client.New(out.ClientConfig, client.Options{Scheme: out.Scheme})
	}
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return out, nil
}

// HubOptions are the flags of a `flotilla hub` process besides its kubeconfig and client
// rate.
type HubOptions struct {
	// FeatureGates is its --feature-gates.
	FeatureGates string
	// Metrics serves its metrics on a free port of 127.0.0.1 (Hub.MetricsAddr).
	Metrics bool
	// Args are further flags.
	Args []string
}

// Hub is a `flotilla hub` process.
type Hub struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	// MetricsAddr is where it serves its metrics, with HubOptions.Metrics.
	MetricsAddr string
}

// StartHub runs `binary hub` on cp with a bench's client rate (--kube-api-qps 1000,
// --kube-api-burst 2000) and opts, its output to logw.
func StartHub(ctx context.Context, binary string, cp *ControlPlane, logw io.Writer, opts HubOptions) (*Hub, error) {
	h := &Hub{}
	args := []string{"hub", "--kubeconfig", cp.KubeconfigPath, "--feature-gates", opts.FeatureGates,
		"--kube-api-qps", "1000", "--kube-api-burst", "2000"}
	if opts.Metrics {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		h.MetricsAddr = addr
		args = append(args, "--metrics-bind-address", addr)
	}
	ctx, h.cancel = context.WithCancel(ctx)
	h.cmd = exec.CommandContext(ctx, binary, append(args, opts.Args...)...)
	h.cmd.Stdout, h.cmd.Stderr = logw, logw
	if err := h.cmd.Start(); err != nil {
		h.cancel()
		return nil, fmt.Errorf("starting %s hub: %w", binary, err)
	}
	return h, nil
}

// Pid is the hub's process id.
func (h *Hub) Pid() int { return h.cmd.Process.Pid }

// Stop kills the hub and waits for it.
func (h *Hub) Stop() {
	h.cancel()
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

// FreeAddr is a free TCP address on 127.0.0.1 for a process the bench starts to listen on.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
