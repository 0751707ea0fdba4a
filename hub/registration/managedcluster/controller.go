// Package managedcluster is the hub side of the double opt-in: when the hub admin sets
// spec.hubAcceptsClient it creates the cluster namespace and the agent's RBAC, when the admin
// flips it back it revokes that access, and when the ManagedCluster is deleted its finalizer
// cleans up everything the hub created for the cluster. Under the ManagedClusterAutoApproval
// gate the hub itself accepts a first join (AutoAccept), which CSR approval calls.
package managedcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// CleanupHook runs when a ManagedCluster is being deleted, before its namespace is removed.
// It returns done=false while it is still waiting (for example for ManifestWorks to be
// cleaned from the managed cluster); the cluster is then looked at again after a short delay.
type CleanupHook func(ctx context.Context, cluster string) (done bool, err error)

// cleanupRetry is how soon a deletion waiting for a hook is retried.
const cleanupRetry = 2 * time.Second

const (
	controllerName = "registration-managedcluster"
	// fieldManager owns the finalizer and the HubAcceptedManagedCluster condition.
	fieldManager = apply.FieldManagerPrefix + controllerName
)

// Reconciler reconciles ManagedClusters.
type Reconciler struct {
	Client client.Client
	// Hooks run in order on deletion; later issues (work) add theirs.
	Hooks []CleanupHook
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		// A reconcile is a few API round trips for one cluster, independent of the others: with
		// the hub's default workers, 3,000 clusters joining at once waited minutes in this
		// queue while kube-apiserver had CPU to spare (make bench-fleet's controller table).
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		For(&clusterv1.ManagedCluster{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return relevantUpdate(e.ObjectOld, e.ObjectNew)
		}})).
		Complete(apply.Quiet(r))
}

// Workers is how many clusters the controller reconciles at once.
const Workers = 32

// relevantUpdate lets through the ManagedCluster changes this controller acts on: spec
// (acceptance), metadata it reads or owns, deletion, and a HubAcceptedManagedCluster
// condition that no longer says what the spec does. The agents' status reports (leases,
// conditions, claims, resources: thousands a minute in a large fleet) do not wake it.
func relevantUpdate(oldObj, newObj client.Object) bool {
	o, ok1 := oldObj.(*clusterv1.ManagedCluster)
	n, ok2 := newObj.(*clusterv1.ManagedCluster)
	if !ok1 || !ok2 {
		return true
	}
	if o.Generation != n.Generation || !n.DeletionTimestamp.IsZero() ||
		!maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) || !slices.Equal(o.Finalizers, n.Finalizers) {
		return true
	}
	c := meta.FindStatusCondition(n.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
	accepted := c != nil && c.Status == metav1.ConditionTrue
	return accepted != n.Spec.HubAcceptsClient
}

// Reconcile applies the hub-side consequences of one ManagedCluster's acceptance state.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		return r.cleanup(ctx, mc)
	}
	if !controllerutil.ContainsFinalizer(mc, clusterv1.ManagedClusterFinalizer) {
		if err := apply.Finalizer(ctx, r.Client, mc, fieldManager, clusterv1.ManagedClusterFinalizer); err != nil {
			return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: adding finalizer %s: %w", mc.Name, clusterv1.ManagedClusterFinalizer, err)
		}
	}
	if !mc.Spec.HubAcceptsClient {
		return reconcile.Result{}, r.deny(ctx, mc)
	}
	return reconcile.Result{}, r.accept(ctx, mc)
}

func (r *Reconciler) accept(ctx context.Context, mc *clusterv1.ManagedCluster) error {
	name := mc.Name
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1.ClusterNameLabelKey: name}}},
		rbac.ClusterRoleBinding(name),
		rbac.RegistrationRoleBinding(name),
		rbac.WorkRoleBinding(name),
	}
	// The objects are independent except the RoleBindings, which need the namespace: two
	// rounds of concurrent applies instead of five one after another.
	var g errgroup.Group
	g.Go(func() error { return r.applyClusterRole(ctx, name) })
	for _, o := range objs[:2] {
		g.Go(func() error { return rbac.Apply(ctx, r.Client, o) })
	}
	applyErr := g.Wait()
	if applyErr == nil {
		for _, o := range objs[2:] {
			g.Go(func() error { return rbac.Apply(ctx, r.Client, o) })
		}
		applyErr = g.Wait()
	}
	if applyErr != nil && (ctx.Err() != nil || apierrors.IsConflict(applyErr)) {
		// Cut short by shutdown, or the ClusterRole changed since it was read (it is read
		// again): nothing to report on the cluster.
		return applyErr
	}
	if applyErr != nil {
		applyErr = fmt.Errorf("ManagedCluster %s: accepting: %w", name, applyErr)
	}
	cond := acceptedCondition(mc)
	if applyErr != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Error", applyErr.Error()
	}
	if err := setCondition(ctx, r.Client, mc, cond); err != nil {
		return err
	}
	return applyErr
}

