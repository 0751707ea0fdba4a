package commands

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/leaderelection"
	"github.com/flotilla-dev/flotilla/hub/operator"
)

// newOperatorCommand is the `operator` group: the operators that deploy Flotilla from OCM's
// operator API.
func newOperatorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run an operator that deploys Flotilla from OCM's operator API (ClusterManager)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newOperatorHubCommand(), newOperatorKlusterletCommand())
	return cmd
}

func newOperatorHubCommand() *cobra.Command {
	var (
		kubeconfig, name, namespace, healthAddr string
		verbosity                               int
		leader                                  leaderelection.Config
	)
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run the hub operator: deploy the hub's components from a ClusterManager",
		Long: `Run the hub operator, OCM's cluster-manager operator for Flotilla. It reads the
ClusterManager --cluster-manager-name (operator.open-cluster-management.io/v1, cluster-scoped)
and the ConfigMap ` + operator.ValuesConfigMap + ` (key ` + operator.ValuesKey + `) in --namespace, which holds the
Flotilla-only values of the flotilla-hub chart (the chart's render: operator writes it). It
renders the chart embedded in this binary with render: components, those values and the
values the ClusterManager's spec gives, and server-side applies the result into
open-cluster-management-hub (field manager ` + operator.DeployFieldManager + `), each object owned by the
ClusterManager and labelled ` + operator.ManagedByLabel + `=` + operator.ManagedByValue + `,
` + operator.ClusterManagerLabel + `=<name>. Objects it applied before and renders no longer
(a component switched off) are deleted. A spec change rolls the Deployments it changes.

With topology Split (values ConfigMap) the hub runs as OCM's Deployments
<name>-registration-controller, -registration-webhook, -work-webhook, -work-controller,
-placement-controller and -addon-manager-controller; with Single as one Deployment flotilla-hub.

What it takes from the spec:
  registrationImagePullSpec, workImagePullSpec, placementImagePullSpec,
    addOnManagerImagePullSpec: the image of their components; empty or an OCM image
    (quay.io/open-cluster-management/...) runs $` + operator.ImageEnv + `, the operator's own image.
  nodePlacement: nodeSelector and tolerations of every component.
  resourceRequirement: Default (the chart's resources), BestEffort (none) or
    ResourceRequirement (resourceRequirements as given), every container.
  deployOption.default.{registration,work,addon}WebhookConfiguration.bindConfiguration:
    ports and hostNetwork of registration-webhook, work-webhook and addon-manager.
  {registration,work,addOnManager,placement}Configuration.featureGates: --feature-gates of
    their components; AddonManagement Disable removes the add-on manager. A gate a component
    does not implement sets ValidFeatureGates False naming it.
  registrationConfiguration.autoApproveUsers and the csr driver's autoApprovedIdentities:
    approved for any cluster name, with ManagedClusterAutoApproval enabled.

What it refuses:
  deployOption.mode Hosted: Applied False UnsupportedConfiguration, nothing new applied.
  Listed in ValidConfiguration False UnsupportedFields, the rest applied:
    deployOption.hosted.*, registrationDrivers other than csr (awsirsa, grpc),
    importerConfiguration, workDriver grpc or mqtt, serverConfiguration.*,
    networkPolicyConfiguration.*.

Status: Applied, Progressing (Deployments rolling out), HubRegistrationDegraded and
HubPlacementDegraded (their Deployments' available replicas), ValidFeatureGates,
ValidConfiguration; observedGeneration once the generation is applied; generations of every
Deployment; relatedResources of every object applied and the hub's CRDs.

--leader-elect runs it as one of several replicas (Lease ` + operator.OperatorLease + ` in --namespace).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadRESTConfig(kubeconfig)
			if err != nil {
				return err
			}
			if strings.TrimSpace(name) == "" {
				return fmt.Errorf("--cluster-manager-name must not be empty")
			}
			logger := newLogger(cmd.ErrOrStderr(), verbosity)
			setLibraryLoggers(logger)
			return operator.RunClusterManagerOperator(cmd.Context(), operator.OperatorOptions{
				Config:                 cfg,
				ClusterManagerName:     name,
				Namespace:              namespace,
				Image:                  os.Getenv(operator.ImageEnv),
				LeaderElection:         leader,
				HealthProbeBindAddress: healthAddr,
				Logger:                 logger,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: in-cluster)")
	f.StringVar(&name, "cluster-manager-name", operatorv1.ClusterManagerName, "the ClusterManager to deploy")
	f.StringVar(&namespace, "namespace", operator.OperatorNamespace, "namespace of the values ConfigMap and the Lease")
	f.StringVar(&healthAddr, "health-probe-bind-address", "0", "serves /healthz and /readyz; \"0\" off")
	f.BoolVar(&leader.Enabled, "leader-elect", false, "run as one of several replicas")
	f.IntVar(&verbosity, "v", 0, "log verbosity on standard error")
	return cmd
}
