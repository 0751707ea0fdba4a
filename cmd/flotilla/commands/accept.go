package commands

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

func newAcceptCommand() *cobra.Command {
	var (
		kubeconfig string
		clusters   []string
	)
	cmd := &cobra.Command{
		Use:   "accept",
		Short: "Accept managed clusters: approve their pending CSRs and set hubAcceptsClient",
		Long: `Complete the hub admin's half of the double opt-in for each cluster: approve the pending
registration CertificateSigningRequests of its agent and set spec.hubAcceptsClient=true on its
ManagedCluster. As with clusteradm accept, only CSRs requested by a bootstrap identity are
approved (the ServiceAccount open-cluster-management/agent-registration-bootstrap, its legacy
alias cluster-bootstrap, or a bootstrap token system:bootstrap:<id> in the group
system:bootstrappers:managedcluster), besides those of the cluster's own agent. Requires the
rights to approve CSRs and to update managedclusters/accept.`,
		Example: `  flotilla accept --clusters cluster1,cluster2 --kubeconfig hub.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(clusters) == 0 {
				return fmt.Errorf("--clusters is required")
			}
			c, kube, err := hubClients(kubeconfig)
			if err != nil {
				return err
			}
			results, err := admin.Accept(cmd.Context(), c, kube, clusters)
			for _, r := range results {
				if len(r.SkippedCSRs) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s: left CSRs %v pending: not requested by a bootstrap identity\n", r.Cluster, r.SkippedCSRs)
				}
				switch {
				case r.AlreadyAccepted && len(r.ApprovedCSRs) == 0:
					fmt.Fprintf(cmd.OutOrStdout(), "cluster %s is already accepted\n", r.Cluster)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "cluster %s accepted (approved CSRs: %v)\n", r.Cluster, r.ApprovedCSRs)
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringSliceVar(&clusters, "clusters", nil, "comma-separated names of the clusters to accept")
	return cmd
}

// hubClients returns a controller-runtime client and a clientset for the hub.
func hubClients(kubeconfig string) (client.Client, kubernetes.Interface, error) {
	cfg, err := loadRESTConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	return hubClientsForConfig(cfg)
}

func hubClientsForConfig(cfg *rest.Config) (client.Client, kubernetes.Interface, error) {
	scheme, err := manager.NewScheme()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("hub client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("hub client: %w", err)
	}
	return c, kube, nil
}
