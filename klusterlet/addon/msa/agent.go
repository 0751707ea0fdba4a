// Package msa is the managed-serviceaccount add-on agent, built into the klusterlet (a
// klusterlet/addon BuiltinAgent). It follows OCM managed-serviceaccount's TokenReconciler:
// for each ManagedServiceAccount in the cluster's namespace on the hub it creates a
// ServiceAccount of the same name in the add-on's install namespace, requests a token for it
// (TokenRequest, rotation.validity) and writes the token and the managed cluster's CA into
// the hub Secret of the same name (owned by the ManagedServiceAccount, so the hub's garbage
// collector removes it), then reports SecretCreated, TokenReported, expirationTimestamp and
// tokenSecretRef. The token is issued again 80 % into its real life, when the Secret goes or
// holds another token (another ServiceAccount's, or one of an earlier ServiceAccount of the
// same name: its uid claim), and when a TokenReview no longer accepts it. A ManagedServiceAccount that is gone takes its ServiceAccount with it, also
// when it went while the agent was down (the ServiceAccount watch lists every labelled one at
// start). There is no finalizer, as upstream.
package msa

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/core/metrics"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
)

// FieldManager writes the hub Secrets and the ManagedServiceAccount status.
const FieldManager = "flotilla-managed-serviceaccount"

// userAgent identifies the agent's requests in audit logs.
const userAgent = "flotilla-managed-serviceaccount"

// Agent is the managed-serviceaccount BuiltinAgent. The zero value is ready to use.
type Agent struct {
	// Clock decides when tokens are renewed; nil is the real clock.
	Clock clock.PassiveClock
}

var _ addon.BuiltinAgent = (*Agent)(nil)

// Run serves the cluster's ManagedServiceAccounts until ctx ends.
func (a *Agent) Run(ctx context.Context, env addon.BuiltinEnv) error {
	switch {
	case env.HubConfig == nil:
		return errors.New("managed-serviceaccount agent: no hub credentials (managed-serviceaccount-hub-kubeconfig)")
	case env.ManagedConfig == nil || env.ClusterName == "" || env.InstallNamespace == "":
		return errors.New("managed-serviceaccount agent: ClusterName, InstallNamespace and ManagedConfig are required")
	}
	// Several agents in one process (tests, flotilla dev) share the registered counter.
	counter, err := metrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_managedserviceaccount_token_refreshes_total",
		Help: "ManagedServiceAccount tokens issued and written to the hub, by result (ok, error).",
	}, []string{"result"}))
	if err != nil {
		return fmt.Errorf("managed-serviceaccount agent: %w", err)
	}
	caData, err := managedCA(env.ManagedConfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("managed-serviceaccount agent: %w", err)
	}
	if err := authv1beta1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("managed-serviceaccount agent: %w", err)
	}
	hubCfg := rest.CopyConfig(env.HubConfig)
	hubCfg.UserAgent = userAgent
	managedCfg := rest.CopyConfig(env.ManagedConfig)
	managedCfg.UserAgent = userAgent
	log := env.Logger.WithName("managed-serviceaccount")
	own := labels.SelectorFromSet(labels.Set{authv1beta1.LabelKeyIsManagedServiceAccount: "true"})
	skip := true
	mgr, err := ctrl.NewManager(hubCfg, ctrl.Options{
		Scheme: scheme, Logger: log,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// One agent per cluster: several may share a process (tests, flotilla dev).
		Controller: config.Controller{SkipNameValidation: &skip},
		Cache: cache.Options{
			// Its hub identity may only read its cluster's namespace, and only the token
			// Secrets matter.
			DefaultNamespaces: map[string]cache.Config{env.ClusterName: {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: own}},
		},
	})
	if err != nil {
		return fmt.Errorf("managed-serviceaccount agent: hub manager: %w", err)
	}
	managed, err := cluster.New(managedCfg, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Logger = log.WithName("managed")
		o.Cache.DefaultNamespaces = map[string]cache.Config{env.InstallNamespace: {}}
		o.Cache.ByObject = map[client.Object]cache.ByObject{&corev1.ServiceAccount{}: {Label: own}}
	})
	if err != nil {
		return fmt.Errorf("managed-serviceaccount agent: managed cluster client: %w", err)
	}
	if err := mgr.Add(managed); err != nil {
		return fmt.Errorf("managed-serviceaccount agent: %w", err)
	}
	kube, err := kubernetes.NewForConfig(managedCfg)
	if err != nil {
		return fmt.Errorf("managed-serviceaccount agent: managed cluster client: %w", err)
	}
	clk := a.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &TokenReconciler{
		Hub: mgr.GetClient(), Managed: kube, ManagedCache: managed.GetCache(),
		ClusterName: env.ClusterName, Namespace: env.InstallNamespace, CAData: caData,
		Clock: clk, Refreshes: counter,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	// Healthy once both caches are synced (the controller serves), until ctx ends.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) || !managed.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		if env.Healthy != nil {
			env.Healthy(true)
			defer env.Healthy(false)
		}
		<-ctx.Done()
		return nil
	})); err != nil {
		return fmt.Errorf("managed-serviceaccount agent: %w", err)
	}
	log.Info("Serving ManagedServiceAccounts", "cluster", env.ClusterName, "namespace", env.InstallNamespace)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("managed-serviceaccount agent: %w", err)
	}
	return nil
}

// managedCA is the CA bundle the hub Secret carries as ca.crt: the managed config's (its
// in-cluster CA file when it names one).
func managedCA(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile == "" {
		return nil, errors.New("managed-serviceaccount agent: the managed cluster config has no CA bundle for the token Secrets' ca.crt")
	}
	data, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("managed-serviceaccount agent: reading the managed cluster CA: %w", err)
	}
	return data, nil
}
