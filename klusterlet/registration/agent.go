package registration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"

	"github.com/flotilla-dev/flotilla/core/backoff"
)

// userAgent identifies the agent's requests in API server audit logs.
const userAgent = "flotilla-registration-agent"

// Phase is where the agent is in its lifecycle.
type Phase string

const (
	// PhaseStarting: preparing the agent namespace and identity.
	PhaseStarting Phase = "Starting"
	// PhaseBootstrapping: using the bootstrap identity to create the
	// ManagedCluster and a CSR.
	PhaseBootstrapping Phase = "Bootstrapping"
	// PhaseWaitingForCertificate: a CSR is pending on the hub.
	PhaseWaitingForCertificate Phase = "WaitingForCertificate"
	// PhaseConnected: the agent holds signed hub credentials. Whether the hub
	// accepted the cluster is State.Accepted.
	PhaseConnected Phase = "Connected"
)

// State is a snapshot of the agent for callers embedding it (tests, the
// command's logs, benchmarks).
type State struct {
	Phase       Phase
	ClusterName string
	AgentName   string
	// CSRName is the request the agent created or is waiting for.
	CSRName string
	// Accepted is true once the hub's HubAcceptedManagedCluster condition is True.
	Accepted bool
	// Joined is true once the agent has reported ManagedClusterJoined.
	Joined bool
	// KubeconfigLoaded is true once the agent has read a usable hub kubeconfig: the stored
	// one of the hub kubeconfig secret or the bootstrap one. It stays true.
	KubeconfigLoaded bool
	// CertificateNotAfter is when the current hub client certificate expires.
	CertificateNotAfter time.Time
	// Rotations counts certificates renewed by this process.
	Rotations int
	// StatusSyncs counts completed status syncs of the accepted cluster;
	// StatusUpdates counts those that had to write (the others found nothing
	// changed).
	StatusSyncs, StatusUpdates int
	// StatusSyncsStarted counts status syncs started: each reads the ManagedCluster (and,
	// once the cluster is accepted, probes the managed API server). StatusHubGets counts
	// those that read it from the hub; the others took the copy the ManagedCluster watch
	// delivered last. The hub is read before the watch has delivered one, after a failed
	// sync, and every 10 StatusSyncPeriods.
	StatusSyncsStarted, StatusHubGets int
	// LastError is the most recent failure, with the object it concerns.
	LastError     string
	LastErrorTime time.Time
	// ManagedKubeconfigError is why the Secret Config.ManagedKubeconfigSecret could not be
	// used when last read, naming it; empty once it was.
	ManagedKubeconfigError string
	// ManagedKubeconfigLoads counts the managed cluster kubeconfigs the agent started
	// sessions with from that Secret (1 after the first, +1 per change).
	ManagedKubeconfigLoads int
}

// Agent is one registration agent. Create it with New and start it with Run.
type Agent struct {
	cfg    Config
	log    logr.Logger
	scheme *runtime.Scheme
	// management holds the agent namespace and its Secrets (Config.ManagementConfig).
	management kubernetes.Interface
	// managedCfg, managed and managedClient reach the managed cluster; managedMapper maps its
	// kinds; managedURL and managedCA are reported to the hub. Set by New, or, from
	// Config.ManagedKubeconfigSecret, by Run while no session runs.
	managedCfg    *rest.Config
	managed       kubernetes.Interface
	managedClient client.WithWatch
	managedMapper meta.RESTMapper
	managedURL    string
	managedCA     []byte

	mu       sync.Mutex
	state    State
	identity Identity
	// kubeSystemUID backs the id.k8s.io claim; it never changes once read.
	kubeSystemUID string
	// rotation is when the current client certificate is renewed; it outlives sessions so
	// that the point drawn for a certificate stays put.
	rotation *rotationSchedule
}

// NewScheme returns the types the agent reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.AddToScheme, clusterv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// New validates cfg and builds the managed-cluster clients. It does not contact
// any server.
func New(cfg Config) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	scheme := cfg.Scheme
	if scheme == nil {
		if scheme, err = NewScheme(); err != nil {
			return nil, fmt.Errorf("registration agent: building scheme: %w", err)
		}
	}
	a := &Agent{
		cfg:      cfg,
		log:      cfg.Logger,
		scheme:   scheme,
		state:    State{Phase: PhaseStarting, ClusterName: cfg.ClusterName, AgentName: cfg.AgentName},
		rotation: newRotationSchedule(cfg.RotationThreshold, cfg.RotationRand),
	}
	if cfg.ManagedConfig != nil {
		if err := a.setManaged(cfg.ManagedConfig, cfg.ManagedMapper); err != nil {
			return nil, fmt.Errorf("registration agent: %w", err)
		}
	}
	if cfg.ManagementConfig == cfg.ManagedConfig {
		// Default mode: one cluster, one clientset (a fleet simulator runs thousands).
		a.management = a.managed
		return a, nil
	}
	managementCfg := rest.CopyConfig(cfg.ManagementConfig)
	if managementCfg.UserAgent == "" {
		managementCfg.UserAgent = userAgent
	}
	if a.management, err = kubernetes.NewForConfig(managementCfg); err != nil {
		return nil, fmt.Errorf("registration agent: management cluster client: %w", err)
	}
	return a, nil
}

