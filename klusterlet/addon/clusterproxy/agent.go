// Package clusterproxy is the klusterlet's built-in agent of OCM's cluster-proxy add-on: it
// keeps konnectivity streams open to the hub through the hub API server's tunnel API (with the
// add-on's own hub identity, and the hub kubeconfig's proxy-url), and dials for the hub only
// what it exposes: the managed cluster's API server and the Services that
// ManagedProxyServiceResolvers expose on it.
package clusterproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/backoff"
	"github.com/flotilla-dev/flotilla/core/clusterproxy"
	flmetrics "github.com/flotilla-dev/flotilla/core/metrics"
	"github.com/flotilla-dev/flotilla/core/tunnel"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
)

// Metric names.
const (
	// ConnectedMetric is the number of tunnel streams the agent holds to the hub.
	ConnectedMetric = "flotilla_cluster_proxy_agent_connected"
	// DialsMetric counts the hub's dial requests by result: ok, refused, error.
	DialsMetric = "flotilla_cluster_proxy_agent_dials_total"
	// BytesMetric counts tunnelled payload bytes by direction (to_hub, from_hub).
	BytesMetric = "flotilla_cluster_proxy_agent_bytes_total"
)

// Resolver maps an address the hub asks for that is not the API server's (host:port of a
// Service a ManagedProxyServiceResolver exposes) to the address to dial. ok false: not exposed.
type Resolver func(ctx context.Context, host, port string) (target string, ok bool, err error)

// Agent is the cluster-proxy built-in agent (addon.BuiltinAgent).
type Agent struct {
	// Resolve, if set, serves addresses beyond the API server's. Nil: the Services the hub
	// lists for this cluster (clusterproxy.ServicesConfigMapName, from the
	// ManagedProxyServiceResolvers), read with the add-on's hub identity.
	Resolve Resolver
	// RetryInitial and RetryMax pace reconnects (default 1s and 30s).
	RetryInitial, RetryMax time.Duration
	// Limits bound each tunnelled connection (tunnel.DefaultLimits).
	Limits tunnel.Limits
}

var _ addon.BuiltinAgent = (*Agent)(nil)

// Run holds the tunnel until ctx ends. env.Healthy is true exactly while a stream is connected.
func (a *Agent) Run(ctx context.Context, env addon.BuiltinEnv) error {
	cluster, ns := env.ClusterName, env.InstallNamespace
	if ns == "" {
		ns = clusterproxy.DefaultInstallNamespace
	}
	if env.HubConfig == nil || env.ManagedConfig == nil || cluster == "" {
		return errors.New("cluster-proxy agent: the cluster name, the add-on's hub kubeconfig and the managed cluster's config are required")
	}
	apiServer, err := hostPort(env.ManagedConfig.Host)
	if err != nil {
		return fmt.Errorf("cluster-proxy agent: managed API server %q: %w", env.ManagedConfig.Host, err)
	}
	m, err := registerMetrics()
	if err != nil {
		return err
	}
	hubConfig := rest.CopyConfig(env.HubConfig)
	if hubConfig.Proxy == nil && env.HubEndpoint.ProxyURL != "" {
		u, err := url.Parse(env.HubEndpoint.ProxyURL)
		if err != nil {
			return fmt.Errorf("cluster-proxy agent: hub kubeconfig proxy-url %q: %w", env.HubEndpoint.ProxyURL, err)
		}
		hubConfig.Proxy = http.ProxyURL(u)
	}
	healthy := func(bool) {}
	if env.Healthy != nil {
		healthy = env.Healthy
	}
	hosts := clusterproxy.KubeAPIHosts(cluster, ns)
	resolve := a.Resolve
	if resolve == nil {
		hubKube, err := kubernetes.NewForConfig(hubConfig)
		if err != nil {
			return fmt.Errorf("cluster-proxy agent: hub client: %w", err)
		}
		managedKube, err := kubernetes.NewForConfig(env.ManagedConfig)
		if err != nil {
			return fmt.Errorf("cluster-proxy agent: managed cluster client: %w", err)
		}
		services := newExposedServices(hubKube, managedKube, cluster)
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); services.run(ctx) }()
		defer func() { cancel(); <-done }()
		resolve = services.resolve
	}
	allow := func(ctx context.Context, address string) (string, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return "", fmt.Errorf("address %s of cluster %s: %v", address, cluster, err)
		}
		if port == clusterproxy.KubeAPIPort && (host == hosts[0] || host == hosts[1]) {
			return apiServer, nil
		}
		if resolve != nil {
			target, ok, err := resolve(ctx, host, port)
			if err != nil {
				return "", fmt.Errorf("address %s of cluster %s: %w", address, cluster, err)
			}
			if ok {
				return target, nil
			}
		}
		return "", fmt.Errorf("address %s is not exposed by cluster %s", address, cluster)
	}
	retryInitial, retryMax := a.RetryInitial, a.RetryMax
	if retryInitial <= 0 {
		retryInitial = time.Second
	}
	if retryMax <= 0 {
		retryMax = 30 * time.Second
	}
	ag := &tunnel.Agent{
		Name:        "cluster " + cluster,
		Identifiers: url.Values{"host": hosts},
		Transport: func(ctx context.Context) (net.Conn, error) {
			return tunnel.DialUpgrade(ctx, hubConfig, clusterproxy.TunnelPath(cluster))
		},
		Allow:   allow,
		Limits:  a.Limits,
		Backoff: backoff.New(retryInitial, retryMax),
		Streams: func(n int) {
			m.connected.WithLabelValues(cluster).Set(float64(n))
			healthy(n > 0)
		},
		Dials: func(result string) { m.dials.WithLabelValues(cluster, result).Inc() },
		Bytes: func(in bool, n int) {
			dir := "to_hub"
			if in {
				dir = "from_hub"
			}
			m.bytes.WithLabelValues(cluster, dir).Add(float64(n))
		},
		Logger: env.Logger.WithName("cluster-proxy"),
	}
	return ag.Run(ctx)
}

// hostPort is the host:port of a rest.Config Host (a URL or host[:port]; https port 443 by default).
func hostPort(h string) (string, error) {
	u, err := url.Parse(h)
	if err != nil || u.Host == "" {
		u, err = url.Parse("https://" + h)
		if err != nil {
			return "", err
		}
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	if u.Scheme == "http" {
		return net.JoinHostPort(u.Hostname(), "80"), nil
	}
	return net.JoinHostPort(u.Hostname(), "443"), nil
}

type metrics struct {
	connected    *prometheus.GaugeVec
	dials, bytes *prometheus.CounterVec
}

// The series carry the cluster: a process may run several klusterlets (simulations, tests).
func registerMetrics() (*metrics, error) {
	var err error
	m := &metrics{}
	if m.connected, err = flmetrics.Register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: ConnectedMetric, Help: "Tunnel streams the cluster-proxy agent holds to the hub.",
	}, []string{"cluster"})); err != nil {
		return nil, err
	}
	if m.dials, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: DialsMetric, Help: "The hub's dial requests to the cluster-proxy agent, by result (ok, refused, error).",
	}, []string{"cluster", "result"})); err != nil {
		return nil, err
	}
	if m.bytes, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: BytesMetric, Help: "Payload bytes through the cluster-proxy agent's tunnel, by direction (to_hub, from_hub).",
	}, []string{"cluster", "direction"})); err != nil {
		return nil, err
	}
	return m, nil
}
