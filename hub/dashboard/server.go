// Package dashboard serves the fleet dashboard: a web page fed by Server-Sent Events with a
// compact view model of the hub (clusters, placements, rollouts, add-ons, plugins, policies)
// kept current from watches. `flotilla dashboard` serves it locally with the user's
// kubeconfig; the hub may serve it as an aggregated API, filtering per viewer.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/policy"
)

// Options configures a Server.
type Options struct {
	// Config is the identity whose watches feed the model (local: the user's; hub: the hub's).
	Config *rest.Config
	// Namespaces are, in local mode, the namespaces to try per namespaced kind when a
	// cluster-wide list is forbidden (besides the kubeconfig context namespace, which the
	// command adds).
	Namespaces []string
	// Authorizer nil is local mode: every viewer sees all that Config can read. Set, it is hub
	// mode: each viewer sees what the Authorizer lets them list.
	Authorizer Authorizer
	// Token is, in local mode, the access token required on first visit ("" = none).
	Token string
	// HostIPs are, in local mode, IP addresses accepted as Host besides loopback: the
	// non-loopback IP the server is bound to (the token still guards). Not in design-26's
	// Options; an addition.
	HostIPs []string
	Logger  logr.Logger
	// Clock tells the time rollout states are computed at. Default real.
	Clock clock.PassiveClock
	// BatchInterval: deltas are sent at most this often. Default 100ms.
	BatchInterval time.Duration
	// MaxStreams caps concurrent event streams; more get 503. Default 100.
	MaxStreams int
	// SyncTimeout bounds the first sync of the watches: after it Start fails naming the kinds
	// that did not sync (e.g. a right the serving identity lacks: informers retry forever).
	// Default 2 minutes. Not in design-26's Options; an addition.
	SyncTimeout time.Duration
}

// Authorizer answers whether user may verb the resource gr in namespace ("" = cluster-wide).
type Authorizer interface {
	Allowed(ctx context.Context, u user.Info, verb string, gr schema.GroupResource, namespace string) (bool, error)
}

const (
	defaultBatchInterval = 100 * time.Millisecond
	defaultMaxStreams    = 100
	defaultSyncTimeout   = 2 * time.Minute
	// rolloutDebounce gathers the changes of one reconcile before rollouts are recomputed.
	rolloutDebounce = 250 * time.Millisecond
	// rolloutMinInterval is the least time between two computations of one rollout (more
	// when it is slow: twice its last computation).
	rolloutMinInterval = 2 * time.Second
	// rolloutTimeout bounds one rollout's computation.
	rolloutTimeout = 30 * time.Second
	// rolloutRefresh recomputes every rollout anyway: their states have clocks (minSuccessTime, timeouts).
	rolloutRefresh = 30 * time.Second
	// accessRefresh is how long a viewer's authorization answers are trusted (hub mode).
	accessRefresh = 30 * time.Second
	pingInterval  = 15 * time.Second
	writeTimeout  = 10 * time.Second
	// subscriberQueue bounds the batches queued for one stream; one that falls further
	// behind is sent a fresh snapshot instead.
	subscriberQueue = 32
	// maxUserStreams caps one hub-mode viewer's concurrent streams, within MaxStreams.
	maxUserStreams = 8
	// maxExplains bounds the placement explanations computed at once (server-wide).
	maxExplains = 2
	// explainTimeout bounds one explanation.
	explainTimeout = 30 * time.Second
	// requestTimeout bounds reads the endpoints make on a viewer's behalf.
	requestTimeout = 30 * time.Second
)

