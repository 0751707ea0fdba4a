package placement

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

// DebugPath is where the debug endpoint serves: DebugPath + "<namespace>/<name>".
const DebugPath = "/debug/placements/"

// DefaultDebugBindAddress is where OCM's placement controller serves the debug endpoint.
const DefaultDebugBindAddress = ":8443"

// Explain schedules the placement namespace/name against the controller's current snapshot
// of the fleet and says how: every filter stage's clusters and every prioritizer's scores.
// Nothing is written. A missing placement is a NotFound error (apierrors.IsNotFound).
func (r *Reconciler) Explain(ctx context.Context, namespace, name string) (*scheduler.Result, error) {
	if r.fleet == nil {
		return nil, errors.New("placement: the controller is not set up (SetupWithManager)")
	}
	p := &clusterv1beta1.Placement{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, p); err != nil {
		return nil, err
	}
	return r.Scheduler.Schedule(ctx, r.fleet.Snapshot(r.Clock.Now()), p)
}

// Explainer explains how a placement is scheduled (Reconciler.Explain).
type Explainer interface {
	Explain(ctx context.Context, namespace, name string) (*scheduler.Result, error)
}

// DebugOptions configures a DebugServer.
type DebugOptions struct {
	// BindAddress is host:port to serve on, e.g. ":8443" (OCM's) or "127.0.0.1:0".
	BindAddress string
	// AllowCacheTTL and DenyCacheTTL are how long an authorization answer is remembered;
	// zero means DefaultDebugAllowCacheTTL and DefaultDebugDenyCacheTTL (a negative value: not at
	// all). Token reviews are remembered for TokenCacheTTL (DefaultDebugTokenCacheTTL).
	AllowCacheTTL, DenyCacheTTL, TokenCacheTTL time.Duration
	Logger                                     logr.Logger
}

// How long authentication and authorization answers are cached by default, as Kubernetes
// components' delegated authentication and authorization do.
const (
	DefaultDebugAllowCacheTTL = 10 * time.Second
	DefaultDebugDenyCacheTTL  = 10 * time.Second
	DefaultDebugTokenCacheTTL = 10 * time.Second
)

// DebugServer serves OCM's placement debug endpoint over HTTPS with a self-signed
// certificate made at start:
//
//	GET /debug/placements/<namespace>/<name>
//	{"filteredPiplieResults":[...],"prioritizeResults":[...]}
//
// (OCM's spelling "Piplie" kept.) Access is checked as on a Kubernetes component's secure
// port: the request is authenticated by the hub API server (a bearer token through a
// TokenReview; no credentials is system:anonymous) and authorized with a SubjectAccessReview
// of verb get on the non-resource URL path. The hub's identity needs create on
// tokenreviews.authentication.k8s.io and subjectaccessreviews.authorization.k8s.io.
//
// A DebugServer is a controller-runtime Runnable that runs without leader election.
type DebugServer struct {
	opts    DebugOptions
	explain Explainer
	authn   authenticator.Request
	authz   authorizer.Authorizer

	ready chan struct{}
	once  sync.Once
	mu    sync.Mutex
	addr  net.Addr
}

// webhookBackoff is the retry of TokenReviews and SubjectAccessReviews, as in
// k8s.io/apiserver's DefaultAuthWebhookRetryBackoff.
func webhookBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// NewDebugServer returns a debug server explaining placements with explain (the placement
// Reconciler), reviewing tokens and access with the hub API server of config.
func NewDebugServer(config *rest.Config, explain Explainer, opts DebugOptions) (*DebugServer, error) {
	if opts.BindAddress == "" {
		opts.BindAddress = DefaultDebugBindAddress
	}
	ttl := func(v, def time.Duration) time.Duration {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	authnClient, err := authenticationv1.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("placement debug: authentication client: %w", err)
	}
	authzClient, err := authorizationv1.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("placement debug: authorization client: %w", err)
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		// As OCM: a request without credentials is system:anonymous, left to authorization.
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: true},
		TokenAccessReviewClient:  authnClient,
		TokenAccessReviewTimeout: 10 * time.Second,
		CacheTTL:                 ttl(opts.TokenCacheTTL, DefaultDebugTokenCacheTTL),
		WebhookRetryBackoff:      webhookBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("placement debug: authenticator: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authzClient,
		AllowCacheTTL:             ttl(opts.AllowCacheTTL, DefaultDebugAllowCacheTTL),
		DenyCacheTTL:              ttl(opts.DenyCacheTTL, DefaultDebugDenyCacheTTL),
		WebhookRetryBackoff:       webhookBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("placement debug: authorizer: %w", err)
	}
	return &DebugServer{opts: opts, explain: explain, authn: authn, authz: authz, ready: make(chan struct{})}, nil
}

// NeedLeaderElection is false: every replica answers for its own view.
func (s *DebugServer) NeedLeaderElection() bool { return false }

// Ready is closed once the server listens (Addr is then set).
func (s *DebugServer) Ready() <-chan struct{} { return s.ready }