// setManaged builds the managed cluster's clients from cfg; mapper nil builds one. Only
// while no session runs.
func (a *Agent) setManaged(cfg *rest.Config, mapper meta.RESTMapper) error {
	url, ca, err := a.cfg.managedClientConfig(cfg)
	if err != nil {
		return err
	}
	managedCfg := rest.CopyConfig(cfg)
	if managedCfg.UserAgent == "" {
		managedCfg.UserAgent = userAgent
	}
	managed, err := kubernetes.NewForConfig(managedCfg)
	if err != nil {
		return fmt.Errorf("managed cluster client: %w", err)
	}
	if mapper == nil {
		httpClient, err := rest.HTTPClientFor(managedCfg)
		if err == nil {
			mapper, err = apiutil.NewDynamicRESTMapper(managedCfg, httpClient)
		}
		if err != nil {
			return fmt.Errorf("managed cluster REST mapper: %w", err)
		}
	}
	managedClient, err := client.NewWithWatch(managedCfg, client.Options{Scheme: a.scheme, Mapper: mapper})
	if err != nil {
		return fmt.Errorf("managed cluster client: %w", err)
	}
	a.managedCfg, a.managed, a.managedClient, a.managedMapper = cfg, managed, managedClient, mapper
	a.managedURL, a.managedCA = url, ca
	a.mu.Lock()
	a.kubeSystemUID = "" // read again through the new identity
	a.mu.Unlock()
	return nil
}

// Run registers the cluster and keeps it registered until ctx ends. It never
// gives up on an unreachable or refusing hub: failures are logged, recorded in
// State and retried with capped backoff. It returns nil once ctx is done.
func (a *Agent) Run(ctx context.Context) error {
	b := a.backoff()
	for {
		err := a.ensureAgentNamespace(ctx)
		if err == nil {
			break
		}
		a.recordError(err)
		if !backoff.Sleep(ctx, a.cfg.Clock, b.Next()) {
			return nil
		}
	}
	if a.cfg.ManagedKubeconfigSecret != "" {
		a.runFromSecret(ctx)
		return nil
	}
	a.runSessions(ctx)
	return nil
}

// runSessions connects to the hub and serves one session after the other until ctx ends.
func (a *Agent) runSessions(ctx context.Context) {
	force := false
	for ctx.Err() == nil {
		id, conn, ok := a.connect(ctx, force)
		if !ok {
			break
		}
		end := a.serve(ctx, id, conn)
		conn.Close()
		if ctx.Err() != nil {
			break
		}
		a.log.Info("Hub connection ended; bootstrapping again", "cluster", id.ClusterName, "reason", end.reason)
		force = end.forceBootstrap
	}
}

// State returns a snapshot of the agent's progress.
func (a *Agent) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state
}

func (a *Agent) update(f func(*State)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.state)
}

func (a *Agent) setPhase(p Phase) { a.update(func(s *State) { s.Phase = p }) }

// recordError logs err and keeps it as the agent's last error.
func (a *Agent) recordError(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	a.log.Error(err, "Registration agent error; retrying")
	now := a.cfg.Clock.Now()
	a.update(func(s *State) { s.LastError, s.LastErrorTime = err.Error(), now })
}

func (a *Agent) backoff() *backoff.Backoff { return backoff.New(a.cfg.RetryInitial, a.cfg.RetryMax) }

// agentCluster names the cluster holding the agent namespace, for messages.
func (a *Agent) agentCluster() string {
	if a.cfg.ManagementConfig == a.cfg.ManagedConfig {
		return "the managed cluster"
	}
	return "the management cluster"
}

// ensureAgentNamespace creates the namespace holding the agent's secrets.
func (a *Agent) ensureAgentNamespace(ctx context.Context) error {
	ns := a.cfg.AgentNamespace
	_, err := a.management.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		// An agent the klusterlet operator deploys may not read Namespaces (a Hosted agent's
		// rights on the management cluster end at its own namespace): the operator made it,
		// and reading its Secrets there names the namespace if it is missing.
		a.log.V(1).Info("Not allowed to read the agent namespace; taking it as made by whoever deployed the agent", "namespace", ns, "reason", err.Error())
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading agent namespace %s on %s: %w", ns, a.agentCluster(), err)
	}
	_, err = a.management.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating agent namespace %s on %s: %w", ns, a.agentCluster(), err)
	}
	return nil
}

