package registration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"

	"github.com/flotilla-dev/flotilla/core/backoff"
)

// unauthorizedLimit is how many 401 answers in a row make the agent give up its
// certificate and bootstrap again; one could be a hub restarting with a new CA
// bundle still loading, several mean the certificate is no longer trusted.
const unauthorizedLimit = 3

// hubReadPeriods is how many StatusSyncPeriods the status sync goes on the ManagedCluster
// watch's copy before it reads the hub again.
const hubReadPeriods = 10

// endReason says why a connected session ended.
type endReason struct {
	reason         string
	forceBootstrap bool
}

// session is the agent's life with one set of signed hub credentials (which
// rotation may renew in place). It ends when the credentials are lost: the
// secret is deleted, the hub keeps rejecting them, or they expire unrenewed.
type session struct {
	a         *Agent
	id        Identity
	conn      *HubConnection
	hubKube   kubernetes.Interface
	hubClient client.WithWatch
	// hubMapper is hubClient's, handed to the agents beside registration (Session).
	hubMapper meta.RESTMapper

	statusWake notifier
	leaseWake  notifier
	// acceptedWake fires when the hub's acceptance turns true (see Config.OnAccepted).
	acceptedWake notifier
	end          chan endReason

	leaseSeconds atomic.Int32
	accepted     atomic.Bool
	unauthorized atomic.Int32
	// rotatedCondition is reported on the ManagedCluster after a rotation.
	rotatedCondition atomic.Pointer[metav1.Condition]
	// droppedClaims is the custom-claim overflow last reported (status goroutine only).
	droppedClaims int

	// nodes is the session's cache of the managed cluster's Nodes, fed by one watch;
	// nodesSynced reports that it holds the initial list.
	nodes       corev1listers.NodeLister
	nodesSynced cache.InformerSynced
	// nodeWatchError is the Node watch's latest failure, for the status sync to report.
	nodeWatchError atomic.Pointer[string]
	// reportedNodes are the node sums the last completed status sync found on the hub or
	// wrote there; nil until one has.
	reportedNodes atomic.Pointer[nodeResources]
	// kubeVersion is the managed API server's version as last read; versionStale asks the
	// next sync to read it again, which only the periodic sync does (status goroutine only).
	kubeVersion  string
	versionStale bool
	// watched is the ManagedCluster as the watch last delivered it (nil before the first
	// event and after a deletion); hubReadDue asks the next status sync to read the hub
	// instead, as it does every hubReadPeriods StatusSyncPeriods and after a failed sync.
	watched    atomic.Pointer[clusterv1.ManagedCluster]
	hubReadDue bool
	// periodsSinceHubRead counts StatusSyncPeriods since the last hub read.
	periodsSinceHubRead int
	// lease is the heartbeat Lease as this session last wrote it (the lease loop's own).
	lease *coordinationv1.Lease
}

// serve runs the connected agent until the session ends or ctx is done.
func (a *Agent) serve(ctx context.Context, id Identity, conn *HubConnection) endReason {
	cfg := conn.Config(userAgent)
	hubKube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return endReason{reason: fmt.Sprintf("building hub client: %v", err)}
	}
	// One mapper for every hub client of the session (this agent's and, through Session, the
	// work and add-on agents'), over the session's transport.
	hubMapper := a.cfg.HubMapper
	if hubMapper == nil {
		httpClient, err := rest.HTTPClientFor(cfg)
		if err == nil {
			hubMapper, err = apiutil.NewDynamicRESTMapper(cfg, httpClient)
		}
		if err != nil {
			return endReason{reason: fmt.Sprintf("building hub REST mapper: %v", err)}
		}
	}
	hubClient, err := client.NewWithWatch(cfg, client.Options{Scheme: a.scheme, Mapper: hubMapper})
	if err != nil {
		return endReason{reason: fmt.Sprintf("building hub client: %v", err)}
	}
	s := &session{
		a: a, id: id, conn: conn, hubKube: hubKube, hubClient: hubClient, hubMapper: hubMapper,
		statusWake: newNotifier(), leaseWake: newNotifier(), acceptedWake: newNotifier(), end: make(chan endReason, 1),
	}
	s.leaseSeconds.Store(a.cfg.LeaseDurationSeconds)
	a.update(func(st *State) { st.Phase = PhaseConnected })

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodeInformers, err := s.watchNodes()
	if err != nil {
		return endReason{reason: fmt.Sprintf("setting up the Node cache: %v", err)}
	}
	nodeInformers.Start(ctx.Done())
	defer nodeInformers.Shutdown()
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){
		s.statusLoop, s.leaseLoop, s.rotationLoop,
		s.watchManagedCluster, s.watchClaims, s.watchHubSecret, s.runOnAccepted,
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(ctx)
		}()
	}
	var r endReason
	select {
	case <-ctx.Done():
		r = endReason{reason: "stopped"}
	case r = <-s.end:
	}
	cancel()
	wg.Wait()
	a.update(func(st *State) { st.Accepted, st.Joined = false, false })
	return r
}

