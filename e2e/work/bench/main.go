// Command bench measures one work agent's throughput: it starts a hub and one managed control
// plane, runs the hub in-process and the klusterlet as its own process (bin/flotilla klusterlet,
// so its memory can be read), then creates 100 ManifestWorks (one ConfigMap each) one after
// another, each waited for until Applied, then 1,000 at once. It prints a table of the hub
// writes to ManifestWorks per work in each phase (from the hub API server's
// apiserver_request_total, the bench's own creates taken out), then as its last line
//
//	work-apply p50_ms=<create→Applied on the hub, median of the 100> p99_ms=<…> fanout_1000_s=<time until all 1,000 are Applied> agent_rss_mib=<klusterlet RSS after the fan-out>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr/funcr"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
)

const cluster = "cluster1"

func main() {
	sequential := flag.Int("sequential", 100, "works created one after another")
	fanout := flag.Int("fanout", 1000, "works created at once")
	binary := flag.String("flotilla", "", "the flotilla binary to run the klusterlet with (default: flotilla in the control-plane bin directory)")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	verbose := flag.Bool("v", false, "log hub and agent output to stderr")
	profileDir := flag.String("profile", "", "write CPU profiles to this directory: hub.cpu.pprof (the in-process hub and the bench, whole run) and agent.cpu.pprof (the klusterlet, from the start of the fan-out for -profile-seconds)")
	profileSeconds := flag.Int("profile-seconds", 20, "how long the klusterlet's profile runs (with -profile)")
	flag.Parse()
	ctx, cancel := benchenv.Context(*timeout)
	defer cancel()
	bin, err := benchenv.Binary(*binary)
	if err != nil {
		benchenv.Exit("bench-work", err)
	}
	line, err := run(ctx, bin, *sequential, *fanout, *verbose, profile{dir: *profileDir, seconds: *profileSeconds})
	if err != nil {
		benchenv.Exit("bench-work", err)
	}
	fmt.Println(line)
}

// profile says where CPU profiles go ("" dir: none).
type profile struct {
	dir     string
	seconds int
}

