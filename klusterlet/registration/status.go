package registration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// Condition the agent sets after renewing its certificate (as OCM does).
const (
	ConditionClusterCertificateRotated = "ClusterCertificateRotated"
	ReasonClientCertificateUpdated     = "ClientCertificateUpdated"
	// ReasonCustomClusterClaimsTruncated is the Event reason when custom claims
	// beyond the limit are left out.
	ReasonCustomClusterClaimsTruncated = "CustomClusterClaimsTruncated"
)

// statusFieldManager owns what the agent reports in the ManagedCluster status. The agent
// applies only its own fields (its conditions, version, resources and claims), so hub
// controllers writing other conditions at the same time do not make it retry.
const statusFieldManager = apply.FieldManagerPrefix + "registration-agent"

// agentConditions are the condition types the agent reports. Available is also set to Unknown
// by the hub when the lease goes stale; the agent takes it back when it reports again.
var agentConditions = []string{
	clusterv1.ManagedClusterConditionJoined,
	clusterv1.ManagedClusterConditionAvailable,
	ConditionClusterCertificateRotated,
}

// syncStatus reports the cluster's state on its ManagedCluster. Nothing is
// written until the hub has accepted the cluster, and only when something
// changed.
func (s *session) syncStatus(ctx context.Context) error {
	name := s.id.ClusterName
	s.a.update(func(st *State) { st.StatusSyncsStarted++ })
	// The watch's copy is as fresh as a read (every change of the ManagedCluster wakes this
	// sync again with the new copy); a joining fleet's agents would otherwise read the hub
	// on each of the half-dozen writes the hub's controllers make to a new cluster.
	mc := s.watched.Load()
	if mc == nil || s.hubReadDue {
		mc = &clusterv1.ManagedCluster{}
		s.a.update(func(st *State) { st.StatusHubGets++ })
		if err := s.hubClient.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return s.hubError("reading ManagedCluster "+name+" on the hub", err)
		}
		s.hubOK()
		s.hubReadDue, s.periodsSinceHubRead = false, 0
	} else {
		mc = mc.DeepCopy()
	}

	lease := mc.Spec.LeaseDurationSeconds
	if lease <= 0 {
		lease = DefaultLeaseDurationSeconds
	}
	if s.leaseSeconds.Swap(lease) != lease {
		s.leaseWake.notify()
	}
	accepted := meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
	if s.accepted.Swap(accepted) != accepted {
		s.leaseWake.notify()
		if accepted {
			s.acceptedWake.notify()
		}
	}
	s.a.update(func(st *State) { st.Accepted = accepted })
	if !accepted {
		return nil
	}

	desired := mc.DeepCopy()
	meta.SetStatusCondition(&desired.Status.Conditions, metav1.Condition{
		Type:    clusterv1.ManagedClusterConditionJoined,
		Status:  metav1.ConditionTrue,
		Reason:  clusterv1.ConditionReasonManagedClusterJoined,
		Message: "Managed cluster joined",
	})
	available := s.a.probeAPIServer(ctx)
	meta.SetStatusCondition(&desired.Status.Conditions, available)
	// While the managed API server is unavailable the last report of resources stands.
	var own *nodeResources
	if available.Status == metav1.ConditionTrue {
		var err error
		if own, err = s.fillClusterInfo(ctx, &desired.Status); err != nil {
			return err
		}
		if err := s.fillClaims(ctx, &desired.Status); err != nil {
			return err
		}
	}
	if c := s.rotatedCondition.Load(); c != nil {
		meta.SetStatusCondition(&desired.Status.Conditions, *c)
	}

	changed := !equality.Semantic.DeepEqual(mc.Status, desired.Status)
	if changed {
		if err := apply.Fields(ctx, s.hubClient, mc, statusFieldManager, true, agentStatus(&desired.Status, own)); err != nil {
			return s.hubError("updating status of ManagedCluster "+name+" on the hub", err)
		}
	}
	if own != nil {
		s.reportedNodes.Store(own)
	}
	s.a.update(func(st *State) {
		st.Joined = true
		st.StatusSyncs++
		if changed {
			st.StatusUpdates++
		}
	})
	return nil
}

