package commands

import (
	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/hub/admin"
)

func newGetCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Show hub resources as tables",
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	cmd.AddCommand(&cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster", "managedclusters"},
		Short:   "List managed clusters: acceptance, health, cluster set, capacity and version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := hubClients(kubeconfig)
			if err != nil {
				return err
			}
			rows, err := admin.ClusterRows(cmd.Context(), c)
			if err != nil {
				return err
			}
			return admin.WriteClusters(cmd.OutOrStdout(), rows)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:     "clustersets",
		Aliases: []string{"clusterset", "managedclustersets"},
		Short:   "List managed cluster sets with their bound namespaces, member clusters and managed namespaces",
		Long: `List every ManagedClusterSet: its selector type, the namespaces it is bound to (those of its
ManagedClusterSetBindings whose Bound condition is True), the clusters it selects now, the
names in its spec.managedNamespaces and its ClusterSetEmpty message.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := hubClients(kubeconfig)
			if err != nil {
				return err
			}
			rows, err := admin.ClusterSetRows(cmd.Context(), c)
			if err != nil {
				return err
			}
			return admin.WriteClusterSets(cmd.OutOrStdout(), rows)
		},
	})
	cmd.AddCommand(newGetWorksCommand(&kubeconfig))
	cmd.AddCommand(newGetPlacementsCommand(&kubeconfig))
	cmd.AddCommand(newGetMWRSCommand(&kubeconfig))
	cmd.AddCommand(newGetAddonsCommand(&kubeconfig))
	cmd.AddCommand(newGetTokenCommand(&kubeconfig))
	return cmd
}
