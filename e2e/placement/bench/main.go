// Command bench measures the placement controller in OCM's benchmark shapes: a hub API server
// with N simulated ManagedClusters (status with allocatable CPU and memory, an
// AddOnPlacementScore each) in one bound set, the hub as its own process (bin/flotilla hub, so
// its memory can be read), then 1,000 and 10,000 Placements, each numberOfClusters: 10 with the
// AddOn score, ResourceAllocatableCPU and Balance prioritizers, timed from the first create
// until every placement has its decisions written (status numberOfSelectedClusters 10).
// Before the hub starts, the same run times the writes alone at both sizes (the floor: what the
// API server of this machine needs whatever the scheduler does, see floor). It prints as its
// last line
//
//	placement p1000x1000_s=<…> p10000x1000_s=<…> hub_rss_mib=<hub RSS after the second run>
//	  floor_p1000x1000_s=<…> floor_p10000x1000_s=<…> ratio_p1000x1000=<…> ratio_p10000x1000=<…>
//	  floor_ratio=<the larger of the two ratios, hub time / floor time>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
)

// pprofAddr, when set, is passed to flotilla hub --pprof-bind-address.
var pprofAddr string

// apiserverProfile, when set, receives a CPU profile of kube-apiserver taken during the first run.
var apiserverProfile string

// floorRun, when set, times the writes alone only: no hub, a client doing for each placement
// exactly what the placement controller must write (see floor).
var floorRun bool

// withBuiltIns adds the Wasm built-in prioritizers to the benchmark placement.
var withBuiltIns = true

const (
	setName   = "bench"
	scoreName = "bench-score"
)

func main() {
	clusters := flag.Int("clusters", 1000, "simulated ManagedClusters")
	small := flag.Int("small", 1000, "placements of the first run")
	large := flag.Int("large", 10000, "placements of the second run")
	flag.StringVar(&pprofAddr, "pprof", "", "have the hub serve Go profiles at this address, e.g. 127.0.0.1:6060")
	flag.StringVar(&apiserverProfile, "apiserver-profile", "", "write a CPU profile of kube-apiserver during the first run to this file (go tool pprof reads it)")
	flag.BoolVar(&floorRun, "floor", false, "time only the API writes alone (no hub, no scheduling) in the same shapes: the API server's floor on this machine (the default run times it too, before the hub starts)")
	flag.BoolVar(&withBuiltIns, "builtins", true, "score with the Wasm built-ins ResourceAllocatableCPU and Balance besides the AddOn score (false: the AddOn score alone, to see the rest of the cost)")
	benchenv.Main("bench-placement", 45*time.Minute, func(ctx context.Context, binary string, verbose bool) (string, error) {
		return run(ctx, binary, *clusters, *small, *large, verbose)
	})
}