// Server keeps the view model and serves it.
type Server struct {
	opts   Options
	log    logr.Logger
	scheme *runtime.Scheme
	kube   kubernetes.Interface
	direct client.Client // reads with Config (local mode: the user's rights)

	// Set by Start before synced is closed.
	cache     cache.Cache
	events    map[string]cache.Cache // involved kind →
	policies  cache.Cache            // policy ConfigMaps; nil when not watched
	resAccess map[string]resAccess
	access    map[string]Access
	informers map[string]cache.Informer // what is watched (e.g. "placements.cluster...") → its informer
	user      string

	synced   chan struct{}
	failed   chan struct{}
	startErr error

	dirtyMu   sync.Mutex
	dirty     dirtySet
	rollMu    sync.Mutex
	rollDirty map[string]bool
	rollAll   bool
	rollKick  chan struct{}
	// Under rollMu: placement "ns/name" → marks of the rollouts referencing it, and back;
	// each rollout's last computation; each rollout's last good view (by key).
	rollRefs   map[string]map[string]bool
	rollRefsBy map[string][]string
	rollLast   map[string]rolloutTiming
	rollGood   map[string]Rollout

	st *store

	streams  chan struct{} // semaphore of MaxStreams
	explains chan struct{} // semaphore of maxExplains
	// userStreams counts each hub-mode viewer's open streams (at most maxUserStreams).
	userStreamsMu sync.Mutex
	userStreams   map[string]int
	// recheckEvery is accessRefresh (shorter in tests).
	recheckEvery time.Duration
	handler      http.Handler
	startOnce    sync.Once
}

// New validates opts and builds a Server; Start runs it.
func New(opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, errors.New("dashboard: Options.Config is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.BatchInterval <= 0 {
		opts.BatchInterval = defaultBatchInterval
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = defaultMaxStreams
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = defaultSyncTimeout
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	scheme := runtime.NewScheme()
	if err := apischeme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("dashboard: building the scheme: %w", err)
	}
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("dashboard: client for %s: %w", opts.Config.Host, err)
	}
	direct, err := client.New(opts.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("dashboard: client for %s: %w", opts.Config.Host, err)
	}
	s := &Server{
		opts: opts, log: opts.Logger, scheme: scheme, kube: kube, direct: direct,
		synced: make(chan struct{}), failed: make(chan struct{}),
		dirty: newDirtySet(), rollDirty: map[string]bool{}, rollKick: make(chan struct{}, 1),
		rollRefs: map[string]map[string]bool{}, rollRefsBy: map[string][]string{}, rollLast: map[string]rolloutTiming{}, rollGood: map[string]Rollout{},
		st: newStore(), streams: make(chan struct{}, opts.MaxStreams), explains: make(chan struct{}, maxExplains), userStreams: map[string]int{}, recheckEvery: accessRefresh,
	}
	s.handler = s.routes()
	return s, nil
}

func (s *Server) hubMode() bool { return s.opts.Authorizer != nil }

// Start runs the watches until ctx ends (blocks). It may be called once.
func (s *Server) Start(ctx context.Context) error {
	err := errors.New("dashboard: Start called twice")
	s.startOnce.Do(func() { err = s.start(ctx) })
	return err
}

func (s *Server) fail(err error) error {
	s.startErr = err
	close(s.failed)
	return err
}

