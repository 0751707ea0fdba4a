// Package plugininstall installs Flotilla's own Wasm plugins on the hub as ConfigMaps plus
// WasmPlugins (with core/wasmplugin's Installer, which the klusterlet uses for its own), which
// the WasmPlugin controller then loads like any admin-supplied plugin: every Default plugin of
// plugins/dist the hub uses (among them csr-renewal, the rule that approves renewals of
// accepted clusters) always, and csr-autoapprove only when auto-approval is configured.
// Default FeedbackExtractors are the klusterlet's: they run on managed clusters.
//
// OCM's BuiltIn placement prioritizers are Wasm plugins too: one module (prioritizer-builtin,
// in one ConfigMap) installed as four Prioritizer WasmPlugins, one per BuiltIn, each with the
// pluginConfig that selects it. BuiltinPrioritizerPlugin maps a BuiltIn name to its WasmPlugin.
package plugininstall

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/plugins/prioritizers/builtin/native"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

const (
	// Namespace holds the ConfigMaps with the modules.
	Namespace = "open-cluster-management-hub"
	// AutoApprovePlugin is the plugin installed when auto-approval is configured.
	AutoApprovePlugin = "csr-autoapprove"
	// InstalledByLabel marks what the hub installed, so it can remove what is no longer configured.
	InstalledByLabel = wasmplugin.InstalledByLabel
	installedBy      = "flotilla-hub"
	// BuiltinPrioritizersModule is the plugins/dist module behind every BuiltIn prioritizer
	// WasmPlugin; its ConfigMap is wasmplugin.ConfigMapName(BuiltinPrioritizersModule).
	BuiltinPrioritizersModule = "prioritizer-builtin"
)

// BuiltinPrioritizers returns the OCM BuiltIn prioritizers the hub installs as WasmPlugins:
// Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory.
func BuiltinPrioritizers() []string { return native.Names() }

// BuiltinPrioritizerPlugin returns the name of the Prioritizer WasmPlugin the hub installs
// for OCM's BuiltIn prioritizer builtIn (as in a Placement's
// spec.prioritizerPolicy.configurations[].scoreCoordinate.builtIn, case-sensitive):
// placement-balance, placement-steady, placement-resourceallocatablecpu,
// placement-resourceallocatablememory. ok is false for any other name.
func BuiltinPrioritizerPlugin(builtIn string) (name string, ok bool) {
	if _, err := native.Inputs(builtIn); err != nil {
		return "", false
	}
	return "placement-" + strings.ToLower(builtIn), true
}

// AutoApprove configures csr-autoapprove: first-time CSRs of clusters whose name matches one
// of ClusterNamePatterns (path.Match globs), requested by one of Users or by a member of one of
// Groups, are approved. With neither Users nor Groups set, the requesters are the bootstrap
// identities: both bootstrap ServiceAccounts (rbac.BootstrapUsers) and the group of bootstrap
// tokens (rbac.BootstrapGroup).
type AutoApprove struct {
	Users               []string
	Groups              []string
	ClusterNamePatterns []string
}

// Enabled reports whether auto-approval was asked for.
func (a AutoApprove) Enabled() bool { return len(a.ClusterNamePatterns) > 0 }

// Install creates or updates the hub's plugins and removes csr-autoapprove if the hub had
// installed it and it is no longer configured.
func Install(ctx context.Context, c client.Client, auto AutoApprove) error {
	all, err := dist.Plugins()
	if err != nil {
		return fmt.Errorf("installing plugins: %w", err)
	}
	inst := wasmplugin.Installer{Client: c, Namespace: Namespace, FieldManager: rbac.FieldManager, InstalledBy: installedBy}
	for _, p := range all {
		var config []byte
		switch {
		case p.Name == BuiltinPrioritizersModule:
			if err := installBuiltinPrioritizers(ctx, inst, p); err != nil {
				return err
			}
			continue
		case p.Name == AutoApprovePlugin:
			if !auto.Enabled() {
				if err := inst.Remove(ctx, p.Name); err != nil {
					return err
				}
				continue
			}
			users, groups := auto.Users, auto.Groups
			if len(users) == 0 && len(groups) == 0 {
				users, groups = rbac.BootstrapUsers(), []string{rbac.BootstrapGroup}
			}
			cfg := map[string][]string{"clusterNamePatterns": auto.ClusterNamePatterns}
			if len(users) > 0 {
				cfg["users"] = users
			}
			if len(groups) > 0 {
				cfg["groups"] = groups
			}
			config, err = json.Marshal(cfg)
			if err != nil {
				return fmt.Errorf("installing plugin %s: encoding pluginConfig: %w", p.Name, err)
			}
		case !p.Default || p.Type == abi.TypeFeedbackExtractor:
			continue
		}
		if err := inst.Apply(ctx, p.Bundled(config)); err != nil {
			return err
		}
	}
	return nil
}

// installBuiltinPrioritizers writes the module's ConfigMap once and one WasmPlugin per
// BuiltIn prioritizer referencing it.
func installBuiltinPrioritizers(ctx context.Context, inst wasmplugin.Installer, p dist.Plugin) error {
	if err := inst.ApplyModule(ctx, p.Bundled(nil)); err != nil {
		return err
	}
	for _, builtIn := range BuiltinPrioritizers() {
		name, _ := BuiltinPrioritizerPlugin(builtIn)
		b := p.Bundled(native.Config(builtIn))
		b.Name, b.Source, b.Compressed = name, p.Name, nil
		if err := inst.ApplyPlugin(ctx, b); err != nil {
			return err
		}
	}
	return nil
}
