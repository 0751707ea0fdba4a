package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/hub/admin"
)

// newGetPlacementsCommand is `flotilla get placements`; kubeconfig is the flag of `flotilla get`.
func newGetPlacementsCommand(kubeconfig *string) *cobra.Command {
	var (
		namespace     string
		allNamespaces bool
	)
	cmd := &cobra.Command{
		Use:     "placements [NAME]",
		Aliases: []string{"placement"},
		Short:   "List Placements with the clusters they select, or show one with its conditions, decision groups and scores",
		Long: `Without NAME, list the Placements of the namespace (of every namespace with -A): the
status of the PlacementSatisfied condition ("-" before the hub's placement controller
decided the placement), its reason (Misconfigured while PlacementMisconfigured is True),
status.numberOfSelectedClusters, and the clusters its PlacementDecisions list, in decision
order; a long list is cut to what fits in ` + fmt.Sprint(admin.MaxClustersWidth) + ` characters, the rest counted as "+N more".

With NAME, show that Placement: the number of clusters requested and selected, its
conditions (type, status, reason, message), its decision groups (index, name, number of
clusters, PlacementDecision names), then every decision in decision order with the
cluster's score and the PlacementDecision that lists it. NAME may be NAMESPACE/NAME.

The namespace is -n, or else that of the kubeconfig's current context ("default" when it
sets none). PlacementDecisions are read in decision order: those named
<placement>-decision-<n> by n, the order of the decision groups.`,
		Example: `  flotilla get placements
  flotilla get placements -A
  flotilla get placements placement1 -n default
  flotilla get placements default/placement1

  # Deploy to the clusters placement1 selects
  flotilla create work hello-work-demo -f hello.yaml --placement default/placement1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := namespacedName(cmd, *kubeconfig, "placement", &namespace, allNamespaces, args)
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			if name != "" {
				d, err := admin.GetPlacementDetail(cmd.Context(), c, namespace, name)
				if err != nil {
					return err
				}
				return admin.WritePlacementDetail(cmd.OutOrStdout(), d, time.Now())
			}
			rows, err := admin.PlacementRows(cmd.Context(), c, namespace)
			if err != nil {
				return err
			}
			return admin.WritePlacements(cmd.OutOrStdout(), rows)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "namespace of the placements (default: the kubeconfig context's namespace, or default)")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the placements of every namespace")
	return cmd
}

// namespacedName resolves the optional NAME argument and the -n/-A flags of a `flotilla get`
// command for namespaced objects of kind: NAME may be NAMESPACE/NAME (then -n must agree);
// -A excludes -n and NAME; without either, the namespace is the kubeconfig context's.
func namespacedName(cmd *cobra.Command, kubeconfig, kind string, namespace *string, allNamespaces bool, args []string) (string, error) {
	if allNamespaces && cmd.Flags().Changed("namespace") {
		return "", fmt.Errorf("-n/--namespace and -A/--all-namespaces are mutually exclusive")
	}
	name := ""
	if len(args) == 1 {
		if allNamespaces {
			return "", fmt.Errorf("-A/--all-namespaces cannot be used with a %s name; give -n NAMESPACE or NAMESPACE/NAME", kind)
		}
		name = args[0]
		if strings.Contains(name, "/") {
			ns, n, ok := strings.Cut(name, "/")
			if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
				return "", fmt.Errorf("%s %q: want NAMESPACE/NAME", kind, name)
			}
			if *namespace != "" && *namespace != ns {
				return "", fmt.Errorf("%s %s is in namespace %s, but -n says %s", kind, name, ns, *namespace)
			}
			*namespace, name = ns, n
		}
	}
	if *namespace == "" && !allNamespaces {
		ns, err := kubeconfigNamespace(kubeconfig)
		if err != nil {
			return "", err
		}
		*namespace = ns
	}
	return name, nil
}

// kubeconfigNamespace is the namespace of the current context of the kubeconfig at path
// (of the default loading rules when empty), "default" when the context sets none.
func kubeconfigNamespace(path string) (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig %q: %w", path, err)
	}
	return ns, nil
}
