// Command bench measures the dashboard in a real browser on a large fleet: a hub API server
// (no hub needed) with N simulated ManagedClusters (benchenv.Clusters: plain objects with the
// status their agents would write, capacity, version, labels, and a managed-cluster-lease
// each), the dashboard server (hub/dashboard) in this process with the admin's rest.Config on
// a loopback listener, and one headless Chromium (core/environment/browser).
//
//   - first_paint_ms: the page's performance mark "fleet-first-paint" (set in the
//     requestAnimationFrame after the first snapshot's fleet is rendered), its startTime,
//     that is ms since the navigation started; the median of -loads fresh loads, each in a
//     new tab.
//   - update_ms: from a status patch of one cluster (Available False), taken at t0 on the
//     wall clock before the request, until a MutationObserver in the page sees #fleet-summary's
//     data-unavailable change to the new count (the page's clock, the same machine's); the
//     median of -changes changes, one cluster after another.
//
// Its last line is
//
//	dashboard-5000 first_paint_ms=<x.x> update_ms=<y.y>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/browser"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
	"github.com/flotilla-dev/flotilla/hub/dashboard"
)

const bench = "bench-dashboard"

func main() {
	clusters := flag.Int("clusters", 5000, "simulated ManagedClusters")
	loads := flag.Int("loads", 3, "fresh page loads timed for first_paint_ms")
	changes := flag.Int("changes", 10, "cluster status changes timed for update_ms")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	verbose := flag.Bool("v", false, "log the dashboard server to stderr")
	flag.Parse()
	if *clusters < *changes || *loads < 1 || *changes < 1 {
		benchenv.Exit(bench, fmt.Errorf("-clusters %d, -loads %d, -changes %d: need loads >= 1 and clusters >= changes >= 1", *clusters, *loads, *changes))
	}
	ctx, cancel := benchenv.Context(*timeout)
	defer cancel()
	line, err := run(ctx, *clusters, *loads, *changes, *verbose)
	if err != nil {
		cancel()
		benchenv.Exit(bench, err)
	}
	fmt.Println(line)
}

