// Package leaderelection is the one leader election of the hub's and the klusterlet's
// replicas: a Lease on an API server, OCM's timings, and how a replica names itself. The hub
// hands an Elector to its controller-runtime manager (ManagerOptions: the controllers run in
// the holder, the webhooks everywhere); the klusterlet runs its agents under Run.
package leaderelection

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// OCM's controller defaults: a leader keeps its Lease 137 s without renewing, gives up after
// trying to renew for 107 s, and replicas try every 26 s. They ride out an API server restart
// without a change of leader.
const (
	DefaultLeaseDuration = 137 * time.Second
	DefaultRenewDeadline = 107 * time.Second
	DefaultRetryPeriod   = 26 * time.Second
)

// Identity is a replica's holder identity: its host name (a Pod's name) with a random suffix,
// so that a restarted process with the same name does not inherit the old one's Lease.
func Identity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "flotilla"
	}
	return host + "_" + uuid.NewString()
}

// Config is one replica's leader election. Zero values take the defaults (WithDefaults).
type Config struct {
	Enabled bool
	// Namespace and Name of the Lease; the component's defaults when empty.
	Namespace, Name string
	// LeaseDuration (default 137 s) is how long a Lease holds without renewal, RenewDeadline
	// (107 s) how long the leader tries to renew before it stops leading, RetryPeriod (26 s)
	// how often replicas try to acquire or renew.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Identity is this replica's holder identity; default Identity().
	Identity string
}

// WithDefaults fills the empty fields: namespace and name are the component's Lease.
func (c Config) WithDefaults(namespace, name string) Config {
	c.Namespace = cmp.Or(c.Namespace, namespace)
	c.Name = cmp.Or(c.Name, name)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, DefaultLeaseDuration)
	c.RenewDeadline = cmp.Or(c.RenewDeadline, DefaultRenewDeadline)
	c.RetryPeriod = cmp.Or(c.RetryPeriod, DefaultRetryPeriod)
	if c.Identity == "" {
		c.Identity = Identity()
	}
	return c
}

// Validate applies client-go's rules up front, so that a bad flag fails at start, naming it.
func (c Config) Validate() error {
	switch {
	case c.Namespace == "" || c.Name == "":
		return fmt.Errorf("leader election: Lease namespace %q and name %q must be set", c.Namespace, c.Name)
	case c.LeaseDuration <= 0 || c.RenewDeadline <= 0 || c.RetryPeriod <= 0:
		return fmt.Errorf("leader election: lease duration %s, renew deadline %s and retry period %s must be positive", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("leader election: lease duration %s must exceed the renew deadline %s", c.LeaseDuration, c.RenewDeadline)
	case float64(c.RenewDeadline) <= leaderelection.JitterFactor*float64(c.RetryPeriod):
		return fmt.Errorf("leader election: renew deadline %s must exceed %v times the retry period %s", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod)
	}
	return nil
}

// ErrLost is Run's error when the replica could not renew its Lease: lead has returned, and a
// process should exit (non-zero) for a fresh start as a standby.
var ErrLost = errors.New("leader election lost")

// Elector is one replica's side of an election: the Lease lock and the state of Run.
type Elector struct {
	cfg  Config
	kube kubernetes.Interface
	lock resourcelock.Interface
	log  logr.Logger

	campaigning, leading atomic.Bool
}

// New builds the elector of c (defaults applied, validated) on the API server of restConfig.
// Its client's requests time out at half the renew deadline (at least a second), so one hung
// request does not cost the leader its Lease (client-go's heuristic, controller-runtime's
// too); component names it in the user agent.
func New(restConfig *rest.Config, c Config, component string, log logr.Logger) (*Elector, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Identity == "" {
		return nil, errors.New("leader election: no holder identity (Config.WithDefaults sets one)")
	}
	cfg := rest.AddUserAgent(rest.CopyConfig(restConfig), component+"-leader-election")
	cfg.Timeout = max(time.Second, c.RenewDeadline/2)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election: client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, c.Namespace, c.Name,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: c.Identity})
	if err != nil {
		return nil, fmt.Errorf("leader election: Lease %s/%s: %w", c.Namespace, c.Name, err)
	}
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	return &Elector{cfg: c, kube: kube, lock: lock, log: log.WithValues("lease", c.Namespace+"/"+c.Name, "identity", c.Identity)}, nil
}

