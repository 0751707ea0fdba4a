// Command bench measures the ManifestWorkReplicaSet controller: a hub API server with N
// simulated ManagedClusters (plain objects with their namespaces) in one bound set, the hub
// as its own process (bin/flotilla hub), a placement selecting every cluster, and a fake
// agent in this process that reports each generated ManifestWork Applied and Available as
// soon as it appears. It times one ManifestWorkReplicaSet with an All rollout from its
// creation until its status summary counts every cluster's work applied, and reads the
// controller's reconcile durations from the hub's metrics. Its last line is
//
//	mwrs-1000 rollout_s=<…> reconcile_p50_ms=<…>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
)

const (
	setName = "bench"
	ns      = "bench-mwrs"
)

func main() {
	clusters := flag.Int("clusters", 1000, "simulated ManagedClusters")
	benchenv.Main("bench-rollout", 20*time.Minute, func(ctx context.Context, binary string, verbose bool) (string, error) {
		return run(ctx, binary, *clusters, verbose)
	})
}

func run(ctx context.Context, binary string, n int, verbose bool) (line string, err error) {
	cp, err := benchenv.StartControlPlane(ctx, environment.ControlPlaneOptions{})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	c := cp.Client
	hub, err := benchenv.StartHub(ctx, binary, cp, benchenv.Log(verbose), benchenv.HubOptions{FeatureGates: "DefaultClusterSet=false", Metrics: true})
	if err != nil {
		return "", err
	}
	defer hub.Stop()

	fmt.Fprintf(os.Stderr, "creating %d clusters\n", n)
	if err := (benchenv.Clusters{Set: setName}).Create(ctx, c, n); err != nil {
		return "", err
	}
	if err := benchenv.SelectAll(ctx, c, setName, ns, "all", n); err != nil {
		return "", err
	}
	actx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	if err := benchenv.FakeWorkAgent(actx, cp, available, func(ctx context.Context, w *workv1.ManifestWork) {
		w = w.DeepCopy()
		benchenv.SetWorkAvailable(w)
		_ = c.Status().Update(ctx, w) // a conflict means a newer version is queued
	}); err != nil {
		return "", err
	}

	fmt.Fprintln(os.Stderr, "creating the ManifestWorkReplicaSet")
	start := time.Now()
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
			PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "all"}},
			ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench","namespace":"default"},"data":{"k":"v"}}`)}}}}},
		}}
	if err := c.Create(ctx, rs); err != nil {
		return "", err
	}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got := &workv1alpha1.ManifestWorkReplicaSet{}
		err := c.Get(ctx, client.ObjectKeyFromObject(rs), got)
		return err == nil && got.Status.Summary.Applied == n, nil
	})
	if err != nil {
		return "", fmt.Errorf("the rollout did not reach %d applied works: %w", n, err)
	}
	took := time.Since(start)
	fmt.Fprintf(os.Stderr, "%d clusters applied in %.2f s\n", n, took.Seconds())
	p50, count, err := reconcileP50(ctx, hub)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "%d reconciles of the replica set\n", count)
	return fmt.Sprintf("mwrs-%d rollout_s=%.2f reconcile_p50_ms=%.1f", n, took.Seconds(), p50*1000), nil
}

// available says whether the fake agent (or anyone) reported w Available.
func available(w *workv1.ManifestWork) bool {
	return meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkAvailable)
}

// reconcileP50 estimates the median reconcile duration of the replica set controller from
// the hub's controller_runtime_reconcile_time_seconds histogram (linear within a bucket).
func reconcileP50(ctx context.Context, hub *benchenv.Hub) (float64, int, error) {
	type bucket struct{ le, n float64 }
	var buckets []bucket
	err := hub.Metrics(ctx, func(s benchenv.Sample) {
		if s.Name != "controller_runtime_reconcile_time_seconds_bucket" || s.Label("controller") != mwrs.ControllerName {
			return
		}
		bound := 1e18
		if le := s.Label("le"); le != "+Inf" {
			var err error
			if bound, err = strconv.ParseFloat(le, 64); err != nil {
				return
			}
		}
		buckets = append(buckets, bucket{bound, s.Value})
	})
	if err != nil {
		return 0, 0, err
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	if len(buckets) == 0 || buckets[len(buckets)-1].n == 0 {
		return 0, 0, errors.New("the hub reported no reconcile of the replica set controller")
	}
	total := buckets[len(buckets)-1].n
	half := total / 2
	prevLe, prevN := 0.0, 0.0
	for _, b := range buckets {
		if b.n >= half {
			if b.le >= 1e18 {
				return prevLe, int(total), nil
			}
			return prevLe + (b.le-prevLe)*(half-prevN)/(b.n-prevN), int(total), nil
		}
		prevLe, prevN = b.le, b.n
	}
	return prevLe, int(total), nil
}
