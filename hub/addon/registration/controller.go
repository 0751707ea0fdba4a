package registration

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

const (
	// ControllerName names the controller; after apply.FieldManagerPrefix it is the field
	// manager of the RoleBindings, the finalizer and the RegistrationApplied condition.
	ControllerName = "addon-registration"
	fieldManager   = apply.FieldManagerPrefix + ControllerName

	// Finalizer holds a ManagedClusterAddOn whose hub permissions include RoleBindings outside
	// its namespace (SingleNamespace) until they are revoked. Those in its namespace are owned
	// by it and garbage collected.
	Finalizer = "flotilla.dev/addon-hub-permissions"
)

// Message of the RegistrationApplied condition when it is True (OCM's).
const registrationConfiguredMessage = "Registration of the addon agent is configured"

// PermissionsFunc returns the hub permissions of the KubeClient registrations of mca's
// add-on (every registration's hubPermissions, in order). ok is false when mca is not a
// template add-on: the Reconciler then leaves its condition to the add-on's own manager and
// revokes what it granted before, if anything.
type PermissionsFunc func(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) (perms []addonv1alpha1.HubPermissionConfig, ok bool, err error)

// Reconciler keeps the hub permissions of each template add-on's agents: for every
// ManagedClusterAddOn for which Permissions answers, exactly the RoleBindings DesiredBindings
// gives, labelled for the add-on (bindingLabels); others it granted earlier are deleted. It sets
// the RegistrationApplied condition with OCM's reasons: SetPermissionApplied (NilRegistration
// when the add-on has neither registrations nor permissions), or SetPermissionFailed with the
// error. Permissions stay while other finalizers hold a deleted ManagedClusterAddOn (its agent
// may need them to clean up) and are revoked when only Reconciler's is left.
type Reconciler struct {
	Client      client.Client
	Permissions PermissionsFunc
	// Triggers, when set, requeues the ManagedClusterAddOns whose events it carries: the add-on
	// manager sends one when an add-on's permissions change without its ManagedClusterAddOn
	// changing (say, its AddOnTemplate was edited in place).
	Triggers <-chan event.GenericEvent
}

// SetupWithManager watches ManagedClusterAddOns and the RoleBindings the Reconciler creates
// (a deleted or edited one is put back).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Permissions == nil {
		return fmt.Errorf("%s: Permissions is required", ControllerName)
	}
	ownBindings := predicate.NewPredicateFuncs(func(o client.Object) bool {
		l := o.GetLabels()
		_, tmpl := l[AddonTemplateLabelKey]
		return tmpl && l[addonv1alpha1.AddonLabelKey] != "" && l[addonv1alpha1.AddonNamespaceLabelKey] != ""
	})
	// An add-on's RoleBindings by index: a label-selector list scans every RoleBinding of
	// the fleet (the registration grants two per cluster) on every reconcile.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &rbacv1.RoleBinding{}, bindingIndex, func(o client.Object) []string {
		l := o.GetLabels()
		if v, tmpl := l[AddonTemplateLabelKey]; !tmpl || v != "" || l[addonv1alpha1.AddonLabelKey] == "" || l[addonv1alpha1.AddonNamespaceLabelKey] == "" {
			return nil
		}
		return []string{l[addonv1alpha1.AddonNamespaceLabelKey] + "/" + l[addonv1alpha1.AddonLabelKey]}
	}); err != nil {
		return fmt.Errorf("%s: indexing RoleBindings by add-on: %w", ControllerName, err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&addonv1alpha1.ManagedClusterAddOn{}).
		Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			l := o.GetLabels()
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: l[addonv1alpha1.AddonNamespaceLabelKey], Name: l[addonv1alpha1.AddonLabelKey]}}}
		}), builder.WithPredicates(ownBindings))
	if r.Triggers != nil {
		b = b.WatchesRawSource(source.Channel(r.Triggers, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(apply.Quiet(r))
}

// Reconcile brings one ManagedClusterAddOn's hub permissions in line.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := r.Client.Get(ctx, req.NamespacedName, mca); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone without the finalizer (it never needed one, or it was removed by force).
			return reconcile.Result{}, r.revoke(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}})
		}
		return reconcile.Result{}, fmt.Errorf("ManagedClusterAddOn %s: %w", req.NamespacedName, err)
	}
	ref := mca.Namespace + "/" + mca.Name
	if !mca.DeletionTimestamp.IsZero() {
		if slices.ContainsFunc(mca.Finalizers, func(f string) bool { return f != Finalizer }) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, r.revoke(ctx, mca)
	}
	perms, ok, err := r.Permissions(ctx, mca)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedClusterAddOn %s: reading its hub permissions: %w", ref, err)
	}
	if !ok {
		return reconcile.Result{}, r.revoke(ctx, mca)
	}
	desired, err := DesiredBindings(mca, perms)
	if err != nil {
		// Nothing is granted or revoked on an invalid declaration; a fixed one brings the
		// ManagedClusterAddOn back (its status or Triggers).
		return reconcile.Result{}, r.setCondition(ctx, mca, failed(err))
	}
	finalizerChanged, err := r.grant(ctx, mca, desired)
	if finalizerChanged {
		// The condition is written guarded by the resourceVersion: read the new one.
		if gerr := r.Client.Get(ctx, req.NamespacedName, mca); gerr != nil {
			return reconcile.Result{}, fmt.Errorf("ManagedClusterAddOn %s: %w", ref, gerr)
		}
	}
	if err != nil {
		return reconcile.Result{}, errorsJoin(err, r.setCondition(ctx, mca, failed(err)))
	}
	cond := metav1.Condition{
		Type: addonv1alpha1.ManagedClusterAddOnRegistrationApplied, Status: metav1.ConditionTrue,
		Reason: addonv1alpha1.RegistrationAppliedSetPermissionApplied, Message: registrationConfiguredMessage,
	}
	if len(perms) == 0 && len(mca.Status.Registrations) == 0 {
		cond.Reason = addonv1alpha1.RegistrationAppliedNilRegistration
	}
	return reconcile.Result{}, r.setCondition(ctx, mca, cond)
}

