package commands

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/hub/admin"
)

// clusterSetTimeout bounds one cluster-set command (every request it makes).
const clusterSetTimeout = time.Minute

// dryRunNote is printed first under --dry-run, as clusteradm prints its dry-run line.
const dryRunNote = "flotilla is running in dry-run mode: the hub checks each request, its admission policies included, and stores nothing"

// clusterSetFlags are the flags every cluster-set command has.
type clusterSetFlags struct {
	kubeconfig string
	dryRun     bool
}

func (f *clusterSetFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "send every write as a server-side dry run: the hub's validation and admission policies answer, nothing is stored")
}

// run calls do with a hub client for the user's kubeconfig under the command's deadline.
func (f *clusterSetFlags) run(cmd *cobra.Command, do func(ctx context.Context, c client.Client, out io.Writer) error) error {
	out := cmd.OutOrStdout()
	if f.dryRun {
		fmt.Fprintln(out, dryRunNote)
	}
	c, _, err := hubClients(f.kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), clusterSetTimeout)
	defer cancel()
	return do(ctx, c, out)
}

// clusterSetArg is clusteradm's check of the one NAME argument.
func clusterSetArg(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return fmt.Errorf("the name of the clusterset must be specified")
	case len(args) > 1:
		return fmt.Errorf("only one clusterset can be specified")
	}
	return admin.ValidateClusterSetName(args[0])
}

// newCreateClusterSetCommand is `flotilla create clusterset`; kubeconfig is the flag of `flotilla create`.
func newCreateClusterSetCommand(kubeconfig *string) *cobra.Command {
	f := &clusterSetFlags{}
	cmd := &cobra.Command{
		Use:     "clusterset NAME",
		Aliases: []string{"managedclusterset"},
		Short:   "Create an empty ManagedClusterSet",
		Long: `Create the ManagedClusterSet NAME, empty: its members are the clusters labelled
cluster.open-cluster-management.io/clusterset=NAME (flotilla clusterset set puts them there).
An existing set is left as it is. The request is made as you (your kubeconfig), so your RBAC
decides.`,
		Example: `  flotilla create clusterset clusterset1
  flotilla clusterset set clusterset1 --clusters cluster1,cluster2
  flotilla clusterset bind clusterset1 --namespace default`,
		Args: clusterSetArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.kubeconfig = *kubeconfig
			return f.run(cmd, func(ctx context.Context, c client.Client, out io.Writer) error {
				created, err := admin.CreateClusterSet(ctx, c, args[0], f.dryRun)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, admin.CreateClusterSetMessage(args[0], created))
				return nil
			})
		},
	}
	f.add(cmd)
	return cmd
}

// newClusterSetCommand is `flotilla clusterset`, clusteradm's command group of the same name.
func newClusterSetCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:     "clusterset",
		Aliases: []string{"clustersets"},
		Short:   "Put clusters into a ManagedClusterSet and bind it to namespaces",
		Long: `Manage ManagedClusterSets as clusteradm clusterset does: set moves clusters into a set,
bind and unbind make a set usable by the Placements of a namespace. Create a set with
flotilla create clusterset, list them with flotilla get clustersets.

The commands act as you (your kubeconfig): besides RBAC on the objects, the hub's admission
policies require "create" on managedclustersets/join of a set to put a cluster into it or
take one out, and "create" on managedclustersets/bind of a set to bind it. A refusal is
printed as the hub's message, which names the object and the permission missing.`,
		Example: `  flotilla create clusterset clusterset1
  flotilla clusterset set clusterset1 --clusters cluster1,cluster2
  flotilla clusterset bind clusterset1 --namespace default
  flotilla get clustersets
  flotilla clusterset unbind clusterset1 --namespace default`,
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	cmd.AddCommand(newClusterSetSetCommand(&kubeconfig), newClusterSetBindCommand(&kubeconfig), newClusterSetUnbindCommand(&kubeconfig))
	return cmd
}

