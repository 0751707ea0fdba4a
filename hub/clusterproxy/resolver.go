package clusterproxy

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/clusterproxy"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
)

// Controller names; each is also, after apply.FieldManagerPrefix, the field manager of what
// that controller writes.
const (
	resolverController = "cluster-proxy-resolver-status"
	servicesController = "cluster-proxy-services"
)

// ResolverCondition is r's ServiceResolverAvaliable condition, as upstream decides it, with
// a message naming the field or the set. set is r's ManagedClusterSet, nil when it does not
// exist.
func ResolverCondition(r *proxyv1alpha1.ManagedProxyServiceResolver, set *clusterv1beta2.ManagedClusterSet) metav1.Condition {
	c := metav1.Condition{Type: proxyv1alpha1.ConditionTypeServiceResolverAvaliable, Status: metav1.ConditionFalse, ObservedGeneration: r.Generation}
	if problem := clusterproxy.ResolverProblem(r); problem != "" {
		c.Reason, c.Message = proxyv1alpha1.ReasonManagedProxyServiceResolverNotLegal, problem
		return c
	}
	name := r.Spec.ManagedClusterSelector.ManagedClusterSet.Name
	switch {
	case set == nil:
		c.Reason = proxyv1alpha1.ReasonManagedClusterSetNotExisted
		c.Message = fmt.Sprintf("ManagedClusterSet %s (spec.managedClusterSelector.managedClusterSet.name) does not exist", name)
	case !set.DeletionTimestamp.IsZero():
		c.Reason = proxyv1alpha1.ReasonManagedClusterSetDeleting
		c.Message = fmt.Sprintf("ManagedClusterSet %s is being deleted", name)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, proxyv1alpha1.ReasonManagedProxyServiceResolverAvaliable
		ref := r.Spec.ServiceSelector.ServiceRef
		c.Message = fmt.Sprintf("Service %s/%s is exposed on the clusters of ManagedClusterSet %s", ref.Namespace, ref.Name, name)
	}
	return c
}

// ResolverReconciler writes each ManagedProxyServiceResolver's ServiceResolverAvaliable
// condition.
type ResolverReconciler struct {
	Client client.Client
}

// SetupWithManager watches the resolvers and the sets they name.
func (r *ResolverReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(resolverController).
		For(&proxyv1alpha1.ManagedProxyServiceResolver{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			list := &proxyv1alpha1.ManagedProxyServiceResolverList{}
			if err := r.Client.List(ctx, list); err != nil {
				return nil
			}
			var out []reconcile.Request
			for i := range list.Items {
				if s := list.Items[i].Spec.ManagedClusterSelector.ManagedClusterSet; s != nil && s.Name == o.GetName() {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				}
			}
			return out
		}), builder.WithPredicates(setExistence())).
		Complete(apply.Quiet(r))
}

// setExistence passes a set's creation, deletion and the start of its deletion.
func setExistence() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// Reconcile writes one resolver's condition. Its status.conditions is an atomic list (and
// required), so it is applied whole, guarded by the resourceVersion it was computed from.
func (r *ResolverReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res := &proxyv1alpha1.ManagedProxyServiceResolver{}
	if err := r.Client.Get(ctx, req.NamespacedName, res); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !res.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	set, err := resolverSet(ctx, r.Client, res)
	if err != nil {
		return reconcile.Result{}, err
	}
	conds := append([]metav1.Condition(nil), res.Status.Conditions...)
	if !meta.SetStatusCondition(&conds, ResolverCondition(res, set)) {
		return reconcile.Result{}, nil
	}
	err = apply.Guarded(ctx, r.Client, res, apply.FieldManagerPrefix+resolverController, true,
		map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedProxyServiceResolver %s: updating status.conditions: %w", res.Name, err)
	}
	return reconcile.Result{}, nil
}

// resolverSet is the set a legal resolver names, nil if it names none or it does not exist.
func resolverSet(ctx context.Context, c client.Reader, r *proxyv1alpha1.ManagedProxyServiceResolver) (*clusterv1beta2.ManagedClusterSet, error) {
	if clusterproxy.ResolverProblem(r) != "" {
		return nil, nil
	}
	set := &clusterv1beta2.ManagedClusterSet{}
	err := c.Get(ctx, client.ObjectKey{Name: r.Spec.ManagedClusterSelector.ManagedClusterSet.Name}, set)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("ManagedProxyServiceResolver %s: reading its ManagedClusterSet: %w", r.Name, err)
	}
	return set, nil
}

