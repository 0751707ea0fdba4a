package placement

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

// The fleet's events keep the scheduler's Fleet current and wake only the placements a change
// can affect (a placement "holds" a cluster when one of its eligible sets, those bound to its
// namespace and named in spec.clusterSets if set, has the cluster as member):
//
//   - ManagedCluster added or deleted, or a change of its labels, claims, taints or deletion:
//     the placements holding it before or after (a cluster moving out of a set counts);
//   - a change of status.allocatable or status.capacity: those of them whose prioritizers read
//     resources (scheduler.Reads.Resources);
//   - any other change (conditions, version, annotations...): those with CEL predicates only,
//     which see the whole object; the scheduler reads no condition (availability reaches it
//     as taints). resourceVersion and managedFields alone wake nobody.
//   - AddOnPlacementScore: the placements holding its cluster, whose filters let it through in
//     their last pass, that read one of the scores
//     whose value changed (all of them when it is added, deleted, or its validUntil moves);
//   - ManagedClusterSet added, deleted or its spec changed: the placements of the namespaces
//     bound to it (and, with spec.clusterSets, naming it);
//   - ManagedClusterSetBinding added, deleted or moved to another set: its namespace's
//     placements.
//
// A Lease renewal is not watched at all.

// waker holds the fleet's event handlers.
type waker struct {
	r *Reconciler
}

// placements lists the cached placements of namespace ("": all).
func (w waker) placements(ctx context.Context, namespace string) []clusterv1beta1.Placement {
	list := &clusterv1beta1.PlacementList{}
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := w.r.Client.List(ctx, list, opts...); err != nil {
		w.r.Logger.Error(err, "listing placements")
		return nil
	}
	return list.Items
}

// holding enqueues the placements holding a member of any of sets that keep accepts.
func (w waker) holding(ctx context.Context, q workqueueAdder, sets []string, keep func(p *clusterv1beta1.Placement) bool) {
	if len(sets) == 0 {
		return
	}
	eligible := map[string][]string{} // namespace → its eligible sets, looked up once
	items := w.placements(ctx, "")
	for i := range items {
		p := &items[i]
		bound, ok := eligible[p.Namespace]
		if !ok {
			bound = w.r.fleet.EligibleSets(p.Namespace, nil)
			eligible[p.Namespace] = bound
		}
		if !slices.ContainsFunc(bound, func(s string) bool {
			return slices.Contains(sets, s) && (len(p.Spec.ClusterSets) == 0 || slices.Contains(p.Spec.ClusterSets, s))
		}) {
			continue
		}
		if keep == nil || keep(p) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
		}
	}
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// clusterHandler feeds the Fleet with ManagedClusters.
func (w waker) clusterHandler() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueueAdder) {
			c, ok := e.Object.(*clusterv1.ManagedCluster)
			if !ok {
				return
			}
			w.r.fleet.SetCluster(c)
			w.holding(ctx, q, w.r.fleet.SetsOf(c.Labels), nil)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueueAdder) {
			o, ok1 := e.ObjectOld.(*clusterv1.ManagedCluster)
			n, ok2 := e.ObjectNew.(*clusterv1.ManagedCluster)
			if !ok1 || !ok2 {
				return
			}
			if prev := w.r.fleet.SetCluster(n); prev != nil {
				o = prev
			}
			kind := clusterChange(o, n)
			if kind == changeNone {
				return
			}
			sets := union(w.r.fleet.SetsOf(o.Labels), w.r.fleet.SetsOf(n.Labels))
			if kind == changeAll {
				w.holding(ctx, q, sets, nil)
				return
			}
			w.holding(ctx, q, sets, func(p *clusterv1beta1.Placement) bool {
				reads := w.r.Scheduler.Reads(p)
				return reads.Object || (kind == changeResources && reads.Resources)
			})
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueueAdder) {
			c := w.r.fleet.DeleteCluster(e.Object.GetName())
			if c == nil {
				c, _ = e.Object.(*clusterv1.ManagedCluster)
			}
			if c == nil {
				return
			}
			w.holding(ctx, q, w.r.fleet.SetsOf(c.Labels), nil)
		},
	}
}

type clusterChangeKind int

const (
	changeNone      clusterChangeKind = iota
	changeOther                       // read by CEL only
	changeResources                   // allocatable/capacity (and maybe more, read by CEL)
	changeAll                         // labels, claims, taints, deletion: every holder
)

// clusterChange classifies what changed from o to n (see the rules above).
func clusterChange(o, n *clusterv1.ManagedCluster) clusterChangeKind {
	if !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Status.ClusterClaims, n.Status.ClusterClaims) ||
		!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		!equality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp) {
		return changeAll
	}
	if !equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(o.Status.Capacity, n.Status.Capacity) {
		return changeResources
	}
	// The rest CEL sees: metadata but its bookkeeping, spec, status.
	om, nm := o.ObjectMeta, n.ObjectMeta
	om.ResourceVersion, nm.ResourceVersion = "", ""
	om.ManagedFields, nm.ManagedFields = nil, nil
	om.Generation, nm.Generation = 0, 0
	if !equality.Semantic.DeepEqual(om, nm) || !equality.Semantic.DeepEqual(o.Spec, n.Spec) ||
		!equality.Semantic.DeepEqual(o.Status, n.Status) {
		return changeOther
	}
	return changeNone
}