func run(ctx context.Context, binary string, clusters, small, large int, verbose bool) (line string, err error) {
	cp, err := benchenv.StartControlPlane(ctx, environment.ControlPlaneOptions{Profiling: apiserverProfile != ""})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	c, cfg := cp.Client, cp.ClientConfig

	fmt.Fprintf(os.Stderr, "creating %d clusters with their scores\n", clusters)
	if err := fleet(ctx, c, clusters); err != nil {
		return "", err
	}
	// The floor first, on the same API server, before the hub starts (it would react to the
	// floor's placements); its objects are deleted before the hub runs.
	floorSecs, err := runFloor(ctx, cp, small, large)
	if err != nil {
		return "", err
	}
	floorLine := fmt.Sprintf("p%dx%d_s=%.2f p%dx%d_s=%.2f", small, clusters, floorSecs[0], large, clusters, floorSecs[1])
	if floorRun {
		return "placement-floor " + floorLine, nil
	}
	for i := range floorSecs {
		if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace(i)}}); err != nil {
			return "", err
		}
	}
	if err := gone(ctx, c, floorNamespace(0), floorNamespace(1)); err != nil {
		return "", err
	}

	hub, err := benchenv.StartHub(ctx, binary, cp, benchenv.Log(verbose),
		benchenv.HubOptions{FeatureGates: "DefaultClusterSet=false", Args: []string{"--pprof-bind-address", pprofAddr}})
	if err != nil {
		return "", err
	}
	defer hub.Stop()

	if err := waitReady(ctx, c); err != nil {
		return "", err
	}
	if err := settle(ctx, cfg, cp.URL); err != nil {
		return "", err
	}

	watcher, err := newWatcher(ctx, cfg, cp.Scheme)
	if err != nil {
		return "", err
	}
	pids := append([]int{hub.Pid()}, cp.PIDs()...)
	before := cpu(pids)
	profiled := make(chan error, 1)
	if apiserverProfile != "" {
		go func() { profiled <- profile(ctx, cfg, cp.URL, apiserverProfile) }()
	} else {
		profiled <- nil
	}
	reqsBefore, err := requests(ctx, cfg, cp.URL)
	if err != nil {
		return "", err
	}
	smallTime, err := decide(ctx, c, watcher, "bench-small", small)
	if err != nil {
		return "", err
	}
	if err := reportRequests(ctx, cfg, cp.URL, reqsBefore); err != nil {
		return "", err
	}
	if err := <-profiled; err != nil {
		return "", err
	}
	before = reportCPU(pids, before)
	fmt.Fprintf(os.Stderr, "%d placements × %d clusters: %.2f s\n", small, clusters, smallTime.Seconds())
	if err := c.DeleteAllOf(ctx, &clusterv1beta1.Placement{}, client.InNamespace("bench-small")); err != nil {
		return "", err
	}
	// The garbage collector deletes the small run's decisions; the large run starts after.
	if err := settle(ctx, cfg, cp.URL); err != nil {
		return "", err
	}
	before = cpu(pids)
	largeTime, err := decide(ctx, c, watcher, "bench-large", large)
	if err != nil {
		return "", err
	}
	reportCPU(pids, before)
	fmt.Fprintf(os.Stderr, "%d placements × %d clusters: %.2f s\n", large, clusters, largeTime.Seconds())
	rss, err := environment.RSSMiB(hub.Pid())
	if err != nil {
		return "", err
	}
	rs, rl := smallTime.Seconds()/floorSecs[0], largeTime.Seconds()/floorSecs[1]
	return fmt.Sprintf("placement p%dx%d_s=%.2f p%dx%d_s=%.2f hub_rss_mib=%.1f floor_%s ratio_p%dx%d=%.2f ratio_p%dx%d=%.2f floor_ratio=%.2f",
		small, clusters, smallTime.Seconds(), large, clusters, largeTime.Seconds(), rss,
		strings.ReplaceAll(floorLine, " p", " floor_p"), small, clusters, rs, large, clusters, rl, max(rs, rl)), nil
}

func floorNamespace(i int) string { return fmt.Sprintf("floor-%d", i) }

// gone waits until the namespaces are deleted (kube-controller-manager empties them).
func gone(ctx context.Context, c client.Client, names ...string) error {
	fmt.Fprintln(os.Stderr, "deleting the floor's objects")
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			return fmt.Errorf("namespace %s was not deleted: %w", name, err)
		}
	}
	return nil
}

// fleet creates the set and the clusters in it, with allocatable CPU and memory, and an
// AddOnPlacementScore in each cluster's namespace.
func fleet(ctx context.Context, c client.Client, n int) error {
	return benchenv.Clusters{Set: setName,
		Status: func(i int, status *clusterv1.ManagedClusterStatus) {
			status.Allocatable = clusterv1.ResourceList{
				clusterv1.ResourceCPU:    *resource.NewQuantity(int64(4+i%60), resource.DecimalSI),
				clusterv1.ResourceMemory: *resource.NewQuantity(int64(16+i%200)<<30, resource.BinarySI),
			}
			status.Capacity = status.Allocatable
		},
		Then: func(ctx context.Context, i int) error {
			score := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: benchenv.ClusterName(i), Name: scoreName}}
			if err := c.Create(ctx, score); err != nil {
				return err
			}
			score.Status.Scores = []clusterv1alpha1.AddOnPlacementScoreItem{{Name: "cpuratio", Value: int32(i%201 - 100)}}
			return c.Status().Update(ctx, score)
		},
	}.Create(ctx, c, n)
}

// waitReady waits until a probe placement with the benchmark's prioritizers is decided: the
// hub runs and its built-in prioritizer plugins are loaded.
func waitReady(ctx context.Context, c client.Client) error {
	fmt.Fprintln(os.Stderr, "waiting for the hub and its prioritizers")
	if err := benchenv.Bind(ctx, c, "bench-probe", setName); err != nil {
		return err
	}
	p := placement("bench-probe", "probe")
	if err := c.Create(ctx, p); err != nil {
		return err
	}
	for {
		got := &clusterv1beta1.Placement{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err == nil && got.Status.NumberOfSelectedClusters == 10 {
			return c.Delete(ctx, got)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the probe placement was not decided: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// placement is OCM's benchmark placement: 10 clusters by the AddOn score,
// ResourceAllocatableCPU and Balance.
func placement(ns, name string) *clusterv1beta1.Placement {
	ten := int32(10)
	configs := []clusterv1beta1.PrioritizerConfig{
		{ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeAddOn,
			AddOn: &clusterv1beta1.AddOnScore{ResourceName: scoreName, ScoreName: "cpuratio"}}, Weight: 1},
	}
	if withBuiltIns {
		configs = append(configs,
			clusterv1beta1.PrioritizerConfig{ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn,
				BuiltIn: clusterv1beta1.PrioritizerResourceAllocatableCPU}, Weight: 1},
			clusterv1beta1.PrioritizerConfig{ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn,
				BuiltIn: clusterv1beta1.PrioritizerBalance}, Weight: 1})
	}
	return &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1beta1.PlacementSpec{
			NumberOfClusters:  &ten,
			PrioritizerPolicy: clusterv1beta1.PrioritizerPolicy{Mode: clusterv1beta1.PrioritizerPolicyModeExact, Configurations: configs},
		},
	}
}

