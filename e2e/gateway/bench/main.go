// Command bench measures requests and watches through the hub's cluster-gateway (make
// bench-proxy): it starts a hub and one managed control plane, the hub in-process with the
// built-in add-ons cluster-proxy, managed-serviceaccount and cluster-gateway, and one in-process
// klusterlet (with the identities the klusterlet chart gives it) running their agents. Then:
//
//  1. -warmup, then -requests sequential GET /api/v1/namespaces/default through the gateway
//     (hub kube-apiserver, aggregator, hub, cluster-proxy tunnel, managed kube-apiserver), as
//     the hub's admin;
//  2. the same, direct to the managed API server with the gateway's ServiceAccount token;
//  3. -watches concurrent watches of ConfigMaps through the gateway (one agent stream), opened
//     -opening at a time, one ConfigMap created once all are open, and the number of watches
//     that saw it ADDED within 30 s.
//
// Its last line is
//
//	proxy-get p50_ms=<1> p99_ms=<1> direct_p50_ms=<2> streams_<N>_ok=<3>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
	"github.com/flotilla-dev/flotilla/e2e/internal/metricstest"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/join"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

const (
	cluster = "cluster1"
	// benchNS is the managed cluster's namespace the watches watch.
	benchNS = "bench-proxy"
	// seenWithin bounds the wait for the ConfigMap on every watch.
	seenWithin = 30 * time.Second
)

type options struct {
	warmup, requests, watches, opening int
	verbose                            bool
}

func main() {
	var o options
	flag.IntVar(&o.warmup, "warmup", 50, "requests before the measured ones, through the gateway and direct")
	flag.IntVar(&o.requests, "requests", 500, "measured sequential GETs through the gateway, and as many direct")
	flag.IntVar(&o.watches, "watches", 1000, "concurrent watches through the gateway")
	flag.IntVar(&o.opening, "opening", 50, "watches being opened at a time (see watches)")
	timeout := flag.Duration("timeout", 110*time.Second, "give up after this long")
	flag.BoolVar(&o.verbose, "v", false, "log the hub's and the klusterlet's output to stderr")
	flag.Parse()
	ctx, cancel := benchenv.Context(*timeout)
	defer cancel()
	line, err := run(ctx, o)
	if err != nil {
		benchenv.Exit("bench-proxy", err)
	}
	fmt.Println(line)
}