func (s *Server) start(ctx context.Context) error {
	if s.hubMode() {
		s.resAccess = map[string]resAccess{}
		for name := range resources {
			s.resAccess[name] = resAccess{all: true}
		}
	} else {
		// One review first: a hub that cannot be reached (or a kubeconfig it refuses) fails
		// the start rather than yield a page of errors.
		if _, err := mayListWatch(ctx, s.kube, resources[resClusters].gr, ""); err != nil {
			return s.fail(fmt.Errorf("dashboard: asking %s what this kubeconfig may read: %w", s.opts.Config.Host, err))
		}
		s.resAccess = probeAccess(ctx, s.kube, s.candidates)
		s.user = s.whoAmI(ctx)
	}
	if err := s.buildCaches(); err != nil {
		return s.fail(err)
	}
	if err := s.watch(ctx); err != nil {
		return s.fail(err)
	}
	s.access = kindAccess(s.resAccess)
	for name, a := range s.resAccess {
		if a.none() {
			s.log.Info("not watching", "resource", resources[name].gr.String(), "reason", a.err)
		}
	}
	// Stop the watches (cancel) before waiting for them (deferred in reverse order).
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2+len(s.events))
	run := func(what string, c cache.Cache) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Start(ctx); err != nil {
				errs <- fmt.Errorf("dashboard: %s watches: %w", what, err)
				cancel()
			}
		}()
	}
	side := map[string]cache.Cache{}
	for kind, c := range s.events {
		side[kind+" Event"] = c
	}
	if s.policies != nil {
		side["policy ConfigMap"] = s.policies
	}
	run("hub", s.cache)
	for what, c := range side {
		run(what, c)
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, s.opts.SyncTimeout)
	defer syncCancel()
	if !s.cache.WaitForCacheSync(syncCtx) {
		return s.fail(s.syncErr(ctx, errs))
	}
	for _, c := range side {
		if !c.WaitForCacheSync(syncCtx) {
			return s.fail(s.syncErr(ctx, errs))
		}
	}
	syncCancel()
	// The informers' initial adds marked every object dirty: compute the whole model once
	// before the first viewer can ask for it.
	s.recompute(ctx)
	s.recomputeRollouts(ctx, true)
	s.st.flush()
	close(s.synced)
	s.log.Info("dashboard model synced", "mode", map[bool]string{true: "hub", false: "local"}[s.hubMode()])

	wg.Add(2)
	go func() { defer wg.Done(); s.modelLoop(ctx) }()
	go func() { defer wg.Done(); s.rolloutLoop(ctx) }()
	select {
	case <-ctx.Done():
	case err := <-errs:
		// The model is frozen from here: end the open streams (failed), so that clients
		// reconnect and are told 503, rather than show a stale page as live.
		cancel()
		s.log.Error(err, "dashboard watches failed; closing the event streams")
		return s.fail(err)
	}
	return nil
}

func (s *Server) syncErr(ctx context.Context, errs chan error) error {
	select {
	case err := <-errs:
		return err
	default:
	}
	if ctx.Err() != nil {
		return fmt.Errorf("dashboard: watches of %s did not sync: %w", s.opts.Config.Host, ctx.Err())
	}
	var unsynced []string
	for what, inf := range s.informers {
		if !inf.HasSynced() {
			unsynced = append(unsynced, what)
		}
	}
	slices.Sort(unsynced)
	return fmt.Errorf("dashboard: watches of %s did not sync within %s: %s (may the serving identity list and watch them?)",
		s.opts.Config.Host, s.opts.SyncTimeout, strings.Join(unsynced, ", "))
}

// WaitForSync returns once the first model is complete, or with Start's error, or ctx's.
func (s *Server) WaitForSync(ctx context.Context) error {
	select {
	case <-s.synced:
		return nil
	case <-s.failed:
		return s.startErr
	case <-ctx.Done():
		return fmt.Errorf("dashboard: waiting for the watches of %s to sync: %w", s.opts.Config.Host, ctx.Err())
	}
}

// reader reads what the dashboard watches from its cache, and other kinds (bindings,
// scores, plugin sources) directly with Config: what rollouts and explain need.
func (s *Server) reader() client.Reader { return ExplainReader(s.cache, s.direct) }

// candidates are the namespaces to try for a resource when a cluster-wide list is
// forbidden: the given ones, and for policy ConfigMaps and Events the hub's namespace,
// where policy ConfigMaps live.
func (s *Server) candidates(resource string) []string {
	all := slices.Clone(s.opts.Namespaces)
	if resource == resPolicies || resource == resEvents {
		all = append(all, policy.DefaultNamespace)
	}
	var out []string
	for _, ns := range all {
		if ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// whoAmI is the user name the API server sees for Config ("" when it will not say).
func (s *Server) whoAmI(ctx context.Context) string {
	r, err := s.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		s.log.V(1).Info("SelfSubjectReview failed; the page shows no user name", "error", err.Error())
		return ""
	}
	return r.Status.UserInfo.Username
}