// watcher counts decided placements per namespace from an informer.
type watcher struct {
	decided map[string]*atomic.Int64
	seen    *seenSet
}

func newWatcher(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (*watcher, error) {
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	inf, err := ca.GetInformer(ctx, &clusterv1beta1.Placement{})
	if err != nil {
		return nil, err
	}
	w := &watcher{decided: map[string]*atomic.Int64{"bench-small": {}, "bench-large": {}}, seen: newSeenSet()}
	count := func(obj any) {
		p, ok := obj.(*clusterv1beta1.Placement)
		if !ok || p.Status.NumberOfSelectedClusters != 10 {
			return
		}
		if n, ok := w.decided[p.Namespace]; ok && w.seen.add(p.Namespace+"/"+p.Name) {
			n.Add(1)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    count,
		UpdateFunc: func(_, obj any) { count(obj) },
	}); err != nil {
		return nil, err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, errors.New("placement informer did not sync")
	}
	return w, nil
}

// decide creates n placements in ns and returns the time until all are decided.
func decide(ctx context.Context, c client.Client, w *watcher, ns string, n int) (time.Duration, error) {
	if err := benchenv.Bind(ctx, c, ns, setName); err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "creating %d placements in %s\n", n, ns)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error { return c.Create(gctx, placement(ns, fmt.Sprintf("placement-%05d", i))) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	created := time.Since(start)
	for w.decided[ns].Load() < int64(n) {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%d of %d placements decided in %s: %w", w.decided[ns].Load(), n, ns, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	fmt.Fprintf(os.Stderr, "  created in %.2f s, decided in %.2f s\n", created.Seconds(), time.Since(start).Seconds())
	return time.Since(start), nil
}

// settle waits until the API server has served no write (but lease renewals) for two seconds: what the fleet's
// creation set off (the hub's registration controllers, kube-controller-manager's
// namespace controllers, the garbage collector) is done and not counted in the runs.
func settle(ctx context.Context, cfg *rest.Config, url string) error {
	writes := func() (float64, error) {
		reqs, err := requests(ctx, cfg, url)
		var n float64
		for k, v := range reqs {
			// Lease renewals go on forever; they are not the fleet's creation.
			if verb, res, _ := strings.Cut(k, " "); verb != "GET" && verb != "LIST" && res != "leases" {
				n += v
			}
		}
		return n, err
	}
	return benchenv.Settle(ctx, "the API server to settle", 500*time.Millisecond, 2*time.Second, writes)
}

// requests reads the API server's request counts per verb and resource (apiserver_request_total).
func requests(ctx context.Context, cfg *rest.Config, url string) (map[string]float64, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	err = benchenv.Metrics(ctx, hc, url+"/metrics", func(s benchenv.Sample) {
		verb, res, sub := s.Label("verb"), s.Label("resource"), s.Label("subresource")
		if s.Name != "apiserver_request_total" || verb == "WATCH" || verb == "CONNECT" {
			return
		}
		if sub != "" {
			res += "/" + sub
		}
		out[verb+" "+res] += s.Value
	})
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver metrics: %w", err)
	}
	return out, nil
}

// reportRequests prints the requests the API server served since before, most first: where
// its time went.
func reportRequests(ctx context.Context, cfg *rest.Config, url string, before map[string]float64) error {
	now, err := requests(ctx, cfg, url)
	if err != nil {
		return err
	}
	type kv struct {
		k string
		n float64
	}
	var diff []kv
	for k, n := range now {
		if d := n - before[k]; d >= 1 {
			diff = append(diff, kv{k, d})
		}
	}
	sort.Slice(diff, func(i, j int) bool { return diff[i].n > diff[j].n })
	fmt.Fprint(os.Stderr, "  API requests:")
	for _, e := range diff {
		fmt.Fprintf(os.Stderr, " %s=%.0f", e.k, e.n)
	}
	fmt.Fprintln(os.Stderr)
	return nil
}

// profile writes a CPU profile of the API server at url (5 s) to path.
func profile(ctx context.Context, cfg *rest.Config, url, path string) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	return benchenv.FetchProfile(ctx, hc, url+"/debug/pprof/profile?seconds=5", path, "kube-apiserver")
}