func run(ctx context.Context, o options) (line string, err error) {
	start := time.Now()
	logw := benchenv.Log(o.verbose)
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(logw, prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(logger)
	progress("starting the hub and one managed control plane")
	fleet, err := environment.Start(ctx, environment.Options{ManagedClusters: 1})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, fleet.Stop()) }()
	managed := fleet.Managed[0]

	h, err := manager.New(manager.Options{Config: fleet.Hub.Config, SkipCRDInstall: true, Addons: builtin.Names(), Logger: logger.WithName("hub")})
	if err != nil {
		return "", err
	}
	if err := h.Prepare(ctx); err != nil {
		return "", err
	}
	runCtx, stopAll := context.WithCancel(ctx)
	done := make(chan error, 2)
	running := 0
	defer func() {
		stopAll()
		for range running {
			if e := <-done; e != nil && !errors.Is(e, context.Canceled) {
				err = errors.Join(err, e)
			}
		}
	}()
	go func() { done <- h.Run(runCtx) }()
	running++

	// The klusterlet as fleettest runs it: the chart's identities, the hub's bootstrap kubeconfig.
	bootstrapKC, err := bootstrap.Kubeconfig(ctx, fleet.Hub.Config, time.Hour)
	if err != nil {
		return "", err
	}
	agent, workSA, err := install.KlusterletIdentity(runCtx, managed.Config, join.DefaultKlusterletName, registration.DefaultAgentNamespace)
	if err != nil {
		return "", fmt.Errorf("installing the klusterlet's identities: %w", err)
	}
	kopts := klusterlet.Options{
		Registration: registration.Config{ClusterName: cluster, ManagedConfig: agent, BootstrapKubeconfig: bootstrapKC,
			LeaseDurationSeconds: 10, RetryInitial: 200 * time.Millisecond, RetryMax: 2 * time.Second,
			Logger: logger.WithName("klusterlet")},
		Work: klusterlet.WorkOptions{ServiceAccount: workSA},
	}
	go func() { done <- klusterlet.Run(runCtx, kopts) }()
	running++

	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: h.Manager().GetScheme()})
	if err != nil {
		return "", err
	}
	hubKube := kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	progress("accepting %s and enabling the add-ons %v", cluster, builtin.Names())
	if err := poll(ctx, "cluster "+cluster+" accepted and Joined", func() error {
		if _, err := admin.Accept(ctx, c, hubKube, []string{cluster}); err != nil {
			return err
		}
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined) {
			return errors.New("not Joined")
		}
		return nil
	}); err != nil {
		return "", err
	}
	if err := poll(ctx, "add-ons enabled", func() error {
		_, err := admin.EnableAddons(ctx, c, admin.AddonEnable{Names: builtin.Names(), Clusters: []string{cluster}})
		return err
	}); err != nil {
		return "", err
	}

	// What the gateway's ServiceAccount may do on the cluster: read namespaces, watch ConfigMaps.
	managedKube := kubernetes.NewForConfigOrDie(managed.Config)
	if err := grant(ctx, managedKube); err != nil {
		return "", err
	}

	gw, err := gatewayConfig(fleet.Hub.KubeconfigPath)
	if err != nil {
		return "", err
	}
	gwKube := kubernetes.NewForConfigOrDie(gw)
	get := func(kube kubernetes.Interface) error {
		_, err := kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default").DoRaw(ctx)
		return err
	}
	if err := poll(ctx, "GET /api/v1/namespaces/default through the gateway", func() error { return get(gwKube) }); err != nil {
		return "", err
	}
	progress("the gateway answers %.0f s after the start", time.Since(start).Seconds())

	token, ca, err := credential(ctx, c)
	if err != nil {
		return "", err
	}
	direct := &rest.Config{Host: managed.Config.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, QPS: -1, Timeout: 20 * time.Second}
	directKube := kubernetes.NewForConfigOrDie(direct)

	proxied, err := sequential(gwKube, get, o)
	if err != nil {
		return "", fmt.Errorf("through the gateway: %w", err)
	}
	straight, err := sequential(directKube, get, o)
	if err != nil {
		return "", fmt.Errorf("direct: %w", err)
	}
	progress("%d GETs through the gateway: p50 %.2f ms, p99 %.2f ms; direct p50 %.2f ms",
		o.requests, ms(percentile(proxied, 50)), ms(percentile(proxied, 99)), ms(percentile(straight, 50)))

	ok, err := watches(ctx, gw, managedKube, o.watches, o.opening)
	if err != nil {
		return "", err
	}
	progress("done %.0f s after the start", time.Since(start).Seconds())
	return fmt.Sprintf("proxy-get p50_ms=%.2f p99_ms=%.2f direct_p50_ms=%.2f streams_%d_ok=%d",
		ms(percentile(proxied, 50)), ms(percentile(proxied, 99)), ms(percentile(straight, 50)), o.watches, ok), nil
}

// gatewayConfig is the hub admin's config for cluster's API server through the gateway, as
// flotilla kubeconfig --cluster writes it, without client-side rate limit or timeout (the
// watches are long-running; every call has its own context).
func gatewayConfig(hubKubeconfig string) (*rest.Config, error) {
	hub, err := clientcmd.LoadFromFile(hubKubeconfig)
	if err != nil {
		return nil, err
	}
	kc, err := admin.GatewayKubeconfig(hub, cluster)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	return cfg, nil
}

// grant creates benchNS and lets the gateway's ServiceAccount get Namespaces and list and
// watch ConfigMaps.
func grant(ctx context.Context, kube kubernetes.Interface) error {
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	const name = "bench-proxy-gateway"
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list", "watch"}},
	}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: authv1beta1.AgentInstallNamespace,
			Name: clustergatewayv1alpha1.ManagedServiceAccountName}}}, metav1.CreateOptions{})
	return err
}