// agentStatus is the part of st the agent owns and applies. Entries other components added
// to capacity and allocatable are left to them, unless own is nil (nothing was measured) and
// the current maps are applied as they are.
func agentStatus(st *clusterv1.ManagedClusterStatus, own *nodeResources) map[string]any {
	var conds []metav1.Condition
	for _, t := range agentConditions {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
			conds = append(conds, *c)
		}
	}
	capacity, allocatable := st.Capacity, st.Allocatable
	if own != nil {
		capacity, allocatable = own.capacity, own.allocatable
	}
	out := map[string]any{"conditions": conds, "version": st.Version}
	if len(capacity) > 0 {
		out["capacity"] = capacity
	}
	if len(allocatable) > 0 {
		out["allocatable"] = allocatable
	}
	if len(st.ClusterClaims) > 0 {
		out["clusterClaims"] = st.ClusterClaims
	}
	return map[string]any{"status": out}
}

// nodeResources are the sums over the managed cluster's nodes.
type nodeResources struct{ capacity, allocatable clusterv1.ResourceList }

// probeAPIServer checks the managed API server the way OCM's agent does:
// /livez, falling back to /healthz on servers without it.
func (a *Agent) probeAPIServer(ctx context.Context) metav1.Condition {
	cond := metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable}
	rc := a.managed.Discovery().RESTClient()
	code := 0
	result := rc.Get().AbsPath("/livez").Do(ctx).StatusCode(&code)
	if code == http.StatusNotFound || code == http.StatusForbidden {
		result = rc.Get().AbsPath("/healthz").Do(ctx).StatusCode(&code)
	}
	if code == http.StatusOK {
		cond.Status = metav1.ConditionTrue
		cond.Reason = clusterv1.ConditionReasonManagedClusterAvailable
		cond.Message = "Managed cluster is available"
		return cond
	}
	cond.Status = metav1.ConditionFalse
	cond.Reason = clusterv1.ConditionReasonManagedClusterKubeAPIServerUnavailable
	if body, err := result.Raw(); err == nil {
		cond.Message = fmt.Sprintf("The kube-apiserver is not ok, status code: %d, %s", code, body)
	} else {
		cond.Message = fmt.Sprintf("The kube-apiserver is not ok, status code: %d, %v", code, err)
	}
	return cond
}

// fillClusterInfo sets the Kubernetes version and the node resource sums, and returns the
// sums alone. The sums come from the session's Node cache; the version is read again only
// when the periodic sync asks for it.
func (s *session) fillClusterInfo(ctx context.Context, st *clusterv1.ManagedClusterStatus) (*nodeResources, error) {
	if s.versionStale || s.kubeVersion == "" {
		v, err := s.a.serverVersion(ctx)
		if err != nil {
			return nil, err
		}
		s.kubeVersion, s.versionStale = v, false
	}
	st.Version.Kubernetes = s.kubeVersion
	if err := s.waitForNodes(ctx); err != nil {
		return nil, err
	}
	nodes, err := s.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing cached Nodes of the managed cluster: %w", err)
	}
	own := &nodeResources{}
	own.capacity, own.allocatable = sumNodeResources(nodes)
	// Other components may report extra entries; keep those (the apply leaves them alone).
	st.Capacity, st.Allocatable = withOthers(own.capacity, st.Capacity), withOthers(own.allocatable, st.Allocatable)
	return own, nil
}

// nodeCacheSyncTimeout bounds how long a status sync waits for the Node cache's first list.
const nodeCacheSyncTimeout = 10 * time.Second

// waitForNodes waits, briefly, until the Node cache holds the initial list.
func (s *session) waitForNodes(ctx context.Context) error {
	if s.nodesSynced() {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, nodeCacheSyncTimeout, true,
		func(context.Context) (bool, error) { return s.nodesSynced(), nil })
	if err == nil {
		return nil
	}
	if msg := s.nodeWatchError.Load(); msg != nil {
		return fmt.Errorf("listing Nodes on the managed cluster: %s", *msg)
	}
	return fmt.Errorf("listing Nodes on the managed cluster: not listed after %s: %w", nodeCacheSyncTimeout, err)
}

// serverVersion reads the managed API server's /version (what discovery's ServerVersion
// reads, but bounded by ctx).
func (a *Agent) serverVersion(ctx context.Context) (string, error) {
	body, err := a.managed.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("reading the managed cluster's server version: %w", err)
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("reading the managed cluster's server version: decoding /version: %w", err)
	}
	return info.GitVersion, nil
}

