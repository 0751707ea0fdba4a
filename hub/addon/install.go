package addon

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/hub/placement/decisions"
)

// InstallControllerName names the install reconciler and its field manager.
const InstallControllerName = "addon-install"

const placementsValue = "placements"

// InstallReconciler installs an add-on by its Placements strategy and makes every
// ManagedClusterAddOn of a managed add-on owned by its ClusterManagementAddOn.
type InstallReconciler struct {
	Client client.Client
}

// SetupWithManager watches ClusterManagementAddOns, their ManagedClusterAddOns, placements,
// decisions and clusters.
func (r *InstallReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(InstallControllerName).
		For(&addonv1alpha1.ClusterManagementAddOn{}).
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(byAddOnName), builder.WithPredicates(mcaInstallChanged())).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.byDecision)).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.all), builder.WithPredicates(predicate.Funcs{
			// A cluster's namespace may now hold an add-on to create: only creation and
			// deletion matter, not its heartbeats.
			UpdateFunc: func(e event.UpdateEvent) bool {
				return !e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp())
			},
		})).
		Complete(apply.Quiet(r))
}

func byAddOnName(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
}

func (r *InstallReconciler) byDecision(ctx context.Context, o client.Object) []reconcile.Request {
	return cmasOfPlacement(ctx, r.Client, o.GetNamespace(), o.GetLabels()[clusterv1beta1.PlacementLabel])
}

// all enqueues every ClusterManagementAddOn with an install strategy (a cluster came or went:
// its namespace may now hold an add-on to create).
func (r *InstallReconciler) all(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &addonv1alpha1.ClusterManagementAddOnList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.InstallStrategy.Type == addonv1alpha1.AddonInstallStrategyPlacements {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// Reconcile creates and deletes one add-on's ManagedClusterAddOns.
func (r *InstallReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	if err := r.Client.Get(ctx, req.NamespacedName, cma); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !cma.DeletionTimestamp.IsZero() || !managed(cma) {
		return reconcile.Result{}, nil
	}
	mcas, err := listMCAs(ctx, r.Client, cma.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyPlacements {
		// Manual: the users' ManagedClusterAddOns (and those a former Placements strategy
		// created, which stay, as in OCM) only get their owner.
		return reconcile.Result{}, r.own(ctx, cma, mcas)
	}
	want := map[string]bool{}
	placementsReadable := true
	for _, ps := range cma.Spec.InstallStrategy.Placements {
		p, err := decisions.Read(ctx, r.Client, ps.Namespace, ps.Name)
		if err != nil {
			placementsReadable = false
			continue
		}
		for _, c := range p.Clusters() {
			want[c] = true
		}
	}
	// Created in parallel: a placement over the fleet creates one per cluster, each a round
	// trip through the API server and its webhooks (one after another, 5,000 clusters waited
	// minutes in make bench-fleet).
	var (
		errs []error
		mu   sync.Mutex
		g    errgroup.Group
	)
	g.SetLimit(parallelWrites)
	for cluster := range want {
		if _, ok := mcas[cluster]; ok {
			continue
		}
		g.Go(func() error {
			if err := r.create(ctx, cma, cluster); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	for cluster, mca := range mcas {
		if mca.Labels[InstallStrategyLabel] == placementsValue && !want[cluster] && placementsReadable {
			// The cluster left every placement: the add-on the strategy installed goes.
			if err := r.Client.Delete(ctx, mca); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("ManagedClusterAddOn %s/%s: deleting: %w", cluster, mca.Name, err))
			}
			delete(mcas, cluster)
		}
	}
	errs = append(errs, r.own(ctx, cma, mcas))
	return reconcile.Result{}, joinErrs(errs)
}

// own makes the ClusterManagementAddOn the owner of its ManagedClusterAddOns, so deleting it
// deletes them (OCM's addonowner controller).
func (r *InstallReconciler) own(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, mcas map[string]*addonv1alpha1.ManagedClusterAddOn) error {
	var errs []error
	for cluster, mca := range mcas {
		if ownedBy(mca, cma) {
			continue
		}
		ref := ownerRef(cma)
		if metav1.GetControllerOf(mca) != nil {
			ref["controller"] = false // someone else controls it: only one controller reference is allowed
		}
		if err := apply.Fields(ctx, r.Client, mca, apply.FieldManagerPrefix+InstallControllerName, false, map[string]any{
			"metadata": map[string]any{"ownerReferences": []any{ref}},
		}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("ManagedClusterAddOn %s/%s: owner: %w", cluster, mca.Name, err))
		}
	}
	return joinErrs(errs)
}

func (r *InstallReconciler) create(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, cluster string) error {
	// Only into the namespace of a registered cluster.
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		return nil
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{
		Name: cma.Name, Namespace: cluster,
		Labels:          map[string]string{InstallStrategyLabel: placementsValue},
		OwnerReferences: []metav1.OwnerReference{ownerRefTyped(cma)},
	}}
	if err := r.Client.Create(ctx, mca); err != nil && !apierrors.IsAlreadyExists(err) {
		if apierrors.IsNotFound(err) { // the cluster namespace is not there yet
			return nil
		}
		return fmt.Errorf("ManagedClusterAddOn %s/%s: creating: %w", cluster, cma.Name, err)
	}
	return nil
}

func ownerRefTyped(cma *addonv1alpha1.ClusterManagementAddOn) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "ClusterManagementAddOn",
		Name: cma.Name, UID: cma.UID, BlockOwnerDeletion: &t, Controller: &t,
	}
}

func ownerRef(cma *addonv1alpha1.ClusterManagementAddOn) map[string]any {
	return map[string]any{
		"apiVersion": addonv1alpha1.GroupVersion.String(), "kind": "ClusterManagementAddOn",
		"name": cma.Name, "uid": string(cma.UID), "blockOwnerDeletion": true, "controller": true,
	}
}

func ownedBy(o client.Object, cma *addonv1alpha1.ClusterManagementAddOn) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == cma.UID {
			return true
		}
	}
	return false
}

// listMCAs returns an add-on's ManagedClusterAddOns by cluster.
func listMCAs(ctx context.Context, c client.Reader, name string) (map[string]*addonv1alpha1.ManagedClusterAddOn, error) {
	list := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := c.List(ctx, list, client.MatchingFields{mcaNameIndex: name}); err != nil {
		return nil, fmt.Errorf("listing the ManagedClusterAddOns of %s: %w", name, err)
	}
	out := make(map[string]*addonv1alpha1.ManagedClusterAddOn, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Namespace] = &list.Items[i]
	}
	return out, nil
}
