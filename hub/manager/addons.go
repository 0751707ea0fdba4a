package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/sarcache"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/admission"
	"github.com/flotilla-dev/flotilla/hub/clustergateway"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// ProxyAgentImage is the image the ManagedProxyConfiguration cluster-proxy names for its proxy
// server and agent: Flotilla's one binary (the agent runs inside the klusterlet; the field is
// required by OCM's API and read by nothing in Flotilla).
const ProxyAgentImage = "ghcr.io/flotilla-dev/flotilla"

// validateAddons checks Options.Addons: known names, no repeats, what each needs.
func (o *Options) validateAddons() error {
	if a := o.ClusterProxyBindAddress; a != "" && a != "0" && !slices.Contains(o.Addons, builtin.ClusterProxy) {
		return fmt.Errorf("hub: the cluster-proxy frontend (ClusterProxyBindAddress %s) needs add-on %s in Options.Addons", a, builtin.ClusterProxy)
	}
	if len(o.Addons) == 0 {
		if o.AddonsInstallAll {
			return errors.New("hub: Options.AddonsInstallAll needs add-ons in Options.Addons")
		}
		return nil
	}
	seen := map[string]bool{}
	for _, a := range o.Addons {
		if _, ok := builtin.Lookup(a); !ok {
			return fmt.Errorf("hub: unknown add-on %q in Options.Addons (known: %v)", a, builtin.Names())
		}
		if seen[a] {
			return fmt.Errorf("hub: add-on %q named twice in Options.Addons", a)
		}
		seen[a] = true
	}
	// The gateway dials through the tunnels and authenticates with a ManagedServiceAccount.
	if seen[builtin.ClusterGateway] && (!seen[builtin.ClusterProxy] || !seen[builtin.ManagedServiceAccount]) {
		return fmt.Errorf("hub: add-on %s needs %s and %s too (Options.Addons %v)",
			builtin.ClusterGateway, builtin.ClusterProxy, builtin.ManagedServiceAccount, o.Addons)
	}
	if o.Webhook.Disabled && (seen[builtin.ClusterProxy] || seen[builtin.ClusterGateway]) {
		return fmt.Errorf("hub: add-ons %s and %s serve aggregated APIs on the webhook server, which is disabled", builtin.ClusterProxy, builtin.ClusterGateway)
	}
	if !o.FeatureGates.Enabled(featuregates.AddonManagement) {
		return fmt.Errorf("hub: add-ons %v need the feature gate %s", o.Addons, featuregates.AddonManagement)
	}
	return nil
}

func (h *Hub) addonEnabled(name string) bool { return slices.Contains(h.opts.Addons, name) }

// gatewaySecretNamespace is where the gateway's credential Secrets live.
func (h *Hub) gatewaySecretNamespace() string {
	if h.opts.GatewaySecretNamespace != "" {
		return h.opts.GatewaySecretNamespace
	}
	return clustergatewayv1alpha1.DefaultSecretNamespace
}

// setupAddons serves the hub side of the enabled built-in add-ons on srv: the cluster-proxy
// tunnel API and server (on every replica: agents and gateway requests reach any of them),
// and the cluster-gateway API with its credential Secrets. Their ClusterManagementAddOns,
// ManagedClusterAddOn status and hub permissions are the add-on manager's (Manager.Builtins).
func (h *Hub) setupAddons(kube kubernetes.Interface, srv *webhook.Server, policies *admission.Handler) ([]Component, error) {
	var comps []Component
	var proxy *clusterproxy.Server
	if h.addonEnabled(builtin.ClusterProxy) {
		var err error
		proxy, err = clusterproxy.NewServer(clusterproxy.Options{
			ServerCount: h.opts.ClusterProxyServerCount,
			ServiceHost: clusterproxy.ServiceHosts{Reader: h.mgr.GetClient()}.Cluster,
			Logger:      h.opts.Logger.WithName("cluster-proxy"),
		})
		if err != nil {
			return nil, fmt.Errorf("hub: cluster-proxy server: %w", err)
		}
		if err := srv.RegisterAPIService(proxy.APIService()); err != nil {
			return nil, fmt.Errorf("hub: cluster-proxy tunnel API: %w", err)
		}
		comps = append(comps, ComponentFunc(func(mgr ctrl.Manager) error { return mgr.Add(everyReplica{proxy}) }),
			&clusterproxy.ResolverReconciler{}, &clusterproxy.ServicesReconciler{}, &clusterproxy.ConfigReconciler{})
		h.clusterProxy = proxy
		if addr := h.opts.ClusterProxyBindAddress; addr != "" && addr != "0" {
			frontend, err := h.clusterProxyFrontend(kube, proxy, addr)
			if err != nil {
				return nil, err
			}
			comps = append(comps, frontend)
		}
	}
	if !h.addonEnabled(builtin.ClusterGateway) {
		return comps, nil
	}
	ns := h.gatewaySecretNamespace()
	// Only the credential Secrets, and only of their namespace: no cluster-wide Secret cache.
	hasType, err := labels.NewRequirement(clustergatewayv1alpha1.LabelKeyClusterCredentialType, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	secrets, err := cache.New(h.opts.Config, cache.Options{
		Scheme:            h.mgr.GetScheme(),
		Mapper:            h.mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: labels.NewSelector().Add(*hasType)}},
	})
	if err != nil {
		return nil, fmt.Errorf("hub: cache of the credential Secrets in %s: %w", ns, err)
	}
	sars, err := sarcache.New(sarcache.Options{Reviews: kube.AuthorizationV1().SubjectAccessReviews(), Name: "cluster-gateway"})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	opts := clustergateway.Options{
		Reader:          credentialReader{Reader: h.mgr.GetClient(), secrets: secrets, namespace: ns},
		SecretNamespace: ns,
		Dialer:          proxy,
		Reviews:         sars,
		Logger:          h.opts.Logger.WithName("cluster-gateway"),
	}
	if policies != nil {
		opts.Policies = policies
	}
	gw, err := clustergateway.New(opts)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	if err := srv.RegisterAPIService(gw.APIService()); err != nil {
		return nil, fmt.Errorf("hub: cluster-gateway API: %w", err)
	}
	comps = append(comps,
		ComponentFunc(func(mgr ctrl.Manager) error { return mgr.Add(secrets) }),
		&sarcache.RBACWatch{Name: "cluster-gateway-rbac", Cache: sars},
		&clustergateway.SecretReconciler{SecretNamespace: ns},
	)
	return comps, nil
}

