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
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
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
	binary := flag.String("flotilla", "", "the flotilla binary to run the hub with (default: flotilla in the control-plane bin directory)")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	verbose := flag.Bool("v", false, "log the hub's output to stderr")
	flag.Parse()
	ctx, cancel := benchenv.Context(*timeout)
	defer cancel()
	bin, err := benchenv.Binary(*binary)
	if err != nil {
		benchenv.Exit("bench-rollout", err)
	}
	line, err := run(ctx, bin, *clusters, *verbose)
	if err != nil {
		benchenv.Exit("bench-rollout", err)
	}
	fmt.Println(line)
}

func run(ctx context.Context, binary string, n int, verbose bool) (line string, err error) {
	var logw io.Writer = io.Discard
	if verbose {
		logw = os.Stderr
	}
	ctrllog.SetLogger(logr.Discard())
	fmt.Fprintln(os.Stderr, "starting the hub API server")
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	c, cfg, scheme, err := benchenv.Client(cp)
	if err != nil {
		return "", err
	}

	metricsAddr, err := freeAddr()
	if err != nil {
		return "", err
	}
	hub, err := benchenv.StartHub(ctx, binary, cp.KubeconfigPath, logw,
		"--feature-gates", "DefaultClusterSet=false", "--kube-api-qps", "1000", "--kube-api-burst", "2000",
		"--metrics-bind-address", metricsAddr)
	if err != nil {
		return "", err
	}
	defer hub.Stop()

	fmt.Fprintf(os.Stderr, "creating %d clusters\n", n)
	if err := fleet(ctx, c, n); err != nil {
		return "", err
	}
	if err := waitDecided(ctx, c, n); err != nil {
		return "", err
	}
	stopAgent, err := fakeAgent(ctx, cfg, scheme, c)
	if err != nil {
		return "", err
	}
	defer stopAgent()

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
	for {
		got := &workv1alpha1.ManifestWorkReplicaSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(rs), got); err == nil && got.Status.Summary.Applied == n {
			break
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the rollout did not reach %d applied works: %w", n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	took := time.Since(start)
	fmt.Fprintf(os.Stderr, "%d clusters applied in %.2f s\n", n, took.Seconds())
	p50, count, err := reconcileP50(ctx, metricsAddr)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "%d reconciles of the replica set\n", count)
	return fmt.Sprintf("mwrs-%d rollout_s=%.2f reconcile_p50_ms=%.1f", n, took.Seconds(), p50*1000), nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// fleet creates the set, its binding in ns, n clusters in the set with their namespaces, and
// a placement selecting all of them.
func fleet(ctx context.Context, c client.Client, n int) error {
	if err := c.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: setName}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: setName}}); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			name := fmt.Sprintf("cluster-%04d", i)
			mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": setName}}}
			if err := c.Create(gctx, mc); err != nil {
				return err
			}
			orig := mc.DeepCopy()
			meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
				Status: metav1.ConditionTrue, Reason: "Simulated", Message: "simulated"})
			if err := c.Status().Patch(gctx, mc, client.MergeFrom(orig)); err != nil {
				return err
			}
			if err := c.Create(gctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	all := int32(n)
	return c.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"},
		Spec: clusterv1beta1.PlacementSpec{NumberOfClusters: &all}})
}

// waitDecided waits until the placement selects every cluster.
func waitDecided(ctx context.Context, c client.Client, n int) error {
	fmt.Fprintln(os.Stderr, "waiting for the placement's decisions")
	for {
		p := &clusterv1beta1.Placement{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "all"}, p); err == nil && int(p.Status.NumberOfSelectedClusters) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the placement did not select %d clusters: %w", n, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fakeAgent reports every generated ManifestWork Applied and Available for its generation as
// soon as it sees it, as the work agents of the clusters would, with 16 workers.
func fakeAgent(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, c client.Client) (func(), error) {
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	inf, err := ca.GetInformer(ctx, &workv1.ManifestWork{})
	if err != nil {
		return nil, err
	}
	queue := make(chan *workv1.ManifestWork, 4096)
	enqueue := func(obj any) {
		if w, ok := obj.(*workv1.ManifestWork); ok && !meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkAvailable) {
			queue <- w
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }}); err != nil {
		return nil, err
	}
	actx, cancel := context.WithCancel(ctx)
	go func() { _ = ca.Start(actx) }()
	if !ca.WaitForCacheSync(actx) {
		cancel()
		return nil, errors.New("work informer did not sync")
	}
	for range 16 {
		go func() {
			for {
				select {
				case <-actx.Done():
					return
				case w := <-queue:
					w = w.DeepCopy()
					now := metav1.Now()
					for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
						meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
							Reason: "Simulated", Message: "simulated", ObservedGeneration: w.Generation, LastTransitionTime: now})
					}
					_ = c.Status().Update(actx, w) // a conflict means a newer version is queued
				}
			}
		}()
	}
	return cancel, nil
}

// reconcileP50 estimates the median reconcile duration of the replica set controller from
// the hub's controller_runtime_reconcile_time_seconds histogram (linear within a bucket).
func reconcileP50(ctx context.Context, addr string) (float64, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the hub's metrics: %w", err)
	}
	defer resp.Body.Close()
	type bucket struct{ le, n float64 }
	var buckets []bucket
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	want := `controller="` + mwrs.ControllerName + `"`
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_bucket{") || !strings.Contains(line, want) {
			continue
		}
		_, le, _ := strings.Cut(line, `le="`)
		le, _, _ = strings.Cut(le, `"`)
		f := strings.Fields(line)
		cnt, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		bound := 1e18
		if le != "+Inf" {
			if bound, err = strconv.ParseFloat(le, 64); err != nil {
				continue
			}
		}
		buckets = append(buckets, bucket{bound, cnt})
	}
	if err := sc.Err(); err != nil {
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
