package webhook

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/core/backoff"
	"github.com/flotilla-dev/flotilla/core/hash"
)

// Defaults of Options.
const (
	// DefaultBindAddress listens on a free port of the loopback interface, which a
	// kube-apiserver on the same machine reaches (flotilla dev, tests).
	DefaultBindAddress = "127.0.0.1:0"
	// DefaultNamespace holds the certificate Secret: the hub's namespace.
	DefaultNamespace = "open-cluster-management-hub"
	// DefaultSecretName is the Secret holding the CA and the serving certificate.
	DefaultSecretName = "flotilla-hub-webhook-certs"
	// DefaultConfigurationName is the ValidatingWebhookConfiguration the Server writes.
	DefaultConfigurationName = "flotilla-hub"
	// DefaultCALifetime is the lifetime of the self-signed CA.
	DefaultCALifetime = 5 * 365 * 24 * time.Hour
	// DefaultCertLifetime is the lifetime of a serving certificate.
	DefaultCertLifetime = 90 * 24 * time.Hour
	// DefaultRenewalFraction: a certificate is replaced when less than a fifth of its
	// lifetime remains.
	DefaultRenewalFraction = 0.2
	// DefaultResyncPeriod is how often certificates are checked and the configuration is
	// re-applied even when nothing was seen to change.
	DefaultResyncPeriod = time.Minute
)

// FieldManager owns the fields the Server applies to its ValidatingWebhookConfiguration.
const FieldManager = "flotilla-webhook"

// ManagedByLabel marks the Secret and the configuration the Server writes.
const ManagedByLabel = "app.kubernetes.io/managed-by"

const managedBy = "flotilla-hub"

// Options configures a Server. The zero value serves on a free port of 127.0.0.1, reached by
// the API server at https://127.0.0.1:<port>.
type Options struct {
	// Disabled turns the server off: nothing validates what its handlers would. For callers
	// that embed Options (hub/manager); New ignores it.
	Disabled bool
	// BindAddress is host:port to listen on; port 0 picks a free port. Default
	// DefaultBindAddress.
	BindAddress string
	// Hosts are the DNS names and IP addresses the API server reaches the server at; the
	// serving certificate covers all of them and, unless Service is set, the configuration
	// points at https://<Hosts[0]>:<bound port> (and the certificate also covers
	// <ConfigurationName>-apiservice.<Namespace>.svc, the name APIServices reach it by; see
	// RegisterAPIService). Default: the host of BindAddress, which must then be a specific
	// address (not 0.0.0.0 or ::).
	Hosts []string
	// Service, when set, makes the configuration reach the server through a Service
	// (clientConfig.service) instead of a URL: for a hub running in the cluster whose API
	// server it serves. The certificate then also covers <name>.<namespace>.svc and
	// <name>.<namespace>.svc.cluster.local.
	Service *ServiceReference
	// Namespace holds the certificate Secret; it is created if missing. Default
	// DefaultNamespace.
	Namespace string
	// SecretName default DefaultSecretName; ConfigurationName default
	// DefaultConfigurationName, the name of both the Validating- and the
	// MutatingWebhookConfiguration. Servers of different names (the webhook components of a
	// split hub) write, and delete, only their own configurations and Secret.
	SecretName, ConfigurationName string
	// CALifetime and CertLifetime are the lifetimes of the CA and of a serving certificate;
	// defaults DefaultCALifetime and DefaultCertLifetime. CertLifetime may not exceed
	// CALifetime.
	CALifetime, CertLifetime time.Duration
	// RenewalFraction: a certificate is replaced when less than this fraction of its lifetime
	// remains, in (0, 1). Default DefaultRenewalFraction.
	RenewalFraction float64
	// ResyncPeriod is how often certificates are checked and the configuration re-applied
	// without a change seen; default DefaultResyncPeriod. It must be well within the renewal
	// window: at most RenewalFraction × CertLifetime / 4.
	ResyncPeriod time.Duration
	// Logger defaults to controller-runtime's logger named "webhook".
	Logger logr.Logger
}

// ServiceReference is a Service in front of the server.
type ServiceReference struct {
	Namespace, Name string
	Port            int32
}

// String is namespace/name:port, the form ParseServiceReference reads.
func (r ServiceReference) String() string {
	return fmt.Sprintf("%s/%s:%d", r.Namespace, r.Name, r.Port)
}