func failed(err error) metav1.Condition {
	return metav1.Condition{
		Type: addonv1alpha1.ManagedClusterAddOnRegistrationApplied, Status: metav1.ConditionFalse,
		Reason:  addonv1alpha1.RegistrationAppliedSetPermissionFailed,
		Message: fmt.Sprintf("Failed to set permission for hub agent: %v", err),
	}
}

func errorsJoin(a, b error) error {
	if b == nil {
		return a
	}
	return fmt.Errorf("%w (and setting its condition: %v)", a, b)
}

// grant applies desired and deletes the add-on's other RoleBindings; the finalizer is there
// first when a binding is outside the ManagedClusterAddOn's namespace, and removed when none is.
// It reports whether it added or removed the finalizer.
func (r *Reconciler) grant(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, desired []*rbacv1.RoleBinding) (bool, error) {
	ref := mca.Namespace + "/" + mca.Name
	outside := slices.ContainsFunc(desired, func(rb *rbacv1.RoleBinding) bool { return rb.Namespace != mca.Namespace })
	finalizerChanged := false
	if outside && !controllerutil.ContainsFinalizer(mca, Finalizer) {
		if err := apply.Finalizer(ctx, r.Client, mca, fieldManager, Finalizer); err != nil {
			return false, fmt.Errorf("ManagedClusterAddOn %s: adding finalizer %s: %w", ref, Finalizer, err)
		}
		finalizerChanged = true
	}
	existing, err := r.bindings(ctx, mca)
	if err != nil {
		return finalizerChanged, err
	}
	want := map[string]bool{}
	for _, rb := range desired {
		key := rb.Namespace + "/" + rb.Name
		want[key] = true
		i := slices.IndexFunc(existing, func(e rbacv1.RoleBinding) bool { return e.Namespace == rb.Namespace && e.Name == rb.Name })
		if i >= 0 && bindingCurrent(&existing[i], rb) {
			continue
		}
		if i >= 0 && !equality.Semantic.DeepEqual(existing[i].RoleRef, rb.RoleRef) {
			// roleRef is immutable: the binding is replaced.
			if err := deleteBinding(ctx, r.Client, &existing[i]); err != nil {
				return finalizerChanged, fmt.Errorf("ManagedClusterAddOn %s: %w", ref, err)
			}
		}
		if err := applyBinding(ctx, r.Client, rb); err != nil {
			return finalizerChanged, fmt.Errorf("ManagedClusterAddOn %s: %w", ref, err)
		}
		log.FromContext(ctx).Info("granted add-on hub permission", "addon", ref, "roleBinding", key, "roleRef", rb.RoleRef.Kind+"/"+rb.RoleRef.Name)
	}
	for i := range existing {
		if e := &existing[i]; !want[e.Namespace+"/"+e.Name] {
			if err := deleteBinding(ctx, r.Client, e); err != nil {
				return finalizerChanged, fmt.Errorf("ManagedClusterAddOn %s: %w", ref, err)
			}
			log.FromContext(ctx).Info("revoked add-on hub permission", "addon", ref, "roleBinding", e.Namespace+"/"+e.Name)
		}
	}
	if !outside && controllerutil.ContainsFinalizer(mca, Finalizer) {
		if err := apply.RemoveFinalizer(ctx, r.Client, mca, Finalizer); err != nil {
			return finalizerChanged, fmt.Errorf("ManagedClusterAddOn %s: %w", ref, err)
		}
		finalizerChanged = true
	}
	return finalizerChanged, nil
}

