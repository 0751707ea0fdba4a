package addon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
)

// userAgent identifies the agent's requests in API server audit logs.
const userAgent = "flotilla-addon-agent"

// Agent runs the add-on registrations and health checks of one cluster. Create it with New
// and run it with Run.
type Agent struct {
	cfg     Config
	log     logr.Logger
	hub     client.Client
	hubKube kubernetes.Interface
	managed kubernetes.Interface
	// management holds hosted add-ons' Secrets and Leases; managed itself when both configs
	// reach one cluster.
	management kubernetes.Interface
	addons     cache.Cache

	// Touched by the worker only.
	regs   map[string]map[string]*running // add-on -> registration key -> running
	leases map[string]*running            // add-on -> lease watch
	// builtins are the built-in agents running (namespace holds builtinKey).
	builtins map[string]*running
	wg       sync.WaitGroup
}

// running is a goroutine of the agent for one registration or one lease.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
	// reg is the registration it serves (registrations only).
	reg *regConfig
	// namespace is the install namespace it watches, hosted whether on the management
	// cluster (leases only).
	namespace string
	hosted    bool
}

func (r *running) stop() {
	r.cancel()
	<-r.done
}

// NewScheme returns the types the agent reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := addonv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// New validates cfg and builds the clients; it contacts no server.
func New(cfg Config) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	scheme := cfg.Scheme
	if scheme == nil {
		if scheme, err = NewScheme(); err != nil {
			return nil, fmt.Errorf("add-on agent: scheme: %w", err)
		}
	}
	hubCfg := rest.CopyConfig(cfg.HubConfig)
	if hubCfg.UserAgent == "" {
		hubCfg.UserAgent = userAgent
	}
	managedCfg := rest.CopyConfig(cfg.ManagedConfig)
	if managedCfg.UserAgent == "" {
		managedCfg.UserAgent = userAgent
	}
	a := &Agent{cfg: cfg, log: cfg.Logger.WithName("addon"), regs: map[string]map[string]*running{}, leases: map[string]*running{},
		builtins: map[string]*running{}}
	if a.hub, err = client.New(hubCfg, client.Options{Scheme: scheme, Mapper: cfg.HubMapper}); err != nil {
		return nil, fmt.Errorf("add-on agent: hub client: %w", err)
	}
	if a.hubKube = cfg.HubKube; a.hubKube == nil {
		if a.hubKube, err = kubernetes.NewForConfig(hubCfg); err != nil {
			return nil, fmt.Errorf("add-on agent: hub client: %w", err)
		}
	}
	if a.managed, err = kubernetes.NewForConfig(managedCfg); err != nil {
		return nil, fmt.Errorf("add-on agent: managed cluster client: %w", err)
	}
	a.management = a.managed
	if !sameCluster(cfg.ManagementConfig, cfg.ManagedConfig) {
		managementCfg := rest.CopyConfig(cfg.ManagementConfig)
		if managementCfg.UserAgent == "" {
			managementCfg.UserAgent = userAgent
		}
		if a.management, err = kubernetes.NewForConfig(managementCfg); err != nil {
			return nil, fmt.Errorf("add-on agent: management cluster client: %w", err)
		}
	}
	a.addons, err = cache.New(hubCfg, cache.Options{
		Scheme:                      scheme,
		Mapper:                      cfg.HubMapper,
		DefaultNamespaces:           map[string]cache.Config{cfg.ClusterName: {}},
		ByObject:                    map[client.Object]cache.ByObject{&addonv1alpha1.ManagedClusterAddOn{}: {}},
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("add-on agent: ManagedClusterAddOn cache: %w", err)
	}
	return a, nil
}