// ParseServiceReference reads namespace/name:port.
func ParseServiceReference(s string) (*ServiceReference, error) {
	nsName, portStr, ok := strings.Cut(s, ":")
	ns, name, ok2 := strings.Cut(nsName, "/")
	port, err := strconv.ParseInt(portStr, 10, 32)
	if !ok || !ok2 || err != nil || port < 1 || port > 65535 ||
		len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Label(name)) > 0 {
		return nil, fmt.Errorf("service %q: want namespace/name:port, e.g. open-cluster-management-hub/flotilla-hub-webhook:443", s)
	}
	return &ServiceReference{Namespace: ns, Name: name, Port: int32(port)}, nil
}

// withDefaults fills in and checks o.
func (o Options) withDefaults() (Options, error) {
	if o.BindAddress == "" {
		o.BindAddress = DefaultBindAddress
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.SecretName == "" {
		o.SecretName = DefaultSecretName
	}
	if o.ConfigurationName == "" {
		o.ConfigurationName = DefaultConfigurationName
	}
	if o.CALifetime == 0 {
		o.CALifetime = DefaultCALifetime
	}
	if o.CertLifetime == 0 {
		o.CertLifetime = DefaultCertLifetime
	}
	if o.RenewalFraction == 0 {
		o.RenewalFraction = DefaultRenewalFraction
	}
	if o.ResyncPeriod == 0 {
		o.ResyncPeriod = DefaultResyncPeriod
	}
	if o.Logger.GetSink() == nil {
		o.Logger = log.Log.WithName("webhook")
	}
	if err := checkConfigurationName(o.ConfigurationName); err != nil {
		return o, fmt.Errorf("webhook configuration name %w", err)
	}
	if err := checkSecretName(o.SecretName); err != nil {
		return o, fmt.Errorf("webhook secret name %w", err)
	}
	host, port, err := net.SplitHostPort(o.BindAddress)
	if err != nil {
		return o, fmt.Errorf("webhook bind address %q: %w", o.BindAddress, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return o, fmt.Errorf("webhook bind address %q: port: %w", o.BindAddress, err)
	}
	if len(o.Hosts) == 0 && o.Service == nil {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return o, fmt.Errorf("webhook bind address %q listens on every interface: say which host the API server reaches it at (Hosts, --webhook-host)", o.BindAddress)
		}
		o.Hosts = []string{host}
	}
	switch {
	case o.CALifetime < 0 || o.CertLifetime <= 0 || o.CertLifetime > o.CALifetime:
		return o, fmt.Errorf("webhook certificate lifetimes: need 0 < CertLifetime (%s) <= CALifetime (%s)", o.CertLifetime, o.CALifetime)
	case o.RenewalFraction <= 0 || o.RenewalFraction >= 1:
		return o, fmt.Errorf("webhook RenewalFraction %v must be between 0 and 1", o.RenewalFraction)
	case o.ResyncPeriod <= 0 || float64(o.ResyncPeriod) > o.RenewalFraction*float64(o.CertLifetime)/4:
		return o, fmt.Errorf("webhook ResyncPeriod %s must be positive and at most RenewalFraction × CertLifetime / 4 (%s)",
			o.ResyncPeriod, time.Duration(o.RenewalFraction*float64(o.CertLifetime)/4))
	}
	return o, nil
}

// checkConfigurationName: the configuration's name is also a label value (the probe's) and,
// with APIServiceSuffix, a Service's name, so a DNS-1035 label.
func checkConfigurationName(name string) error {
	if errs := validation.IsDNS1035Label(name + APIServiceSuffix); len(errs) > 0 {
		return fmt.Errorf("%q: must be a lowercase DNS label of at most %d characters: %s",
			name, validation.DNS1035LabelMaxLength-len(APIServiceSuffix), strings.Join(errs, "; "))
	}
	return nil
}

// checkSecretName: a Secret's name is a DNS subdomain.
func checkSecretName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// certPolicy is the certificate policy of o: which names and addresses to cover.
func (o Options) certPolicy() certPolicy {
	p := certPolicy{
		caLifetime: o.CALifetime, servingLifetime: o.CertLifetime, fraction: o.RenewalFraction,
		name: o.ConfigurationName + "-webhook", settle: o.ResyncPeriod,
	}
	hosts := slices.Clone(o.Hosts)
	if s := o.Service; s != nil {
		hosts = append(hosts, s.Name+"."+s.Namespace+".svc", s.Name+"."+s.Namespace+".svc.cluster.local")
	} else {
		// The aggregator verifies the server as <service>.<namespace>.svc of the APIService's
		// Service, here the ExternalName one, whatever address it dials.
		hosts = append(hosts, o.ConfigurationName+APIServiceSuffix+"."+o.Namespace+".svc")
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			p.ips = append(p.ips, ip)
		} else if !slices.Contains(p.dnsNames, h) {
			p.dnsNames = append(p.dnsNames, h)
		}
	}
	return p
}