func run(ctx context.Context, binary string, sequential, fanout int, verbose bool, prof profile) (line string, err error) {
	logw := benchenv.Log(verbose)
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(logw, prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(logger)
	fmt.Fprintln(os.Stderr, "starting hub and one managed control plane")
	fleet, err := environment.Start(ctx, environment.Options{ManagedClusters: 1})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, fleet.Stop()) }()

	hubCfg := *fleet.Hub.Config
	hubCfg.QPS, hubCfg.Burst = 500, 1000
	h, err := manager.New(manager.Options{Config: &hubCfg, SkipCRDInstall: true, Logger: logger.WithName("hub")})
	if err != nil {
		return "", err
	}
	if err := h.Prepare(ctx); err != nil {
		return "", err
	}
	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()
	hubDone := make(chan error, 1)
	go func() { hubDone <- h.Run(runCtx) }()
	defer func() {
		stopAll()
		err = errors.Join(err, <-hubDone)
	}()

	boot, err := bootstrap.Kubeconfig(ctx, fleet.Hub.Config, time.Hour)
	if err != nil {
		return "", err
	}
	bootFile := filepath.Join(fleet.Managed[0].Dir, "bootstrap.kubeconfig")
	if err := os.WriteFile(bootFile, boot, 0o600); err != nil {
		return "", err
	}
	args := []string{"klusterlet", "--kubeconfig", fleet.Managed[0].KubeconfigPath, "--cluster-name", cluster, "--bootstrap-kubeconfig", bootFile}
	var pprofAddr string
	if prof.dir != "" {
		if err := os.MkdirAll(prof.dir, 0o755); err != nil {
			return "", err
		}
		if pprofAddr, err = benchenv.FreeAddr(); err != nil {
			return "", err
		}
		args = append(args, "--pprof-bind-address", pprofAddr)
		stop, err := profileSelf(filepath.Join(prof.dir, "hub.cpu.pprof"))
		if err != nil {
			return "", err
		}
		defer stop()
	}
	agent := exec.CommandContext(runCtx, binary, args...)
	agent.Stdout, agent.Stderr = logw, logw
	if err := agent.Start(); err != nil {
		return "", fmt.Errorf("starting %s klusterlet: %w", binary, err)
	}
	defer func() { _ = agent.Process.Kill(); _ = agent.Wait() }()

	scheme, err := manager.NewScheme()
	if err != nil {
		return "", err
	}
	c, err := client.NewWithWatch(&hubCfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	if err := accept(ctx, c, kubernetes.NewForConfigOrDie(&hubCfg)); err != nil {
		return "", err
	}

	hubURL := hubCfg.Host
	writesBefore, err := workWrites(ctx, &hubCfg, hubURL)
	if err != nil {
		return "", err
	}
	managed := fleet.Managed[0]
	hubLatBefore, err := readLatencies(ctx, &hubCfg, hubURL)
	if err != nil {
		return "", err
	}
	managedLatBefore, err := readLatencies(ctx, managed.Config, managed.URL)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "creating %d ManifestWorks one after another\n", sequential)
	lat := make([]time.Duration, 0, sequential)
	// The create's own share (the API server, its admission webhooks) of each latency.
	creates := make([]time.Duration, 0, sequential)
	for i := range sequential {
		start := time.Now()
		w := work(fmt.Sprintf("seq-%04d", i))
		if err := c.Create(ctx, w); err != nil {
			return "", err
		}
		creates = append(creates, time.Since(start))
		if err := waitApplied(ctx, c, map[string]bool{w.Name: true}); err != nil {
			return "", err
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(creates, func(i, j int) bool { return creates[i] < creates[j] })
	fmt.Fprintf(os.Stderr, "create call p50 %.1f ms of create→Applied p50 %.1f ms\n", ms(quantile(creates, 0.5)), ms(quantile(lat, 0.5)))
	if err := settleWrites(ctx, &hubCfg, hubURL); err != nil {
		return "", err
	}
	writesSeq, err := workWrites(ctx, &hubCfg, hubURL)
	if err != nil {
		return "", err
	}
	hubLat, err := readLatencies(ctx, &hubCfg, hubURL)
	if err != nil {
		return "", err
	}
	managedLat, err := readLatencies(ctx, managed.Config, managed.URL)
	if err != nil {
		return "", err
	}

	fmt.Fprintf(os.Stderr, "creating %d ManifestWorks at once\n", fanout)
	names := map[string]bool{}
	for i := range fanout {
		names[fmt.Sprintf("fan-%04d", i)] = true
	}
	var agentProfile chan error
	if prof.dir != "" {
		agentProfile = make(chan error, 1)
		go func() {
			agentProfile <- fetchProfile(ctx, pprofAddr, prof.seconds, filepath.Join(prof.dir, "agent.cpu.pprof"))
		}()
	}
	start := time.Now()
	waited := make(chan error, 1)
	go func() { waited <- waitApplied(ctx, c, names) }()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for n := range names {
		g.Go(func() error { return c.Create(gctx, work(n)) })
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	if err := <-waited; err != nil {
		return "", err
	}
	fan := time.Since(start)
	rss, err := environment.RSSMiB(agent.Process.Pid)
	if err != nil {
		return "", err
	}
	if agentProfile != nil {
		if err := <-agentProfile; err != nil {
			return "", err
		}
	}
	// Status writes that trail Applied (Available, a retry) land within moments.
	if err := settleWrites(ctx, &hubCfg, hubURL); err != nil {
		return "", err
	}
	writesFan, err := workWrites(ctx, &hubCfg, hubURL)
	if err != nil {
		return "", err
	}
	fmt.Println("phase       works  hub writes to ManifestWorks (bench creates excluded)  per work")
	printWrites("sequential", sequential, writesBefore, writesSeq)
	printWrites("fan-out", fanout, writesSeq, writesFan)
	fmt.Printf("\nsequential phase: writes on each API server, mean ms (the path of one work: the create\n" +
		"on the hub, the AppliedManifestWork and the manifest on the managed cluster, the status on the hub)\n")
	fmt.Printf("%-8s  %-42s  %5s  %7s\n", "server", "request", "count", "mean_ms")
	printLatencies("hub", hubLatBefore, hubLat)
	printLatencies("managed", managedLatBefore, managedLat)
	return fmt.Sprintf("work-apply p50_ms=%.1f p99_ms=%.1f fanout_%d_s=%.2f agent_rss_mib=%.1f",
		ms(quantile(lat, 0.50)), ms(quantile(lat, 0.99)), fanout, fan.Seconds(), rss), nil
}

func work(name string) *workv1.ManifestWork {
	raw := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"k":"v"}}`, name)
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(raw)}}}}}}
}

// accept accepts the cluster as soon as it registers and waits until it is Available.
func accept(ctx context.Context, c client.Client, kube kubernetes.Interface) error {
	for {
		if _, err := admin.Accept(ctx, c, kube, []string{cluster}); err == nil {
			mc := &clusterv1.ManagedCluster{}
			if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err == nil &&
				meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to join: %w", cluster, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitApplied watches the cluster's ManifestWorks until every named one is Applied.
func waitApplied(ctx context.Context, c client.WithWatch, names map[string]bool) error {
	left := map[string]bool{}
	for n := range names {
		left[n] = true
	}
	var mu sync.Mutex
	check := func(w *workv1.ManifestWork) {
		if meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) {
			mu.Lock()
			delete(left, w.Name)
			mu.Unlock()
		}
	}
	for len(left) > 0 {
		list := &workv1.ManifestWorkList{}
		if err := c.List(ctx, list, client.InNamespace(cluster)); err != nil {
			return err
		}
		for i := range list.Items {
			check(&list.Items[i])
		}
		if len(left) == 0 {
			return nil
		}
		w, err := c.Watch(ctx, &workv1.ManifestWorkList{}, client.InNamespace(cluster), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if mw, ok := ev.Object.(*workv1.ManifestWork); ok && ev.Type != watch.Deleted {
				check(mw)
			}
			if len(left) == 0 {
				break
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("%d ManifestWorks not Applied: %w", len(left), ctx.Err())
		}
	}
	return nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
