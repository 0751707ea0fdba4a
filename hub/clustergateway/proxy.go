package clustergateway

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
)

// ServerName is the name the managed API server's certificate is verified against: every
// kube-apiserver serves kubernetes.default.svc, whatever address the tunnel reaches it at.
const ServerName = "kubernetes.default.svc"

// requestInfo parses paths as kube-apiserver does: verbs and resources of requests.
var requestInfo = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// Long-running requests have no deadline, as in kube-apiserver
// (BasicLongRunningRequestCheck({watch, proxy}, {attach, exec, proxy, log, portforward})).
var (
	longRunningVerbs        = sets.New("watch", "proxy")
	longRunningSubresources = sets.New("attach", "exec", "proxy", "log", "portforward")
)

// upgradeProtocols are the Upgrade tokens passed on: SPDY and WebSocket (exec, attach,
// port-forward); anything else is refused.
var upgradeProtocols = sets.New("spdy/3.1", "websocket")

// strippedPrefixes are the request headers that carry the hub user's credentials and identity
// (the front proxy's X-Remote-* and impersonation): none reaches the managed cluster, which
// sees the cluster's ServiceAccount token only.
var strippedPrefixes = []string{"X-Remote-", "Impersonate-"}

// serveProxy forwards a request under clustergateways/<cluster>/proxy to the cluster's API
// server at path inner.
func (g *Gateway) serveProxy(w http.ResponseWriter, r *http.Request, cluster, inner string) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	innerInfo := &apirequest.RequestInfo{Verb: strings.ToLower(r.Method)}
	longRunning := false
	defer func() {
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		g.metrics.requests.WithLabelValues(cluster, innerInfo.Verb, strconv.Itoa(code)).Inc()
		if !longRunning {
			g.metrics.duration.WithLabelValues(innerInfo.Verb).Observe(time.Since(start).Seconds())
		}
		u, _ := apirequest.UserFrom(r.Context())
		name := ""
		if u != nil {
			name = u.GetName()
		}
		g.opts.Logger.V(1).Info("proxied", "cluster", cluster, "user", name, "verb", innerInfo.Verb, "resource", innerInfo.Resource,
			"subresource", innerInfo.Subresource, "namespace", innerInfo.Namespace, "path", inner, "code", code, "duration", time.Since(start))
	}()

	u, ok := apirequest.UserFrom(r.Context())
	if !ok {
		writeStatus(rec, statusError(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized"))
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		writeStatus(rec, apierrors.NewMethodNotSupported(gatewaysResource, r.Method))
		return
	}
	if v, _ := strconv.ParseBool(r.URL.Query().Get("impersonate")); v {
		writeStatus(rec, apierrors.NewBadRequest("impersonation is not supported: the managed cluster sees the cluster-gateway ServiceAccount"))
		return
	}
	if info, err := requestInfo.NewRequestInfo(&http.Request{Method: r.Method, URL: &url.URL{Path: inner, RawQuery: r.URL.RawQuery}}); err == nil {
		innerInfo = info
		if !info.IsResourceRequest {
			info.Verb = strings.ToLower(r.Method)
		}
	}
	upgrade := httpstream.IsUpgradeRequest(r)
	longRunning = upgrade || longRunningVerbs.Has(innerInfo.Verb) ||
		innerInfo.IsResourceRequest && longRunningSubresources.Has(innerInfo.Subresource)

	// 1. Hub RBAC again, as the hub API server just did (defence in depth).
	if err := g.authorize(r, u, cluster); err != nil {
		writeStatus(rec, err)
		return
	}
	// 2. The cluster.
	mc := &clusterv1.ManagedCluster{}
	if err := g.opts.Reader.Get(r.Context(), client.ObjectKey{Name: cluster}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			writeStatus(rec, apierrors.NewNotFound(gatewaysResource, cluster))
			return
		}
		writeStatus(rec, apierrors.NewInternalError(fmt.Errorf("reading ManagedCluster %s: %w", cluster, err)))
		return
	}
	secret, err := g.credentialSecret(r.Context(), cluster)
	if err != nil {
		writeStatus(rec, err)
		return
	}
	// 3. The gateway policies.
	if g.opts.Policies != nil {
		if err := g.judge(r.Context(), u, mc, innerInfo, inner, r, upgrade); err != nil {
			writeStatus(rec, err)
			return
		}
	}
	// 4. Credential and tunnel.
	token, ca, err := g.credential(cluster, secret)
	if err != nil {
		writeStatus(rec, err)
		return
	}
	if connected, seen := g.opts.Dialer.Connected(cluster); !connected {
		writeStatus(rec, statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "%s", tunnelDown(cluster, seen)))
		return
	}
	// 5. Bounds.
	if upgrade {
		proto := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("Upgrade"), ",")[0]))
		if !upgradeProtocols.Has(proto) {
			writeStatus(rec, apierrors.NewBadRequest(fmt.Sprintf("cluster %s: upgrade to %q is not proxied (only SPDY/3.1 and WebSocket)", cluster, r.Header.Get("Upgrade"))))
			return
		}
	}
	release, err := g.admit(cluster, upgrade)
	if err != nil {
		writeStatus(rec, err)
		return
	}
	defer release()

	t, err := g.transport(cluster, ca)
	if err != nil {
		writeStatus(rec, statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "cluster %s: %v", cluster, err))
		return
	}
	ctx := r.Context()
	if !longRunning {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.opts.RequestTimeout)
		defer cancel()
	}
	out := r.Clone(ctx)
	out.Header = forwardedHeader(r.Header)
	out.Header.Set("Authorization", "Bearer "+token)
	out.URL.Path, out.URL.RawPath = inner, ""

	// The query is on the location too: an upgrade (exec's command=...) is sent to it as is.
	location := &url.URL{Scheme: "https", Host: net.JoinHostPort(cluster, "443"), Path: inner, RawQuery: r.URL.RawQuery}
	h := utilproxy.NewUpgradeAwareHandler(location, t.rt, false, false, &responder{cluster: cluster})
	h.UpgradeTransport = t.upgrade
	h.UseLocationHost = true
	// Watches and logs stream: every write reaches the client at once.
	h.FlushInterval = -1
	h.ServeHTTP(rec, out)
}