// Addr is the address listened on, nil before Ready.
func (s *DebugServer) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Start serves until ctx ends.
func (s *DebugServer) Start(ctx context.Context) error {
	log := s.opts.Logger
	host, _, err := net.SplitHostPort(s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("placement debug: bind address %q: %w", s.opts.BindAddress, err)
	}
	certPEM, keyPEM, err := selfSigned(host)
	if err != nil {
		return fmt.Errorf("placement debug: serving certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("placement debug: serving certificate: %w", err)
	}
	ln, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("placement debug: %w", err)
	}
	s.mu.Lock()
	s.addr = ln.Addr()
	s.mu.Unlock()
	s.once.Do(func() { close(s.ready) })

	srv := &http.Server{
		Handler:           s.Handler(),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}},
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(tls.NewListener(ln, srv.TLSConfig)) }()
	log.Info("serving the placement debug endpoint", "address", ln.Addr().String(), "path", DebugPath+"<namespace>/<name>")
	select {
	case err := <-errc:
		return fmt.Errorf("placement debug: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("placement debug: %w", err)
	}
	return nil
}

// selfSigned makes a serving certificate for host (when set and not a wildcard), localhost
// and the loopback addresses.
func selfSigned(host string) ([]byte, []byte, error) {
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}
	dns := []string{"localhost"}
	name := "flotilla-placement-debug"
	if host != "" {
		if ip := net.ParseIP(host); ip != nil {
			if !ip.IsUnspecified() && !ip.IsLoopback() {
				ips = append(ips, ip)
			}
		} else if host != "localhost" {
			name = host
		}
	}
	return cert.GenerateSelfSignedCertKey(name, ips, dns)
}

// Handler is the endpoint behind authentication and authorization.
func (s *DebugServer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(DebugPath, s.serveDebug)
	return s.withAuth(mux)
}

// withAuth authenticates and authorizes every request as a Kubernetes component's secure
// port does: 401 for credentials the API server rejects, 403 when access is denied.
func (s *DebugServer) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		log := s.opts.Logger
		res, ok, err := s.authn.AuthenticateRequest(req)
		if err != nil || !ok {
			if err != nil {
				log.V(1).Info("placement debug: authentication failed", "error", err.Error())
			}
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs := authorizer.AttributesRecord{
			User:            res.User,
			Verb:            verb(req.Method),
			Path:            req.URL.Path,
			ResourceRequest: false,
		}
		decision, reason, err := s.authz.Authorize(req.Context(), attrs)
		if err != nil {
			log.Error(err, "placement debug: authorization failed", "user", res.User.GetName())
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("authorization of user %q failed: %v", res.User.GetName(), err))
			return
		}
		if decision != authorizer.DecisionAllow {
			msg := fmt.Sprintf("forbidden: User %q cannot %s path %q", res.User.GetName(), attrs.Verb, attrs.Path)
			if reason != "" {
				msg += ": " + reason
			}
			log.V(1).Info("placement debug: access denied", "user", res.User.GetName(), "path", attrs.Path, "reason", reason)
			writeError(w, http.StatusForbidden, msg)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// verb is the authorization verb of a non-resource request, as the API server derives it.
func verb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}

// debugResult is the answer: OCM's keys only.
type debugResult struct {
	Filters      []scheduler.FilterResult      `json:"filteredPiplieResults"`
	Prioritizers []scheduler.PrioritizerResult `json:"prioritizeResults"`
	Scores       map[string]int64              `json:"scores,omitempty"`
	// Error says why a misconfigured placement is not scheduled (nothing else is then set).
	Error string `json:"error,omitempty"`
}

func (s *DebugServer) serveDebug(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: use GET", req.Method))
		return
	}
	namespace, name, err := parseDebugPath(req.URL.Path)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	res, err := s.explain.Explain(req.Context(), namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		writeError(w, http.StatusNotFound, fmt.Sprintf("placement %s/%s not found", namespace, name))
		return
	case err != nil:
		s.opts.Logger.Error(err, "placement debug: explaining", "placement", namespace+"/"+name)
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("placement %s/%s: %v", namespace, name, err))
		return
	}
	out := debugResult{Filters: res.Filters, Prioritizers: res.Prioritizers, Scores: res.Scores, Error: res.Misconfigured}
	if out.Filters == nil {
		out.Filters = []scheduler.FilterResult{}
	}
	if out.Prioritizers == nil {
		out.Prioritizers = []scheduler.PrioritizerResult{}
	}
	writeJSON(w, http.StatusOK, out)
}

// parseDebugPath splits /debug/placements/<namespace>/<name>.
func parseDebugPath(path string) (string, string, error) {
	usage := fmt.Sprintf("the path is %s<namespace>/<name>", DebugPath)
	parts := strings.Split(strings.TrimPrefix(path, DebugPath), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("invalid path %q: %s", path, usage)
	}
	if errs := validation.IsDNS1123Label(parts[0]); len(errs) > 0 {
		return "", "", fmt.Errorf("invalid namespace %q: %s", parts[0], strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(parts[1]); len(errs) > 0 {
		return "", "", fmt.Errorf("invalid placement name %q: %s", parts[1], strings.Join(errs, "; "))
	}
	return parts[0], parts[1], nil
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

// writeJSON answers v as one line of JSON, without HTML escapes (read by people, with curl).
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"encoding the answer failed"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