// Server serves admission and conversion webhooks for the hub over TLS, with a CA and
// serving certificate it manages itself, and keeps a ValidatingWebhookConfiguration (and the
// spec.conversion of the CRDs it converts) pointing at it. Register handlers and converters,
// then run it with Start (a manager.Runnable; SetupWithManager adds it to a
// controller-runtime manager). See the package documentation.
type Server struct {
	opts   Options
	kube   kubernetes.Interface
	apiext apiextensionsclient.Interface
	dyn    dynamic.Interface
	log    logr.Logger
	policy certPolicy

	mu       sync.RWMutex
	handlers map[string]*registered // by Registration.Name
	paths    map[string]http.Handler
	retired  map[string]bool // paths of unregistered handlers, still answering
	addr     net.Addr

	conversions  []*registeredConversion
	watchCtx     context.Context // the loop's, once started
	crdInformers apiextensionsinformers.SharedInformerFactory

	apis        map[string]*registeredAPI // by APIService name
	frontProxy  *frontProxy               // once an APIService is registered
	apiWatching bool
	apiWatchers sync.WaitGroup

	cert    atomic.Pointer[tls.Certificate]
	trigger chan struct{}
	ready   chan struct{}
	started atomic.Bool
	probes  sync.Map // names of probe ConfigMaps in flight

	// loop state, used by the sync goroutine only
	material        *material
	appliedHash     string
	appliedRV       string
	probedRV        string
	drifts          int
	failingSince    time.Time
	lastFailureLogs time.Time
	conversionRVs   map[string]string // by CRD name, as last applied
}

type registered struct {
	handler Validating
	name    string
	path    string
	last    Registration // last valid registration, used if the handler later returns an invalid one
}

// New returns a Server for the API server of cfg. It serves nothing until Start.
func New(cfg *rest.Config, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("webhook server: clientset: %w", err)
	}
	apiext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("webhook server: apiextensions clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("webhook server: dynamic client: %w", err)
	}
	s := &Server{
		opts:     opts,
		kube:     kube,
		apiext:   apiext,
		dyn:      dyn,
		log:      opts.Logger,
		policy:   opts.certPolicy(),
		handlers: map[string]*registered{},
		paths:    map[string]http.Handler{},
		retired:  map[string]bool{},
		trigger:  make(chan struct{}, 1),
		ready:    make(chan struct{}),
	}
	s.paths[probePath] = s.probeHandler()
	return s, nil
}

