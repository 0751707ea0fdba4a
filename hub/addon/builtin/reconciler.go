package builtin

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// ControllerName names the reconciler; after apply.FieldManagerPrefix it is its field
// manager (flotilla-builtin-addon).
const ControllerName = "builtin-addon"

const fieldManager = apply.FieldManagerPrefix + ControllerName

// adcResource is the AddOnDeploymentConfig's group and resource in configReferences.
var adcResource = addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addondeploymentconfigs"}

// Reconciler serves the enabled built-in add-ons: it applies their ClusterRoles, creates
// their ClusterManagementAddOns when absent, and keeps their ManagedClusterAddOns' status
// fields and Label (see the package comment). A request without a namespace is an add-on
// (its ClusterRoles and ClusterManagementAddOn), one with a namespace a ManagedClusterAddOn.
type Reconciler struct {
	Client client.Client
	// Enabled names the built-in add-ons served (Names()).
	Enabled []string
	// Templated reports whether a ClusterManagementAddOn names a template (the add-on
	// manager's test): then the template add-on wins.
	Templated func(*addonv1alpha1.ClusterManagementAddOn) bool
	// InstallAll creates the ClusterManagementAddOns installed on every cluster (placement
	// InstallAllPlacement, with InstallAllObjects); an existing one keeps its install strategy.
	InstallAll bool

	// installAllDone: InstallAllObjects all existed once. They are created when absent at
	// start (a user may change or delete them later, as with upstream's chart), so later
	// reconciles neither write them again nor fail while the hub's webhooks go away at shutdown.
	installAllDone atomic.Bool
}

// SetupWithManager watches the built-ins' ManagedClusterAddOns and ClusterManagementAddOns,
// and serves each enabled add-on once at start.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	for _, name := range r.Enabled {
		if _, ok := Lookup(name); !ok {
			return fmt.Errorf("%s: unknown built-in add-on %q (known: %v)", ControllerName, name, Names())
		}
	}
	if r.Templated == nil {
		return fmt.Errorf("%s: Templated is required", ControllerName)
	}
	enabled := predicate.NewPredicateFuncs(func(o client.Object) bool { return slices.Contains(r.Enabled, o.GetName()) })
	start := make(chan event.GenericEvent, len(r.Enabled))
	for _, name := range r.Enabled {
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		cma.Name = name
		start <- event.GenericEvent{Object: cma}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&addonv1alpha1.ManagedClusterAddOn{}, builder.WithPredicates(enabled)).
		Watches(&addonv1alpha1.ClusterManagementAddOn{}, handler.EnqueueRequestsFromMapFunc(r.addonAndMCAs), builder.WithPredicates(enabled)).
		WatchesRawSource(source.Channel(start, &handler.EnqueueRequestForObject{})).
		Complete(apply.Quiet(r))
}

// addonAndMCAs enqueues the add-on itself and its ManagedClusterAddOns (a ClusterManagementAddOn
// that names a template now, or no longer, changes what each should be).
func (r *Reconciler) addonAndMCAs(ctx context.Context, o client.Object) []reconcile.Request {
	out := []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
	list := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := r.Client.List(ctx, list); err != nil {
		return out
	}
	for i := range list.Items {
		if list.Items[i].Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// Reconcile serves one built-in add-on or one of its ManagedClusterAddOns.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	a, ok := Lookup(req.Name)
	if !ok || !slices.Contains(r.Enabled, req.Name) {
		return reconcile.Result{}, nil
	}
	if req.Namespace == "" {
		return reconcile.Result{}, r.ensureAddon(ctx, a)
	}
	return reconcile.Result{}, r.syncMCA(ctx, a, req.NamespacedName)
}

// ensureAddon applies the add-on's ClusterRoles and creates its ClusterManagementAddOn unless
// one exists (whatever it says: a user's is never overwritten), and with InstallAll what its
// placement needs, each unless it exists.
func (r *Reconciler) ensureAddon(ctx context.Context, a Addon) error {
	if r.InstallAll && !r.installAllDone.Load() {
		for _, o := range InstallAllObjects() {
			err := r.Client.Create(ctx, o)
			// The API server authorizes a create before it looks for the object: an identity
			// without create on a kind (the split add-on manager on ManagedClusterSets, whose
			// global set the registration controller creates) is refused even when the object
			// exists, so a refusal is an error only if the object is missing.
			if apierrors.IsForbidden(err) {
				if getErr := r.Client.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)); getErr == nil {
					err = nil
				} else if apierrors.IsNotFound(getErr) {
					err = fmt.Errorf("%w (it does not exist yet: with feature gate DefaultClusterSet the registration controller creates the global ManagedClusterSet)", err)
				}
			}
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("built-in add-on %s: creating %T %s for install-all: %w", a.Name, o, client.ObjectKeyFromObject(o), err)
			}
		}
		r.installAllDone.Store(true)
	}
	for _, cr := range a.ClusterRoles {
		if err := apply.Fields(ctx, r.Client, cr, fieldManager, false, map[string]any{
			"metadata": map[string]any{"labels": cr.Labels}, "rules": cr.Rules,
		}); err != nil {
			return fmt.Errorf("built-in add-on %s: applying ClusterRole %s: %w", a.Name, cr.Name, err)
		}
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: a.Name}, cma)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("built-in add-on %s: reading its ClusterManagementAddOn: %w", a.Name, err)
	}
	if err := r.Client.Create(ctx, a.ClusterManagementAddOn(r.InstallAll)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("built-in add-on %s: creating its ClusterManagementAddOn: %w", a.Name, err)
	}
	log.FromContext(ctx).Info("Created the ClusterManagementAddOn of a built-in add-on", "addon", a.Name)
	return nil
}

