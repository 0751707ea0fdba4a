package addon

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	addonregistration "github.com/flotilla-dev/flotilla/hub/addon/registration"
)

// Manager is the add-on manager: its indexes and its three reconcilers on one
// controller-runtime manager (a hub/manager Component).
type Manager struct {
	Client client.Client
	// Registry holds the WasmPlugins of type AddOnTemplate.
	Registry *wasm.Registry
	// MaxWorkSize caps the manifests of one ManifestWork (the hub's work size limit).
	MaxWorkSize int
	// Recorder receives Events on add-ons; default the manager's.
	Recorder record.EventRecorder
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Builtins names the built-in add-ons the hub serves (hub/addon/builtin.Names(); none by
	// default): their ClusterManagementAddOns, ManagedClusterAddOn status and hub permissions.
	Builtins []string
	// BuiltinsInstallAll installs the built-ins on every cluster (builtin.Reconciler.InstallAll).
	BuiltinsInstallAll bool
}

// SetupWithManager registers the indexes and the reconcilers.
func (m *Manager) SetupWithManager(mgr ctrl.Manager) error {
	if m.Now == nil {
		m.Now = time.Now
	}
	if m.Recorder == nil {
		m.Recorder = mgr.GetEventRecorderFor("addon-manager") //nolint:staticcheck // core/v1 Events, as the rest of the hub
	}
	if err := setupIndexes(mgr); err != nil {
		return err
	}
	reconcilers := []interface{ SetupWithManager(ctrl.Manager) error }{
		&InstallReconciler{Client: m.Client},
		&ConfigReconciler{Client: m.Client, Mapper: mgr.GetRESTMapper(), Recorder: m.Recorder, Now: m.Now},
		&DeployReconciler{Client: m.Client, Cache: mgr.GetCache(), Mapper: mgr.GetRESTMapper(), Registry: m.Registry, MaxWorkSize: m.MaxWorkSize, Recorder: m.Recorder,
			Registrations: addonregistration.Registrations},
		&addonregistration.Reconciler{Client: m.Client, Permissions: m.permissions},
		// CustomSigner registrations' CSRs, once approved, are signed with the template's signingCA.
		&addonregistration.Signer{Client: m.Client, Template: m.templateFor, Recorder: m.Recorder},
	}
	if len(m.Builtins) > 0 {
		reconcilers = append(reconcilers, &builtin.Reconciler{Client: m.Client, Enabled: m.Builtins, InstallAll: m.BuiltinsInstallAll,
			Templated: func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
				return templateKind(cma) != (addonv1alpha1.ConfigGroupResource{})
			}})
	}
	for _, c := range reconcilers {
		if err := c.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

const (
	// mcaNameIndex indexes ManagedClusterAddOns by name (the add-on's name).
	mcaNameIndex = "addon.name"
	// placementIndex indexes ClusterManagementAddOns by the placements (namespace/name) of
	// their install strategy.
	placementIndex = "addon.placement"
)

func setupIndexes(mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(context.Background(), &addonv1alpha1.ManagedClusterAddOn{}, mcaNameIndex, func(o client.Object) []string {
		return []string{o.GetName()}
	}); err != nil {
		return fmt.Errorf("addon manager: indexing ManagedClusterAddOns: %w", err)
	}
	if err := idx.IndexField(context.Background(), &addonv1alpha1.ClusterManagementAddOn{}, placementIndex, func(o client.Object) []string {
		var out []string
		for _, p := range o.(*addonv1alpha1.ClusterManagementAddOn).Spec.InstallStrategy.Placements {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}); err != nil {
		return fmt.Errorf("addon manager: indexing ClusterManagementAddOns: %w", err)
	}
	return nil
}

// cmasOfPlacement enqueues the ClusterManagementAddOns installing by placement namespace/name.
func cmasOfPlacement(ctx context.Context, c client.Reader, namespace, name string) []reconcile.Request {
	if name == "" {
		return nil
	}
	list := &addonv1alpha1.ClusterManagementAddOnList{}
	if err := c.List(ctx, list, client.MatchingFields{placementIndex: namespace + "/" + name}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

func joinErrs(errs []error) error { return errors.Join(errs...) }

// mcaInstallChanged passes the ManagedClusterAddOn events the install reconciler acts on:
// creation, deletion and changes of labels, owners or deletion (not its status writes).
func mcaInstallChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return !reflect.DeepEqual(o.GetLabels(), n.GetLabels()) || !reflect.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	}}
}

// mcaRolloutChanged passes the ManagedClusterAddOn events the configuration reconciler acts
// on: creation, deletion, spec changes and the status its rollout reads (configReferences,
// Configured, Progressing), not health or applied-manifest updates.
func mcaRolloutChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*addonv1alpha1.ManagedClusterAddOn)
		n, ok2 := e.ObjectNew.(*addonv1alpha1.ManagedClusterAddOn)
		if !ok1 || !ok2 {
			return true
		}
		if o.Generation != n.Generation || !reflect.DeepEqual(o.Status.ConfigReferences, n.Status.ConfigReferences) {
			return true
		}
		for _, t := range []string{addonv1alpha1.ManagedClusterAddOnConditionConfigured, addonv1alpha1.ManagedClusterAddOnConditionProgressing} {
			if !reflect.DeepEqual(condition(o.Status.Conditions, t), condition(n.Status.Conditions, t)) {
				return true
			}
		}
		return false
	}}
}

