package commands

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"

	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/klusterlet/join"
)

func newJoinCommand() *cobra.Command {
	var (
		o                                       join.Options
		kubeconfig, caData, caFile, proxyCAFile string
		mode, managedKubeconfigFile             string
		wait, dryRun                            bool
		timeout                                 time.Duration
		vals                                    valuesFlags
	)
	cmd := &cobra.Command{
		Use:   "join",
		Short: "Join the cluster of --kubeconfig to a hub: install its klusterlet with a bootstrap token",
		Long: `Install the klusterlet on this managed cluster, as clusteradm join does, with the command
flotilla get token (or flotilla init) printed on the hub.

join checks the token against the hub first (an expired token fails here, and so does a
revoked one once the hub refuses it, within about 10 s of flotilla token revoke; nothing is
installed then), then renders the chart charts/flotilla-klusterlet (carried by this binary)
with render: operator and applies it, as clusteradm join does: the klusterlet operator
(Deployment klusterlet, container klusterlet, in open-cluster-management, running flotilla
operator klusterlet, with its ServiceAccount and RBAC), the klusterlet CRDs, the Klusterlet
--klusterlet-name (spec.clusterName, spec.namespace --agent-namespace, spec.deployOption.mode
--mode), the Secret bootstrap-hub-kubeconfig and the ConfigMap flotilla-klusterlet-values in
--agent-namespace. The operator renders the
agents from the Klusterlet: in mode Singleton (the default) one Deployment <klusterlet>-agent,
in mode Default <klusterlet>-registration-agent and <klusterlet>-work-agent, with OCM's
ServiceAccounts and RBAC (the agent <klusterlet>-agent registers, the work agent
<klusterlet>-work-sa applies ManifestWorks with admin, CRDs, Namespaces, RBAC and the
ClusterRoles labelled open-cluster-management.io/aggregate-to-work: "true"; nothing is bound to
cluster-admin). Edit the Klusterlet to change the agents (the operator rolls their
Deployments). --values/--set set the chart's values: klusterlet.spec.* are Klusterlet fields;
the others (flags.*, replicas, resources, nodeSelector, ...) apply to the operator's
Deployment and go into the ConfigMap flotilla-klusterlet-values (key values.yaml), which the
operator renders the agents with, under the Klusterlet's own values. The ConfigMap may set
flags, replicas, leaderElection, resources, nodeSelector, tolerations, affinity,
podAnnotations, priorityClassName, imagePullSecrets, metrics and health; any other value that
differs from the chart's default (rbac.*, image.*, securityContext, builtinAddons.*: what the
agents may do and run) sets Applied False naming it (a top-level value the
Klusterlet sets, such as nodeSelector from spec.nodePlacement, is the Klusterlet's; Applied
names the ConfigMap's as not used). Running join again with other values, or editing the
ConfigMap, rolls the agents; a value the chart refuses sets Applied False naming the ConfigMap,
and nothing is applied. join waits until the agent has requested its certificate on the hub;
the hub's admin then runs flotilla accept.

Through a forward proxy (HTTP CONNECT), --proxy-url goes into the bootstrap kubeconfig as
proxy-url and an HTTPS proxy's CA (--proxy-ca-file) is appended to its CA data; the agent
keeps both in the kubeconfigs it writes later, for itself and its add-ons.

A cluster joins a second hub with a Klusterlet of another name in another namespace
(--klusterlet-name klusterlet-hub2 --agent-namespace open-cluster-management-agent-hub2):
each hub's agent applies only its own hub's work.

--mode Hosted or SingletonHosted runs the agent on this (hosting) cluster for another,
managed cluster, whose kubeconfig --managed-cluster-kubeconfig gives: join applies the
klusterlet operator (Deployment klusterlet in open-cluster-management, chart render:
operator), the Klusterlet --klusterlet-name (default klusterlet-<cluster-name>) whose agent
namespace is its name (--agent-namespace is refused), the bootstrap Secret and Secret
external-managed-kubeconfig (key kubeconfig) there. The operator applies the managed cluster's
objects (klusterlet namespace open-cluster-management-<klusterlet-name>) through that
kubeconfig and runs the agents here: SingletonHosted one Deployment <klusterlet>-agent, Hosted
<klusterlet>-registration-agent and <klusterlet>-work-agent. A second hub of the same managed
cluster takes another Klusterlet: join refuses a --klusterlet-name whose bootstrap Secret names
another hub, and says which name to take. flotilla unjoin --klusterlet-name <name> removes it.

helm install klusterlet charts/flotilla-klusterlet -n
open-cluster-management-agent --create-namespace --set clusterName=...
--set-file bootstrapHubKubeconfig=... installs the same manifests (render operator is the
chart's default).`,
		Example: `  flotilla join --hub-token <token> --hub-apiserver https://hub.example.com:6443 --hub-ca-data <base64> --cluster-name cluster1
  flotilla join ... --proxy-url https://proxy.example.com:3129 --proxy-ca-file proxy-ca.pem
  flotilla join ... --klusterlet-name klusterlet-hub2 --agent-namespace open-cluster-management-agent-hub2
  flotilla join ... --mode Default
  flotilla join ... --cluster-name managed1 --kubeconfig hosting.kubeconfig --mode SingletonHosted --managed-cluster-kubeconfig managed1.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var klusterletMode operatorv1.InstallMode
			switch mode {
			case "Singleton", "singleton", "":
				klusterletMode = operatorv1.InstallModeSingleton
			case "Default", "default":
				klusterletMode = operatorv1.InstallModeDefault
			case "Hosted", "hosted":
				klusterletMode = operatorv1.InstallModeHosted
			case "SingletonHosted", "singletonhosted":
				klusterletMode = operatorv1.InstallModeSingletonHosted
			default:
				return fmt.Errorf("--mode %q: Singleton, Default, Hosted or SingletonHosted", mode)
			}
			hosted := klusterletMode == operatorv1.InstallModeHosted || klusterletMode == operatorv1.InstallModeSingletonHosted
			var managedKubeconfig []byte
			if !hosted && managedKubeconfigFile != "" {
				return fmt.Errorf("--managed-cluster-kubeconfig needs --mode Hosted or SingletonHosted")
			}
			if hosted {
				if cmd.Flags().Changed("agent-namespace") {
					return fmt.Errorf("--agent-namespace and --mode %s: a hosted agent's namespace is its Klusterlet's name (--klusterlet-name)", klusterletMode)
				}
				if managedKubeconfigFile == "" {
					return fmt.Errorf("--mode %s needs --managed-cluster-kubeconfig", klusterletMode)
				}
				if !cmd.Flags().Changed("klusterlet-name") {
					o.KlusterletName = join.HostedKlusterletName(o.ClusterName)
				}
				var err error
				if managedKubeconfig, err = os.ReadFile(managedKubeconfigFile); err != nil {
					return fmt.Errorf("--managed-cluster-kubeconfig: %w", err)
				}
			}
			var err error
			switch {
			case caData != "" && caFile != "":
				return fmt.Errorf("--hub-ca-data and --ca-file: give one")
			case caData != "":
				if o.HubCA, err = join.DecodeCA(caData); err != nil {
					return err
				}
			case caFile != "":
				if o.HubCA, err = os.ReadFile(caFile); err != nil {
					return fmt.Errorf("--ca-file: %w", err)
				}
			}
			if proxyCAFile != "" {
				if o.ProxyCA, err = os.ReadFile(proxyCAFile); err != nil {
					return fmt.Errorf("--proxy-ca-file: %w", err)
				}
			}
			if o.Values, err = vals.values(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			boot, err := o.BootstrapKubeconfig()
			if err != nil {
				return err
			}
			objs, err := join.RenderOperator(o, klusterletMode, boot, managedKubeconfig)
			if err != nil {
				return err
			}
			if dryRun {
				return install.WriteYAML(cmd.OutOrStdout(), objs)
			}
			progress := func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), s) }
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			progress("checking the token with the hub at " + o.HubAPIServer)
			if err := join.Preflight(ctx, boot); err != nil {
				return err
			}
			cfg, err := loadRESTConfig(kubeconfig)
			if err != nil {
				return err
			}
			agentNS := o.AgentNamespace
			if hosted {
				agentNS = o.KlusterletName
			}
			if err := join.CheckConflict(ctx, cfg, o.KlusterletName, agentNS, o.ClusterName, o.HubAPIServer); err != nil {
				return err
			}
			progress(fmt.Sprintf("applying the klusterlet operator and the %s Klusterlet %s (agent namespace %s) to %s", klusterletMode, o.KlusterletName, agentNS, cfg.Host))
			if err := install.Apply(ctx, cfg, objs); err != nil {
				return err
			}
			if !hosted {
				// An upgrade: what earlier versions installed and this one no longer has goes.
				if err := install.Delete(ctx, cfg, join.Legacy(o.KlusterletName), false); err != nil {
					return err
				}
			}
			if !wait {
				fmt.Fprintf(cmd.OutOrStdout(), "klusterlet installed; on the hub: flotilla accept --clusters %s\n", o.ClusterName)
				return nil
			}
			csr, err := join.WaitForCSR(ctx, boot, o.ClusterName, progress)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s requested to join (CSR %s); on the hub: flotilla accept --clusters %s\n", o.ClusterName, csr, o.ClusterName)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the managed cluster, of the hosting cluster with --mode Hosted or SingletonHosted (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.Token, "hub-token", "", "the bootstrap token flotilla get token printed")
	f.StringVar(&o.HubAPIServer, "hub-apiserver", "", "the hub API server URL, https://host:port")
	f.StringVar(&caData, "hub-ca-data", "", "the hub's CA bundle, base64 of PEM as flotilla get token prints it")
	f.StringVar(&caFile, "ca-file", "", "the hub's CA bundle as a PEM file, instead of --hub-ca-data")
	f.StringVar(&o.ClusterName, "cluster-name", "", "name of the ManagedCluster on the hub: a DNS label, unique on the hub")
	f.StringVar(&o.KlusterletName, "klusterlet-name", join.DefaultKlusterletName, "name of the Klusterlet: another name (and --agent-namespace) per further hub; hosted default klusterlet-<cluster-name>")
	f.StringVar(&o.AgentNamespace, "agent-namespace", install.AgentNamespace, "namespace of the agent, its Secrets and the bootstrap kubeconfig")
	f.StringVar(&o.ProxyURL, "proxy-url", "", "HTTP(S) forward proxy (HTTP CONNECT) between the agent and the hub")
	f.StringVar(&proxyCAFile, "proxy-ca-file", "", "CA bundle (PEM) of an HTTPS proxy, appended to the bootstrap kubeconfig's CA data")
	f.StringVar(&mode, "mode", "Singleton", "Singleton (one agent Deployment <klusterlet>-agent on this cluster), Default (<klusterlet>-registration-agent and <klusterlet>-work-agent on this cluster), Hosted or SingletonHosted (the agents on this hosting cluster for --managed-cluster-kubeconfig's)")
	f.StringVar(&managedKubeconfigFile, "managed-cluster-kubeconfig", "", "kubeconfig of the managed cluster (--mode Hosted or SingletonHosted)")
	f.BoolVar(&wait, "wait", true, "wait until the agent has requested its certificate on the hub")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long join waits for the hub and the agent")
	f.BoolVar(&dryRun, "dry-run", false, "print the manifests instead of applying them (the bootstrap Secret holds the token)")
	vals.add(cmd, install.KlusterletChart)
	return cmd
}

func newUnjoinCommand() *cobra.Command {
	var (
		o          join.UnjoinOptions
		kubeconfig string
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "unjoin",
		Short: "Remove a klusterlet from the cluster of --kubeconfig, with everything it applied",
		Long: `Remove the klusterlet --klusterlet-name from this managed cluster: its agent stops and
its and the work agent's permissions are revoked (so nothing is put back), the add-ons'
client certificate Secrets it wrote are deleted wherever they are, every resource its hub's
ManifestWorks applied is deleted (AppliedManifestWorks and what they own, except what a work
orphaned), then the agent namespace with its Secrets and the klusterlet's RBAC and Klusterlet. When no other Klusterlet remains, the add-on namespace
open-cluster-management-agent-addon and the klusterlet CRDs go too.

unjoin deletes the Klusterlet and waits until the klusterlet operator has done the above (an
error names the finalizer holding it); the operator goes with the last Klusterlet. Against a
hosting cluster (--kubeconfig), a Hosted or SingletonHosted Klusterlet's agents go here and
what the operator applied on the managed cluster there (the Klusterlet CRD stays on the
hosting cluster). Without a Klusterlet (an install from before the operator), unjoin removes
the chart's objects itself.

The hub keeps the ManagedCluster (unavailable) until its admin deletes it:
  kubectl delete managedcluster <cluster_name>`,
		Example: `  flotilla unjoin --kubeconfig managed.kubeconfig
  flotilla unjoin --klusterlet-name klusterlet-hub2 --agent-namespace open-cluster-management-agent-hub2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadRESTConfig(kubeconfig)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			progress := func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), s) }
			if done, err := join.UnjoinKlusterlet(ctx, cfg, o.KlusterletName, progress); err != nil {
				return err
			} else if done {
				fmt.Fprintf(cmd.OutOrStdout(), "klusterlet %s removed\n", o.KlusterletName)
				return nil
			}
			// No Klusterlet: an install from before the klusterlet operator, or what is left of one.
			if err := join.Unjoin(ctx, cfg, o, func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), s) }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "klusterlet %s removed\n", o.KlusterletName)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the managed cluster (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.KlusterletName, "klusterlet-name", join.DefaultKlusterletName, "the Klusterlet to remove")
	f.StringVar(&o.AgentNamespace, "agent-namespace", install.AgentNamespace, "its agent namespace, when the Klusterlet object is gone")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long unjoin waits for deletions")
	return cmd
}