// loadIdentity settles the cluster and agent names and makes sure they are
// persisted in the hub kubeconfig secret, so that a restart keeps them.
func (a *Agent) loadIdentity(ctx context.Context) (Identity, *HubSecret, error) {
	sec, err := ReadHubSecret(ctx, a.management.CoreV1(), a.cfg.AgentNamespace, a.cfg.HubKubeconfigSecret)
	if err != nil {
		return Identity{}, nil, err
	}
	a.mu.Lock()
	known := a.identity
	a.mu.Unlock()

	id := Identity{ClusterName: firstNonEmpty(a.cfg.ClusterName, known.ClusterName, sec.ClusterName)}
	if id.ClusterName == "" {
		id.ClusterName = GenerateClusterName()
		a.log.Info("No cluster name configured; generated one", "cluster", id.ClusterName)
	}
	sameCluster := sec.ClusterName == "" || sec.ClusterName == id.ClusterName
	id.AgentName = a.cfg.AgentName
	if id.AgentName == "" && known.ClusterName == id.ClusterName {
		id.AgentName = known.AgentName
	}
	if id.AgentName == "" && sameCluster {
		id.AgentName = sec.AgentName
	}
	if id.AgentName == "" {
		id.AgentName = GenerateAgentName()
		a.log.Info("Generated agent name", "cluster", id.ClusterName, "agent", id.AgentName)
	}
	if err := id.Validate(); err != nil {
		return Identity{}, nil, fmt.Errorf("%s: %w", sec.ref(), err)
	}

	if (sec.ClusterName != "" && sec.ClusterName != id.ClusterName) || (sec.AgentName != "" && sec.AgentName != id.AgentName) {
		// Credentials of another identity are of no use and must not be sent.
		a.log.Info("Hub kubeconfig secret belongs to another identity; discarding its credentials",
			"secret", sec.ref(), "storedCluster", sec.ClusterName, "storedAgent", sec.AgentName,
			"cluster", id.ClusterName, "agent", id.AgentName)
		sec.Kubeconfig, sec.CertPEM, sec.KeyPEM, sec.PendingKey = nil, nil, nil, nil
	}
	if !sec.Exists() || sec.ClusterName != id.ClusterName || sec.AgentName != id.AgentName {
		sec.ClusterName, sec.AgentName = id.ClusterName, id.AgentName
		if err := sec.Write(ctx, a.management.CoreV1()); err != nil {
			return Identity{}, nil, err
		}
	}
	a.mu.Lock()
	a.identity = id
	a.state.ClusterName, a.state.AgentName = id.ClusterName, id.AgentName
	a.mu.Unlock()
	return id, sec, nil
}

// connect returns a hub connection with signed credentials: those stored in the
// secret when they are still valid (unless force), otherwise new ones obtained
// through the bootstrap flow. It retries until it succeeds or ctx ends.
func (a *Agent) connect(ctx context.Context, force bool) (Identity, *HubConnection, bool) {
	b := a.backoff()
	for ctx.Err() == nil {
		id, sec, err := a.loadIdentity(ctx)
		if err == nil && !force {
			conn, serr := a.storedConnection(id, sec)
			if conn != nil {
				return id, conn, true
			}
			if serr != nil {
				// Unusable stored credentials are replaced, not retried.
				a.log.Info("Stored hub credentials are unusable; bootstrapping", "secret", sec.ref(), "error", serr.Error())
			}
		}
		if err == nil {
			var conn *HubConnection
			if conn, err = a.bootstrap(ctx, id, sec); err == nil {
				return id, conn, true
			}
		}
		a.recordError(err)
		if !backoff.Sleep(ctx, a.cfg.Clock, b.Next()) {
			break
		}
	}
	return Identity{}, nil, false
}

// storedConnection uses the credentials in the secret if they are for id and
// valid now; it returns nil (and no error) when a bootstrap is needed.
func (a *Agent) storedConnection(id Identity, sec *HubSecret) (*HubConnection, error) {
	creds, err := sec.Credentials()
	if err != nil {
		a.log.Info("Stored hub credentials are unusable; bootstrapping", "secret", sec.ref(), "error", err.Error())
		return nil, nil
	}
	if creds == nil || len(sec.Kubeconfig) == 0 {
		return nil, nil
	}
	now := a.cfg.Clock.Now()
	if !id.MatchesCertificate(creds.Leaf) || !creds.ValidAt(now) {
		a.log.Info("Stored hub client certificate is expired or for another identity; bootstrapping",
			"secret", sec.ref(), "subject", creds.Leaf.Subject.String(), "notAfter", creds.Leaf.NotAfter)
		return nil, nil
	}
	ep, err := EndpointFromKubeconfig(sec.Kubeconfig, sec.ref()+" key "+KubeconfigKey)
	if err != nil {
		return nil, err
	}
	conn, err := newHubConnection(ep, creds, a.cfg.HubDial)
	if err != nil {
		return nil, err
	}
	a.update(func(s *State) {
		s.Phase, s.CertificateNotAfter, s.KubeconfigLoaded = PhaseConnected, creds.Leaf.NotAfter, true
	})
	return conn, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