func newClusterSetSetCommand(kubeconfig *string) *cobra.Command {
	f := &clusterSetFlags{}
	var clusters, namespaces []string
	cmd := &cobra.Command{
		Use:   "set NAME (--clusters c1,c2 | --namespaces n1,n2)",
		Short: "Put clusters or managed namespaces into a ManagedClusterSet",
		Long: fmt.Sprintf(`Put each cluster of --clusters into the ManagedClusterSet NAME by setting its label
cluster.open-cluster-management.io/clusterset=NAME; a cluster in another set moves. No other
cluster leaves NAME. The set must exist and select its members by that label (selectorType
ExclusiveClusterSetLabel, the default).

Each label is written with a JSON merge patch guarded by the cluster's resourceVersion. All
patches are first sent as a server-side dry run, so an unknown cluster or a refusal by the
hub's join policy (it needs "create" on managedclustersets/join of NAME, and of the set a
cluster leaves) changes no cluster. At most %d clusters at a time.

--namespaces appends namespaces to the set's spec.managedNamespaces (those not in it yet),
after the clusters, with a merge patch guarded by the set's resourceVersion; it needs "patch"
on the ManagedClusterSet. Flotilla's hub records them but does not act on them yet. At most %d
namespaces at a time.`, admin.MaxClusterSetClusters, admin.MaxManagedNamespaces),
		Example: `  flotilla clusterset set clusterset1 --clusters cluster1,cluster2
  flotilla clusterset set clusterset1 --namespaces app-a,app-b`,
		Args: clusterSetArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(clusters) == 0 && len(namespaces) == 0 {
				return fmt.Errorf("at least one cluster (--clusters) or namespace (--namespaces) must be specified")
			}
			var err error
			if len(clusters) > 0 {
				if clusters, err = admin.ValidateClusterNames(clusters); err != nil {
					return fmt.Errorf("--clusters: %w", err)
				}
			}
			if namespaces, err = admin.ValidateManagedNamespaces(namespaces); err != nil {
				return fmt.Errorf("--namespaces: %w", err)
			}
			f.kubeconfig = *kubeconfig
			return f.run(cmd, func(ctx context.Context, c client.Client, out io.Writer) error {
				if len(clusters) > 0 {
					moves, err := admin.SetClusters(ctx, c, args[0], clusters, f.dryRun)
					for _, m := range moves {
						fmt.Fprintln(out, m.Message())
					}
					if err != nil {
						return err
					}
				}
				if len(namespaces) == 0 {
					return nil
				}
				res, err := admin.AddManagedNamespaces(ctx, c, args[0], namespaces, f.dryRun)
				if err == nil {
					fmt.Fprintln(out, strings.Join(res.Messages(), "\n"))
				}
				return err
			})
		},
	}
	f.add(cmd)
	cmd.Flags().StringSliceVar(&clusters, "clusters", nil, "names of the managed clusters to put into the clusterset (comma separated)")
	cmd.Flags().StringSliceVar(&namespaces, "namespaces", nil, "namespaces to add to the clusterset's spec.managedNamespaces (comma separated)")
	return cmd
}

func newClusterSetBindCommand(kubeconfig *string) *cobra.Command {
	f := &clusterSetFlags{}
	var namespace string
	cmd := &cobra.Command{
		Use:   "bind NAME [--namespace NS]",
		Short: "Bind a ManagedClusterSet to a namespace",
		Long: `Create the ManagedClusterSetBinding NAME in --namespace with spec.clusterSet NAME, so the
Placements of that namespace can select the set's clusters. The set must exist; an existing
binding is left as it is. The hub's bind policy needs "create" on managedclustersets/bind of
NAME. Do not bind a set to a cluster's namespace (one named after a managed cluster).`,
		Example: `  flotilla clusterset bind clusterset1 --namespace default`,
		Args:    clusterSetArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := admin.ValidateNamespaceName(namespace); err != nil {
				return fmt.Errorf("--namespace: %w", err)
			}
			f.kubeconfig = *kubeconfig
			return f.run(cmd, func(ctx context.Context, c client.Client, out io.Writer) error {
				already, err := admin.BindClusterSet(ctx, c, args[0], namespace, f.dryRun)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, admin.BindMessage(args[0], namespace, already))
				return nil
			})
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&namespace, "namespace", "default", "namespace to bind the clusterset to")
	return cmd
}

func newClusterSetUnbindCommand(kubeconfig *string) *cobra.Command {
	f := &clusterSetFlags{}
	var namespace string
	cmd := &cobra.Command{
		Use:   "unbind NAME [--namespace NS]",
		Short: "Unbind a ManagedClusterSet from a namespace",
		Long: `Delete the ManagedClusterSetBinding NAME in --namespace. A binding that does not exist is
no error. Unlike clusteradm, the set itself need not exist, so the binding of a deleted set
can be removed.`,
		Example: `  flotilla clusterset unbind clusterset1 --namespace default`,
		Args:    clusterSetArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := admin.ValidateNamespaceName(namespace); err != nil {
				return fmt.Errorf("--namespace: %w", err)
			}
			f.kubeconfig = *kubeconfig
			return f.run(cmd, func(ctx context.Context, c client.Client, out io.Writer) error {
				existed, err := admin.UnbindClusterSet(ctx, c, args[0], namespace, f.dryRun)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, admin.UnbindMessage(args[0], namespace, existed))
				return nil
			})
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&namespace, "namespace", "default", "namespace to unbind the clusterset from")
	return cmd
}
