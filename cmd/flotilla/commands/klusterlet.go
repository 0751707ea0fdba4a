package commands

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/core/leaderelection"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
	"github.com/flotilla-dev/flotilla/klusterlet/work"
)

func newKlusterletCommand() *cobra.Command {
	var (
		opts                klusterlet.Options
		managedKubeconfig   string
		hosted              hostedFlags
		bootstrapKubeconfig string
		verbosity           int
		pprofAddr           string
		fields              klusterletFieldFlags
	)
	gate, gateErr := featuregates.NewGate(klusterletFeatureGates())
	cmd := &cobra.Command{
		Use:   "klusterlet",
		Short: "Run the agent on a managed cluster: register it with a hub and apply its ManifestWorks",
		Long: `Run the klusterlet for one managed cluster: the registration agent, and once the hub has
accepted the cluster, the work agent.

Registration is a double opt-in handshake (as in Open Cluster Management):

  1. With the bootstrap kubeconfig (--bootstrap-kubeconfig, or key "kubeconfig" of the
     secret bootstrap-hub-kubeconfig in --agent-namespace) the agent creates the
     ManagedCluster <cluster-name> on the hub with spec.hubAcceptsClient=false, and a
     CertificateSigningRequest named <cluster-name>-<digest> for signer
     kubernetes.io/kube-apiserver-client with subject
       O=system:open-cluster-management:<cluster-name>,
       O=system:open-cluster-management:managed-clusters,
       CN=system:open-cluster-management:<cluster-name>:<agent-name>
     The private key is generated here and stays on the cluster the agent runs on.
  2. A hub admin approves the CSR and sets hubAcceptsClient=true
     (flotilla accept --clusters <cluster-name>).
  3. The agent stores kubeconfig, tls.crt, tls.key, cluster-name and agent-name in the
     secret --hub-kubeconfig-secret, switches to that identity, sets ManagedClusterJoined
     and from then on reports the Kubernetes version, node capacity/allocatable, the
     Available condition and ClusterClaims, and renews the Lease managed-cluster-lease in
     the cluster namespace every spec.leaseDurationSeconds.

The client certificate is renewed when 20% of its lifetime remains, without interrupting
requests. While the hub is unreachable or refuses the agent, it retries with capped
backoff and never exits. Deleting the hub kubeconfig secret makes it register again.
Cluster and agent names are kept in the secret, so restarts keep the same identity.

The work agent watches the ManifestWorks in the cluster's namespace on the hub, applies their
manifests (CRDs and Namespaces first) with the update strategy each names (Update, CreateOnly,
ServerSideApply, ReadOnly), records what it applied in an AppliedManifestWork named
<hub hash>-<work name>, reports per-manifest and work conditions and status feedback to the
hub, and deletes what a work no longer declares (unless orphaned). With
--work-service-account it does so as that ServiceAccount (the Helm chart's
<klusterlet>-work-sa, bound to admin, CRDs, Namespaces, RBAC and every ClusterRole labelled
open-cluster-management.io/aggregate-to-work: "true"), so a manifest beyond its rights fails
with the verb and resource in its Applied condition; the agent's own identity only requests
its tokens. A work with
spec.executor is applied only where that ServiceAccount may (SubjectAccessReview on this
cluster). Its --feature-gates: ExecutorValidatingCaches caches those checks until RBAC
changes; RawFeedbackJsonString allows JsonRaw feedback values; AddonManagement (default on)
runs the add-on agent: for each add-on enabled on the cluster it requests the add-on agent's
hub credentials (a CSR per registration the hub declares in the ManagedClusterAddOn's status)
and keeps them in the Secret <addon>-hub-kubeconfig in the add-on's namespace, with the
bootstrap kubeconfig's proxy, and reports the add-on's Lease health.

--leader-elect runs the klusterlet as one of several replicas for the cluster (a Deployment
with replicas > 1): the replica holding the Lease --leader-elect-name in
--leader-elect-namespace on the managed cluster runs the agents, another takes over within
--leader-elect-lease-duration when it dies (at once when it stops cleanly) and reuses the hub
kubeconfig secret. A replica that fails to renew the Lease exits non-zero. The defaults are
OCM's (137 s, 107 s, 26 s).

OCM's Default and Hosted modes run two agents: one with --disable-work-agent (registration
and add-ons) and one with --work-only, which registers nothing: it waits for
--hub-kubeconfig-secret in --agent-namespace (not ready until then), applies the cluster's
ManifestWorks with the identity stored there, and starts its work agent again when the
registration agent rotates the certificate. It elects on its own Lease
(--leader-elect-name, default ` + klusterlet.DefaultWorkLeaderElectionName + `). In Hosted mode it
reaches the managed cluster through --managed-kubeconfig-secret too (OCM's
external-managed-kubeconfig-work): a change of either secret starts its work agent again.

The flags --cluster-annotations, --cluster-labels, --external-server-urls,
--reserved-cluster-claim-suffixes, --hosting-cluster-claim, --hub-host-alias and the
--*kube-api-qps/--*kube-api-burst flags carry Klusterlet fields; each flag's help names
its field.

--metrics-bind-address serves Prometheus metrics at /metrics, --health-probe-bind-address
/healthz and /readyz (ready once the agents run and have read the bootstrap or hub
kubeconfig; a standby replica is ready), on every replica.

Hosted mode (OCM's): the agent runs on a management cluster, outside the cluster it manages.
--kubeconfig then reaches the management cluster (in-cluster when no kubeconfig is found),
which holds --agent-namespace, the bootstrap and hub kubeconfig secrets and the leader
election Lease; --managed-kubeconfig FILE or --managed-kubeconfig-secret NAME (key
"kubeconfig" of a secret in --agent-namespace, watched: a changed kubeconfig restarts the
agent's sessions with it) reaches the managed cluster, where the agent reads Nodes, the
version, ClusterClaims and kube-system, and applies ManifestWorks. Add-ons whose
ManagedClusterAddOn carries addon.open-cluster-management.io/hosting-cluster-name get their
secrets written, and their Lease read, on the management cluster. A missing or unusable
managed kubeconfig secret is logged, read again with backoff and fails /readyz, naming the
secret.

The agent takes its settings from its flags only. Installed with flotilla join (or the chart
with render: operator), the klusterlet operator renders its Deployment's flags from the
Klusterlet and rolls the Deployment when the Klusterlet changes (flotilla operator
klusterlet --help).`,
		Example: `  # Join the cluster of ~/.kube/config using a bootstrap kubeconfig file
  flotilla klusterlet --cluster-name cluster1 --bootstrap-kubeconfig bootstrap.kubeconfig

  # Hosted: run on the management cluster, reach the managed one through a secret there
  flotilla klusterlet --kubeconfig management.kubeconfig --cluster-name cluster1 \
    --agent-namespace klusterlet-cluster1 --managed-kubeconfig-secret external-managed-kubeconfig

  # Bootstrap kubeconfig from the secret open-cluster-management-agent/bootstrap-hub-kubeconfig
  flotilla klusterlet --kubeconfig managed.kubeconfig --cluster-name cluster1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if gateErr != nil {
				return gateErr
			}
			opts.Work.ExecutorValidatingCaches = gate.Enabled(featuregates.ExecutorValidatingCaches)
			opts.Work.RawFeedbackJSON = gate.Enabled(featuregates.RawFeedbackJsonString)
			opts.AddOn.Disabled = !gate.Enabled(featuregates.AddonManagement)
			if hosted.managedKubeconfig != "" && hosted.managedKubeconfigSecret != "" {
				return errors.New("--managed-kubeconfig and --managed-kubeconfig-secret are mutually exclusive: give the managed cluster's kubeconfig as a file or as a secret")
			}
			cfg, err := loadRESTConfig(managedKubeconfig)
			if err != nil {
				return err
			}
			if err := hosted.apply(&opts, cfg); err != nil {
				return err
			}
			if err := fields.apply(&opts); err != nil {
				return err
			}
			opts.BootstrapKubeconfigFile = bootstrapKubeconfig
			opts.Registration.Logger = newLogger(cmd.ErrOrStderr(), verbosity)
			setLibraryLoggers(opts.Registration.Logger)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if pprofAddr != "" {
				if err := servePprof(ctx, pprofAddr, opts.Registration.Logger); err != nil {
					return err
				}
			}
			if opts.Work.Only && !cmd.Flags().Changed("leader-elect-name") {
				opts.LeaderElection.Name = klusterlet.DefaultWorkLeaderElectionName
			}
			return klusterlet.Run(ctx, opts)
		},
	}
	f := cmd.Flags()
	// The klusterlet operator renders this process's flags; --klusterlet-name named the
	// supervisor that came before it. It stays accepted (deprecated, hidden, ignored) because
	// the agent Deployments of an install made before still pass it until they are re-rendered.
	var klusterletName string
	f.StringVar(&klusterletName, "klusterlet-name", "", "ignored: the klusterlet operator renders this process's flags")
	_ = f.MarkDeprecated("klusterlet-name", "the klusterlet operator (flotilla operator klusterlet) reads the Klusterlet and renders the agent's flags")
	f.StringVar(&opts.Registration.ClusterName, "cluster-name", "",
		"name of the ManagedCluster on the hub, a DNS label unique on the hub (default: the name stored in the hub kubeconfig secret, else a generated UUID)")
	f.StringVar(&opts.Registration.AgentName, "agent-name", "",
		"agent part of the certificate common name (default: the agent-name stored in the hub kubeconfig secret, else generated once and stored)")
	f.StringVar(&managedKubeconfig, "kubeconfig", "",
		"kubeconfig of the cluster the agent runs on: the managed cluster, or the management cluster with --managed-kubeconfig or --managed-kubeconfig-secret (default: $KUBECONFIG or ~/.kube/config, else in-cluster)")
	hosted.addFlags(f)
	f.StringVar(&bootstrapKubeconfig, "bootstrap-kubeconfig", "",
		"file with the bootstrap kubeconfig for the hub (default: key \"kubeconfig\" of the secret "+registration.DefaultBootstrapKubeconfigSecret+" in --agent-namespace)")
	f.StringVar(&opts.Registration.AgentNamespace, "agent-namespace", registration.DefaultAgentNamespace,
		"namespace for the agent's secrets on the cluster --kubeconfig reaches; created if missing")
	f.StringVar(&opts.Registration.HubKubeconfigSecret, "hub-kubeconfig-secret", registration.DefaultHubKubeconfigSecret,
		"secret in --agent-namespace that stores the hub kubeconfig, tls.crt, tls.key, cluster-name and agent-name")
	f.IntVar(&opts.Registration.MaxCustomClusterClaims, "max-custom-cluster-claims", 20,
		"most custom (non-reserved) ClusterClaims reported to the hub, sorted by name; 0 reports none. Claims labelled open-cluster-management.io/spoke-only are never reported")
	f.Int32Var(&opts.Registration.LeaseDurationSeconds, "lease-duration-seconds", registration.DefaultLeaseDurationSeconds,
		"spec.leaseDurationSeconds of a ManagedCluster the agent creates; the agent always renews at the value on the hub")
	f.DurationVar(&opts.Registration.StatusSyncPeriod, "status-sync-period", registration.DefaultStatusSyncPeriod,
		"periodic status resync; changes to nodes, ClusterClaims and the ManagedCluster are pushed immediately")
	f.Int32Var(&opts.Registration.CSRExpirationSeconds, "csr-expiration-seconds", 0,
		"requested client certificate lifetime (at least 600; 0 leaves it to the hub's signer)")
	f.DurationVar(&opts.Registration.RetryMax, "max-retry-interval", registration.DefaultRetryMax,
		"longest wait between retries while the hub or managed API server fails")
	f.BoolVar(&opts.Work.Disabled, "disable-work-agent", false, "run registration only: do not apply the cluster's ManifestWorks")
	f.StringVar(&opts.Work.ServiceAccount, "work-service-account", "",
		"ServiceAccount in --agent-namespace the work agent applies ManifestWorks as (OCM's <klusterlet>-work-sa), with tokens requested with the agent's identity; empty: the agent's own identity on the managed cluster (--kubeconfig, or the hosted managed kubeconfig)")
	f.DurationVar(&opts.Work.StatusSyncInterval, "status-sync-interval", work.DefaultStatusSyncInterval,
		"how often applied resources are read back for availability and status feedback (feedbackScrapeType Poll)")
	f.IntVar(&opts.Work.MaxFeedbackWatch, "max-feedback-watch", work.DefaultMaxFeedbackWatch,
		"most resources watched for feedbackScrapeType Watch; manifests past it are polled")
	f.DurationVar(&opts.Work.EvictionGracePeriod, "appliedmanifestwork-eviction-grace-period", work.DefaultEvictionGracePeriod,
		"how long an AppliedManifestWork whose ManifestWork is gone from the hub (and what it applied) is kept before deletion")
	if gateErr == nil {
		featuregates.AddFlag(f, gate)
	}
	f.BoolVar(&opts.LeaderElection.Enabled, "leader-elect", false,
		"run as one of several replicas for the cluster: the holder of Lease --leader-elect-namespace/--leader-elect-name on the cluster --kubeconfig reaches runs the agents")
	f.StringVar(&opts.LeaderElection.Namespace, "leader-elect-namespace", "",
		"namespace of the leader election Lease on the cluster --kubeconfig reaches (default: --agent-namespace)")
	f.StringVar(&opts.LeaderElection.Name, "leader-elect-name", klusterlet.DefaultLeaderElectionName, "name of the leader election Lease")
	f.DurationVar(&opts.LeaderElection.LeaseDuration, "leader-elect-lease-duration", leaderelection.DefaultLeaseDuration, "how long a leader's Lease holds without renewal")
	f.DurationVar(&opts.LeaderElection.RenewDeadline, "leader-elect-renew-deadline", leaderelection.DefaultRenewDeadline, "how long the leader tries to renew before it stops leading")
	f.DurationVar(&opts.LeaderElection.RetryPeriod, "leader-elect-retry-period", leaderelection.DefaultRetryPeriod, "how often replicas try to acquire or renew the Lease")
	f.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", "0", "address serving Prometheus metrics, e.g. :8080 (0 disables)")
	f.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", "0",
		"address serving /healthz and /readyz (ready once the agents run and have read a bootstrap or hub kubeconfig; a standby replica is ready), e.g. :8081 (0 disables)")
	fields.add(f, &opts)
	f.IntVar(&verbosity, "v", 0, "log verbosity on standard error: 0 logs what the agent does and its errors, higher values add detail")
	f.StringVar(&pprofAddr, "pprof-bind-address", "", "address serving Go's /debug/pprof profiles, e.g. 127.0.0.1:6060 (default: off)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		// The flag's 0 means "no custom claims", the library's 0 means "default".
		if opts.Registration.MaxCustomClusterClaims == 0 {
			opts.Registration.MaxCustomClusterClaims = -1
		}
		if opts.Registration.RetryMax <= 0 {
			opts.Registration.RetryMax = registration.DefaultRetryMax
		}
		return nil
	}
	return cmd
}

// klusterletFeatureGates are the work agent's gates and, from the registration agent's,
// AddonManagement (the add-on agent).
func klusterletFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	gates := featuregates.DefaultSpokeWorkFeatureGates()
	gates[featuregates.AddonManagement] = featuregates.DefaultSpokeRegistrationFeatureGates()[featuregates.AddonManagement]
	return gates
}

// hostedFlags are the klusterlet's hosted-mode flags: how the agent, running on the cluster
// --kubeconfig reaches (the management cluster), reaches the managed cluster.
type hostedFlags struct {
	managedKubeconfig, managedKubeconfigSecret string
}

func (h *hostedFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&h.managedKubeconfig, "managed-kubeconfig", "",
		"hosted mode: kubeconfig file of the managed cluster; --kubeconfig is then the management cluster the agent runs on")
	f.StringVar(&h.managedKubeconfigSecret, "managed-kubeconfig-secret", "",
		"hosted mode: secret in --agent-namespace on the management cluster (--kubeconfig) whose key \"kubeconfig\" reaches the managed cluster; watched, a change restarts the agent's sessions")
}

// apply sets the registration's clients: cfg (--kubeconfig) is the managed cluster in Default
// mode, the management cluster in hosted mode.
func (h *hostedFlags) apply(opts *klusterlet.Options, cfg *rest.Config) error {
	switch {
	case h.managedKubeconfig != "":
		managed, err := clientcmd.BuildConfigFromFlags("", h.managedKubeconfig)
		if err != nil {
			return fmt.Errorf("--managed-kubeconfig %s: %w", h.managedKubeconfig, err)
		}
		opts.Registration.ManagedConfig, opts.Registration.ManagementConfig = managed, cfg
	case h.managedKubeconfigSecret != "":
		opts.Registration.ManagedKubeconfigSecret, opts.Registration.ManagementConfig = h.managedKubeconfigSecret, cfg
	default:
		opts.Registration.ManagedConfig = cfg
	}
	return nil
}