// ExposedServices are the Services the resolvers expose on cluster: those of every legal
// resolver whose existing, not deleting, set has cluster as a member (as upstream's agent
// chart computes them).
func ExposedServices(ctx context.Context, c client.Reader, cluster *clusterv1.ManagedCluster) ([]types.NamespacedName, error) {
	list := &proxyv1alpha1.ManagedProxyServiceResolverList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing ManagedProxyServiceResolvers: %w", err)
	}
	var out []types.NamespacedName
	for i := range list.Items {
		r := &list.Items[i]
		if !r.DeletionTimestamp.IsZero() {
			continue
		}
		set, err := resolverSet(ctx, c, r)
		if err != nil {
			return nil, err
		}
		if set == nil || !set.DeletionTimestamp.IsZero() {
			continue
		}
		sel, err := clusterset.Selector(set)
		if err != nil || !sel.Matches(labels.Set(cluster.Labels)) {
			continue
		}
		ref := r.Spec.ServiceSelector.ServiceRef
		out = append(out, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name})
	}
	return out, nil
}

// ServicesReconciler keeps, for each cluster with the cluster-proxy add-on, the ConfigMap
// clusterproxy.ServicesConfigMapName in its namespace listing the Services the resolvers
// expose there: the cluster's agent serves exactly those. The ConfigMap is owned by the
// ManagedClusterAddOn, so it goes with the add-on.
type ServicesReconciler struct {
	Client client.Client
}

// SetupWithManager watches the cluster-proxy add-ons, the resolvers, the sets and the
// clusters' labels.
func (r *ServicesReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	isAddOn := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == clusterproxy.AddonName })
	// A resolver or set change may change any cluster's list: every add-on is looked at again.
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := &addonv1alpha1.ManagedClusterAddOnList{}
		if err := r.Client.List(ctx, list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if list.Items[i].Name == clusterproxy.AddonName {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(servicesController).
		For(&addonv1alpha1.ManagedClusterAddOn{}, builder.WithPredicates(isAddOn, predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Watches(&proxyv1alpha1.ManagedProxyServiceResolver{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1beta2.ManagedClusterSet{}, all, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, setExistence()))).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetName(), Name: clusterproxy.AddonName}}}
		}), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		}})).
		Complete(apply.Quiet(r))
}

// Reconcile applies one cluster's list (req is its cluster-proxy ManagedClusterAddOn).
func (r *ServicesReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := r.Client.Get(ctx, req.NamespacedName, mca); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !mca.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	cluster := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: mca.Namespace}, cluster); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	services, err := ExposedServices(ctx, r.Client, cluster)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: mca.Namespace, Name: clusterproxy.ServicesConfigMapName}}
	// The apply states the whole data: hosts no longer exposed are removed.
	err = apply.Fields(ctx, r.Client, cm, apply.FieldManagerPrefix+servicesController, false, map[string]any{
		"metadata": map[string]any{
			"labels": map[string]any{addonv1alpha1.AddonLabelKey: clusterproxy.AddonName},
			"ownerReferences": []any{map[string]any{
				"apiVersion": addonv1alpha1.GroupVersion.String(), "kind": "ManagedClusterAddOn",
				"name": mca.Name, "uid": string(mca.UID),
			}},
		},
		"data": clusterproxy.ServicesData(cluster.Name, services),
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("cluster %s: applying ConfigMap %s/%s: %w", cluster.Name, mca.Namespace, clusterproxy.ServicesConfigMapName, err)
	}
	return reconcile.Result{}, nil
}

// ServiceHosts finds the cluster whose resolved Service a ProxyService client means by a host
// cluster-proxy-<hash> (clusterproxy.ServiceHost): it hashes the members of each resolver's
// set, from the manager's cache. The agent still checks the host against its own list.
type ServiceHosts struct {
	Reader client.Reader
}

// Cluster returns the cluster exposing a Service at host, or false.
func (s ServiceHosts) Cluster(ctx context.Context, host string) (string, bool, error) {
	list := &proxyv1alpha1.ManagedProxyServiceResolverList{}
	if err := s.Reader.List(ctx, list); err != nil {
		return "", false, fmt.Errorf("listing ManagedProxyServiceResolvers: %w", err)
	}
	for i := range list.Items {
		r := &list.Items[i]
		set, err := resolverSet(ctx, s.Reader, r)
		if err != nil {
			return "", false, err
		}
		if set == nil || !set.DeletionTimestamp.IsZero() || !r.DeletionTimestamp.IsZero() {
			continue
		}
		sel, err := clusterset.Selector(set)
		if err != nil {
			continue
		}
		clusters := &clusterv1.ManagedClusterList{}
		if err := s.Reader.List(ctx, clusters, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
			return "", false, fmt.Errorf("listing the clusters of ManagedClusterSet %s: %w", set.Name, err)
		}
		ref := r.Spec.ServiceSelector.ServiceRef
		for j := range clusters.Items {
			if clusterproxy.ServiceHost(clusters.Items[j].Name, ref.Namespace, ref.Name) == host {
				return clusters.Items[j].Name, true, nil
			}
		}
	}
	return "", false, nil
}