// Register adds a validating handler. It may be called before or after Start; after Start
// the configuration gets the new webhook within moments.
func (s *Server) Register(v Validating) error {
	reg := v.Registration().withDefaults()
	if err := reg.validate(); err != nil {
		return err
	}
	if reg.Name == probeName {
		return fmt.Errorf("webhook name %s is reserved", probeName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, shared := v.(Shared); shared && reg.Mutating {
		return fmt.Errorf("webhook %s: a Shared handler cannot be mutating", reg.Name)
	}
	if _, dup := s.handlers[reg.Name]; dup {
		return fmt.Errorf("webhook %s is already registered", reg.Name)
	}
	if _, dup := s.paths[reg.Path]; dup && !s.retired[reg.Path] {
		return fmt.Errorf("webhook %s: path %s is already served", reg.Name, reg.Path)
	}
	log := s.log.WithValues("webhook", reg.Name)
	h, err := admission.StandaloneWebhook(&admission.Webhook{Handler: v}, admission.StandaloneOptions{Logger: log, MetricsPath: reg.Path})
	if err != nil {
		return fmt.Errorf("webhook %s: %w", reg.Name, err)
	}
	s.handlers[reg.Name] = &registered{handler: v, name: reg.Name, path: reg.Path, last: reg}
	s.paths[reg.Path] = h
	delete(s.retired, reg.Path)
	s.Resync()
	return nil
}

// Unregister removes the webhook named name from the configuration. Its handler keeps
// answering at its path (until another handler registers there), so that requests the API
// server sends before it sees the new configuration are not failed.
func (s *Server) Unregister(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.handlers[name]; ok {
		delete(s.handlers, name)
		s.retired[r.path] = true
		s.Resync()
	}
}

// Resync makes the Server re-read the registrations, check its certificates and re-apply the
// configuration soon.
func (s *Server) Resync() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Ready is closed once the API server has called the server through the configuration,
// that is once registered handlers are in effect.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the address the server listens on; nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.addr
}

// ConfigurationName is the ValidatingWebhookConfiguration the Server writes.
func (s *Server) ConfigurationName() string { return s.opts.ConfigurationName }

// SetupWithManager adds the Server to a controller-runtime manager (hub/manager.Component).
func (s *Server) SetupWithManager(mgr ctrl.Manager) error { return mgr.Add(s) }

// NeedLeaderElection is false: every hub replica serves webhooks.
func (s *Server) NeedLeaderElection() bool { return false }

// ServeHTTP dispatches by path to the registered handlers: webhooks by exact path, then
// APIServices by prefix (after front-proxy authentication).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	h := s.paths[r.URL.Path]
	var api http.Handler
	if h == nil {
		api = s.apiHandlerLocked(r.URL.Path)
	}
	s.mu.RUnlock()
	switch {
	case h != nil:
		h.ServeHTTP(w, r)
	case api != nil:
		s.serveAPI(w, r, api)
	default:
		http.NotFound(w, r)
	}
}

// Start listens, serves and keeps certificates and configuration current until ctx ends. On
// return the configuration stays in place (see the package documentation); a Server is
// started once.
func (s *Server) Start(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("webhook server: already started")
	}
	ln, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("webhook server: listening on %s: %w", s.opts.BindAddress, err)
	}
	s.mu.Lock()
	s.addr = ln.Addr()
	s.mu.Unlock()
	// Requests get this context: cancelled once shutdown has given them their grace period,
	// so that long-running streams and hijacked connections of APIServices end too.
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	srv := &http.Server{
		Handler: s,
		// No read or write timeout: APIServices serve watches and upgraded connections.
		ReadHeaderTimeout: 10 * time.Second,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: MaxConcurrentStreams},
		BaseContext:       func(net.Listener) context.Context { return serveCtx },
		TLSConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			// A client certificate is asked for but not checked here: the front-proxy
			// authenticator of the APIService paths verifies it against a CA that follows a
			// ConfigMap, and refuses with a 401 rather than a failed handshake. The API server
			// calls webhooks without one.
			ClientAuth: tls.RequestClientCert,
			// The current certificate, replaced on rotation without a restart.
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				if c := s.cert.Load(); c != nil {
					return c, nil
				}
				return nil, errors.New("no serving certificate yet")
			},
		},
		// Handshake errors (a client that gave up, a port scan) are detail, not errors.
		ErrorLog: stdlog.New(logWriter{s.log.V(1)}, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	s.log.Info("Serving admission webhooks", "address", ln.Addr().String(), "reachedAt", s.where())

	loopCtx, stopLoop := context.WithCancel(ctx)
	stopInformers := s.watch(loopCtx)
	s.mu.Lock()
	s.watchCtx = loopCtx
	s.startCRDWatchLocked()
	s.startAPIWatchLocked()
	s.mu.Unlock()
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		s.loop(loopCtx)
	}()
	select {
	case <-ctx.Done():
		err = nil
	case err = <-served:
		err = fmt.Errorf("webhook server: %w", err)
	}
	stopLoop()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	shutdownErr := srv.Shutdown(shutdownCtx)
	// What did not finish in the grace period (streams of APIServices) is cut.
	stopServing()
	_ = srv.Close()
	<-loopDone
	stopInformers()
	s.apiWatchers.Wait()
	s.mu.Lock()
	crdInformers := s.crdInformers
	s.mu.Unlock()
	if crdInformers != nil {
		crdInformers.Shutdown()
	}
	if err != nil {
		return err
	}
	if shutdownErr != nil && !errors.Is(shutdownErr, context.DeadlineExceeded) {
		return fmt.Errorf("webhook server: shutting down: %w", shutdownErr)
	}
	return nil
}