// credential is the token and CA of a ClusterProxy credential Secret, or the 503 saying what
// is missing.
func (g *Gateway) credential(cluster string, s *corev1.Secret) (string, []byte, error) {
	ref := g.opts.SecretNamespace + "/" + cluster
	if s == nil {
		return "", nil, statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			"cluster %s: no credentials yet: Secret %s (from ManagedServiceAccount %s/%s) not found", cluster, ref, cluster, clustergatewayv1alpha1.ManagedServiceAccountName)
	}
	if t := s.Labels[clustergatewayv1alpha1.LabelKeyClusterEndpointType]; t != string(clustergatewayv1alpha1.ClusterEndpointTypeClusterProxy) {
		return "", nil, statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			"cluster %s: Secret %s: endpoint type %q is not served by this hub (only %s)", cluster, ref, t, clustergatewayv1alpha1.ClusterEndpointTypeClusterProxy)
	}
	if t := s.Labels[clustergatewayv1alpha1.LabelKeyClusterCredentialType]; t != string(clustergatewayv1alpha1.CredentialTypeServiceAccountToken) {
		return "", nil, statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			"cluster %s: Secret %s: credential type %q is not served by this hub (only %s)", cluster, ref, t, clustergatewayv1alpha1.CredentialTypeServiceAccountToken)
	}
	token, ca := strings.TrimSpace(string(s.Data[clustergatewayv1alpha1.SecretKeyToken])), caOf(s)
	if token == "" || len(ca) == 0 {
		return "", nil, statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			"cluster %s: no credentials yet: Secret %s has no %s or no %s", cluster, ref, clustergatewayv1alpha1.SecretKeyToken, clustergatewayv1alpha1.SecretKeyCACrt)
	}
	return token, ca, nil
}

// tunnelDown is the message of a request to a cluster without tunnel.
func tunnelDown(cluster string, seen time.Time) string {
	last := "never"
	if !seen.IsZero() {
		last = seen.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("cluster %s: cluster-proxy tunnel not connected (last seen %s)", cluster, last)
}

// forwardedHeader is h without the hub user's credentials and identity.
func forwardedHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		ck := http.CanonicalHeaderKey(k)
		if ck == "Authorization" || ck == "Proxy-Authorization" {
			continue
		}
		stripped := false
		for _, p := range strippedPrefixes {
			if strings.HasPrefix(ck, p) {
				stripped = true
				break
			}
		}
		if !stripped {
			out[ck] = append([]string(nil), v...)
		}
	}
	return out
}