// runFloor times the API writes alone in both shapes, with no hub (the fleet exists): what the
// API server of this machine needs whatever the scheduler does. It returns the seconds of each.
func runFloor(ctx context.Context, cp *benchenv.ControlPlane, small, large int) ([]float64, error) {
	c := cp.Client
	if err := settle(ctx, rest.CopyConfig(cp.Config), cp.URL); err != nil {
		return nil, err
	}
	var secs []float64
	for i, n := range []int{small, large} {
		pids := cp.PIDs()
		before := cpu(pids)
		t, err := floor(ctx, c, floorNamespace(i), n)
		if err != nil {
			return nil, err
		}
		reportCPU(pids, before)
		fmt.Fprintf(os.Stderr, "%d placements' writes alone: %.2f s\n", n, t.Seconds())
		secs = append(secs, t.Seconds())
		if err := settle(ctx, rest.CopyConfig(cp.Config), cp.URL); err != nil {
			return nil, err
		}
	}
	return secs, nil
}

// floor does, with the same concurrency as the hub's workers, the writes the placement
// controller cannot avoid for n new placements, with nothing decided: the user's create, the
// PlacementDecision's create and its status (ten clusters), the placement's status. The time
// is what the API server alone needs on this machine.
func floor(ctx context.Context, c client.Client, ns string, n int) (time.Duration, error) {
	if err := benchenv.Bind(ctx, c, ns, setName); err != nil {
		return 0, err
	}
	start := time.Now()
	created := make(chan *clusterv1beta1.Placement, n)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(created)
		cg, cctx := errgroup.WithContext(gctx)
		cg.SetLimit(32)
		for i := range n {
			cg.Go(func() error {
				p := placement(ns, fmt.Sprintf("placement-%05d", i))
				if err := c.Create(cctx, p); err != nil {
					return err
				}
				created <- p
				return nil
			})
		}
		return cg.Wait()
	})
	for range 16 {
		g.Go(func() error {
			for p := range created {
				d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name + "-decision-1",
					Labels: map[string]string{clusterv1beta1.PlacementLabel: p.Name, clusterv1beta1.DecisionGroupIndexLabel: "0",
						clusterv1beta1.DecisionGroupNameLabel: ""},
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p, clusterv1beta1.GroupVersion.WithKind("Placement"))}}}
				if err := c.Create(gctx, d); err != nil {
					return err
				}
				orig := d.DeepCopy()
				for j := range 10 {
					d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: benchenv.ClusterName(j), Score: int64(j)})
				}
				if err := c.Status().Patch(gctx, d, client.MergeFrom(orig)); err != nil {
					return err
				}
				orig2 := p.DeepCopy()
				now := metav1.Now()
				p.Status = clusterv1beta1.PlacementStatus{NumberOfSelectedClusters: 10, LastScoreUpdateTime: &now,
					DecisionGroups: []clusterv1beta1.DecisionGroupStatus{{DecisionGroupIndex: 0, Decisions: []string{d.Name}, ClustersCount: 10}},
					Conditions: []metav1.Condition{
						{Type: clusterv1beta1.PlacementConditionMisconfigured, Status: metav1.ConditionFalse, Reason: clusterv1beta1.PlacementReasonSucceedconfigured, Message: "Placement configurations check pass", LastTransitionTime: now},
						{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionTrue, Reason: clusterv1beta1.PlacementReasonAllDecisionsScheduled, Message: "All cluster decisions scheduled", LastTransitionTime: now},
					}}
				if err := c.Status().Patch(gctx, p, client.MergeFrom(orig2)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// seenSet remembers placements already counted.
type seenSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func newSeenSet() *seenSet { return &seenSet{m: map[string]bool{}} }

// add reports whether key is new.
func (s *seenSet) add(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key] {
		return false
	}
	s.m[key] = true
	return true
}

// cpu reads the CPU seconds each process has used.
func cpu(pids []int) map[int]float64 {
	out := map[int]float64{}
	for _, pid := range pids {
		if _, s, err := environment.CPUSeconds(pid); err == nil {
			out[pid] = s
		}
	}
	return out
}

// reportCPU prints the CPU each process used since before, and returns the new readings.
func reportCPU(pids []int, before map[int]float64) map[int]float64 {
	now := map[int]float64{}
	fmt.Fprint(os.Stderr, "  CPU seconds:")
	for _, pid := range pids {
		name, s, err := environment.CPUSeconds(pid)
		if err != nil {
			continue
		}
		now[pid] = s
		fmt.Fprintf(os.Stderr, " %s=%.1f", name, s-before[pid])
	}
	fmt.Fprintln(os.Stderr)
	return now
}
