package clusterproxy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

const configController = "cluster-proxy-config-status"

// ConfigCondition is the one ManagedProxyConfiguration condition that is true of Flotilla's
// proxy server: ProxyServerDeployed, since the hub itself serves the tunnels (no Deployment
// is rendered from spec.proxyServer, whose image and replicas nothing reads).
//
// Upstream's other conditions do not apply, so they are not reported: ProxyServerSecretSigned
// and AgentServerSecretSigned name serving certificates of a proxy server Deployment, while
// Flotilla's agents reach the hub through the hub API server's tunnel API (its own serving
// certificate) and the optional ProxyService frontend issues its serving certificate in
// memory per replica; ProxyClientSecretSigned would describe only that optional frontend's
// Secret, written by every replica, not by this controller; UserServerSecretSigned belongs to
// spec.userServer, which Flotilla does not serve.
func ConfigCondition(c *proxyv1alpha1.ManagedProxyConfiguration) metav1.Condition {
	return metav1.Condition{
		Type: proxyv1alpha1.ConditionTypeProxyServerDeployed, Status: metav1.ConditionTrue,
		Reason: proxyv1alpha1.ReasonSuccessfullyDeployed, ObservedGeneration: c.Generation,
		Message: "the Flotilla hub serves the cluster-proxy tunnels itself (aggregated API proxy.flotilla.dev/v1alpha1); spec.proxyServer.image and replicas are not used",
	}
}

// ConfigReconciler reports each ManagedProxyConfiguration's status (ConfigCondition and
// lastObservedGeneration).
type ConfigReconciler struct {
	Client client.Client
}

// SetupWithManager watches the configurations' specs.
func (r *ConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(configController).
		For(&proxyv1alpha1.ManagedProxyConfiguration{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(apply.Quiet(r))
}

// Reconcile writes one configuration's status; its conditions are an atomic list, applied
// whole, guarded by the resourceVersion they were computed from.
func (r *ConfigReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &proxyv1alpha1.ManagedProxyConfiguration{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	conds := append([]metav1.Condition(nil), c.Status.Conditions...)
	changed := meta.SetStatusCondition(&conds, ConfigCondition(c))
	if !changed && c.Status.LastObservedGeneration == c.Generation {
		return reconcile.Result{}, nil
	}
	err := apply.Guarded(ctx, r.Client, c, apply.FieldManagerPrefix+configController, true, map[string]any{
		"status": map[string]any{"conditions": conds, "lastObservedGeneration": c.Generation},
	})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedProxyConfiguration %s: updating status: %w", c.Name, err)
	}
	return reconcile.Result{}, nil
}