// clusterLoad counts a cluster's requests in flight and upgraded connections.
type clusterLoad struct{ inflight, upgrades atomic.Int64 }

// admit takes a slot of cluster's bounds, or answers 429 naming the cluster.
func (g *Gateway) admit(cluster string, upgrade bool) (func(), error) {
	g.mu.Lock()
	l := g.load[cluster]
	if l == nil {
		l = &clusterLoad{}
		g.load[cluster] = l
	}
	g.mu.Unlock()
	counter, limit, what := &l.inflight, int64(g.opts.MaxInFlight), "requests in flight"
	if upgrade {
		counter, limit, what = &l.upgrades, int64(g.opts.MaxUpgrades), "upgraded connections (exec, attach, port-forward)"
	}
	if counter.Add(1) > limit {
		counter.Add(-1)
		err := statusError(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "cluster %s: too many %s through the gateway (limit %d); retry later", cluster, what, limit)
		err.(*apierrors.StatusError).ErrStatus.Details = &metav1.StatusDetails{Name: cluster, Group: gatewaysResource.Group, Kind: gatewaysResource.Resource, RetryAfterSeconds: 1}
		return nil, err
	}
	return func() { counter.Add(-1) }, nil
}

// transportKey names a transport: a cluster and the hash of its CA.
type transportKey struct {
	cluster string
	ca      [sha256.Size]byte
}

type clusterTransport struct {
	rt      *http.Transport
	upgrade utilproxy.UpgradeRequestRoundTripper
}

// transport is the cluster's transport for ca: HTTP/2 over TLS through the Dialer, shared by
// all the cluster's requests, so that a token rotation (read at each request) keeps the
// connections and the watches on them; a new CA makes a new transport and closes the old one's
// idle connections.
func (g *Gateway) transport(cluster string, ca []byte) (*clusterTransport, error) {
	key := transportKey{cluster: cluster, ca: sha256.Sum256(ca)}
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := g.transports[key]; t != nil {
		return t, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("Secret %s/%s: %s holds no PEM certificate", g.opts.SecretNamespace, cluster, clustergatewayv1alpha1.SecretKeyCACrt)
	}
	dial := func(ctx context.Context, _, address string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, g.opts.DialTimeout)
		defer cancel()
		conn, err := g.opts.Dialer.DialCluster(ctx, cluster, address)
		if err != nil {
			return nil, fmt.Errorf("dialing %s through the cluster-proxy tunnel: %w", address, err)
		}
		return conn, nil
	}
	tlsConfig := &tls.Config{RootCAs: pool, ServerName: ServerName, MinVersion: tls.VersionTLS12}
	rt := &http.Transport{
		DialContext: dial, TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true,
		ResponseHeaderTimeout: g.opts.ResponseHeaderTimeout, IdleConnTimeout: 90 * time.Second,
		TLSHandshakeTimeout: g.opts.DialTimeout, MaxIdleConnsPerHost: 4,
	}
	upgradeTLS := tlsConfig.Clone()
	upgradeTLS.NextProtos = []string{"http/1.1"}
	up := &http.Transport{DialContext: dial, TLSClientConfig: upgradeTLS, TLSHandshakeTimeout: g.opts.DialTimeout}
	t := &clusterTransport{rt: rt, upgrade: utilproxy.NewUpgradeRequestRoundTripper(up, utilproxy.MirrorRequest)}
	for k, old := range g.transports {
		if k.cluster == cluster {
			old.rt.CloseIdleConnections()
			delete(g.transports, k)
		}
	}
	g.transports[key] = t
	return t, nil
}

// responder answers errors of the proxy (dial, TLS, the managed server unreachable) with 503
// naming the cluster, as upstream does.
type responder struct{ cluster string }

func (e *responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	code := http.StatusServiceUnavailable
	if errors.Is(err, context.DeadlineExceeded) {
		code = http.StatusGatewayTimeout
	}
	writeStatus(w, statusError(code, metav1.StatusReasonServiceUnavailable, "cluster %s: %v", e.cluster, err))
}

// recorder remembers the status code; it passes Flush and Hijack on (watches, upgrades).
type recorder struct {
	http.ResponseWriter
	code int
	once sync.Once
}

func (r *recorder) WriteHeader(code int) {
	r.once.Do(func() { r.code = code })
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.once.Do(func() { r.code = http.StatusOK })
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	// The upgrade's own status line goes straight to the connection.
	r.once.Do(func() { r.code = http.StatusSwitchingProtocols })
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