// withOthers returns own plus the entries of current own lacks.
func withOthers(own, current clusterv1.ResourceList) clusterv1.ResourceList {
	out := make(clusterv1.ResourceList, len(own)+len(current))
	for k, q := range current {
		out[k] = q
	}
	for k, q := range own {
		out[k] = q
	}
	return out
}

// SumNodeResources adds up capacity over all nodes and allocatable over the
// schedulable ones (an unschedulable node offers nothing to new workloads).
func SumNodeResources(nodes []corev1.Node) (capacity, allocatable clusterv1.ResourceList) {
	ptrs := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	return sumNodeResources(ptrs)
}

// sumNodeResources is SumNodeResources over nodes as a lister returns them.
func sumNodeResources(nodes []*corev1.Node) (capacity, allocatable clusterv1.ResourceList) {
	capacity, allocatable = clusterv1.ResourceList{}, clusterv1.ResourceList{}
	add := func(into clusterv1.ResourceList, from corev1.ResourceList) {
		for k, q := range from {
			sum := into[clusterv1.ResourceName(k)]
			sum.Add(q)
			into[clusterv1.ResourceName(k)] = sum
		}
	}
	for _, n := range nodes {
		add(capacity, n.Status.Capacity)
		if !n.Spec.Unschedulable {
			add(allocatable, n.Status.Allocatable)
		}
	}
	return capacity, allocatable
}

// fillClaims sets status.clusterClaims and reports custom claims cut by the limit.
func (s *session) fillClaims(ctx context.Context, st *clusterv1.ManagedClusterStatus) error {
	defaults := map[string]string{clusterv1alpha1.ClusterClaimKubeVersion: st.Version.Kubernetes}
	uid, err := s.a.clusterID(ctx)
	if err != nil {
		return err
	}
	defaults[clusterv1alpha1.ClusterClaimID] = uid
	if s.a.cfg.HostingClusterClaim != "" {
		defaults[HostingClusterClaimName] = s.a.cfg.HostingClusterClaim
	}

	var objects []clusterv1alpha1.ClusterClaim
	list := &clusterv1alpha1.ClusterClaimList{}
	switch err := s.a.managedClient.List(ctx, list); {
	case err == nil:
		objects = list.Items
	case meta.IsNoMatchError(err):
		// Without the CRD there are no custom claims; the reserved ones still count.
	default:
		return fmt.Errorf("listing ClusterClaims on the managed cluster: %w", err)
	}
	set := CollectClaims(objects, defaults, s.a.cfg.MaxCustomClusterClaims, s.a.cfg.ReservedClusterClaimSuffixes...)
	st.ClusterClaims = set.Claims
	if set.Dropped != s.droppedClaims {
		s.droppedClaims = set.Dropped
		if set.Dropped > 0 {
			s.reportTruncatedClaims(ctx, set)
		}
	}
	return nil
}

// clusterID is the UID of kube-system, stable for the life of the cluster.
func (a *Agent) clusterID(ctx context.Context) (string, error) {
	a.mu.Lock()
	uid := a.kubeSystemUID
	a.mu.Unlock()
	if uid != "" {
		return uid, nil
	}
	ns, err := a.managed.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading namespace kube-system on the managed cluster for claim %s: %w", clusterv1alpha1.ClusterClaimID, err)
	}
	a.mu.Lock()
	a.kubeSystemUID = string(ns.UID)
	a.mu.Unlock()
	return string(ns.UID), nil
}

// reportTruncatedClaims logs and records an Event on the hub, in the cluster
// namespace, about claims cut by the limit. Failing to record is only logged.
func (s *session) reportTruncatedClaims(ctx context.Context, set ClaimSet) {
	limit := max(s.a.cfg.MaxCustomClusterClaims, 0)
	msg := fmt.Sprintf("%d custom cluster claims found, more than the limit of %d (max-custom-cluster-claims); %d are not reported",
		set.CustomFound, limit, set.Dropped)
	s.a.log.Info("Custom cluster claims truncated", "managedCluster", s.id.ClusterName,
		"found", set.CustomFound, "limit", limit, "dropped", set.Dropped)
	ns := s.id.ClusterName
	now := s.a.cfg.Clock.Now()
	ev := &eventsv1.Event{
		// events.k8s.io validates generateName as a full name, so name it the
		// way client-go's recorders do: <object>.<unix nanos in hex>.
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", s.id.ClusterName, now.UnixNano()), Namespace: ns},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "open-cluster-management.io/registration-agent",
		ReportingInstance:   s.id.CommonName(),
		Action:              "SyncClusterClaims",
		Reason:              ReasonCustomClusterClaimsTruncated,
		Type:                corev1.EventTypeWarning,
		Note:                msg,
		Regarding: corev1.ObjectReference{
			APIVersion: clusterv1.GroupVersion.String(),
			Kind:       "ManagedCluster",
			Name:       s.id.ClusterName,
			Namespace:  ns,
		},
	}
	if _, err := s.hubKube.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.a.log.Info("Could not record event on the hub", "namespace", ns, "reason", ReasonCustomClusterClaimsTruncated, "error", err.Error())
	}
}

