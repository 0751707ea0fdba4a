package commands

import (
	"github.com/spf13/cobra"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/leaderelection"
	kop "github.com/flotilla-dev/flotilla/klusterlet/operator"
)

func newOperatorKlusterletCommand() *cobra.Command {
	var (
		kubeconfig, healthAddr, metricsAddr string
		verbosity                           int
		leader                              leaderelection.Config
	)
	cmd := &cobra.Command{
		Use:   "klusterlet",
		Short: "Run the klusterlet operator: deploy the agents of every Klusterlet on this cluster",
		Long: `Run the klusterlet operator, OCM's klusterlet operator for Flotilla. For every Klusterlet
(operator.open-cluster-management.io/v1, cluster-scoped) on the cluster it runs on, it renders
the flotilla-klusterlet chart embedded in this binary (render: components) with the values the
Klusterlet's spec gives over those of the ConfigMap ` + kop.ValuesConfigMap + ` (key ` + kop.ValuesKey + `) in its agent
namespace (a change of either renders again; a top-level value the spec sets is the spec's),
and server-side applies the result (field manager
` + kop.OperatorDeployFieldManager + `), each object labelled ` + kop.ManagedByLabel + `=` + kop.ManagedByValue + `,
` + operatorv1.KlusterletNamespaceLabel + `=<name>; the agent Deployments are owned by the Klusterlet.

spec.deployOption.mode:
  Singleton, SingletonHosted: one agent Deployment <name>-agent.
  Default, Hosted: <name>-registration-agent and <name>-work-agent.
  The mode first applied is recorded (annotation ` + kop.AppliedModeAnnotation + `); a later change
  is refused: Applied False UnsupportedConfiguration, nothing applied.

Hosted and SingletonHosted: this cluster is the management cluster. The agent namespace is the
Klusterlet's name; the operator creates it, and reads the managed cluster's kubeconfig from
Secret ` + operatorv1.ExternalManagedKubeConfigSecret + ` (key kubeconfig) there: ReadyToApply True KlusterletPrepared,
or False KlusterletPrepareFailed "Failed to build managed cluster clients: <error>". The
managed cluster's objects (CRDs, the klusterlet namespace spec.namespace, the add-on
namespace, ServiceAccounts, RBAC) go through that kubeconfig, the agents' Deployments, Roles
and namespace stay here. The agents get kubeconfigs of the managed cluster with TokenRequest
tokens of their ServiceAccounts there, in Secrets ` + operatorv1.ExternalManagedKubeConfigAgentSecret + ` (SingletonHosted)
or ` + operatorv1.ExternalManagedKubeConfigRegistrationSecret + ` and ` + operatorv1.ExternalManagedKubeConfigWorkSecret + ` (Hosted),
renewed at 80 % of their lifetime.

Status: ReadyToApply (Hosted modes), Applied, Available, RegistrationDesiredDegraded and
WorkDesiredDegraded (from the Deployments; Singleton modes both from <name>-agent),
ValidFeatureGates, ValidConfiguration, observedGeneration, generations, relatedResources.

Deleting a Klusterlet: finalizer ` + operatorv1.KlusterletFinalizer + ` (and, Hosted, once the managed
cluster was reached, ` + operatorv1.KlusterletHostedFinalizer + `) holds it until the operator deleted
what it applied on both clusters; the add-on namespace and the managed cluster's CRDs go with
the last klusterlet namespace there. A Hosted Klusterlet whose managed cluster cannot be
reached is held until the time in its annotation
` + kop.EvictionTimestampAnnotation + ` (RFC 3339) has passed.

--leader-elect runs it as one of several replicas (Lease ` + kop.OperatorLease + ` in ` + kop.OperatorNamespace + `).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadRESTConfig(kubeconfig)
			if err != nil {
				return err
			}
			logger := newLogger(cmd.ErrOrStderr(), verbosity)
			setLibraryLoggers(logger)
			return kop.RunKlusterletOperator(cmd.Context(), kop.OperatorOptions{
				Config:                 cfg,
				LeaderElection:         leader,
				HealthProbeBindAddress: healthAddr,
				MetricsBindAddress:     metricsAddr,
				Logger:                 logger,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster the operator runs on (default: in-cluster)")
	f.StringVar(&healthAddr, "health-probe-bind-address", "0", "serves /healthz and /readyz; \"0\" off")
	f.StringVar(&metricsAddr, "metrics-bind-address", "0", "serves the controller metrics; \"0\" off")
	f.BoolVar(&leader.Enabled, "leader-elect", false, "run as one of several replicas")
	f.IntVar(&verbosity, "v", 0, "log verbosity on standard error")
	return cmd
}