// scoreHandler feeds the Fleet with AddOnPlacementScores.
func (w waker) scoreHandler() handler.EventHandler {
	wake := func(ctx context.Context, q workqueueAdder, sc *clusterv1alpha1.AddOnPlacementScore, names []string, all bool) {
		if len(names) == 0 && !all {
			return
		}
		c, ok := w.r.fleet.Cluster(sc.Namespace)
		if !ok {
			return // no cluster of that name: no placement reads its scores
		}
		w.holding(ctx, q, w.r.fleet.SetsOf(c.Labels), func(p *clusterv1beta1.Placement) bool {
			reads := w.r.Scheduler.Reads(p)
			if reads.AllScores {
				return true // a predicate (CEL) may read scores, or a plugin's inputs are unknown
			}
			// Filters read no score: a cluster the last pass filtered out stays out, and its
			// score cannot change the decision (a cluster change that lets it in wakes the
			// placement through the cluster's own event).
			if f, ok := w.r.feasible.Load(client.ObjectKeyFromObject(p).String()); ok {
				if _, in := f.(map[string]struct{})[sc.Namespace]; !in {
					return false
				}
			}
			if all && len(reads.Scores[sc.Name]) > 0 {
				return true
			}
			return slices.ContainsFunc(names, func(n string) bool { return reads.ReadsScore(sc.Name, n) })
		})
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueueAdder) {
			sc, ok := e.Object.(*clusterv1alpha1.AddOnPlacementScore)
			if !ok {
				return
			}
			w.r.fleet.SetScore(sc.Namespace, sc.Name, sc)
			wake(ctx, q, sc, nil, true)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueueAdder) {
			o, ok1 := e.ObjectOld.(*clusterv1alpha1.AddOnPlacementScore)
			n, ok2 := e.ObjectNew.(*clusterv1alpha1.AddOnPlacementScore)
			if !ok1 || !ok2 {
				return
			}
			w.r.fleet.SetScore(n.Namespace, n.Name, n)
			if !equality.Semantic.DeepEqual(o.Status.ValidUntil, n.Status.ValidUntil) {
				wake(ctx, q, n, nil, true)
				return
			}
			wake(ctx, q, n, changedScores(o.Status.Scores, n.Status.Scores), false)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueueAdder) {
			w.r.fleet.SetScore(e.Object.GetNamespace(), e.Object.GetName(), nil)
			if sc, ok := e.Object.(*clusterv1alpha1.AddOnPlacementScore); ok {
				wake(ctx, q, sc, nil, true)
			}
		},
	}
}

// changedScores are the names whose value differs between a and b (added and removed ones too).
func changedScores(a, b []clusterv1alpha1.AddOnPlacementScoreItem) []string {
	old := make(map[string]int32, len(a))
	for _, it := range a {
		old[it.Name] = it.Value
	}
	var out []string
	for _, it := range b {
		if v, ok := old[it.Name]; !ok || v != it.Value {
			out = append(out, it.Name)
		}
		delete(old, it.Name)
	}
	for name := range old {
		out = append(out, name)
	}
	return out
}

// setHandler feeds the Fleet with ManagedClusterSets.
func (w waker) setHandler() handler.EventHandler {
	wake := func(ctx context.Context, q workqueueAdder, set string) {
		for _, ns := range w.r.fleet.BoundNamespaces(set) {
			items := w.placements(ctx, ns)
			for i := range items {
				p := &items[i]
				if len(p.Spec.ClusterSets) == 0 || slices.Contains(p.Spec.ClusterSets, set) {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueueAdder) {
			s, ok := e.Object.(*clusterv1beta2.ManagedClusterSet)
			if !ok {
				return
			}
			w.r.fleet.SetSet(s.Name, s)
			wake(ctx, q, s.Name)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueueAdder) {
			o, ok1 := e.ObjectOld.(*clusterv1beta2.ManagedClusterSet)
			n, ok2 := e.ObjectNew.(*clusterv1beta2.ManagedClusterSet)
			if !ok1 || !ok2 {
				return
			}
			if equality.Semantic.DeepEqual(o.Spec, n.Spec) {
				return // status (its member count, written by the hub): nothing the scheduler reads
			}
			w.r.fleet.SetSet(n.Name, n)
			wake(ctx, q, n.Name)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueueAdder) {
			w.r.fleet.SetSet(e.Object.GetName(), nil)
			wake(ctx, q, e.Object.GetName())
		},
	}
}

// bindingHandler feeds the Fleet with ManagedClusterSetBindings.
func (w waker) bindingHandler() handler.EventHandler {
	wake := func(ctx context.Context, q workqueueAdder, ns string) {
		items := w.placements(ctx, ns)
		for i := range items {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&items[i])})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueueAdder) {
			b, ok := e.Object.(*clusterv1beta2.ManagedClusterSetBinding)
			if !ok {
				return
			}
			w.r.fleet.SetBinding(b.Namespace, b.Spec.ClusterSet, b)
			wake(ctx, q, b.Namespace)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueueAdder) {
			o, ok1 := e.ObjectOld.(*clusterv1beta2.ManagedClusterSetBinding)
			n, ok2 := e.ObjectNew.(*clusterv1beta2.ManagedClusterSetBinding)
			if !ok1 || !ok2 {
				return
			}
			if o.Spec.ClusterSet == n.Spec.ClusterSet {
				// Its status (Bound, written by the hub) is not read; only presence counts.
				w.r.fleet.SetBinding(n.Namespace, n.Spec.ClusterSet, n)
				return
			}
			w.r.fleet.SetBinding(o.Namespace, o.Spec.ClusterSet, nil)
			w.r.fleet.SetBinding(n.Namespace, n.Spec.ClusterSet, n)
			wake(ctx, q, n.Namespace)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueueAdder) {
			b, ok := e.Object.(*clusterv1beta2.ManagedClusterSetBinding)
			if !ok {
				return
			}
			w.r.fleet.SetBinding(b.Namespace, b.Spec.ClusterSet, nil)
			wake(ctx, q, b.Namespace)
		},
	}
}

type workqueueAdder = workqueue.TypedRateLimitingInterface[reconcile.Request]
