// Package clusterset maintains ManagedClusterSets: the ClusterSetEmpty condition of every set,
// and, behind the DefaultClusterSet feature gate, the "default" and "global" sets and the
// default clusterset label on clusters that have none.
package clusterset

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// Selector returns the label selector choosing the members of set.
func Selector(set *clusterv1beta2.ManagedClusterSet) (labels.Selector, error) {
	switch set.Spec.ClusterSelector.SelectorType {
	case clusterv1beta2.ExclusiveClusterSetLabel, "":
		return labels.SelectorFromSet(labels.Set{clusterv1beta2.ClusterSetLabel: set.Name}), nil
	case clusterv1beta2.LabelSelector:
		if set.Spec.ClusterSelector.LabelSelector == nil {
			return nil, fmt.Errorf("ManagedClusterSet %s: spec.clusterSelector.labelSelector must be set when selectorType is LabelSelector", set.Name)
		}
		s, err := metav1.LabelSelectorAsSelector(set.Spec.ClusterSelector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("ManagedClusterSet %s: spec.clusterSelector.labelSelector: %w", set.Name, err)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("ManagedClusterSet %s: spec.clusterSelector.selectorType %q is not ExclusiveClusterSetLabel or LabelSelector",
			set.Name, set.Spec.ClusterSelector.SelectorType)
	}
}

// EmptyCondition is the ClusterSetEmpty condition for a set with count members, as OCM writes it.
func EmptyCondition(count int) metav1.Condition {
	if count == 0 {
		return metav1.Condition{Type: clusterv1beta2.ManagedClusterSetConditionEmpty, Status: metav1.ConditionTrue,
			Reason: clusterv1beta2.ConditionReasonNoClusterMatched, Message: "No ManagedCluster selected"}
	}
	return metav1.Condition{Type: clusterv1beta2.ManagedClusterSetConditionEmpty, Status: metav1.ConditionFalse,
		Reason: clusterv1beta2.ConditionReasonClustersSelected, Message: fmt.Sprintf("%d ManagedClusters selected", count)}
}

// Controller names; each is also, after apply.FieldManagerPrefix, the field manager of what
// that controller writes.
const (
	statusController       = "registration-clusterset-status"
	defaultSetsController  = "registration-default-clustersets"
	defaultLabelController = "registration-default-clusterset-label"
)

// StatusReconciler keeps ClusterSetEmpty up to date.
type StatusReconciler struct {
	Client client.Client
}

// SetupWithManager registers the reconciler; a cluster that comes, goes or changes labels
// re-evaluates every set, which keeps LabelSelector sets correct without reverse indexing.
// The agents' status reports (thousands a minute in a large fleet) change no membership and
// do not wake it.
func (r *StatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(statusController).
		For(&clusterv1beta2.ManagedClusterSet{}).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
			sets := &clusterv1beta2.ManagedClusterSetList{}
			if err := r.Client.List(ctx, sets); err != nil {
				return nil
			}
			out := make([]reconcile.Request, 0, len(sets.Items))
			for i := range sets.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sets.Items[i])})
			}
			return out
		}), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return membershipChanged(e.ObjectOld, e.ObjectNew)
		}})).
		Complete(apply.Quiet(r))
}

// membershipChanged reports a change of what set membership is decided by: the labels.
func membershipChanged(oldObj, newObj client.Object) bool {
	return !maps.Equal(oldObj.GetLabels(), newObj.GetLabels())
}

// Reconcile counts the members of one set. status.conditions of a set is an atomic list, so
// it is applied whole, guarded by the resourceVersion it was computed from.
func (r *StatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	set := &clusterv1beta2.ManagedClusterSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !set.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var cond metav1.Condition
	sel, err := Selector(set)
	if err != nil {
		cond = metav1.Condition{Type: clusterv1beta2.ManagedClusterSetConditionEmpty, Status: metav1.ConditionUnknown,
			Reason: "InvalidClusterSelector", Message: err.Error()}
	} else {
		clusters := &clusterv1.ManagedClusterList{}
		// Only counted: the cache's objects are not copied (thousands per reconcile).
		if err := r.Client.List(ctx, clusters, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
			return reconcile.Result{}, fmt.Errorf("ManagedClusterSet %s: listing member clusters: %w", set.Name, err)
		}
		cond = EmptyCondition(len(clusters.Items))
	}
	conds := append([]metav1.Condition(nil), set.Status.Conditions...)
	if !meta.SetStatusCondition(&conds, cond) {
		return reconcile.Result{}, nil
	}
	err = apply.Guarded(ctx, r.Client, set, apply.FieldManagerPrefix+statusController, true,
		map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedClusterSet %s: updating status.conditions: %w", set.Name, err)
	}
	return reconcile.Result{}, nil
}