// Config is the election's configuration, defaults applied.
func (e *Elector) Config() Config { return e.cfg }

// ManagerOptions makes a controller-runtime manager campaign with e's Lease and timings: its
// leader-election runnables (controllers) run in the holder only, the others in every replica,
// and a manager stopping releases the Lease once they have stopped.
func (e *Elector) ManagerOptions(o *manager.Options) {
	o.LeaderElection = true
	o.LeaderElectionResourceLockInterface = e.lock
	o.LeaderElectionNamespace, o.LeaderElectionID = e.cfg.Namespace, e.cfg.Name
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &e.cfg.LeaseDuration, &e.cfg.RenewDeadline, &e.cfg.RetryPeriod
	o.LeaderElectionReleaseOnCancel = true // a replica stopping hands over at once
}

// Manager makes the controller-runtime manager of o campaign for c's Lease (New, then
// EnsureNamespace, then ManagerOptions): what an operator process with one manager needs.
func Manager(ctx context.Context, restConfig *rest.Config, c Config, component string, log logr.Logger, o *manager.Options) error {
	e, err := New(restConfig, c, component, log)
	if err != nil {
		return err
	}
	if err := e.EnsureNamespace(ctx); err != nil {
		return err
	}
	e.ManagerOptions(o)
	return nil
}

// EnsureNamespace makes sure the Lease's namespace exists. It reads before creating: a
// klusterlet may read its namespace but not create one.
func (e *Elector) EnsureNamespace(ctx context.Context) error {
	ns := e.cfg.Namespace
	_, err := e.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("leader election: namespace %s of Lease %s: %w", ns, e.cfg.Name, err)
	}
	return nil
}

// Campaigning reports whether Run is campaigning for (or holding) the Lease.
func (e *Elector) Campaigning() bool { return e.campaigning.Load() }

// Leading reports whether Run holds the Lease and runs lead.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Run campaigns for the Lease and runs lead while it holds it, once. It returns nil when ctx
// ends, lead's error when lead fails, and ErrLost when the Lease could not be renewed (lead
// has returned then). On ctx's end a standby stops campaigning at once, the leader once lead
// has returned, and then releases the Lease: two replicas never run lead at once.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	// The elector's context outlives ctx: it ends once lead has (ReleaseOnCancel).
	electCtx, stopElecting := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), e.log))
	defer stopElecting()
	var (
		mu                        sync.Mutex
		leading, stopping, closed bool
		leadDone                  = make(chan struct{})
		leadErr                   error
	)
	defer context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		stopping = true
		if !leading {
			stopElecting()
		}
	})()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            e.lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true, // a replica stopping cleanly hands over at once, lead stopped first
		Name:            e.cfg.Namespace + "/" + e.cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				if stopping || closed {
					mu.Unlock()
					return
				}
				leading = true
				mu.Unlock()
				defer close(leadDone)
				e.log.Info("Acquired the leader Lease")
				e.leading.Store(true)
				defer e.leading.Store(false)
				// leadCtx ends when the Lease is lost, ctx when the replica stops.
				runCtx, cancel := context.WithCancel(leadCtx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				leadErr = lead(runCtx)
				// The Lease guards nothing any more: release it.
				stopElecting()
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != e.cfg.Identity {
					e.log.Info("Waiting as a standby", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	e.log.Info("Campaigning for the leader Lease")
	e.campaigning.Store(true)
	elector.Run(electCtx)
	e.campaigning.Store(false)
	mu.Lock()
	wasLeading := leading
	closed = true // OnStartedLeading may still be about to run: it must not start lead
	mu.Unlock()
	if wasLeading {
		<-leadDone
	}
	switch {
	case leadErr != nil:
		return leadErr
	case ctx.Err() != nil:
		return nil
	default:
		e.log.Info("Lost the leader Lease; stopped")
		return ErrLost
	}
}
