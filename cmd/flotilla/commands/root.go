// Package commands builds the cobra command tree of the flotilla binary.
// Each subcommand lives in its own file and is wired in NewRoot.
package commands

import (
	"github.com/spf13/cobra"
)

// NewRoot returns the root `flotilla` command with every subcommand attached.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "flotilla",
		Short: "Flotilla: a multi-cluster Kubernetes control plane, wire-compatible with Open Cluster Management",
		Long: `Flotilla runs a hub that registers managed clusters, places work on them and manages
add-ons, and a klusterlet agent on each managed cluster. Extension points (placement
prioritizers, CSR approval, status feedback, add-on templates) are sandboxed Wasm plugins.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newCRDsCommand(),
		newDevCommand(),
		newKlusterletCommand(),
		newPluginCommand(),
		newHubCommand(),
		newAcceptCommand(),
		newGetCommand(),
		newCreateCommand(),
		newClusterSetCommand(),
		newPolicyCommand(),
		newRolloutCommand(),
		newRenderCommand(),
		newAddonCommand(),
		newInitCommand(),
		newTokenCommand(),
		newJoinCommand(),
		newUnjoinCommand(),
		newSimCommand(),
		newKubeconfigCommand(),
		newProxyCommand(),
		newDashboardCommand(),
		newOperatorCommand(),
	)
	return root
}
