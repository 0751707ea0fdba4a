package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flotilla-dev/flotilla/hub/admin"
)

// newGetMWRSCommand is `flotilla get mwrs`; kubeconfig is the flag of `flotilla get`.
func newGetMWRSCommand(kubeconfig *string) *cobra.Command {
	var (
		namespace     string
		allNamespaces bool
	)
	cmd := &cobra.Command{
		Use:     "mwrs [NAME]",
		Aliases: []string{"manifestworkreplicasets", "manifestworkreplicaset"},
		Short:   "List ManifestWorkReplicaSets: placements verified, works applied, rollout, counts",
		Long: `List the ManifestWorkReplicaSets of the namespace (of every namespace with -A), or the one
named: OCM's columns (the reason and status of the PlacementVerified and ManifestworkApplied
conditions), the PlacementRolledOut reason (Progressing or Complete), the number of generated
ManifestWorks, applied of desired, available and degraded. For the rollout of each placement,
cluster by cluster, see 'flotilla rollout status'.`,
		Example: `  flotilla get mwrs -n default
  flotilla get mwrs -A`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := namespacedName(cmd, *kubeconfig, "ManifestWorkReplicaSet", &namespace, allNamespaces, args)
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			items, err := admin.ListMWRS(cmd.Context(), c, namespace, name)
			if err != nil {
				return err
			}
			return admin.WriteMWRS(cmd.OutOrStdout(), items)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "namespace (default: the kubeconfig context's namespace, or default)")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list every namespace's")
	return cmd
}

func newRolloutCommand() *cobra.Command {
	var (
		kubeconfig string
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Follow rollouts of ManifestWorkReplicaSets",
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	status := &cobra.Command{
		Use:   "status NAMESPACE/NAME",
		Short: "Show a ManifestWorkReplicaSet's rollout per placement, decision group and cluster",
		Long: `Show where the rollout of a ManifestWorkReplicaSet stands, computed as the hub's controller
computes it: its conditions, then for each placement its strategy, whether the rollout is
Progressing, Complete or Stopped (maxFailures breached) and why, and each decided cluster
with its decision group, its state (ToApply, Progressing, Succeeded, Failed, TimeOut), since
when, and why (the ManifestWork's conditions it waits for, or the Degraded message).
SHAPED-BY names the override rules that shaped the ManifestWork the cluster has now (its
work.flotilla.dev/overrides annotation, - for none); while ManifestWorkReplicaSetOverrides
name the replica set, DESIRED and OVERRIDES are the hash and rules of the cluster's current
render (see 'flotilla render mwrs').`,
		Example: `  flotilla rollout status default/mwrset-cronjob`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name, ok := strings.Cut(args[0], "/")
			if !ok || ns == "" || name == "" {
				return fmt.Errorf("ManifestWorkReplicaSet %q: want NAMESPACE/NAME", args[0])
			}
			c, err := boundedHubClient(kubeconfig, timeout)
			if err != nil {
				return err
			}
			ctx, cancel := withTimeout(cmd.Context(), timeout)
			defer cancel()
			now := time.Now()
			rs, prs, err := admin.RolloutStatus(ctx, c, ns, name, now)
			if err != nil {
				return timedOut(ctx, timeout, err)
			}
			return admin.WriteRolloutStatus(cmd.OutOrStdout(), rs, prs, now)
		},
	}
	status.Flags().DurationVar(&timeout, "timeout", defaultReadTimeout, "how long reading the hub and rendering may take (0: no limit)")
	cmd.AddCommand(status)
	return cmd
}