// credential is the token and CA bundle of the gateway's credential Secret for cluster.
func credential(ctx context.Context, c client.Client) (token string, ca []byte, err error) {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: clustergatewayv1alpha1.DefaultSecretNamespace, Name: cluster}
	if err := c.Get(ctx, key, s); err != nil {
		return "", nil, fmt.Errorf("reading the gateway's credential Secret %s: %w", key, err)
	}
	return string(s.Data[authv1beta1.SecretKeyToken]), s.Data[authv1beta1.SecretKeyCA], nil
}

// sequential runs o.warmup then o.requests calls of get one after the other, and returns the
// measured ones' durations.
func sequential(kube kubernetes.Interface, get func(kubernetes.Interface) error, o options) ([]time.Duration, error) {
	for i := range o.warmup {
		if err := get(kube); err != nil {
			return nil, fmt.Errorf("warm-up request %d: %w", i, err)
		}
	}
	out := make([]time.Duration, 0, o.requests)
	for i := range o.requests {
		t := time.Now()
		if err := get(kube); err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

// watches opens n watches of benchNS's ConfigMaps through the gateway, opening at most
// opening at a time, creates a ConfigMap once all are open, and returns how many saw it ADDED
// within seenWithin.
//
// Why opening: the managed kube-apiserver allows 250 streams per HTTP/2 connection (Go's
// default; kube-apiserver --http2-max-streams-per-connection 0), and once the gateway's
// connections to it are full, Go's transport dials one more connection per waiting request (it
// keeps one and closes the others). Opened all at once, 1,000 watches make some 750 dials through
// the tunnel together, over the cluster-proxy's cap of 512 open connections per agent stream:
// the watches past it get 503 "too many open connections" (measured: 680 of 1,000 opened).
// Opened 50 at a time, the dials stay under the cap (measured: 1,000 of 1,000 opened, over
// 10 tunnelled connections).
func watches(ctx context.Context, gw *rest.Config, managedKube kubernetes.Interface, n, opening int) (int, error) {
	kube := kubernetes.NewForConfigOrDie(gw)
	list, err := kube.CoreV1().ConfigMaps(benchNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("listing ConfigMaps of %s through the gateway: %w", benchNS, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	progress("opening %d watches through the gateway, %d at a time", n, opening)
	t := time.Now()
	ws := make([]watch.Interface, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(1, opening))
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			ws[i], errs[i] = kube.CoreV1().ConfigMaps(benchNS).Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		}()
	}
	wg.Wait()
	opened := 0
	var firstErr error
	for i := range n {
		if errs[i] == nil {
			opened++
			defer ws[i].Stop()
		} else if firstErr == nil {
			firstErr = errs[i]
		}
	}
	conns, err := metricstest.Gauge(clusterproxy.OpenConnectionsMetric, map[string]string{"cluster": cluster})
	if err != nil {
		return 0, err
	}
	progress("%d of %d watches open after %.1f s over %.0f connections through the tunnel (first error: %v)",
		opened, n, time.Since(t).Seconds(), conns, firstErr)

	const name = "bench-proxy-seen"
	if _, err := managedKube.CoreV1().ConfigMaps(benchNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	created := time.Now()
	deadline, cancelDeadline := context.WithTimeout(ctx, seenWithin)
	defer cancelDeadline()
	var seen atomic.Int64
	var last atomic.Int64
	for i := range n {
		if ws[i] == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-deadline.Done():
					return
				case ev, ok := <-ws[i].ResultChan():
					if !ok {
						return
					}
					if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && ev.Type == watch.Added && cm.Name == name {
						seen.Add(1)
						last.Store(int64(time.Since(created)))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	progress("%d of %d watches saw the ConfigMap, the last %.0f ms after its creation", seen.Load(), n, ms(time.Duration(last.Load())))
	return int(seen.Load()), nil
}

// poll calls f every 250 ms until it succeeds or ctx ends, then returns an error naming what.
func poll(ctx context.Context, what string, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-proxy: "+format+"\n", args...)
}