// logWriter turns the lines of the standard library's logger into log entries.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

// where says how the API server reaches the server.
func (s *Server) where() string {
	if svc := s.opts.Service; svc != nil {
		return "service " + svc.String()
	}
	return s.baseURL()
}

func (s *Server) baseURL() string {
	port := "0"
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		port = strconv.Itoa(a.Port)
	}
	return "https://" + net.JoinHostPort(s.opts.Hosts[0], port)
}

// watch triggers a sync whenever the Secret or the configuration changes (edited, deleted,
// rotated by another replica). The returned function waits for the informers to stop once
// ctx ended.
func (s *Server) watch(ctx context.Context) func() {
	byName := func(name string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
	}
	secrets := informers.NewSharedInformerFactoryWithOptions(s.kube, 0, informers.WithNamespace(s.opts.Namespace), byName(s.opts.SecretName))
	configs := informers.NewSharedInformerFactoryWithOptions(s.kube, 0, byName(s.opts.ConfigurationName))
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.Resync() },
		UpdateFunc: func(any, any) { s.Resync() },
		DeleteFunc: func(any) { s.Resync() },
	}
	for _, inf := range []toolscache.SharedIndexInformer{
		secrets.Core().V1().Secrets().Informer(),
		configs.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer(),
		configs.Admissionregistration().V1().MutatingWebhookConfigurations().Informer(),
	} {
		_, _ = inf.AddEventHandler(handler)
	}
	secrets.Start(ctx.Done())
	configs.Start(ctx.Done())
	return func() {
		secrets.Shutdown()
		configs.Shutdown()
	}
}

// loop syncs on start, on every trigger and every ResyncPeriod, and sooner after a failure.
func (s *Server) loop(ctx context.Context) {
	ticker := time.NewTicker(s.opts.ResyncPeriod)
	defer ticker.Stop()
	failures := 0
	for {
		var retry <-chan time.Time
		if err := s.sync(ctx); err != nil {
			failures++
			wait := retryDelay(failures, s.opts.ResyncPeriod)
			if transient(err) {
				// The API server picks up a configuration within moments, a handler loads
				// within moments: look again soon.
				wait = min(wait, 500*time.Millisecond)
			}
			retry = time.After(wait)
		} else {
			failures = 0
		}
		if s.drifts > 1 && !backoff.Sleep(ctx, clock.RealClock{}, retryDelay(s.drifts, s.opts.ResyncPeriod)) {
			// Someone keeps changing the configuration back: do not fight faster than this.
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-retry:
		case <-ticker.C:
		case <-s.trigger:
		}
	}
}

// retryDelay is 100ms doubling with n, at most limit.
func retryDelay(n int, limit time.Duration) time.Duration {
	return min(50*time.Millisecond<<min(n, 16), limit)
}

// sync brings certificates, the configuration and the CRDs' conversion webhooks up to date
// and checks that the API server calls the server, logging lasting failures.
func (s *Server) sync(ctx context.Context) error {
	err := s.syncCertificates(ctx)
	if err == nil {
		err = s.syncConfiguration(ctx)
	}
	if err == nil {
		err = s.syncMutating(ctx)
	}
	if err == nil && s.probedRV != s.appliedRV {
		if err = s.probe(ctx); err == nil {
			s.probedRV = s.appliedRV
			select {
			case <-s.ready:
			default:
				close(s.ready)
				s.log.Info("Admission webhooks in effect", "configuration", s.opts.ConfigurationName, "reachedAt", s.where())
			}
		}
	}
	// Conversion webhooks and APIServices do not wait for the probe: they need the CA only.
	if s.material != nil {
		if cerr := s.syncConversions(ctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("conversion webhooks: %w", cerr))
		}
		if aerr := s.syncAPIServices(ctx); aerr != nil {
			err = errors.Join(err, fmt.Errorf("aggregated APIs: %w", aerr))
		}
	}
	if err == nil || ctx.Err() != nil {
		s.failingSince = time.Time{}
		return err
	}
	now := time.Now()
	if s.failingSince.IsZero() {
		s.failingSince = now
	}
	// A new configuration takes the API server a moment to pick up: report only failures
	// that last, and at most once per resync period.
	if (!transient(err) || now.Sub(s.failingSince) > 10*time.Second) && now.Sub(s.lastFailureLogs) >= s.opts.ResyncPeriod {
		s.lastFailureLogs = now
		s.log.Error(err, "Webhooks not in effect; retrying", "configuration", s.opts.ConfigurationName,
			"reachedAt", s.where(), "failingFor", now.Sub(s.failingSince).Round(time.Second).String())
	}
	return err
}