// applyClusterRole applies the accepted cluster's ClusterRole. A role from which the renew
// rule was removed (OCM's soft revoke, rbac.SoftRevoked) keeps it out, and the rest of the
// role is restored as usual. The rules are an atomic list, so the apply is guarded by the
// resourceVersion of the role as read: an admin's edit racing this apply is read again, never
// overwritten from a stale copy.
func (r *Reconciler) applyClusterRole(ctx context.Context, cluster string) error {
	role := rbac.ClusterRole(cluster, true)
	existing := &rbacv1.ClusterRole{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: role.Name}, existing); {
	case apierrors.IsNotFound(err):
		return rbac.Apply(ctx, r.Client, role)
	case err != nil:
		return fmt.Errorf("reading ClusterRole %s: %w", role.Name, err)
	}
	if rbac.SoftRevoked(existing) {
		role = rbac.WithoutRenew(role)
	}
	if held, err := rbac.Holds(existing, role); err == nil && held {
		return nil // as wanted already: no write on every reconcile
	}
	if err := apply.Guarded(ctx, r.Client, existing, rbac.FieldManager, false,
		map[string]any{"metadata": map[string]any{"labels": role.Labels}, "rules": role.Rules}); err != nil {
		return fmt.Errorf("applying ClusterRole %s: %w", role.Name, err)
	}
	return nil
}

// deny revokes an agent's access when the cluster is not (or no longer) accepted. The
// per-cluster ClusterRole shrinks to reading its own ManagedCluster and the namespace
// RoleBindings go, so the agent can no longer write status, heartbeat, rotate its
// certificate or touch the cluster namespace.
func (r *Reconciler) deny(ctx context.Context, mc *clusterv1.ManagedCluster) error {
	name := mc.Name
	for _, o := range []client.Object{rbac.ClusterRole(name, false), rbac.ClusterRoleBinding(name)} {
		if err := rbac.Apply(ctx, r.Client, o); err != nil {
			return fmt.Errorf("ManagedCluster %s: revoking access: %w", name, err)
		}
	}
	for _, o := range []client.Object{rbac.RegistrationRoleBinding(name), rbac.WorkRoleBinding(name)} {
		if err := rbac.Delete(ctx, r.Client, o); err != nil {
			return fmt.Errorf("ManagedCluster %s: revoking access: %w", name, err)
		}
	}
	// Only a cluster that was accepted before is reported as denied; a new one stays silent.
	if meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) == nil {
		return nil
	}
	return setCondition(ctx, r.Client, mc, metav1.Condition{
		Type:    clusterv1.ManagedClusterConditionHubAccepted,
		Status:  metav1.ConditionFalse,
		Reason:  clusterv1.ConditionReasonHubClusterAdminDenied,
		Message: "Denied by hub cluster admin",
	})
}

func (r *Reconciler) cleanup(ctx context.Context, mc *clusterv1.ManagedCluster) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(mc, clusterv1.ManagedClusterFinalizer) {
		return reconcile.Result{}, nil
	}
	name := mc.Name
	// Access goes first so a deleted cluster's agent is cut off at once.
	for _, o := range []client.Object{
		rbac.RegistrationRoleBinding(name),
		rbac.WorkRoleBinding(name),
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: rbac.ClusterRoleName(name)}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: rbac.ClusterRoleName(name)}},
	} {
		if err := rbac.Delete(ctx, r.Client, o); err != nil {
			return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: cleanup: %w", name, err)
		}
	}
	if err := r.Client.DeleteAllOf(ctx, &certificatesv1.CertificateSigningRequest{},
		client.MatchingLabels{clusterv1.ClusterNameLabelKey: name}); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: cleanup: deleting its CertificateSigningRequests: %w", name, err)
	}
	for i, hook := range r.Hooks {
		done, err := hook(ctx, name)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: cleanup hook %d: %w", name, i, err)
		}
		if !done {
			log.FromContext(ctx).V(1).Info("waiting for cleanup hook", "cluster", name, "hook", i)
			return reconcile.Result{RequeueAfter: cleanupRetry}, nil
		}
	}
	if err := rbac.Delete(ctx, r.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: cleanup: %w", name, err)
	}
	// A conflict is retried quietly (apply.Quiet).
	if err := apply.RemoveFinalizer(ctx, r.Client, mc, clusterv1.ManagedClusterFinalizer); err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: %w", name, err)
	}
	return reconcile.Result{}, nil
}

// setCondition applies one status condition; the conditions the agent and other controllers
// own are left alone.
func setCondition(ctx context.Context, c client.Client, mc *clusterv1.ManagedCluster, cond metav1.Condition) error {
	if _, err := apply.Condition(ctx, c, mc, mc.Status.Conditions, fieldManager, cond); err != nil {
		return fmt.Errorf("ManagedCluster %s: setting condition %s=%s: %w", mc.Name, cond.Type, cond.Status, err)
	}
	return nil
}
