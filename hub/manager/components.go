package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// The hub components, named as OCM's cluster-manager names them (its Deployments
// cluster-manager-<component>). A hub process runs any subset (Options.Run); all of them is
// the single-process hub.
const (
	// RegistrationController: cluster namespaces and RBAC, leases, taints, cluster sets and
	// their bindings, CSR approval (Wasm CSRApproval plugins); it installs the CRDs, the
	// bootstrap identities, the agents' roles and flow schemas and the built-in plugins.
	RegistrationController = "registration-controller"
	// RegistrationWebhook: ManagedCluster defaults and the Rego admission policies of every
	// API group but work.open-cluster-management.io.
	RegistrationWebhook = "registration-webhook"
	// WorkWebhook: ManifestWork validation and its finalizer at create (mutating), and the
	// Rego admission policies of work.open-cluster-management.io.
	WorkWebhook = "work-webhook"
	// WorkController: ManifestWork availability and completion, ManifestWorkReplicaSets.
	WorkController = "work-controller"
	// PlacementController: placement decisions (Wasm Prioritizer plugins), the debug server.
	PlacementController = "placement-controller"
	// AddonManager: the add-on manager (Wasm AddOnTemplate plugins), the built-in add-ons'
	// servers, the add-on kinds' v1alpha1↔v1beta1 conversion and the dashboard (Options.Dashboard).
	AddonManager = "addon-manager"
)

// AllComponents is the word that selects every component in ParseComponents.
const AllComponents = "all"

// ComponentNames lists the hub components in OCM's order.
func ComponentNames() []string {
	return []string{RegistrationController, RegistrationWebhook, WorkWebhook, WorkController, PlacementController, AddonManager}
}

// ComponentSet is the hub components one process runs; empty means every one.
type ComponentSet = sets.Set[string]

// ParseComponents reads component names (ComponentNames) or "all" (alone); an unknown or
// repeated name is an error listing the valid ones.
func ParseComponents(names []string) (ComponentSet, error) {
	valid := append([]string{AllComponents}, ComponentNames()...)
	if len(names) == 0 {
		return nil, fmt.Errorf("no component named (valid: %s)", strings.Join(valid, ", "))
	}
	out := sets.New[string]()
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case n == AllComponents && len(names) == 1:
			return sets.New(ComponentNames()...), nil
		case n == AllComponents:
			return nil, fmt.Errorf("%q cannot be combined with other components", AllComponents)
		case !slices.Contains(ComponentNames(), n):
			return nil, fmt.Errorf("unknown component %q (valid: %s)", n, strings.Join(valid, ", "))
		case out.Has(n):
			return nil, fmt.Errorf("component %q named twice", n)
		}
		out.Insert(n)
	}
	return out, nil
}

// validateRun checks Options.Run and what only some components use.
func (o *Options) validateRun() error {
	for n := range o.Run {
		if !slices.Contains(ComponentNames(), n) {
			return fmt.Errorf("hub: unknown component %q in Options.Run (valid: %s)", n, strings.Join(ComponentNames(), ", "))
		}
	}
	if a := o.PlacementDebugBindAddress; a != "" && a != "0" && !o.runs(PlacementController) {
		return fmt.Errorf("hub: the placement debug server (PlacementDebugBindAddress %s) runs in component %s, which Options.Run leaves out", a, PlacementController)
	}
	if len(o.Addons) > 0 && !o.runs(AddonManager) {
		return fmt.Errorf("hub: the built-in add-ons %v run in component %s, which Options.Run leaves out", o.Addons, AddonManager)
	}
	// The add-on manager's process already serves aggregated APIs on its webhook server.
	if o.Dashboard && !o.runs(AddonManager) {
		return fmt.Errorf("hub: the dashboard (Options.Dashboard) runs in component %s, which Options.Run leaves out", AddonManager)
	}
	if o.Dashboard && o.Webhook.Disabled {
		return errors.New("hub: the dashboard (Options.Dashboard) is an aggregated API served on the webhook server, which is disabled")
	}
	return nil
}

// runs says whether the process runs component c.
func (o *Options) runs(c string) bool { return len(o.Run) == 0 || o.Run.Has(c) }

// runsAll says whether the process is the single-process hub.
func (o *Options) runsAll() bool { return len(o.Run) == 0 || o.Run.Len() == len(ComponentNames()) }

// webhookOnly says whether the process runs webhook components only: it has no controller
// to elect a leader for.
func (o *Options) webhookOnly() bool {
	return len(o.Run) > 0 && o.Run.Difference(sets.New(RegistrationWebhook, WorkWebhook)).Len() == 0
}

// pluginTypes are the Wasm plugin types the process's components use; nil means every type
// (the single-process hub), empty that no component uses plugins.
func (o *Options) pluginTypes() []abi.PluginType {
	if o.runsAll() {
		return nil
	}
	types := []abi.PluginType{}
	if o.runs(RegistrationController) {
		types = append(types, abi.TypeCSRApproval)
	}
	if o.runs(WorkController) {
		types = append(types, abi.TypeManifestTransformer)
	}
	if o.runs(PlacementController) {
		types = append(types, abi.TypePrioritizer)
	}
	if o.runs(AddonManager) {
		types = append(types, abi.TypeAddOnTemplate)
	}
	return types
}

// CRDWaitTimeout bounds how long WaitForCRDs waits.
const CRDWaitTimeout = 2 * time.Minute

// WaitForCRDs waits, at most CRDWaitTimeout, until every hub CRD is Established, for a
// process that does not install them (Options.Run without RegistrationController; the
// process that has it, or the chart, installs them): New sets up controllers that index CRD
// kinds, which fails while a CRD is missing. It returns at once for a process that installs
// them; the error names the CRD it waited for.
func WaitForCRDs(ctx context.Context, opts Options) error {
	if opts.runs(RegistrationController) {
		return nil
	}
	if opts.Config == nil {
		return errors.New("hub: Options.Config is required")
	}
	objs, err := crds.Objects()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, o.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, CRDWaitTimeout)
	defer cancel()
	if err := crds.WaitEstablished(ctx, opts.Config, names...); err != nil {
		return fmt.Errorf("hub: components %s: %w", strings.Join(sets.List(opts.Run), ","), err)
	}
	return nil
}