// DefaultSets are the sets the DefaultClusterSet gate maintains.
func DefaultSets() []*clusterv1beta2.ManagedClusterSet {
	return []*clusterv1beta2.ManagedClusterSet{
		{
			ObjectMeta: metav1.ObjectMeta{Name: clusterv1beta2.DefaultClusterSetName},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.ExclusiveClusterSetLabel}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: clusterv1beta2.GlobalClusterSetName},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}},
		},
	}
}

// DefaultSetsReconciler recreates the default and global sets whenever they are missing and
// restores their selectors if edited.
type DefaultSetsReconciler struct {
	Client client.Client
}

// SetupWithManager registers the reconciler and ensures both sets once at start.
func (r *DefaultSetsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	rec := apply.Quiet(r)
	if err := mgr.Add(runnable(func(ctx context.Context) error {
		for _, s := range DefaultSets() {
			// A conflict here is no failure: the controller below restores the set on its next event.
			if _, err := rec.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s)}); err != nil {
				return err
			}
		}
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(defaultSetsController).
		For(&clusterv1beta2.ManagedClusterSet{}).
		Complete(rec)
}

type runnable func(context.Context) error

func (f runnable) Start(ctx context.Context) error { return f(ctx) }

// Reconcile ensures one of the default sets; other sets are ignored.
func (r *DefaultSetsReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var want *clusterv1beta2.ManagedClusterSet
	for _, s := range DefaultSets() {
		if s.Name == req.Name {
			want = s
		}
	}
	if want == nil {
		return reconcile.Result{}, nil
	}
	got := &clusterv1beta2.ManagedClusterSet{}
	err := r.Client.Get(ctx, req.NamespacedName, got)
	if apierrors.IsNotFound(err) {
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating ManagedClusterSet %s: %w", want.Name, err)
		}
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading ManagedClusterSet %s: %w", want.Name, err)
	}
	if !got.DeletionTimestamp.IsZero() || sameSelector(got.Spec.ClusterSelector, want.Spec.ClusterSelector) {
		return reconcile.Result{}, nil
	}
	// The whole selector is replaced, including fields someone else added (an apply would leave
	// those), so this stays a patch guarded by resourceVersion.
	orig := got.DeepCopy()
	got.Spec.ClusterSelector = want.Spec.ClusterSelector
	if err := r.Client.Patch(ctx, got, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedClusterSet %s: restoring spec.clusterSelector: %w", got.Name, err)
	}
	return reconcile.Result{}, nil
}

func sameSelector(a, b clusterv1beta2.ManagedClusterSelector) bool {
	if a.SelectorType != b.SelectorType {
		return false
	}
	if (a.LabelSelector == nil) != (b.LabelSelector == nil) {
		return false
	}
	if a.LabelSelector == nil {
		return true
	}
	return len(a.LabelSelector.MatchLabels) == len(b.LabelSelector.MatchLabels) &&
		len(a.LabelSelector.MatchExpressions) == len(b.LabelSelector.MatchExpressions) &&
		len(a.LabelSelector.MatchLabels) == 0 && len(a.LabelSelector.MatchExpressions) == 0
}

// DefaultLabelReconciler puts clusters without a clusterset label into the default set.
type DefaultLabelReconciler struct {
	Client client.Client
}

// SetupWithManager registers the reconciler. Only a cluster without the label wakes it: the
// agents' status reports of labelled clusters (several per cluster as it joins, thousands a
// minute in a large fleet) have nothing for it to do.
func (r *DefaultLabelReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(defaultLabelController).
		For(&clusterv1.ManagedCluster{}, builder.WithPredicates(predicate.NewPredicateFuncs(unlabelled))).
		Complete(apply.Quiet(r))
}

// unlabelled reports a cluster that belongs to no set by label.
func unlabelled(o client.Object) bool {
	_, ok := o.GetLabels()[clusterv1beta2.ClusterSetLabel]
	return !ok
}

// Reconcile labels one cluster if it has no set.
func (r *DefaultLabelReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	if _, ok := mc.Labels[clusterv1beta2.ClusterSetLabel]; ok {
		return reconcile.Result{}, nil
	}
	err := apply.Label(ctx, r.Client, mc, apply.FieldManagerPrefix+defaultLabelController,
		clusterv1beta2.ClusterSetLabel, clusterv1beta2.DefaultClusterSetName)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: adding label %s=%s: %w", mc.Name,
			clusterv1beta2.ClusterSetLabel, clusterv1beta2.DefaultClusterSetName, err)
	}
	return reconcile.Result{}, nil
}