// finish ends the session (the first reason wins).
func (s *session) finish(reason string, forceBootstrap bool) {
	select {
	case s.end <- endReason{reason: reason, forceBootstrap: forceBootstrap}:
	default:
	}
}

// hubError wraps err from a hub call about what and tracks rejected credentials.
func (s *session) hubError(what string, err error) error {
	switch {
	case apierrors.IsUnauthorized(err):
		if n := s.unauthorized.Add(1); n >= unauthorizedLimit {
			s.finish(fmt.Sprintf("the hub rejected the client certificate of %s %d times in a row (401 Unauthorized)", s.id.CommonName(), n), true)
		}
		return fmt.Errorf("%s: the hub does not accept the client certificate of %s: %w", what, s.id.CommonName(), err)
	case isUntrustedServer(err):
		// The hub now presents a certificate the stored CA bundle does not
		// trust (e.g. a rebuilt hub); the bootstrap kubeconfig may know better.
		if n := s.unauthorized.Add(1); n >= unauthorizedLimit {
			s.finish(fmt.Sprintf("the hub's serving certificate is not trusted by the stored hub kubeconfig (%d times in a row)", n), true)
		}
		return fmt.Errorf("%s: %w", what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: forbidden for %s; the cluster may not be accepted (spec.hubAcceptsClient) or its RBAC was removed: %w", what, s.id.CommonName(), err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (s *session) hubOK() { s.unauthorized.Store(0) }

// isUntrustedServer reports a TLS failure to verify the hub's certificate.
func isUntrustedServer(err error) bool {
	var unknown x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &verify)
}

// statusLoop keeps the ManagedCluster status current: on every change signal
// and at least every StatusSyncPeriod. After a failure it waits out the backoff
// before reacting to signals again, so an unreachable hub is not hammered.
func (s *session) statusLoop(ctx context.Context) {
	cfg := s.a.cfg
	b := s.a.backoff()
	s.versionStale, s.hubReadDue = true, true
	for ctx.Err() == nil {
		if err := s.syncStatus(ctx); err != nil {
			s.a.recordError(err)
			s.hubReadDue = true // a write may have failed on a stale copy
			if !backoff.Sleep(ctx, cfg.Clock, b.Next()) {
				return
			}
			continue
		}
		b.Reset()
		t := cfg.Clock.NewTimer(cfg.StatusSyncPeriod)
		select {
		case <-ctx.Done():
		case <-s.statusWake:
		case <-t.C():
			s.versionStale = true
			// The watch keeps the copy current; the hub read is a safety net, not a poll:
			// a minute's read by each of 5,000 clusters was the hub API server's most
			// frequent request.
			if s.periodsSinceHubRead++; s.periodsSinceHubRead >= hubReadPeriods {
				s.hubReadDue = true
			}
		}
		t.Stop()
	}
}

// leaseLoop renews the heartbeat Lease every leaseDurationSeconds once the hub
// has accepted the cluster (before that the cluster namespace does not exist).
func (s *session) leaseLoop(ctx context.Context) {
	cfg := s.a.cfg
	b := s.a.backoff()
	for ctx.Err() == nil {
		wait := time.Duration(s.leaseSeconds.Load()) * time.Second
		if s.accepted.Load() {
			if err := s.renewLease(ctx); err != nil {
				s.a.recordError(err)
				wait = min(wait, b.Next())
			} else {
				b.Reset()
			}
		}
		t := cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-s.leaseWake:
		case <-t.C():
		}
		t.Stop()
	}
}

// watchManagedCluster wakes the status sync whenever the hub changes the
// ManagedCluster (acceptance, lease duration, the hub marking it unknown...).
func (s *session) watchManagedCluster(ctx context.Context) {
	name := s.id.ClusterName
	watchForever(ctx, s.a.log, s.a.cfg.Clock, s.a.backoff(), "ManagedCluster "+name+" on the hub",
		func(ctx context.Context) (watch.Interface, error) {
			return s.hubClient.Watch(ctx, &clusterv1.ManagedClusterList{},
				client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
		},
		func(ev watch.Event) {
			mc, _ := ev.Object.(*clusterv1.ManagedCluster)
			if ev.Type == watch.Deleted {
				s.a.log.Info("ManagedCluster was deleted on the hub; the hub admin removed this cluster", "managedCluster", name)
				mc = nil
			}
			s.watched.Store(mc)
			s.statusWake.notify()
		})
}

// watchNodes sets up the session's Node cache (started by the caller): one watch keeps
// it current. A Node change wakes the status sync only when it changes what the sync
// reports, the sums of the nodes' capacity and allocatable: a change of labels, conditions
// or heartbeats costs no hub read and no probe of the API server.
func (s *session) watchNodes() (informers.SharedInformerFactory, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(s.a.managed, 0, informers.WithTransform(trimNode))
	nodes := factory.Core().V1().Nodes()
	informer := nodes.Informer()
	if err := informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		msg := err.Error()
		s.nodeWatchError.Store(&msg)
		s.a.log.Info("Watch failed, retrying", "objects", "Nodes on the managed cluster", "error", msg)
	}); err != nil {
		return nil, err
	}
	s.nodes, s.nodesSynced = nodes.Lister(), informer.HasSynced
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initialList bool) {
			if initialList {
				// The sync waits for the initial list and sums it; one wake-up is enough.
				s.statusWake.notify()
				return
			}
			s.onNodeChange()
		},
		UpdateFunc: func(old, cur any) {
			if nodeResourcesEqual(old, cur) {
				return
			}
			s.onNodeChange()
		},
		DeleteFunc: func(any) { s.onNodeChange() },
	}); err != nil {
		return nil, err
	}
	return factory, nil
}