func run(ctx context.Context, n, loads, changes int, verbose bool) (line string, err error) {
	cp, err := benchenv.StartControlPlane(ctx, environment.ControlPlaneOptions{})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	c := cp.Client

	fmt.Fprintf(os.Stderr, "creating %d clusters\n", n)
	start := time.Now()
	regions := []string{"us-east", "us-west", "eu-central", "ap-south"}
	err = benchenv.Clusters{
		Set: "bench", Accepted: true,
		Labels: func(i int) map[string]string {
			return map[string]string{"region": regions[i%len(regions)], "env": []string{"prod", "staging"}[i%2]}
		},
		Status: func(i int, st *clusterv1.ManagedClusterStatus) {
			cpu := resource.MustParse(strconv.Itoa(4 + i%61))
			mem := resource.MustParse(strconv.Itoa(16+i%241) + "Gi")
			st.Capacity = clusterv1.ResourceList{clusterv1.ResourceCPU: cpu, clusterv1.ResourceMemory: mem}
			st.Allocatable = clusterv1.ResourceList{clusterv1.ResourceCPU: cpu, clusterv1.ResourceMemory: mem}
			st.Version = clusterv1.ManagedClusterVersion{Kubernetes: "v1.35.0"}
		},
		// The lease its registration agent would renew, which the page shows.
		Then: func(ctx context.Context, i int) error {
			now := metav1.NewMicroTime(time.Now())
			secs := int32(60)
			return c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: benchenv.ClusterName(i), Name: "managed-cluster-lease"},
				Spec: coordinationv1.LeaseSpec{RenewTime: &now, LeaseDurationSeconds: &secs}})
		},
	}.Create(ctx, c, n)
	if err != nil {
		return "", fmt.Errorf("creating %d clusters: %w", n, err)
	}
	fmt.Fprintf(os.Stderr, "created %d clusters in %s\n", n, time.Since(start).Round(time.Second))

	log := logr.Discard()
	if verbose {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	}
	token := strconv.FormatInt(time.Now().UnixNano(), 36)
	srv, err := dashboard.New(dashboard.Options{Config: cp.ClientConfig, Token: token, Logger: log})
	if err != nil {
		return "", fmt.Errorf("dashboard server: %w", err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Start(sctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	synced := make(chan error, 1)
	go func() { synced <- srv.WaitForSync(syncCtx) }()
	select {
	case err := <-synced:
		if err != nil {
			return "", fmt.Errorf("waiting for the dashboard server's watches to sync: %w", err)
		}
	case err := <-served:
		// Start ended before the watches synced (an unreachable hub, say).
		return "", fmt.Errorf("dashboard server stopped before its watches synced: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	dir, err := os.MkdirTemp("", "bench-dashboard-chromium-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bctx, closeBrowser, err := browser.Start(ctx, dir, 1440, 900)
	if err != nil {
		return "", err
	}
	defer closeBrowser()

	// The token's visit sets the session cookie; the timed loads are of the page itself.
	if _, err := load(bctx, hs.URL+"/?token="+token, n); err != nil {
		return "", fmt.Errorf("first visit with the token: %w", err)
	}
	var paints []float64
	var tab context.Context
	for i := range loads {
		t, closeTab := chromedp.NewContext(bctx)
		ms, err := load(t, hs.URL+"/", n)
		if err != nil {
			closeTab()
			return "", fmt.Errorf("load %d: %w", i+1, err)
		}
		fmt.Fprintf(os.Stderr, "load %d: first paint %.1f ms\n", i+1, ms)
		paints = append(paints, ms)
		if i < loads-1 {
			closeTab()
		} else {
			tab = t
			defer closeTab()
		}
	}

	updates, err := measureUpdates(ctx, tab, c, n, changes)
	if err != nil {
		return "", err
	}
	stop()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		return "", fmt.Errorf("dashboard server: %w", err)
	}
	return fmt.Sprintf("dashboard-%d first_paint_ms=%.1f update_ms=%.1f", n, median(paints), median(updates)), nil
}

// load opens url in tab (a fresh one, whose first Run opens it), waits until the page marked
// fleet-first-paint with the whole fleet counted, and returns the mark's startTime.
func load(tab context.Context, url string, n int) (float64, error) {
	if err := chromedp.Do(tab); err != nil {
		return 0, fmt.Errorf("opening a tab: %w", err)
	}
	if err := run1(tab, time.Minute, chromedp.Navigate(url)); err != nil {
		return 0, fmt.Errorf("navigating to %s: %w", url, err)
	}
	expr := fmt.Sprintf(`(() => {
  const m = performance.getEntriesByName("fleet-first-paint", "mark");
  const count = document.querySelector("#fleet-count");
  return m.length > 0 && count !== null && count.dataset.total === %q ? m[0].startTime : null })()`, strconv.Itoa(n))
	ms, err := poll[float64](tab, 3*time.Minute, "mark fleet-first-paint with #fleet-count data-total="+strconv.Itoa(n), expr)
	if err != nil {
		return 0, err
	}
	return ms, nil
}

// measureUpdates makes clusters unavailable one at a time and times each until the page's
// #fleet-summary counts it, in ms.
func measureUpdates(ctx context.Context, tab context.Context, c client.Client, n, changes int) ([]float64, error) {
	// Every change of #fleet-summary's data-unavailable, with the page's clock (ms since the
	// epoch, sub-millisecond where the browser allows).
	const recorder = `(() => {
  const seen = window.__benchUnavailable = [];
  let last = document.querySelector("#fleet-summary")?.dataset.unavailable;
  new MutationObserver(() => {
    const v = document.querySelector("#fleet-summary")?.dataset.unavailable;
    if (v !== last) { last = v; seen.push({t: performance.timeOrigin + performance.now(), v}); }
  }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ["data-unavailable", "id"]});
  return last ?? null })()`
	before, err := poll[string](tab, 30*time.Second, "#fleet-summary with data-unavailable", recorder)
	if err != nil {
		return nil, err
	}
	if before != "0" {
		return nil, fmt.Errorf("#fleet-summary data-unavailable is %s before any change, want 0", before)
	}
	var out []float64
	for k := range changes {
		name := benchenv.ClusterName(k * (n / changes))
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return nil, fmt.Errorf("reading ManagedCluster %s: %w", name, err)
		}
		orig := mc.DeepCopy()
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
			Status: metav1.ConditionFalse, Reason: "BenchUnavailable", Message: "made unavailable by bench-dashboard"})
		want := strconv.Itoa(k + 1)
		t0 := float64(time.Now().UnixMicro()) / 1000
		if err := c.Status().Patch(ctx, mc, client.MergeFrom(orig)); err != nil {
			return nil, fmt.Errorf("ManagedCluster %s: setting Available False: %w", name, err)
		}
		seen, err := poll[float64](tab, time.Minute, "#fleet-summary data-unavailable="+want,
			fmt.Sprintf(`(window.__benchUnavailable.find(e => e.v === %q) || {t: null}).t`, want))
		if err != nil {
			return nil, fmt.Errorf("change %d (%s): %w", k+1, name, err)
		}
		ms := seen - t0
		fmt.Fprintf(os.Stderr, "change %d (%s unavailable): shown after %.1f ms\n", k+1, name, ms)
		out = append(out, ms)
	}
	return out, nil
}

// run1 runs actions in tab within d.
func run1(tab context.Context, d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(tab, d)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// poll evaluates expr in tab every 20 ms until it is not null and returns it, failing after
// d naming what it waited for.
func poll[T any](tab context.Context, d time.Duration, what, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(tab, d)
	defer cancel()
	var last error
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[*T](expr))
		if err == nil && v != nil {
			return *v, nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			var zero T
			return zero, fmt.Errorf("waited %s for %s (last error: %v)", d, what, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
