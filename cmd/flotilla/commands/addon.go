package commands

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/admin"
)

// newAddonCommand is `flotilla addon`, the parent of add-on enablement.
func newAddonCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "addon",
		Short: "Enable and disable add-ons on managed clusters",
		Long: `An add-on is registered on the hub by its ClusterManagementAddOn and enabled on a managed
cluster by a ManagedClusterAddOn of the same name in the cluster's namespace. Enable it on
named clusters (the Manual install strategy: the ManagedClusterAddOns are created here), or
on every cluster a Placement selects (the Placements install strategy of the
ClusterManagementAddOn: the hub's add-on manager creates and deletes them, and rolls
configuration changes out with the placement's rollout strategy). 'flotilla get addons'
shows where they stand.`,
		Example: `  flotilla addon enable helloworld --clusters cluster1,cluster2
  flotilla addon enable helloworld --placement default/placement-aws --rollout Progressive --max-concurrency 25%
  flotilla get addons
  flotilla addon disable helloworld --clusters cluster1`,
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	cmd.AddCommand(newAddonEnableCommand(&kubeconfig), newAddonDisableCommand(&kubeconfig))
	return cmd
}

func newAddonEnableCommand(kubeconfig *string) *cobra.Command {
	var (
		names, clusters, annotate, labels, configs []string
		placement, installNamespace                string
		ro                                         admin.RolloutOptions
	)
	cmd := &cobra.Command{
		Use:   "enable NAME [NAME...] (--clusters c1,c2 | --placement NAMESPACE/NAME)",
		Short: "Enable add-ons on clusters, or on the clusters a Placement selects",
		Long: `Enable the add-ons NAME (ClusterManagementAddOn names; --names a,b works too, as
clusteradm says) in one of two ways.

With --clusters, create the ManagedClusterAddOn NAME in the namespace of each cluster, as
'clusteradm addon enable' does: --namespace sets spec.installNamespace (the agent's
namespace on the managed cluster; default open-cluster-management-agent-addon), --annotate
and --labels add annotations and labels, --config sets spec.configs (the configurations
of this add-on on these clusters, overriding the add-on's defaults and its placements'
configs by group and resource). An existing ManagedClusterAddOn is updated with what
is given and keeps the rest, so running the command again changes nothing. Every add-on
must have a ClusterManagementAddOn and every cluster must be accepted (flotilla get
clusters), or nothing is written.

With --placement, add the Placement to the ClusterManagementAddOn's install strategy
(type Placements; the placements already listed stay): the hub's add-on manager creates
the ManagedClusterAddOn on every cluster the placement selects, deletes it from a cluster
the placement drops, and rolls configuration changes out by the placement's rollout
strategy. --config (repeatable) sets the placement's configs; --rollout and its settings
set its rollout strategy; when the placement is already listed, what is not given stays.
The add-on manager acts on ClusterManagementAddOns annotated
addon.open-cluster-management.io/lifecycle: addon-manager and on template add-ons; a
missing Placement or configuration is a warning (the manager waits for it).

A configuration is GROUP/RESOURCE/[NAMESPACE/]NAME and must be of a kind the add-on lists
in spec.supportedConfigs; a namespaced one without NAMESPACE is in the placement's (or, with
--clusters, the cluster's) namespace.

Rollout strategies: All (every cluster at once), Progressive (--max-concurrency clusters
at a time, count or N%), ProgressivePerGroup (one decision group at a time);
--mandatory-groups are decision groups rolled out first, --max-failures (count or N%) stops
the rollout once breached, --progress-deadline (e.g. 10m, or None) is how long a cluster may
take, --min-success-time (Progressive, ProgressivePerGroup) a soak time before moving on.`,
		Example: `  # Enable helloworld on two clusters, its agent in namespace helloworld
  flotilla addon enable helloworld --clusters cluster1,cluster2 --namespace helloworld

  # On a self-managed hub cluster, as clusteradm writes it
  flotilla addon enable --names governance-policy-framework --clusters hub-cluster \
    --annotate addon.open-cluster-management.io/on-multicluster-hub=true

  # On every cluster placement-aws selects, configured by deploy-config, configuration
  # changes rolled out to the canary group first, then 25% of the clusters at a time
  flotilla addon enable helloworld --placement default/placement-aws \
    --config addon.open-cluster-management.io/addondeploymentconfigs/open-cluster-management/deploy-config \
    --rollout Progressive --mandatory-groups prod-canary-west --max-concurrency 25% \
    --min-success-time 5m --progress-deadline 10m --max-failures 2

  flotilla get addons helloworld`,
		RunE: func(cmd *cobra.Command, args []string) error {
			names = append(append([]string(nil), args...), names...)
			if len(names) == 0 {
				return errors.New("no add-on given: name it (flotilla addon enable NAME --clusters ...)")
			}
			rolloutSet := cmd.Flags().Changed("rollout")
			for _, f := range []string{"max-concurrency", "max-failures", "progress-deadline", "min-success-time", "mandatory-groups"} {
				if cmd.Flags().Changed(f) && !rolloutSet {
					return fmt.Errorf("--%s is a setting of the rollout strategy: give --rollout too", f)
				}
			}
			var cfgs []addonv1alpha1.AddOnConfig
			for _, s := range configs {
				cfg, err := admin.ParseConfigRef(s)
				if err != nil {
					return fmt.Errorf("--config: %w", err)
				}
				cfgs = append(cfgs, cfg)
			}
			switch {
			case len(clusters) > 0 && placement != "":
				return errors.New("--clusters and --placement are mutually exclusive: enable on named clusters or on those a placement selects")
			case placement != "":
				for _, f := range []string{"namespace", "annotate", "labels"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s is for --clusters: with --placement the add-on manager creates the ManagedClusterAddOns (set the agent's namespace with an AddOnDeploymentConfig's agentInstallNamespace)", f)
					}
				}
				ns, name, err := admin.ParsePlacementRef(placement)
				if err != nil {
					return fmt.Errorf("--placement: %w", err)
				}
				req := admin.AddonPlacement{Names: names, Namespace: ns, Name: name, Configs: cfgs}
				if rolloutSet {
					rs, err := admin.RolloutStrategy(ro)
					if err != nil {
						return fmt.Errorf("--rollout: %w", err)
					}
					req.Rollout = &rs
				}
				c, _, err := hubClients(*kubeconfig)
				if err != nil {
					return err
				}
				results, err := admin.EnableAddonPlacement(cmd.Context(), c, req)
				writePlacementResults(cmd.OutOrStdout(), cmd.ErrOrStderr(), results, ns+"/"+name)
				return err
			case len(clusters) == 0:
				return errors.New("--clusters or --placement is required")
			}
			if rolloutSet {
				return errors.New("--rollout is for --placement: a rollout strategy belongs to a placement of the install strategy")
			}
			annotations, err := admin.ParseKeyValues("--annotate", annotate, false)
			if err != nil {
				return err
			}
			lbls, err := admin.ParseKeyValues("--labels", labels, true)
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			results, err := admin.EnableAddons(cmd.Context(), c, admin.AddonEnable{Names: names, Clusters: clusters,
				InstallNamespace: installNamespace, Annotations: annotations, Labels: lbls, Configs: cfgs})
			for _, r := range results {
				switch r.Action {
				case admin.ActionUnchanged:
					fmt.Fprintf(cmd.OutOrStdout(), "add-on %s is already enabled in cluster %s\n", r.Addon, r.Cluster)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "add-on %s enabled in cluster %s (ManagedClusterAddOn %s)\n", r.Addon, r.Cluster, r.Action)
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&names, "names", nil, "comma-separated add-on names (clusteradm's flag; the same as the NAME arguments)")
	f.StringSliceVar(&clusters, "clusters", nil, "comma-separated names of the managed clusters to enable the add-ons in")
	f.StringVar(&placement, "placement", "", "NAMESPACE/NAME of a Placement to add to the add-ons' install strategy")
	f.StringVarP(&installNamespace, "namespace", "n", "", "with --clusters: the agent's namespace on the managed cluster (spec.installNamespace; default open-cluster-management-agent-addon)")
	f.StringSliceVar(&annotate, "annotate", nil, "with --clusters: annotations KEY=VALUE to add to the ManagedClusterAddOns (comma-separated or repeated)")
	f.StringSliceVar(&labels, "labels", nil, "with --clusters: labels KEY=VALUE to add to the ManagedClusterAddOns (comma-separated or repeated)")
	f.StringArrayVar(&configs, "config", nil, "a configuration GROUP/RESOURCE/[NAMESPACE/]NAME (repeatable): the placement's configs, or with --clusters the ManagedClusterAddOns' spec.configs")
	f.StringVar(&ro.Type, "rollout", "", "with --placement: rollout strategy of configuration changes: All, Progressive or ProgressivePerGroup")
	f.StringVar(&ro.MaxConcurrency, "max-concurrency", "", "Progressive rollout: clusters updated at a time, a count or N%")
	f.StringVar(&ro.MaxFailures, "max-failures", "", "failed or timed-out clusters (count or N%) tolerated before the rollout stops (default 0)")
	f.StringVar(&ro.ProgressDeadline, "progress-deadline", "", "how long a cluster may take to succeed before it counts as timed out, e.g. 10m (default None: no limit)")
	f.DurationVar(&ro.MinSuccessTime, "min-success-time", 0, "Progressive and ProgressivePerGroup: soak time after a cluster succeeded before the rollout moves on, e.g. 5m")
	f.StringSliceVar(&ro.MandatoryGroups, "mandatory-groups", nil, "Progressive and ProgressivePerGroup: comma-separated decision group names rolled out first")
	return cmd
}

func writePlacementResults(out, errw io.Writer, results []admin.PlacementResult, placement string) {
	for _, r := range results {
		for _, w := range r.Warnings {
			fmt.Fprintf(errw, "warning: add-on %s: %s\n", r.Addon, w)
		}
		switch r.Action {
		case admin.ActionAdded:
			fmt.Fprintf(out, "add-on %s: placement %s added to its install strategy\n", r.Addon, placement)
		case admin.ActionUpdated:
			fmt.Fprintf(out, "add-on %s: placement %s of its install strategy updated\n", r.Addon, placement)
		case admin.ActionUnchanged:
			fmt.Fprintf(out, "add-on %s: placement %s is already in its install strategy\n", r.Addon, placement)
		case admin.ActionRemoved:
			fmt.Fprintf(out, "add-on %s: placement %s removed from its install strategy\n", r.Addon, placement)
		case admin.ActionAbsent:
			fmt.Fprintf(out, "add-on %s: placement %s is not in its install strategy\n", r.Addon, placement)
		}
	}
}

func newAddonDisableCommand(kubeconfig *string) *cobra.Command {
	var (
		names, clusters []string
		allClusters     bool
		placement       string
	)
	cmd := &cobra.Command{
		Use:   "disable NAME [NAME...] (--clusters c1,c2 | --all-clusters | --placement NAMESPACE/NAME)",
		Short: "Disable add-ons on clusters, or remove a Placement from their install strategy",
		Long: `Disable the add-ons NAME (--names a,b works too) in one of three ways.

With --clusters, delete the ManagedClusterAddOn NAME from the namespace of each cluster, as
'clusteradm addon disable' does; with --all-clusters, from every cluster that has one.
Deleting it removes the add-on's agent from the cluster (its ManifestWorks go with it). A
cluster without the add-on is reported and skipped, so running the command again changes
nothing; an unknown cluster or add-on is an error and nothing is deleted. An add-on a
placement of the install strategy installed is created again while the placement selects
the cluster: a warning says so; remove the placement instead.

With --placement, remove the Placement from the install strategy of the
ClusterManagementAddOns: the hub's add-on manager deletes the ManagedClusterAddOns it
installed on the clusters no remaining placement selects (those created by hand stay).`,
		Example: `  flotilla addon disable helloworld --clusters cluster1,cluster2
  flotilla addon disable --names helloworld --all-clusters
  flotilla addon disable helloworld --placement default/placement-aws`,
		RunE: func(cmd *cobra.Command, args []string) error {
			names = append(append([]string(nil), args...), names...)
			if len(names) == 0 {
				return errors.New("no add-on given: name it (flotilla addon disable NAME --clusters ...)")
			}
			given := 0
			for _, set := range []bool{len(clusters) > 0, allClusters, placement != ""} {
				if set {
					given++
				}
			}
			switch {
			case given > 1:
				return errors.New("--clusters, --all-clusters and --placement are mutually exclusive")
			case given == 0:
				return errors.New("--clusters, --all-clusters or --placement is required")
			}
			pns, pname := "", ""
			if placement != "" {
				var err error
				if pns, pname, err = admin.ParsePlacementRef(placement); err != nil {
					return fmt.Errorf("--placement: %w", err)
				}
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			if placement != "" {
				results, err := admin.DisableAddonPlacement(cmd.Context(), c, names, pns, pname)
				writePlacementResults(cmd.OutOrStdout(), cmd.ErrOrStderr(), results, placement)
				return err
			}
			res, err := admin.DisableAddons(cmd.Context(), c, names, clusters, allClusters)
			for _, r := range res.Results {
				switch r.Action {
				case admin.ActionDeleted:
					fmt.Fprintf(cmd.OutOrStdout(), "add-on %s disabled in cluster %s (ManagedClusterAddOn deleted)\n", r.Addon, r.Cluster)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "add-on %s is not enabled in cluster %s\n", r.Addon, r.Cluster)
				}
			}
			if allClusters && len(res.Results) == 0 && err == nil {
				for _, n := range names {
					fmt.Fprintf(cmd.OutOrStdout(), "add-on %s is not enabled in any cluster\n", n)
				}
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&names, "names", nil, "comma-separated add-on names (clusteradm's flag; the same as the NAME arguments)")
	f.StringSliceVar(&clusters, "clusters", nil, "comma-separated names of the managed clusters to disable the add-ons in")
	f.BoolVar(&allClusters, "all-clusters", false, "disable the add-ons in every cluster that has them")
	f.StringVar(&placement, "placement", "", "NAMESPACE/NAME of a Placement to remove from the add-ons' install strategy")
	return cmd
}

// newGetAddonsCommand is `flotilla get addons`; kubeconfig is the flag of `flotilla get`.
func newGetAddonsCommand(kubeconfig *string) *cobra.Command {
	var cluster string
	cmd := &cobra.Command{
		Use:     "addons [NAME]",
		Aliases: []string{"addon", "managedclusteraddons", "managedclusteraddon", "mca"},
		Short:   "List ManagedClusterAddOns: available, degraded, progressing, configuration and version",
		Long: `List the ManagedClusterAddOns of --cluster (of every cluster when omitted), only those
of add-on NAME when given, one line per cluster and add-on: the status of the
Available, Degraded and Progressing conditions ("-" when not reported; OCM's columns of
'kubectl get managedclusteraddons'), CONFIG the first ` + fmt.Sprint(admin.ShortHashLen) + ` hex digits of the spec hash of
each desired configuration (status.configReferences), and VERSION the desired AddOnTemplate
(or WasmPlugin) of a template add-on.

During a configuration rollout a cluster's CONFIG changes when the rollout reaches it, and
PROGRESSING is True until its agent is upgraded (kubectl get managedclusteraddon NAME -n
CLUSTER -o yaml shows the desired and last applied configurations and the reasons).`,
		Example: `  flotilla get addons
  flotilla get addons --cluster cluster1
  flotilla get addons helloworld`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			rows, err := admin.AddonRows(cmd.Context(), c, cluster, name)
			if err != nil {
				return err
			}
			return admin.WriteAddons(cmd.OutOrStdout(), rows)
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "managed cluster (its namespace on the hub); all clusters when omitted")
	return cmd
}