// permissions are the hub permissions an add-on's agent on mca's cluster is granted: a
// template add-on's desired AddOnTemplate's KubeClient hubPermissions (none for a Wasm
// template), a served built-in add-on's own (hub/addon/builtin; a template wins over it). ok
// is false for other add-ons, whose own managers grant what they need.
func (m *Manager) permissions(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) ([]addonv1alpha1.HubPermissionConfig, bool, error) {
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	if err := m.Client.Get(ctx, client.ObjectKey{Name: mca.Name}, cma); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("reading ClusterManagementAddOn %s: %w", mca.Name, err)
	}
	switch templateKind(cma) {
	case WasmPluginResource:
		return nil, true, nil
	case AddOnTemplateResource:
	default:
		if a, ok := builtin.Lookup(mca.Name); ok && slices.Contains(m.Builtins, mca.Name) {
			return a.Permissions(), true, nil
		}
		return nil, false, nil
	}
	t, err := m.desiredTemplate(ctx, mca)
	if err != nil || t == nil {
		return nil, err == nil, err // not configured yet: nothing granted
	}
	var out []addonv1alpha1.HubPermissionConfig
	for _, r := range t.Spec.Registration {
		if r.Type == addonv1alpha1.RegistrationTypeKubeClient && r.KubeClient != nil {
			out = append(out, r.KubeClient.HubPermissions...)
		}
	}
	return out, true, nil
}

// templateFor is the desired AddOnTemplate of add-on addon on cluster, nil when there is no
// such ManagedClusterAddOn or it has no template configured.
func (m *Manager) templateFor(ctx context.Context, cluster, addon string) (*addonv1alpha1.AddOnTemplate, error) {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: addon}, mca); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return m.desiredTemplate(ctx, mca)
}

// desiredTemplate reads the AddOnTemplate mca's status desires, nil when none is desired.
func (m *Manager) desiredTemplate(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) (*addonv1alpha1.AddOnTemplate, error) {
	var name string
	for _, ref := range mca.Status.ConfigReferences {
		if ref.ConfigGroupResource == AddOnTemplateResource && ref.DesiredConfig != nil {
			name = ref.DesiredConfig.Name
		}
	}
	if name == "" {
		return nil, nil
	}
	t := &addonv1alpha1.AddOnTemplate{}
	if err := m.Client.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		return nil, fmt.Errorf("reading AddOnTemplate %s: %w", name, err)
	}
	return t, nil
}

// mcaDeployChanged passes the ManagedClusterAddOn events the deploy reconciler acts on:
// creation, deletion, spec changes and what the configuration reconciler decides (the desired
// configurations, Configured), not the deploy reconciler's own status writes.
func mcaDeployChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*addonv1alpha1.ManagedClusterAddOn)
		n, ok2 := e.ObjectNew.(*addonv1alpha1.ManagedClusterAddOn)
		if !ok1 || !ok2 {
			return true
		}
		if o.Generation != n.Generation || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) || len(o.Status.ConfigReferences) != len(n.Status.ConfigReferences) {
			return true
		}
		for i := range o.Status.ConfigReferences {
			if !reflect.DeepEqual(o.Status.ConfigReferences[i].DesiredConfig, n.Status.ConfigReferences[i].DesiredConfig) {
				return true
			}
		}
		return !reflect.DeepEqual(condition(o.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured),
			condition(n.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured))
	}}
}

// clusterRenderInputChanged passes the ManagedCluster changes a rendering reads (labels,
// annotations, claims, version, capacity), not its heartbeats and conditions.
func clusterRenderInputChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*clusterv1.ManagedCluster)
		n, ok2 := e.ObjectNew.(*clusterv1.ManagedCluster)
		if !ok1 || !ok2 {
			return true
		}
		return !reflect.DeepEqual(o.Labels, n.Labels) || !reflect.DeepEqual(o.Annotations, n.Annotations) ||
			!reflect.DeepEqual(o.Status.ClusterClaims, n.Status.ClusterClaims) || o.Status.Version != n.Status.Version ||
			!reflect.DeepEqual(o.Status.Capacity, n.Status.Capacity) || !reflect.DeepEqual(o.Status.Allocatable, n.Status.Allocatable)
	}}
}
