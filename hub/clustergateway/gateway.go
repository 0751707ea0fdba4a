// Package clustergateway serves OCM's cluster-gateway API, cluster.core.oam.dev/v1alpha1, as
// an aggregated API of the hub (webhook.Server.RegisterAPIService): ClusterGateways (get and
// list, Table or JSON, and the health subresource) read from the credential Secrets
// open-cluster-management-credentials/<cluster>, and the proxy subresource, which forwards a
// request (watches and upgrades included) to the managed cluster's API server through the
// cluster-proxy tunnel (a Dialer) with the cluster's ServiceAccount token.
//
// A proxied request has passed hub RBAC on clustergateways/proxy in the hub API server; the
// handler asks again (a cached SubjectAccessReview, against anything else reaching the port
// with a front-proxy certificate), then the gateway policies (Rego, flotilla.gateway.*). The
// hub user's credentials and identity headers never reach the managed cluster: it sees the
// ServiceAccount only.
//
// SecretReconciler keeps, for each cluster with the cluster-gateway add-on, the
// ManagedServiceAccount cluster-gateway and the copy of its token Secret the gateway reads.
package clustergateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/core/sarcache"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// Dialer opens connections to a managed cluster through its cluster-proxy tunnel
// (hub/clusterproxy implements it; design-23 §5.14).
type Dialer interface {
	// DialCluster connects to address ("<cluster>:443" for the cluster's API server) on
	// cluster's side of the tunnel.
	DialCluster(ctx context.Context, cluster, address string) (net.Conn, error)
	// Connected says whether cluster's agent holds a tunnel, and when it was last seen.
	Connected(cluster string) (bool, time.Time)
}

// PolicyGate judges proxied requests by the gateway policies: hub/admission.Handler, whose
// Loader compiles them with the admission policies from the same ConfigMaps.
type PolicyGate interface {
	EvaluateGateway(ctx context.Context, in *policy.GatewayInput) (*policy.Decision, error)
}

// Defaults of Options (design-23 §5.6).
const (
	DefaultMaxInFlight           = 2048
	DefaultMaxUpgrades           = 256
	DefaultRequestTimeout        = 60 * time.Second
	DefaultDialTimeout           = 10 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
)

// Options configure a Gateway.
type Options struct {
	// Reader reads the credential Secrets of SecretNamespace, ManagedClusters and
	// ManagedClusterSets. A manager's cache should hold Secrets of SecretNamespace only.
	Reader client.Reader
	// SecretNamespace holds the credential Secrets; default
	// clustergatewayv1alpha1.DefaultSecretNamespace.
	SecretNamespace string
	// Dialer reaches the clusters. Required.
	Dialer Dialer
	// Reviews answers the SubjectAccessReview on clustergateways/proxy: a *sarcache.Cache
	// dropped by a sarcache.RBACWatch. Required.
	Reviews sarcache.Reviewer
	// Policies, if set, judges each proxied request after RBAC.
	Policies PolicyGate
	// MaxInFlight and MaxUpgrades bound the proxied requests and the upgraded connections of
	// one cluster; beyond them a request gets 429.
	MaxInFlight, MaxUpgrades int
	// RequestTimeout bounds a proxied request that is not long-running (watch, exec, attach,
	// port-forward, log, proxy are not bounded); DialTimeout a dial;
	// ResponseHeaderTimeout the wait for the managed API server's response headers.
	RequestTimeout, DialTimeout, ResponseHeaderTimeout time.Duration
	Logger                                             logr.Logger
}

// Gateway is the handler of cluster.core.oam.dev/v1alpha1.
type Gateway struct {
	opts    Options
	metrics *metrics

	mu         sync.Mutex
	transports map[transportKey]*clusterTransport
	load       map[string]*clusterLoad
}

// New checks opts and returns a Gateway; register it with Server.RegisterAPIService(g.APIService()).
func New(opts Options) (*Gateway, error) {
	var errs []error
	if opts.Reader == nil {
		errs = append(errs, errors.New("Options.Reader is required"))
	}
	if opts.Dialer == nil {
		errs = append(errs, errors.New("Options.Dialer is required"))
	}
	if opts.Reviews == nil {
		errs = append(errs, errors.New("Options.Reviews is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("clustergateway: %w", err)
	}
	if opts.SecretNamespace == "" {
		opts.SecretNamespace = clustergatewayv1alpha1.DefaultSecretNamespace
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxUpgrades <= 0 {
		opts.MaxUpgrades = DefaultMaxUpgrades
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.ResponseHeaderTimeout <= 0 {
		opts.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	m, err := registerMetrics()
	if err != nil {
		return nil, fmt.Errorf("clustergateway: %w", err)
	}
	return &Gateway{opts: opts, metrics: m, transports: map[transportKey]*clusterTransport{}, load: map[string]*clusterLoad{}}, nil
}

// APIService is the aggregated API to register with the hub's webhook.Server.
func (g *Gateway) APIService() webhook.APIService {
	gv := clustergatewayv1alpha1.GroupVersion
	return webhook.APIService{Group: gv.Group, Version: gv.Version, Handler: g}
}

// apiPrefix is the path of the API version.
var apiPrefix = "/apis/" + clustergatewayv1alpha1.GroupVersion.Group + "/" + clustergatewayv1alpha1.GroupVersion.Version

// ServeHTTP routes /apis/cluster.core.oam.dev/v1alpha1[/clustergateways[/<name>[/proxy...|/health]]].
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, apiPrefix)
	if !ok {
		writeStatus(w, notFound("the server could not find the requested resource"))
		return
	}
	rest = strings.TrimPrefix(rest, "/")
	if rest == "" {
		g.serveDiscovery(w, r)
		return
	}
	resource, rest, _ := strings.Cut(rest, "/")
	if resource != clustergatewayv1alpha1.ResourceClusterGateways {
		writeStatus(w, notFound("the server could not find the requested resource"))
		return
	}
	name, sub, hasSub := strings.Cut(rest, "/")
	subresource, inner, _ := strings.Cut(sub, "/")
	switch {
	case name == "":
		g.serveList(w, r)
	case !hasSub:
		g.serveGet(w, r, name, false)
	case subresource == clustergatewayv1alpha1.SubresourceHealth && inner == "":
		g.serveGet(w, r, name, true)
	case subresource == clustergatewayv1alpha1.SubresourceProxy:
		g.serveProxy(w, r, name, "/"+inner)
	default:
		writeStatus(w, notFound("the server could not find the requested resource"))
	}
}
