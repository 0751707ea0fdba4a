package addon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/wasm"
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
	for _, c := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&InstallReconciler{Client: m.Client},
		&ConfigReconciler{Client: m.Client, Mapper: mgr.GetRESTMapper(), Recorder: m.Recorder, Now: m.Now},
		&DeployReconciler{Client: m.Client, Mapper: mgr.GetRESTMapper(), Registry: m.Registry, MaxWorkSize: m.MaxWorkSize, Recorder: m.Recorder},
	} {
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