// syncMCA writes the built-in status fields and Label on one ManagedClusterAddOn, or removes
// them when its add-on is a template add-on.
func (r *Reconciler) syncMCA(ctx context.Context, a Addon, key client.ObjectKey) error {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := r.Client.Get(ctx, key, mca); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !mca.DeletionTimestamp.IsZero() {
		return nil
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: a.Name}, cma); err != nil {
		// Created by ensureAddon; its event brings this one back.
		return client.IgnoreNotFound(err)
	}
	ref := key.String()
	if r.Templated(cma) {
		return r.standDown(ctx, mca)
	}
	adcNS, err := r.adcNamespace(ctx, mca)
	if err != nil {
		return fmt.Errorf("ManagedClusterAddOn %s: %w", ref, err)
	}
	want := addonv1alpha1.ManagedClusterAddOnStatus{
		Namespace:     a.InstallNamespace(adcNS, mca.Spec.InstallNamespace),
		Registrations: a.Registrations(mca.Namespace),
		HealthCheck:   addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthCheckModeLease},
		AddOnMeta:     cma.Spec.AddOnMeta,
		RelatedObjects: []addonv1alpha1.ObjectReference{{
			Group: addonv1alpha1.GroupVersion.Group, Resource: "clustermanagementaddons", Name: a.Name,
		}},
	}
	have := mca.Status
	if have.Namespace != want.Namespace || !reflect.DeepEqual(have.Registrations, want.Registrations) || have.HealthCheck != want.HealthCheck ||
		have.AddOnMeta != want.AddOnMeta || !reflect.DeepEqual(have.RelatedObjects, want.RelatedObjects) {
		regs := any(want.Registrations)
		if want.Registrations == nil {
			regs = []any{}
		}
		// Computed from the copy read: guarded, a conflict reads again.
		if err := apply.Guarded(ctx, r.Client, mca, fieldManager, true, map[string]any{"status": map[string]any{
			"namespace": want.Namespace, "registrations": regs, "healthCheck": want.HealthCheck,
			"addOnMeta": want.AddOnMeta, "relatedObjects": want.RelatedObjects,
		}}); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s: writing built-in add-on status: %w", ref, err)
		}
		log.FromContext(ctx).Info("Built-in add-on status written", "addon", ref, "namespace", want.Namespace)
	}
	if mca.Labels[Label] != "true" {
		if err := apply.Label(ctx, r.Client, mca, fieldManager, Label, "true"); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s: labelling it %s: %w", ref, Label, err)
		}
	}
	return nil
}

// standDown removes Label and the status fields this reconciler wrote (fields another writer
// also holds, such as the template's namespace, stay with it).
func (r *Reconciler) standDown(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) error {
	var mine, mineStatus bool
	for _, f := range mca.ManagedFields {
		if f.Manager == fieldManager {
			mine = mine || f.Subresource == ""
			mineStatus = mineStatus || f.Subresource == "status"
		}
	}
	ref := client.ObjectKeyFromObject(mca).String()
	if mineStatus {
		if err := apply.Fields(ctx, r.Client, mca, fieldManager, true, map[string]any{}); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s: releasing built-in add-on status: %w", ref, err)
		}
	}
	if mine {
		if err := apply.Fields(ctx, r.Client, mca, fieldManager, false, map[string]any{}); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s: removing label %s: %w", ref, Label, err)
		}
		log.FromContext(ctx).Info("Built-in add-on stands down: its ClusterManagementAddOn names a template", "addon", ref)
	}
	return nil
}

// adcNamespace is the agentInstallNamespace of the AddOnDeploymentConfig the add-on is
// configured with, "" without one.
func (r *Reconciler) adcNamespace(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) (string, error) {
	for _, ref := range mca.Status.ConfigReferences {
		if ref.ConfigGroupResource != adcResource || ref.DesiredConfig == nil {
			continue
		}
		adc := &addonv1alpha1.AddOnDeploymentConfig{}
		key := client.ObjectKey{Namespace: ref.DesiredConfig.Namespace, Name: ref.DesiredConfig.Name}
		if err := r.Client.Get(ctx, key, adc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", fmt.Errorf("reading AddOnDeploymentConfig %s: %w", key, err)
		}
		// The first of several wins, as for template add-ons.
		return adc.Spec.AgentInstallNamespace, nil
	}
	return "", nil
}
