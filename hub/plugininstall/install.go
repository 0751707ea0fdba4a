// Package plugininstall installs Flotilla's own Wasm plugins on the hub as ConfigMaps plus
// WasmPlugins (with core/wasmplugin's Installer, which the klusterlet uses for its own), which
// the WasmPlugin controller then loads like any admin-supplied plugin: every Default plugin of
// plugins/dist the hub uses (among them csr-renewal, the rule that approves renewals of
// accepted clusters) always, and csr-autoapprove only when auto-approval is configured.
// Default FeedbackExtractors are the klusterlet's: they run on managed clusters.
package plugininstall

import (
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/plugins/dist"
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
)

// AutoApprove configures csr-autoapprove: first-time CSRs of clusters whose name matches one
// of ClusterNamePatterns (path.Match globs), requested by one of Users, are approved.
type AutoApprove struct {
	Users               []string
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
		case p.Name == AutoApprovePlugin:
			if !auto.Enabled() {
				if err := inst.Remove(ctx, p.Name); err != nil {
					return err
				}
				continue
			}
			users := auto.Users
			if len(users) == 0 {
				users = []string{rbac.BootstrapUser()}
			}
			config, err = json.Marshal(map[string][]string{"clusterNamePatterns": auto.ClusterNamePatterns, "users": users})
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