// onNodeChange wakes the status sync if the node sums in the cache (which already holds the
// change) differ from those the last sync reported. The cache may be ahead of a sync still
// running, never behind the last one completed, so no change goes unreported.
func (s *session) onNodeChange() {
	last := s.reportedNodes.Load()
	if last == nil {
		s.statusWake.notify()
		return
	}
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		s.statusWake.notify()
		return
	}
	capacity, allocatable := sumNodeResources(nodes)
	if equality.Semantic.DeepEqual(capacity, last.capacity) && equality.Semantic.DeepEqual(allocatable, last.allocatable) {
		return
	}
	s.statusWake.notify()
}

// nodeResourcesEqual reports that two versions of a Node add the same to the sums.
func nodeResourcesEqual(old, cur any) bool {
	o, ok1 := old.(*corev1.Node)
	c, ok2 := cur.(*corev1.Node)
	return ok1 && ok2 && o.Spec.Unschedulable == c.Spec.Unschedulable &&
		equality.Semantic.DeepEqual(o.Status.Capacity, c.Status.Capacity) &&
		equality.Semantic.DeepEqual(o.Status.Allocatable, c.Status.Allocatable)
}

// trimNode keeps only what the resource sums need, so a large cluster's Node cache stays small.
func trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion},
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
		Status:     corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable},
	}, nil
}

// watchClaims wakes the status sync when a ClusterClaim changes.
func (s *session) watchClaims(ctx context.Context) {
	watchForever(ctx, s.a.log, s.a.cfg.Clock, s.a.backoff(), "ClusterClaims on the managed cluster",
		func(ctx context.Context) (watch.Interface, error) {
			w, err := s.a.managedClient.Watch(ctx, &clusterv1alpha1.ClusterClaimList{})
			if meta.IsNoMatchError(err) {
				return nil, fmt.Errorf("the ClusterClaim CRD is not installed on the managed cluster (flotilla crds install): %w", err)
			}
			return w, err
		},
		func(watch.Event) { s.statusWake.notify() })
}

// watchHubSecret ends the session when the hub kubeconfig secret is deleted:
// the managed cluster's admin asks for a fresh registration.
func (s *session) watchHubSecret(ctx context.Context) {
	ns, name := s.a.cfg.AgentNamespace, s.a.cfg.HubKubeconfigSecret
	watchForever(ctx, s.a.log, s.a.cfg.Clock, s.a.backoff(), "secret "+ns+"/"+name+" on "+s.a.agentCluster(),
		func(ctx context.Context) (watch.Interface, error) {
			return s.a.management.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
			})
		},
		func(ev watch.Event) {
			if ev.Type == watch.Deleted {
				s.finish(fmt.Sprintf("hub kubeconfig secret %s/%s was deleted", ns, name), true)
			}
		})
}