// syncCertificates loads the Secret, renews what is due, writes it back and serves the
// current certificate.
func (s *Server) syncCertificates(ctx context.Context) error {
	secrets := s.kube.CoreV1().Secrets(s.opts.Namespace)
	secret, err := secrets.Get(ctx, s.opts.SecretName, metav1.GetOptions{})
	var cur *material
	var problems []string
	switch {
	case apierrors.IsNotFound(err):
		secret = nil
	case err != nil:
		return fmt.Errorf("reading Secret %s/%s: %w", s.opts.Namespace, s.opts.SecretName, err)
	default:
		cur, problems = parseMaterial(secret.Data)
	}
	now := time.Now()
	next, reasons, err := s.policy.renew(cur, now)
	if err != nil {
		return err
	}
	if len(reasons) > 0 {
		if err := s.writeSecret(ctx, secret, next); err != nil {
			return err
		}
		s.log.Info("Renewed webhook certificates", "secret", s.opts.Namespace+"/"+s.opts.SecretName,
			"reasons", append(problems, reasons...), "servingExpires", next.serving.Cert.NotAfter.UTC().Format(time.RFC3339),
			"caExpires", next.ca.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if cur := s.cert.Load(); cur == nil || !cur.Leaf.Equal(next.serving.Cert) {
		c, err := next.tlsCertificate()
		if err != nil {
			return fmt.Errorf("loading serving certificate: %w", err)
		}
		s.cert.Store(c)
	}
	s.material = next
	return nil
}

func (s *Server) writeSecret(ctx context.Context, cur *corev1.Secret, m *material) error {
	secrets := s.kube.CoreV1().Secrets(s.opts.Namespace)
	if cur == nil {
		if err := s.ensureNamespace(ctx); err != nil {
			return err
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: s.opts.SecretName, Namespace: s.opts.Namespace, Labels: map[string]string{ManagedByLabel: managedBy}},
			Type:       corev1.SecretTypeTLS,
			Data:       m.secretData(),
		}
		if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			// AlreadyExists: another replica was first; use its certificates next time.
			return fmt.Errorf("creating Secret %s/%s: %w", s.opts.Namespace, s.opts.SecretName, err)
		}
		return nil
	}
	secret := cur.DeepCopy()
	secret.Data = m.secretData()
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[ManagedByLabel] = managedBy
	// The resourceVersion read guards against a concurrent rotation by another replica.
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", s.opts.Namespace, s.opts.SecretName, err)
	}
	return nil
}

// ensureNamespace creates Namespace when missing. It reads it first: a server whose RBAC
// allows it only to get its own namespace (the split hub's webhook components) is refused a
// create even of a namespace that exists.
func (s *Server) ensureNamespace(ctx context.Context) error {
	_, err := s.kube.CoreV1().Namespaces().Get(ctx, s.opts.Namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.opts.Namespace}}
		if _, err = s.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", s.opts.Namespace, err)
	}
	return nil
}

// configuration returns the ValidatingWebhookConfiguration the Server applies for caBundle
// over live (nil: none exists): one webhook per registered handler plus the Server's probe,
// sorted by name.
func (s *Server) configuration(ctx context.Context, caBundle []byte, live *admissionregistrationv1.ValidatingWebhookConfiguration) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	regs := []Registration{s.probeRegistration()}
	s.mu.Lock()
	handlers := make([]*registered, 0, len(s.handlers))
	for _, r := range s.handlers {
		handlers = append(handlers, r)
	}
	s.mu.Unlock()
	for _, r := range handlers {
		reg, err := s.registration(ctx, r, live)
		if err != nil {
			return nil, err
		}
		if !reg.Mutating {
			regs = append(regs, reg)
		}
	}
	slices.SortFunc(regs, func(a, b Registration) int { return strings.Compare(a.Name, b.Name) })
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.opts.ConfigurationName,
			Labels: map[string]string{ManagedByLabel: managedBy},
		},
	}
	for _, reg := range regs {
		cfg.Webhooks = append(cfg.Webhooks, reg.validatingWebhook(s.clientConfig(caBundle, reg.Path)))
	}
	return cfg, nil
}