// prepareAddons creates what the enabled built-ins need before they run: the ManagedProxyConfiguration
// cluster-proxy (the cluster-proxy ClusterManagementAddOn's default config: without it the
// add-on is not Configured) and the credential Secrets' namespace. Both are created only when
// absent: an admin's own stays as it is.
func (h *Hub) prepareAddons(ctx context.Context, c client.Client) error {
	if h.addonEnabled(builtin.ClusterProxy) {
		mpc := DefaultProxyConfiguration()
		if err := c.Create(ctx, mpc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("hub: creating ManagedProxyConfiguration %s: %w", mpc.Name, err)
		}
	}
	if h.addonEnabled(builtin.ClusterGateway) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.gatewaySecretNamespace()}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("hub: creating namespace %s of the cluster-gateway credentials: %w", ns.Name, err)
		}
	}
	return nil
}

// DefaultProxyConfiguration is the ManagedProxyConfiguration cluster-proxy the hub creates when
// absent: agents reach the hub through its API server (entrypoint PortForward, which in
// Flotilla is the tunnel API).
func DefaultProxyConfiguration() *proxyv1alpha1.ManagedProxyConfiguration {
	return &proxyv1alpha1.ManagedProxyConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: proxyv1alpha1.DefaultName},
		Spec: proxyv1alpha1.ManagedProxyConfigurationSpec{
			ProxyServer: proxyv1alpha1.ManagedProxyConfigurationProxyServer{
				Image:      ProxyAgentImage,
				Entrypoint: &proxyv1alpha1.ManagedProxyConfigurationProxyServerEntrypoint{Type: proxyv1alpha1.EntryPointTypePortForward},
			},
			ProxyAgent: proxyv1alpha1.ManagedProxyConfigurationProxyAgent{Image: ProxyAgentImage},
		},
	}
}

// clusterProxyFrontend listens on addr at once (a taken port fails the hub's construction)
// and serves the ProxyService there on every replica, with mutual TLS (clusterproxy.FrontendTLS).
func (h *Hub) clusterProxyFrontend(kube kubernetes.Interface, proxy *clusterproxy.Server, addr string) (Component, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("hub: --cluster-proxy-bind-address %s: %w", addr, err)
	}
	h.clusterProxyFrontendAddr = l.Addr()
	host, _, _ := net.SplitHostPort(l.Addr().String())
	creds := clusterproxy.FrontendTLS{Kube: kube, Hosts: []string{host}, Logger: h.opts.Logger.WithName("cluster-proxy-frontend")}
	return ComponentFunc(func(mgr ctrl.Manager) error {
		return mgr.Add(everyReplica{runnableFunc(func(ctx context.Context) error {
			defer l.Close()
			cfg, err := creds.Config(ctx)
			if err != nil {
				return fmt.Errorf("hub: %w", err)
			}
			return proxy.ServeFrontend(ctx, l, grpc.Creds(credentials.NewTLS(cfg)))
		})})
	}), nil
}

type runnableFunc func(ctx context.Context) error

func (f runnableFunc) Start(ctx context.Context) error { return f(ctx) }

// ClusterProxyFrontendAddr is the address the cluster-proxy ProxyService frontend listens on,
// nil unless Options.ClusterProxyBindAddress is set.
func (h *Hub) ClusterProxyFrontendAddr() net.Addr { return h.clusterProxyFrontendAddr }

// everyReplica runs a Runnable on every hub replica, leader or not.
type everyReplica struct {
	r interface{ Start(context.Context) error }
}

func (e everyReplica) Start(ctx context.Context) error { return e.r.Start(ctx) }
func (everyReplica) NeedLeaderElection() bool          { return false }

// credentialReader reads Secrets from the credential namespace's own cache and everything
// else from the manager's: the gateway never asks for another namespace's Secret.
type credentialReader struct {
	client.Reader
	secrets   client.Reader
	namespace string
}

func (r credentialReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		if key.Namespace != r.namespace {
			return fmt.Errorf("reading Secret %s: only Secrets of %s are readable here", key, r.namespace)
		}
		return r.secrets.Get(ctx, key, obj, opts...)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r credentialReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); ok {
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		if lo.Namespace != r.namespace {
			return fmt.Errorf("listing Secrets of %q: only Secrets of %s are readable here", lo.Namespace, r.namespace)
		}
		return r.secrets.List(ctx, list, opts...)
	}
	return r.Reader.List(ctx, list, opts...)
}