// Run serves the cluster's add-ons until ctx ends; it returns nil then. Failures are logged
// and retried. Secrets are left in place when ctx ends: the next session (or process) takes
// them over, and first deletes those no add-on wants any more (collect).
func (a *Agent) Run(ctx context.Context) error {
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](a.cfg.RetryInitial, a.cfg.RetryMax),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "addon-agent-" + a.cfg.ClusterName})
	defer queue.ShutDown()
	inf, err := a.addons.GetInformer(ctx, &addonv1alpha1.ManagedClusterAddOn{})
	if err != nil {
		return fmt.Errorf("add-on agent: ManagedClusterAddOn informer: %w", err)
	}
	enqueue := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if o, ok := obj.(client.Object); ok {
			queue.Add(o.GetName())
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("add-on agent: ManagedClusterAddOn informer: %w", err)
	}
	cacheDone := make(chan struct{})
	go func() {
		defer close(cacheDone)
		if err := a.addons.Start(ctx); err != nil && ctx.Err() == nil {
			a.log.Error(err, "ManagedClusterAddOn cache stopped")
		}
	}()
	defer func() {
		<-cacheDone
		for _, regs := range a.regs {
			for _, r := range regs {
				r.stop()
			}
		}
		for _, l := range a.leases {
			l.stop()
		}
		for _, b := range a.builtins {
			b.stop()
		}
		a.wg.Wait()
	}()
	if !a.addons.WaitForCacheSync(ctx) {
		return nil
	}
	a.log.Info("Serving add-ons", "cluster", a.cfg.ClusterName)
	queue.Add(collectKey)
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		name, shutdown := queue.Get()
		if shutdown {
			return nil
		}
		if err := a.sync(ctx, name); err != nil && ctx.Err() == nil {
			a.log.Error(err, "Add-on sync failed; retrying", "addon", name)
			queue.AddRateLimited(name)
		} else {
			queue.Forget(name)
		}
		queue.Done(name)
	}
}

// collectKey is the queue's item for collect; no add-on has an empty name.
const collectKey = ""

// collectTimeout bounds one collect.
const collectTimeout = time.Minute

// sync starts and stops the registrations and the lease watch of one add-on.
func (a *Agent) sync(ctx context.Context, name string) error {
	if name == collectKey {
		return a.collect(ctx)
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	err := a.addons.Get(ctx, client.ObjectKey{Namespace: a.cfg.ClusterName, Name: name}, mca)
	if apierrors.IsNotFound(err) {
		a.stopLease(name)
		a.syncBuiltin(ctx, name, nil)
		return a.cleanup(ctx, name, nil)
	}
	if err != nil {
		return fmt.Errorf("reading ManagedClusterAddOn %s/%s: %w", a.cfg.ClusterName, name, err)
	}
	a.syncBuiltin(ctx, name, mca)
	if mca.Status.HealthCheck.Mode == addonv1alpha1.HealthCheckModeCustomized {
		a.stopLease(name)
	} else {
		a.startLease(ctx, name, InstallNamespace(mca), Hosted(mca))
	}
	if !mca.DeletionTimestamp.IsZero() {
		// The agent may need its hub kubeconfig to clean up: keep everything until it is gone.
		return nil
	}
	want := map[string]*regConfig{}
	for _, reg := range mca.Status.Registrations {
		c := newRegConfig(a.cfg, mca, reg)
		want[c.key] = c
	}
	if err := a.cleanup(ctx, name, want); err != nil {
		return err
	}
	for key, c := range want {
		if _, ok := a.regs[name][key]; ok {
			continue
		}
		if a.regs[name] == nil {
			a.regs[name] = map[string]*running{}
		}
		a.regs[name][key] = a.start(ctx, func(ctx context.Context) { a.certLoop(ctx, c) })
		a.regs[name][key].reg = c
	}
	return nil
}

// cleanup stops the add-on's registrations not in keep and deletes their Secrets, unless a
// kept registration writes the same Secret.
func (a *Agent) cleanup(ctx context.Context, name string, keep map[string]*regConfig) error {
	for key, r := range a.regs[name] {
		if _, ok := keep[key]; ok {
			continue
		}
		r.stop()
		delete(a.regs[name], key)
		reused := false
		for _, k := range keep {
			reused = reused || (k.namespace == r.reg.namespace && k.secretName == r.reg.secretName &&
				a.kube(k.hosted) == a.kube(r.reg.hosted))
		}
		if !reused {
			if err := deleteSecret(ctx, a.kube(r.reg.hosted), r.reg.namespace, r.reg.secretName, r.reg.hosted); err != nil {
				return err
			}
			a.log.Info("Removed add-on client certificate", "addon", name, "secret", r.reg.namespace+"/"+r.reg.secretName, "hosted", r.reg.hosted)
		}
	}
	if len(a.regs[name]) == 0 {
		delete(a.regs, name)
	}
	return nil
}

// collect deletes the Secrets this klusterlet wrote (SecretKlusterletLabel) that no add-on
// wants any more: their add-on is no longer enabled on the cluster, or none of its
// registrations writes them. That happens when either went while the klusterlet was down,
// which the in-memory registrations cannot know. An add-on being deleted keeps its Secrets
// until it is gone (its agent may need them to clean up).
//
// On the managed cluster it lists all namespaces. On a separate management cluster (Hosted)
// it lists only the install namespaces of the hosted add-ons enabled now: the klusterlet may
// read Secrets there and nowhere else beyond its agent namespace (least privilege), so a
// hosted add-on removed while the klusterlet was down leaves its Secret behind unless
// another hosted add-on installs in the same namespace.
func (a *Agent) collect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, collectTimeout)
	defer cancel()
	list := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := a.addons.List(ctx, list, client.InNamespace(a.cfg.ClusterName)); err != nil {
		return fmt.Errorf("listing ManagedClusterAddOns of %s: %w", a.cfg.ClusterName, err)
	}
	enabled := map[string]*addonv1alpha1.ManagedClusterAddOn{}
	for i := range list.Items {
		enabled[list.Items[i].Name] = &list.Items[i]
	}
	sel := labels.Set{SecretKlusterletLabel: a.cfg.AgentNamespace}.String()
	for _, hosted := range a.clusters() {
		where := clusterName(hosted)
		namespaces := []string{metav1.NamespaceAll}
		if hosted {
			namespaces = hostedNamespaces(list.Items)
		}
		var secrets []corev1.Secret
		for _, ns := range namespaces {
			l, err := a.kube(hosted).CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return fmt.Errorf("listing the add-on Secrets of this klusterlet (%s) in namespace %q on the %s: %w", sel, ns, where, err)
			}
			secrets = append(secrets, l.Items...)
		}
		for _, sec := range secrets {
			name := sec.Labels[SecretAddOnLabel]
			mca, ok := enabled[name]
			if ok && (!mca.DeletionTimestamp.IsZero() || a.wants(mca, sec.Namespace, sec.Name, hosted)) {
				continue
			}
			if err := deleteSecret(ctx, a.kube(hosted), sec.Namespace, sec.Name, hosted); err != nil {
				return err
			}
			a.log.Info("Removed the client certificate of an add-on registration no longer there", "addon", name,
				"secret", sec.Namespace+"/"+sec.Name, "cluster", where)
		}
	}
	return nil
}