// clientConfig is how the API server reaches the handler at path.
func (s *Server) clientConfig(caBundle []byte, path string) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
	if svc := s.opts.Service; svc != nil {
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: svc.Namespace, Name: svc.Name, Path: &path, Port: &svc.Port}
	} else {
		url := s.baseURL() + path
		cc.URL = &url
	}
	return cc
}

// mutatingConfiguration is the MutatingWebhookConfiguration for the Mutating handlers, sorted
// by name; nil when there are none.
func (s *Server) mutatingConfiguration(caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	s.mu.Lock()
	handlers := make([]*registered, 0, len(s.handlers))
	for _, r := range s.handlers {
		handlers = append(handlers, r)
	}
	s.mu.Unlock()
	var regs []Registration
	for _, r := range handlers {
		if reg := s.validRegistration(r); reg.Mutating {
			regs = append(regs, reg)
		}
	}
	if len(regs) == 0 {
		return nil
	}
	slices.SortFunc(regs, func(a, b Registration) int { return strings.Compare(a.Name, b.Name) })
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.opts.ConfigurationName,
			Labels: map[string]string{ManagedByLabel: managedBy},
		},
	}
	for _, reg := range regs {
		cfg.Webhooks = append(cfg.Webhooks, reg.mutatingWebhook(s.clientConfig(caBundle, reg.Path)))
	}
	return cfg
}

// syncMutating applies the MutatingWebhookConfiguration, or deletes it when no handler is
// mutating. No handler of it is Shared, so every replica applies the same one and needs no
// guard. It is not probed: it reaches the same server with the same CA as the validating
// configuration, and a mutating handler may only do what its callers would also do without
// it (see manifestwork.Finalizer), so the moments before the API server picks it up are
// harmless.
func (s *Server) syncMutating(ctx context.Context) error {
	configs := s.kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg := s.mutatingConfiguration(s.material.bundlePEM())
	if cfg == nil {
		if err := configs.Delete(ctx, s.opts.ConfigurationName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting MutatingWebhookConfiguration %s: %w", s.opts.ConfigurationName, err)
		}
		return nil
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	force := true
	if _, err := configs.Patch(ctx, cfg.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
		return fmt.Errorf("applying MutatingWebhookConfiguration %s: %w", cfg.Name, err)
	}
	return nil
}

// registration is r's entry in the configuration: its handler's Registration, or the previous
// one if that is invalid. For a Shared handler, see Shared: nothing until it has loaded, and
// the rules live has for it are kept unless it confirms its state is the newest.
func (s *Server) registration(ctx context.Context, r *registered, live *admissionregistrationv1.ValidatingWebhookConfiguration) (Registration, error) {
	shared, ok := r.handler.(Shared)
	if !ok {
		return s.validRegistration(r), nil
	}
	select {
	case <-shared.Loaded():
	default:
		return Registration{}, &errWaiting{what: "webhook " + r.name + " to load what its rules follow"}
	}
	reg := s.validRegistration(r)
	liveRules, found := webhookRules(live, r.name)
	if !found || coversRules(reg.Rules, liveRules) {
		return reg, nil
	}
	// Narrowing. Current is asked before Registration is read again, so the rules applied
	// follow a state at least as new as the one confirmed newest.
	current, err := shared.Current(ctx)
	if err != nil {
		return Registration{}, fmt.Errorf("webhook %s: %w", r.name, err)
	}
	reg = s.validRegistration(r)
	if !current {
		reg.Rules = unionRules(reg.Rules, liveRules)
	}
	return reg, nil
}

// validRegistration is r's handler's Registration, or the last valid one.
func (s *Server) validRegistration(r *registered) Registration {
	reg := r.handler.Registration().withDefaults()
	reg.Name, reg.Path = r.name, r.path
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := reg.validate(); err != nil {
		s.log.Error(err, "Handler returned an invalid registration; keeping its previous one", "webhook", r.name)
		reg = r.last
	}
	r.last = reg
	return reg
}

// webhookRules are the rules of the webhook named name in cfg, if it has one.
func webhookRules(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, name string) ([]admissionregistrationv1.RuleWithOperations, bool) {
	if cfg == nil {
		return nil, false
	}
	for _, w := range cfg.Webhooks {
		if w.Name == name {
			return w.Rules, true
		}
	}
	return nil, false
}

// syncConfiguration server-side-applies the configuration over the live one, guarded by the
// live one's resourceVersion: rules kept from it (Shared) are not lost to a write by another
// replica in between. An apply that changes an object the Server had already applied
// unchanged means someone else edited or deleted it.
func (s *Server) syncConfiguration(ctx context.Context) error {
	configs := s.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	live, err := configs.Get(ctx, s.opts.ConfigurationName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", s.opts.ConfigurationName, err)
	}
	cfg, err := s.configuration(ctx, s.material.bundlePEM(), live)
	if err != nil {
		return err
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	digest := hash.Bytes(data)
	if live != nil {
		cfg.ResourceVersion = live.ResourceVersion
		if data, err = json.Marshal(cfg); err != nil {
			return err
		}
	}
	force := true
	applied, err := configs.Patch(ctx, cfg.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if apierrors.IsConflict(err) {
		return &errWaiting{what: "ValidatingWebhookConfiguration " + cfg.Name + " to stop changing (written by another replica)"}
	}
	if err != nil {
		return fmt.Errorf("applying ValidatingWebhookConfiguration %s: %w", cfg.Name, err)
	}
	switch {
	case applied.ResourceVersion == s.appliedRV:
		s.drifts = 0
	case digest == s.appliedHash:
		s.drifts++
		s.log.Info("Restored ValidatingWebhookConfiguration changed or deleted by someone else", "configuration", cfg.Name, "times", s.drifts)
	default:
		s.drifts = 0
		s.log.V(1).Info("Applied ValidatingWebhookConfiguration", "configuration", cfg.Name, "webhooks", len(cfg.Webhooks))
	}
	s.appliedHash, s.appliedRV = digest, applied.ResourceVersion
	return nil
}

// The probe: a dry-run create of a labelled ConfigMap in Namespace, which only the Server's
// own probe webhook matches and always denies, naming the ConfigMap. Seeing that denial
// proves the API server calls this server through the configuration with a CA it trusts.
const (
	probeName  = "probe.webhook.flotilla.dev"
	probePath  = "/probe"
	probeLabel = "webhook.flotilla.dev/probe"
)

func (s *Server) probeRegistration() Registration {
	return Registration{
		Name: probeName,
		Path: probePath,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
			},
		}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: s.opts.Namespace}},
		ObjectSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: s.opts.ConfigurationName}},
		TimeoutSeconds:    5,
	}.withDefaults()
}