// revoke deletes every RoleBinding granted to the add-on and removes the finalizer.
func (r *Reconciler) revoke(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) error {
	ref := mca.Namespace + "/" + mca.Name
	existing, err := r.bindings(ctx, mca)
	if err != nil {
		return err
	}
	for i := range existing {
		if err := deleteBinding(ctx, r.Client, &existing[i]); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s: %w", ref, err)
		}
		log.FromContext(ctx).Info("revoked add-on hub permission", "addon", ref, "roleBinding", existing[i].Namespace+"/"+existing[i].Name)
	}
	if controllerutil.ContainsFinalizer(mca, Finalizer) {
		if err := apply.RemoveFinalizer(ctx, r.Client, mca, Finalizer); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s: %w", ref, err)
		}
	}
	return nil
}

// bindings lists the RoleBindings granted to mca's add-on, in every namespace.
// bindingIndex indexes the add-on RoleBindings (bindingLabels) by "<namespace>/<name>" of
// their ManagedClusterAddOn.
const bindingIndex = "flotilla.dev/addon-binding"

func (r *Reconciler) bindings(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) ([]rbacv1.RoleBinding, error) {
	list := &rbacv1.RoleBindingList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{bindingIndex: mca.Namespace + "/" + mca.Name}); err != nil {
		return nil, fmt.Errorf("ManagedClusterAddOn %s/%s: listing its RoleBindings: %w", mca.Namespace, mca.Name, err)
	}
	return list.Items, nil
}

// bindingCurrent reports whether the existing binding already says what want says.
func bindingCurrent(have, want *rbacv1.RoleBinding) bool {
	if !equality.Semantic.DeepEqual(have.RoleRef, want.RoleRef) || !equality.Semantic.DeepEqual(have.Subjects, want.Subjects) {
		return false
	}
	for k, v := range want.Labels {
		if got, ok := have.Labels[k]; !ok || got != v {
			return false
		}
	}
	for _, o := range want.OwnerReferences {
		if !slices.ContainsFunc(have.OwnerReferences, func(h metav1.OwnerReference) bool { return h.UID == o.UID }) {
			return false
		}
	}
	return true
}

func applyBinding(ctx context.Context, c client.Client, rb *rbacv1.RoleBinding) error {
	rb = rb.DeepCopy()
	rb.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("RoleBinding"))
	if err := c.Patch(ctx, rb, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	return nil
}

func deleteBinding(ctx context.Context, c client.Client, rb *rbacv1.RoleBinding) error {
	if err := c.Delete(ctx, rb); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
	}
	return nil
}

// setCondition writes cond into status.conditions. The list is atomic in the
// ManagedClusterAddOn CRD (as in OCM's), so the whole list is applied, guarded by the
// resourceVersion it was read at: a conflict means "read again" (apply.Quiet).
func (r *Reconciler) setCondition(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, cond metav1.Condition) error {
	conds := slices.Clone(mca.Status.Conditions)
	if !meta.SetStatusCondition(&conds, cond) {
		return nil
	}
	if err := apply.Guarded(ctx, r.Client, mca, fieldManager, true, map[string]any{"status": map[string]any{"conditions": conds}}); err != nil {
		return fmt.Errorf("ManagedClusterAddOn %s/%s: setting condition %s: %w", mca.Namespace, mca.Name, cond.Type, err)
	}
	return nil
}