// renewLease bumps the renew time of the cluster's Lease on the hub, creating
// the Lease when the hub has not yet. The hub's lease controller creates the same
// Lease when it accepts the cluster, so a create may find it already there: that
// is not an error, the Lease is read again and renewed. A conflicting update
// (someone wrote the Lease in between) is retried the same way.
func (s *session) renewLease(ctx context.Context) error {
	ns := s.id.ClusterName
	leases := s.hubKube.CoordinationV1().Leases(ns)
	// The Lease as this session last wrote it is renewed without reading it first, as the
	// kubelet renews its node Lease: one request per heartbeat instead of two. Anything else
	// (it changed, it is gone) is read again below.
	if last := s.lease; last != nil {
		now := metav1.NewMicroTime(s.a.cfg.Clock.Now())
		l := last.DeepCopy()
		l.Spec.RenewTime = &now
		updated, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		switch {
		case err == nil:
			s.lease = updated
			s.hubOK()
			return nil
		case !apierrors.IsConflict(err) && !apierrors.IsNotFound(err):
			return s.hubError("renewing Lease "+ns+"/"+LeaseName+" on the hub", err)
		}
		s.lease = nil
	}
	what := "reading"
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err)
	}, func() error {
		now := metav1.NewMicroTime(s.a.cfg.Clock.Now())
		lease, err := leases.Get(ctx, LeaseName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			what = "creating"
			seconds := s.leaseSeconds.Load()
			created, err := leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name: LeaseName, Namespace: ns,
					Labels: map[string]string{clusterv1.ClusterNameLabelKey: s.id.ClusterName},
				},
				Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: &seconds, RenewTime: &now},
			}, metav1.CreateOptions{})
			if err == nil {
				s.lease = created
			}
			return err
		case err != nil:
			what = "reading"
			return err
		}
		what = "renewing"
		lease.Spec.RenewTime = &now
		updated, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
		if err == nil {
			s.lease = updated
		}
		return err
	})
	if err != nil {
		return s.hubError(what+" Lease "+ns+"/"+LeaseName+" on the hub", err)
	}
	s.hubOK()
	return nil
}

// ReportRemoved tells the hub that the agent of cluster is gone for good (flotilla unjoin): with
// the agent's own hub identity (hubKubeconfig, the hub kubeconfig Secret's), its Available
// condition becomes Unknown at once, as the hub would set it once the lease went stale. The
// hub then stops waiting for the agent: deleting the ManagedCluster releases its works.
func ReportRemoved(ctx context.Context, hubKubeconfig []byte, cluster string) error {
	cfg, err := RESTConfigFromKubeconfig(hubKubeconfig, "hub kubeconfig secret")
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clusterv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("hub client: %w", err)
	}
	mc := &clusterv1.ManagedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
		return fmt.Errorf("reading ManagedCluster %s on the hub: %w", cluster, err)
	}
	// conditions are keyed by type: this one is applied under a field manager of its own, so
	// the agent's other conditions (its manager's) stay.
	_, err = apply.Condition(ctx, c, mc, mc.Status.Conditions, apply.FieldManagerPrefix+"unjoin", metav1.Condition{
		Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown,
		Reason:  clusterv1.ConditionReasonManagedClusterLeaseUpdateStopped,
		Message: "Registration agent stopped updating its lease: the klusterlet was removed from the cluster (unjoin).",
	})
	if err != nil {
		return fmt.Errorf("ManagedCluster %s: %w", cluster, err)
	}
	return nil
}
