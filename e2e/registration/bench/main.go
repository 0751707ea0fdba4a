// Command bench measures how long a hub takes to register many clusters: it starts a hub and one
// managed control plane, runs N in-process klusterlets against that one managed API server (each
// with its own cluster name and agent namespace), accepts each cluster as soon as it registers,
// and prints, as its last line,
//
//	registration-<N> seconds=<time from the agents' start until all are Joined and Available>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func main() {
	n := flag.Int("clusters", 100, "number of clusters to register")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	verbose := flag.Bool("v", false, "log hub and agent errors to stderr")
	flag.Parse()
	ctx, cancel := benchenv.Context(*timeout)
	defer cancel()
	secs, err := run(ctx, *n, *verbose)
	if err != nil {
		benchenv.Exit("bench-registration", err)
	}
	fmt.Printf("registration-%d seconds=%.2f\n", *n, secs)
}

func run(ctx context.Context, n int, verbose bool) (secs float64, err error) {
	logw := benchenv.Log(verbose)
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(logw, prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(logger)
	fmt.Fprintf(os.Stderr, "starting hub and one managed control plane\n")
	fleet, err := environment.Start(ctx, environment.Options{ManagedClusters: 1})
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, fleet.Stop()) }()

	hubCfg := *fleet.Hub.Config
	// 100 clusters mean hundreds of RBAC objects and status writes; lift client-side throttling.
	hubCfg.QPS, hubCfg.Burst = 200, 400
	h, err := manager.New(manager.Options{Config: &hubCfg, SkipCRDInstall: true, Logger: logger.WithName("hub")})
	if err != nil {
		return 0, err
	}
	if err := h.Prepare(ctx); err != nil {
		return 0, err
	}
	runCtx, stopAll := context.WithCancel(ctx)
	done := make(chan error, n+1)
	go func() { done <- h.Run(runCtx) }()
	running := 1
	defer func() {
		stopAll()
		for range running {
			if e := <-done; e != nil {
				err = errors.Join(err, e)
			}
		}
	}()

	bootstrapKC, err := bootstrap.Kubeconfig(ctx, fleet.Hub.Config, time.Hour)
	if err != nil {
		return 0, err
	}
	managed := fleet.Managed[0]
	managedKube, err := kubernetes.NewForConfig(managed.Config)
	if err != nil {
		return 0, err
	}
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("bench-%03d", i)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + names[i]}}
		if _, err := managedKube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("creating agent namespace %s: %w", ns.Name, err)
		}
	}

	fmt.Fprintf(os.Stderr, "starting %d klusterlets\n", n)
	start := time.Now()
	for _, name := range names {
		opts := klusterlet.Options{Registration: registration.Config{
			ClusterName: name, ManagedConfig: managed.Config, BootstrapKubeconfig: bootstrapKC,
			AgentNamespace: "agent-" + name, Logger: logger.WithName("klusterlet").WithValues("cluster", name),
			RetryInitial: 500 * time.Millisecond, RetryMax: 5 * time.Second,
		}}
		go func() { done <- klusterlet.Run(runCtx, opts) }()
		running++
	}
	if err := acceptAll(ctx, fleet, names, logger); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// acceptAll accepts each cluster once it has registered, until all are Joined and Available.
func acceptAll(ctx context.Context, fleet *environment.Fleet, names []string, log logr.Logger) error {
	scheme, err := manager.NewScheme()
	if err != nil {
		return err
	}
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(fleet.Hub.Config)
	if err != nil {
		return err
	}
	accepted := map[string]bool{}
	lastReport := time.Now()
	for {
		var pending []string
		for _, name := range names {
			if !accepted[name] {
				pending = append(pending, name)
			}
		}
		if len(pending) > 0 {
			results, err := admin.Accept(ctx, c, kube, pending)
			for _, r := range results {
				accepted[r.Cluster] = true
			}
			if err != nil {
				log.V(1).Info("not all clusters could be accepted yet", "error", err)
			}
		}
		list := &clusterv1.ManagedClusterList{}
		if err := c.List(ctx, list); err != nil {
			return fmt.Errorf("listing ManagedClusters: %w", err)
		}
		ready := 0
		for i := range list.Items {
			conds := list.Items[i].Status.Conditions
			if meta.IsStatusConditionTrue(conds, clusterv1.ManagedClusterConditionJoined) &&
				meta.IsStatusConditionTrue(conds, clusterv1.ManagedClusterConditionAvailable) {
				ready++
			}
		}
		if ready >= len(names) {
			return nil
		}
		if time.Since(lastReport) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "%d/%d accepted, %d/%d joined and available\n", len(accepted), len(names), ready, len(names))
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d clusters Joined and Available: %w", ready, len(names), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
