package clustergateway

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	authenticationv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// FieldManager owns the ManagedServiceAccounts and credential Secrets SecretReconciler writes.
const FieldManager = apply.FieldManagerPrefix + "cluster-gateway"

// SecretReconciler keeps, for each ManagedClusterAddOn cluster-gateway (in a cluster's
// namespace C), the ManagedServiceAccount C/cluster-gateway (owned by the add-on, validity
// 4320h, as upstream's addon-manager) and the copy of its token Secret C/cluster-gateway that
// the gateway reads, <SecretNamespace>/C, labelled as upstream (ServiceAccountToken,
// ClusterProxy) with keys token and ca.crt. The copy follows every token rotation and is
// deleted when the add-on goes. Secrets are watched as metadata and read uncached, so the hub
// holds no token but the gateway's copies.
type SecretReconciler struct {
	// Client writes; Reader reads Secrets (uncached: mgr.GetAPIReader()).
	Client client.Client
	Reader client.Reader
	// SecretNamespace holds the copies; default clustergatewayv1alpha1.DefaultSecretNamespace.
	SecretNamespace string
}

// SetupWithManager watches the add-ons, the ManagedServiceAccounts' Secrets and the copies.
func (r *SecretReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	if r.SecretNamespace == "" {
		r.SecretNamespace = clustergatewayv1alpha1.DefaultSecretNamespace
	}
	isAddOn := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == clustergatewayv1alpha1.AddonName })
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster-gateway-secrets").
		For(&addonv1alpha1.ManagedClusterAddOn{}, builder.WithPredicates(isAddOn)).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			switch {
			case o.GetName() == clustergatewayv1alpha1.ManagedServiceAccountName && o.GetNamespace() != r.SecretNamespace:
				// The ManagedServiceAccount's token, written by its agent.
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: clustergatewayv1alpha1.AddonName}}}
			case o.GetNamespace() == r.SecretNamespace:
				// A copy: changed or deleted by someone else, or left by an add-on deleted
				// while the hub was down.
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetName(), Name: clustergatewayv1alpha1.AddonName}}}
			}
			return nil
		})).
		Complete(apply.Quiet(r))
}

// Reconcile brings cluster req.Namespace's ManagedServiceAccount and credential copy in line
// with its add-on.
func (r *SecretReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cluster := req.Namespace
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	err := r.Client.Get(ctx, req.NamespacedName, mca)
	if apierrors.IsNotFound(err) || err == nil && !mca.DeletionTimestamp.IsZero() {
		// The ManagedServiceAccount goes with its owner; the copy is ours to delete.
		return reconcile.Result{}, r.deleteCopy(ctx, cluster)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading ManagedClusterAddOn %s/%s: %w", cluster, req.Name, err)
	}

	msa := &authenticationv1beta1.ManagedServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: clustergatewayv1alpha1.ManagedServiceAccountName}}
	if err := apply.Fields(ctx, r.Client, msa, FieldManager, false, map[string]any{
		"metadata": map[string]any{"ownerReferences": []any{map[string]any{
			"apiVersion": addonv1alpha1.GroupVersion.String(), "kind": "ManagedClusterAddOn", "name": mca.Name, "uid": string(mca.UID),
		}}},
		"spec": map[string]any{"rotation": map[string]any{
			"enabled": true, "validity": clustergatewayv1alpha1.ManagedServiceAccountValidity.String(),
		}},
	}); err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedServiceAccount %s/%s: %w", cluster, msa.Name, err)
	}

	src := &corev1.Secret{}
	err = r.Reader.Get(ctx, client.ObjectKey{Namespace: cluster, Name: clustergatewayv1alpha1.ManagedServiceAccountName}, src)
	if apierrors.IsNotFound(err) {
		// Not reported yet (or being re-issued): the copy, if any, stays until the new token.
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading Secret %s/%s (the token of ManagedServiceAccount %s/%s): %w", cluster, src.Name, cluster, msa.Name, err)
	}
	token, ca := src.Data[authenticationv1beta1.SecretKeyToken], src.Data[authenticationv1beta1.SecretKeyCA]
	if len(token) == 0 || len(ca) == 0 {
		return reconcile.Result{}, nil
	}
	cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.SecretNamespace, Name: cluster}}
	if err := apply.Fields(ctx, r.Client, cp, FieldManager, false, map[string]any{
		"metadata": map[string]any{"labels": map[string]any{
			clustergatewayv1alpha1.LabelKeyClusterCredentialType: string(clustergatewayv1alpha1.CredentialTypeServiceAccountToken),
			clustergatewayv1alpha1.LabelKeyClusterEndpointType:   string(clustergatewayv1alpha1.ClusterEndpointTypeClusterProxy),
		}},
		"type": string(corev1.SecretTypeOpaque),
		"data": map[string]any{clustergatewayv1alpha1.SecretKeyToken: token, clustergatewayv1alpha1.SecretKeyCACrt: ca},
	}); err != nil {
		return reconcile.Result{}, fmt.Errorf("credential Secret %s/%s of cluster %s: %w", r.SecretNamespace, cluster, cluster, err)
	}
	return reconcile.Result{}, nil
}

// deleteCopy deletes cluster's credential copy if this reconciler wrote it (a Secret someone
// else manages there, e.g. a Const endpoint, stays).
func (r *SecretReconciler) deleteCopy(ctx context.Context, cluster string) error {
	cp := &metav1.PartialObjectMetadata{}
	cp.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: r.SecretNamespace, Name: cluster}, cp)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading credential Secret %s/%s: %w", r.SecretNamespace, cluster, err)
	}
	if !slices.ContainsFunc(cp.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == FieldManager }) {
		return nil
	}
	err = r.Client.Delete(ctx, cp, client.Preconditions{UID: &cp.UID, ResourceVersion: &cp.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting credential Secret %s/%s (add-on %s gone from cluster %s): %w", r.SecretNamespace, cluster, clustergatewayv1alpha1.AddonName, cluster, err)
	}
	return nil
}