// hostedNamespaces are the install namespaces of the hosted add-ons among mcas, each once.
func hostedNamespaces(mcas []addonv1alpha1.ManagedClusterAddOn) []string {
	var out []string
	for i := range mcas {
		if ns := InstallNamespace(&mcas[i]); Hosted(&mcas[i]) && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// wants reports whether a registration of mca writes Secret ns/name on the management
// cluster (hosted) or the managed one. With one cluster for both, either will do.
func (a *Agent) wants(mca *addonv1alpha1.ManagedClusterAddOn, ns, name string, hosted bool) bool {
	for _, reg := range mca.Status.Registrations {
		c := newRegConfig(a.cfg, mca, reg)
		if c.namespace == ns && c.secretName == name && (c.hosted == hosted || a.management == a.managed) {
			return true
		}
	}
	return false
}

// Hosted reports whether the add-on's agent runs outside the managed cluster, on the cluster
// the klusterlet runs on (OCM's isAddonRunningOutsideManagedCluster): its ManagedClusterAddOn
// names a hosting cluster.
func Hosted(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	return mca.Annotations[addonv1alpha1.HostingClusterNameAnnotationKey] != ""
}

// kube is the client of the cluster holding the Secrets and Lease of an add-on, hosted or
// not.
func (a *Agent) kube(hosted bool) kubernetes.Interface {
	if hosted {
		return a.management
	}
	return a.managed
}

// clusters are the values of hosted naming each distinct cluster the agent writes Secrets to.
func (a *Agent) clusters() []bool {
	if a.management == a.managed {
		return []bool{false}
	}
	return []bool{false, true}
}

func clusterName(hosted bool) string {
	if hosted {
		return "management cluster"
	}
	return "managed cluster"
}

// sameCluster reports whether two configs reach the same API server (Default mode).
func sameCluster(a, b *rest.Config) bool {
	return a == b || a.Host == b.Host
}

// start runs f in a goroutine until the returned running is stopped or ctx ends.
func (a *Agent) start(ctx context.Context, f func(context.Context)) *running {
	ctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan struct{})}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(r.done)
		f(ctx)
	}()
	return r
}

// InstallNamespace is where the add-on's agent runs on the managed cluster, as OCM decides
// it: status.namespace, else spec.installNamespace, else DefaultInstallNamespace.
func InstallNamespace(mca *addonv1alpha1.ManagedClusterAddOn) string {
	switch {
	case mca.Status.Namespace != "":
		return mca.Status.Namespace
	case mca.Spec.InstallNamespace != "":
		return mca.Spec.InstallNamespace
	}
	return DefaultInstallNamespace
}
