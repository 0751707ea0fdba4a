// Package clustergateway is the klusterlet's built-in agent of the cluster-gateway add-on.
// The add-on runs nothing on the managed cluster: the hub's gateway reaches the cluster's API
// server through the cluster-proxy tunnel with the token of the ManagedServiceAccount
// cluster-gateway. The agent only reports the add-on's health (its Lease, design-23 §5.4):
// healthy while the cluster-proxy agent holds a tunnel (Tap) and the ServiceAccount
// cluster-gateway exists.
package clustergateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
)

// Tap runs another built-in agent (cluster-proxy's) and remembers the health it reports.
type Tap struct {
	Agent addon.BuiltinAgent

	mu      sync.Mutex
	up      bool
	changed chan struct{} // closed and replaced on every change
}

var _ addon.BuiltinAgent = (*Tap)(nil)

// Run runs the tapped agent with a Healthy that also records the value.
func (t *Tap) Run(ctx context.Context, env addon.BuiltinEnv) error {
	if t.Agent == nil {
		return errors.New("cluster-gateway: Tap.Agent is required")
	}
	inner := env.Healthy
	env.Healthy = func(ok bool) {
		t.set(ok)
		if inner != nil {
			inner(ok)
		}
	}
	defer t.set(false)
	return t.Agent.Run(ctx, env)
}

func (t *Tap) set(ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.up == ok {
		return
	}
	t.up = ok
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// Up reports the tapped agent's health, and a channel closed when it changes.
func (t *Tap) Up() (bool, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.up, t.changed
}

// Agent is the cluster-gateway built-in agent (addon.BuiltinAgent).
type Agent struct {
	// Tunnel taps the cluster-proxy agent. Required.
	Tunnel *Tap
	// ServiceAccountNamespace is where the managed-serviceaccount agent creates the
	// ServiceAccount cluster-gateway; default its install namespace
	// (authv1beta1.AgentInstallNamespace).
	ServiceAccountNamespace string
}

var _ addon.BuiltinAgent = (*Agent)(nil)

// Run reports the add-on healthy while the tunnel is up and the ServiceAccount exists, until
// ctx ends.
func (a *Agent) Run(ctx context.Context, env addon.BuiltinEnv) error {
	if a.Tunnel == nil || env.ManagedConfig == nil {
		return errors.New("cluster-gateway agent: Agent.Tunnel and the managed cluster's config are required")
	}
	ns := a.ServiceAccountNamespace
	if ns == "" {
		ns = authv1beta1.AgentInstallNamespace
	}
	kube, err := kubernetes.NewForConfig(env.ManagedConfig)
	if err != nil {
		return fmt.Errorf("cluster-gateway agent: managed cluster client: %w", err)
	}
	name := clustergatewayv1alpha1.ManagedServiceAccountName
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	informer := factory.Core().V1().ServiceAccounts().Informer()
	poke := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case poke <- struct{}{}:
		default:
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
	}); err != nil {
		return fmt.Errorf("cluster-gateway agent: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	healthy := func(bool) {}
	if env.Healthy != nil {
		healthy = env.Healthy
	}
	defer healthy(false)
	log := env.Logger.WithName("cluster-gateway")
	last := false
	for {
		up, changed := a.Tunnel.Up()
		_, exists, _ := informer.GetStore().GetByKey(ns + "/" + name)
		ok := up && exists
		if ok != last {
			log.Info("cluster-gateway health", "healthy", ok, "tunnel", up, "serviceAccount", ns+"/"+name, "exists", exists)
		}
		last = ok
		healthy(ok)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-poke:
		}
	}
}
