package environment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// HubName is the name of the hub control plane.
const HubName = "hub"

// ManagedClusterName returns the name of the i-th (0-based) managed cluster: cluster1,
// cluster2, ... as in the OCM documentation.
func ManagedClusterName(i int) string { return fmt.Sprintf("cluster%d", i+1) }

// Options configures a Fleet.
type Options struct {
	// ManagedClusters is the number of managed clusters next to the hub.
	ManagedClusters int
	// SigningDuration is every control plane's --cluster-signing-duration.
	// Default DefaultSigningDuration.
	SigningDuration time.Duration
	// Dir, when set, holds one subdirectory per control plane (Dir/hub, Dir/cluster1, ...),
	// each wiped at start if an earlier run left it; empty means temporary directories.
	Dir string
	// Keep leaves the control planes' directories on disk after Stop.
	Keep bool
	// BinDir overrides where the control-plane binaries are found (default BinDir()).
	BinDir string
	// ManagedCRDs are the core/crds CRDs installed on managed clusters; nil means
	// ManagedClusterCRDs, an empty non-nil slice none. The hub gets every CRD.
	ManagedCRDs []string
	// StartTimeout bounds the start of each component. Default DefaultStartTimeout.
	StartTimeout time.Duration
	// SimulatedNodes is the number of Nodes created on each managed cluster (none on the
	// hub). No kubelet runs: KWOK makes them Ready and runs the Pods kube-scheduler binds to
	// them (see SimulatedNode), and their capacity is summed into cluster status. Start
	// returns once every one is Ready. Default 0: Pods stay Pending, as on a cluster
	// without Nodes.
	SimulatedNodes int
	// SimulatedNodeCapacity is each simulated Node's capacity and allocatable; nil means
	// DefaultSimulatedNodeCapacity.
	SimulatedNodeCapacity corev1.ResourceList
	// PodDebugging makes exec, logs and port-forward work against Pods on the simulated
	// Nodes of every managed cluster (ControlPlaneOptions.PodDebugging).
	PodDebugging bool
	// Log receives progress messages, one line each. Default: discarded.
	Log io.Writer
	// Bare starts the control planes without any Flotilla CRD, for installing Flotilla on
	// them as on real clusters (flotilla init and join).
	Bare bool
}

// Fleet is a hub and its managed clusters.
type Fleet struct {
	Hub     *ControlPlane
	Managed []*ControlPlane
	// StartDuration is how long Start took, all control planes starting concurrently.
	StartDuration time.Duration
}

// Start starts the hub and opts.ManagedClusters managed clusters concurrently and
// returns once all are ready. Managed clusters run workloads (ControlPlaneOptions.Workloads:
// the workload controllers, kube-scheduler and KWOK); the hub does not. ctx bounds the
// start only; call Stop to end the fleet. On error every control plane that did start is
// stopped again.
func Start(ctx context.Context, opts Options) (*Fleet, error) {
	if opts.ManagedClusters < 0 {
		return nil, fmt.Errorf("fleet: ManagedClusters %d must not be negative", opts.ManagedClusters)
	}
	if opts.SimulatedNodes < 0 {
		return nil, fmt.Errorf("fleet: SimulatedNodes %d must not be negative", opts.SimulatedNodes)
	}
	if opts.SimulatedNodeCapacity == nil {
		opts.SimulatedNodeCapacity = DefaultSimulatedNodeCapacity()
	}
	begin := time.Now()
	if opts.BinDir == "" {
		// Resolved once so that a missing binary is reported once, not per cluster.
		dir, err := BinDir()
		if err != nil {
			return nil, err
		}
		opts.BinDir = dir
	}
	var log io.Writer = io.Discard
	if opts.Log != nil {
		log = &lockedWriter{w: opts.Log}
	}
	managedCRDs := opts.ManagedCRDs
	if managedCRDs == nil && !opts.Bare {
		managedCRDs = ManagedClusterCRDs
	}
	planeOpts := make([]ControlPlaneOptions, 0, 1+opts.ManagedClusters)
	planeOpts = append(planeOpts, ControlPlaneOptions{Name: HubName, AllCRDs: !opts.Bare})
	for i := range opts.ManagedClusters {
		planeOpts = append(planeOpts, ControlPlaneOptions{Name: ManagedClusterName(i), CRDs: managedCRDs,
			Workloads: true, SimulatedNodes: opts.SimulatedNodes, SimulatedNodeCapacity: opts.SimulatedNodeCapacity,
			PodDebugging: opts.PodDebugging})
	}
	for i := range planeOpts {
		o := &planeOpts[i]
		if opts.Dir != "" {
			o.Dir = filepath.Join(opts.Dir, o.Name)
		}
		o.Keep = opts.Keep
		o.BinDir = opts.BinDir
		o.SigningDuration = opts.SigningDuration
		o.StartTimeout = opts.StartTimeout
		o.Log = log
	}

	planes := make([]*ControlPlane, len(planeOpts))
	errs := make([]error, len(planeOpts))
	var wg sync.WaitGroup
	for i, o := range planeOpts {
		wg.Go(func() { planes[i], errs[i] = StartControlPlane(ctx, o) })
	}
	wg.Wait()
	f := &Fleet{}
	for _, cp := range planes {
		if cp == nil {
			continue
		}
		if cp.Name == HubName {
			f.Hub = cp
		} else {
			f.Managed = append(f.Managed, cp)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, f.Stop())
	}
	f.StartDuration = time.Since(begin)
	fmt.Fprintf(log, "fleet: hub and %d managed clusters ready in %s\n", opts.ManagedClusters, f.StartDuration.Round(100*time.Millisecond))
	return f, nil
}

// ControlPlanes returns the hub followed by the managed clusters.
func (f *Fleet) ControlPlanes() []*ControlPlane {
	var out []*ControlPlane
	if f.Hub != nil {
		out = append(out, f.Hub)
	}
	return append(out, f.Managed...)
}

// Stop stops every control plane concurrently. It is safe to call more than once.
func (f *Fleet) Stop() error {
	planes := f.ControlPlanes()
	errs := make([]error, len(planes))
	var wg sync.WaitGroup
	for i, cp := range planes {
		wg.Go(func() { errs[i] = cp.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// lockedWriter serialises writes from concurrently starting control planes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