func probeAnswer(name string) string { return "webhook probe " + name + " reached its server" }

func (s *Server) probeHandler() http.Handler {
	h, _ := admission.StandaloneWebhook(&admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		if _, ok := s.probes.Load(req.Name); ok {
			return admission.Denied(probeAnswer(req.Name))
		}
		return admission.Denied("unknown webhook probe")
	})}, admission.StandaloneOptions{Logger: s.log.WithValues("webhook", probeName)})
	return h
}

// errNotInEffect: the API server admitted the probe without calling any webhook, so it
// has not picked up the configuration yet.
type errNotInEffect struct{}

func (*errNotInEffect) Error() string {
	return "the API server has not called the webhook server yet (configuration not in effect)"
}

// errWaiting: the configuration waits for what (a Shared handler to load, a concurrent write
// to settle).
type errWaiting struct{ what string }

func (e *errWaiting) Error() string { return "waiting for " + e.what }

// transient says err is expected to clear within moments (errNotInEffect, errWaiting).
func transient(err error) bool {
	var notYet *errNotInEffect
	var waiting *errWaiting
	return errors.As(err, &notYet) || errors.As(err, &waiting)
}

func (s *Server) probe(ctx context.Context) error {
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	name := "flotilla-webhook-probe-" + hex.EncodeToString(nonce)
	s.probes.Store(name, true)
	defer s.probes.Delete(name)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: s.opts.Namespace, Labels: map[string]string{probeLabel: s.opts.ConfigurationName},
	}}
	_, err := s.kube.CoreV1().ConfigMaps(s.opts.Namespace).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil:
		return &errNotInEffect{}
	case strings.Contains(err.Error(), probeAnswer(name)):
		return nil
	default:
		return fmt.Errorf("the API server cannot call the webhook server at %s (from another host, set the host it is reached at or a Service): %w", s.where(), err)
	}
}
