package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/admission"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
)

func newHubCommand() *cobra.Command {
	var (
		kubeconfig, pluginCacheDir, metricsAddr string
		healthProbeAddr                         string
		autoUsers, autoPatterns                 []string
		verbosity                               int
		webhookFlags                            webhook.Flags
		workMaxSize                             int
		policyTimeout                           time.Duration
		policyNamespace                         string
		qps                                     float32
		burst                                   int
		pprofAddr                               string
		placementDebugAddr                      string
		leader                                  manager.LeaderElection
		clusterManagerName                      string
		addons                                  []string
		addonsInstallAll                        bool
		gatewaySecretNamespace                  string
		proxyServerCount                        int
		proxyBindAddr                           string
		components                              []string
		dashboard                               bool
	)
	gate, gateErr := manager.NewFeatureGate()
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run the hub: registration, cluster sets, placement, work, ManifestWorkReplicaSets, admission policies, Wasm plugins",
		Long: `Run the Flotilla hub against the hub API server of --kubeconfig until interrupted.

On start the hub installs the CRDs, the bootstrap identities bound to
system:open-cluster-management:bootstrap (OCM's ServiceAccount
open-cluster-management/agent-registration-bootstrap, the earlier cluster-bootstrap as an alias,
and Kubernetes bootstrap tokens in group system:bootstrappers:managedcluster), the shared agent roles, the
agents' API Priority and Fairness levels (FlowSchemas and PriorityLevelConfigurations
flotilla-managed-cluster-heartbeats for their Lease requests and flotilla-managed-cluster-agents
for the rest, selected by group system:open-cluster-management:managed-clusters, and
flotilla-managed-cluster-bootstrap for joining agents' bootstrap identities), the FlowSchema
flotilla-hub that puts its own requests in the workload-high level (unless it runs as
system:masters, which is exempt) and its own Wasm plugins: csr-renewal always, csr-autoapprove when --autoapprove-cluster-patterns is set.

Admission: every gate (execute-as, accepting clusters, joining and binding cluster sets) is a
Rego policy evaluated by the hub's webhook: the defaults built in (policies/) plus ConfigMaps
labelled flotilla.dev/policy=true in --policy-namespace, reloaded when they change (see
policies/README.md and flotilla policy --help). An evaluation that fails or outlasts
--policy-eval-timeout denies. Turning the webhook off (--webhook-bind-address 0) turns every
admission gate off.

--components runs a subset of the hub's components, named as OCM's cluster-manager names its
Deployments, so each can run, scale and fail on its own (default all: the single-process hub):
  registration-controller: cluster namespaces and RBAC, leases, taints, cluster sets and
    bindings, CSR approval; it installs the CRDs, bootstrap identities, agent roles and flow
    schemas and the built-in plugins; a process without it waits for the CRDs.
  registration-webhook: ManagedCluster defaults and the Rego admission policies of every
    API group but work.open-cluster-management.io (accept, join, bind, your own).
  work-webhook: ManifestWork validation and its cleanup finalizer at create, and the Rego
    admission policies of work.open-cluster-management.io (execute-as, your own); a process
    running both registers the policies of every group.
  work-controller: ManifestWork availability and completion, ManifestWorkReplicaSets.
  placement-controller: placement decisions (--placement-debug-bind-address).
  addon-manager: add-ons (--addons), the add-on kinds' v1alpha1/v1beta1 conversion, the
    dashboard (--dashboard).
A process serves webhooks only with registration-webhook, work-webhook or addon-manager, and
elects no leader when it runs webhook components only; give each process its own
--leader-elect-name, and each process serving webhooks its own --webhook-configuration-name
and --webhook-secret-name (OCM's layout: cluster-manager-<component> and
cluster-manager-<component>-serving-cert): it writes and prunes only its own configurations
and Secret. The hub operator (flotilla operator hub, which flotilla init installs) runs one
process per component in topology Split, the single process in topology Single; the process
takes its settings from its flags only (the operator renders them from the ClusterManager).

` + webhook.FlagsHelp + `
--leader-elect runs the hub as one of several replicas (a Deployment with replicas > 1): the
replica holding the Lease runs the controllers and hands over within --leader-elect-lease-duration
when it dies (at once when it stops cleanly); every replica serves the admission webhooks
and loads the policies. The defaults are OCM's (137 s, 107 s, 26 s).

--health-probe-bind-address serves /healthz (the process runs) and /readyz (the caches have
synced, the webhook server completes TLS handshakes and the policy ConfigMaps are loaded) on
every replica, a standby too;
--metrics-bind-address serves Prometheus metrics at /metrics.

--addons serves built-in add-ons whose agents run inside the klusterlet (none by default):
  cluster-proxy: agents hold tunnels to the hub through the hub API server (the aggregated
    API proxy.flotilla.dev/v1alpha1 on the webhook server); the hub creates the
    ManagedProxyConfiguration cluster-proxy when absent.
  managed-serviceaccount: ManagedServiceAccounts (authentication.open-cluster-management.io)
    get a ServiceAccount and its token on their cluster, reported back to the hub.
  cluster-gateway (needs the other two): the aggregated API cluster.core.oam.dev/v1alpha1;
    clustergateways/<cluster>/proxy reaches the cluster's API server through its tunnel as
    the ServiceAccount cluster-gateway, whose token is copied into
    --gateway-secret-namespace. Who may use it is hub RBAC on clustergateways/proxy.
Enable an add-on on clusters with 'flotilla addon enable', or on every cluster with
--addons-install-all: the ClusterManagementAddOns the hub creates then install over the
Placement global in open-cluster-management-addon (the ManagedClusterSet global, every
cluster, bound there), as upstream's charts' agentInstallAll; the hub creates that namespace,
binding and Placement when absent. A ClusterManagementAddOn that exists keeps its install
strategy. The aggregated APIs need the webhook server (not --webhook-bind-address 0).
--cluster-proxy-bind-address (off by default; needs cluster-proxy) serves the konnectivity
ProxyService that OCM's proxy server serves on port 8090: a konnectivity client dials
<cluster>:443 for a cluster's API server, or the host of a Service that a
ManagedProxyServiceResolver exposes on it. Clients trust ca.crt of Secret
open-cluster-management-cluster-proxy/proxy-server-ca, present tls.crt and tls.key of
proxy-client there and verify the name proxy-entrypoint.open-cluster-management-cluster-proxy
(the hub creates these Secrets and renews the certificates when a fifth of their lifetime
remains, keeping the old CA in ca.crt until it expires: clients should re-read both Secrets
at least daily); whoever can read proxy-client can reach every connected cluster.

--dashboard (off by default) serves the fleet dashboard ('flotilla dashboard --help' shows
what it shows) from the hub itself, as the aggregated API dashboard.flotilla.dev/v1alpha1 on
the webhook server, in the addon-manager process. Viewers reach it through the hub API
server, which authenticates them:
  kubectl proxy
  open http://127.0.0.1:8001` + manager.DashboardPath + `
The API server lets in whoever may get dashboards/proxy in dashboard.flotilla.dev (the
chart's ClusterRole ` + manager.DashboardViewerClusterRole + `, bound to
nobody: bind it to your viewers); the page then shows each viewer only the kinds and
namespaces their own RBAC lets them list (SubjectAccessReviews, cached for seconds and
dropped when RBAC changes). The hub watches everything the page shows with its own identity,
on every replica.

--work-max-size caps the total size of a ManifestWork's manifests (OCM's --manifestLimit).

--placement-debug-bind-address serves OCM's placement debug endpoint over HTTPS (a
self-signed certificate made at start): GET /debug/placements/<namespace>/<name> answers how
the placement is scheduled now, {"filteredPiplieResults":[...],"prioritizeResults":[...]}.
OCM's placement controller serves it on :8443 (--placement-debug-bind-address :8443). A
bearer token is checked with a TokenReview, a request without one is system:anonymous; access
is a SubjectAccessReview of get on the path, so the hub's identity needs create on
tokenreviews and subjectaccessreviews. To let anyone reach it, as OCM's documentation does:
  kubectl create clusterrole "debugger" --verb=get --non-resource-url="/debug/*"
  kubectl create clusterrolebinding debugger --clusterrole=debugger --user=system:anonymous
  curl -k https://127.0.0.1:8443/debug/placements/<namespace>/<name>

--feature-gates accepts only the gates the hub implements:
  DefaultClusterSet (default on): keep the "default" and "global" ManagedClusterSets and put
    clusters without a cluster-set label into "default".
  ManagedClusterAutoApproval (default off): when a CSRApproval plugin (csr-autoapprove or
    your own) approves a cluster's first registration CSR, the hub also accepts the cluster
    (spec.hubAcceptsClient) and says which plugin approved it in an Event and the
    HubAcceptedManagedCluster condition. Off, the plugin approves the CSR only and the admin
    still accepts the cluster (flotilla accept). Only a first join is accepted: a cluster
    accepted before, and perhaps denied since, is left to the admin. The hub's identity
    then needs "update" on managedclusters/accept (group register.open-cluster-management.io).
  CleanUpCompletedManifestWork (default off): delete a ManifestWork
    deleteOption.ttlSecondsAfterFinished seconds after its condition rules made it Complete.
  EphemeralIdentity (default off, as in managed-serviceaccount; needs the add-on
    managed-serviceaccount): delete a ManagedServiceAccount spec.ttlSecondsAfterCreation
    seconds after its creation; its token Secret and ServiceAccount go with it. Off, the
    field is ignored and a Warning Event EphemeralIdentityDisabled on the object says so.
  NilExecutorValidating (default off): a ManifestWork (or ManifestWorkReplicaSet) without an
    executor needs "execute-as" for system:serviceaccount::klusterlet-work-sa, the identity
    the work agent then applies it with (policies/execute_as.rego).
  ManifestWorkReplicaSet (default on; off in OCM): run the ManifestWorkReplicaSet controller,
    which creates a ManifestWork from the template in each cluster its placements select,
    following each placement's rollout strategy ('flotilla rollout status NS/NAME'). The
    annotation work.flotilla.dev/rollback-on-failure: "true" rolls updated clusters back to
    the last template that completed when maxFailures stops a rollout.

OCM's --cluster-auto-approval-users has no alias here, because Flotilla approves through a
plugin that also matches cluster names. OCM's
  --feature-gates ManagedClusterAutoApproval=true --cluster-auto-approval-users U
is in Flotilla
  --feature-gates ManagedClusterAutoApproval=true --autoapprove-users U --autoapprove-cluster-patterns '*'`,
		Example: `  flotilla hub --kubeconfig hub.kubeconfig
  flotilla hub --kubeconfig hub.kubeconfig --autoapprove-cluster-patterns 'dev-*' --feature-gates DefaultClusterSet=false
  flotilla hub --kubeconfig hub.kubeconfig --autoapprove-cluster-patterns 'dev-*' --feature-gates ManagedClusterAutoApproval=true`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if gateErr != nil {
				return gateErr
			}
			run, err := manager.ParseComponents(components)
			if err != nil {
				return fmt.Errorf("--components: %w", err)
			}
			if len(autoUsers) > 0 && len(autoPatterns) == 0 {
				return fmt.Errorf("--autoapprove-users needs --autoapprove-cluster-patterns")
			}
			webhookOpts, err := webhookFlags.Options()
			if err != nil {
				return err
			}
			if policyTimeout <= 0 || policyTimeout >= admission.TimeoutSeconds*time.Second {
				return fmt.Errorf("--policy-eval-timeout %s must be positive and under the webhook's %ds timeout", policyTimeout, admission.TimeoutSeconds)
			}
			if proxyServerCount < 1 {
				return fmt.Errorf("--cluster-proxy-server-count %d must be at least 1", proxyServerCount)
			}
			if workMaxSize <= 0 {
				return fmt.Errorf("--work-max-size %d must be positive", workMaxSize)
			}
			cfg, err := loadRESTConfig(kubeconfig)
			if err != nil {
				return err
			}
			if qps <= 0 || burst <= 0 {
				return fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d must be positive", qps, burst)
			}
			cfg.QPS, cfg.Burst = qps, burst
			logger := newLogger(cmd.ErrOrStderr(), verbosity)
			if pprofAddr != "" {
				if err := servePprof(cmd.Context(), pprofAddr, logger); err != nil {
					return err
				}
			}
			setLibraryLoggers(logger)
			hubOpts := manager.Options{
				Config:                    cfg,
				Run:                       run,
				FeatureGates:              gate,
				PluginCacheDir:            pluginCacheDir,
				MetricsBindAddress:        metricsAddr,
				HealthProbeBindAddress:    healthProbeAddr,
				PlacementDebugBindAddress: placementDebugAddr,
				AutoApprove:               plugininstall.AutoApprove{Users: autoUsers, ClusterNamePatterns: autoPatterns},
				Webhook:                   webhookOpts,
				WorkMaxSize:               workMaxSize,
				PolicyEvalTimeout:         policyTimeout,
				PolicyNamespace:           policyNamespace,
				LeaderElection:            leader,
				Addons:                    addons,
				AddonsInstallAll:          addonsInstallAll,
				GatewaySecretNamespace:    gatewaySecretNamespace,
				ClusterProxyServerCount:   proxyServerCount,
				ClusterProxyBindAddress:   proxyBindAddr,
				Dashboard:                 dashboard,
				Logger:                    logger,
			}
			// A process without the registration controller runs once another has installed the CRDs.
			if err := manager.WaitForCRDs(cmd.Context(), hubOpts); err != nil {
				return err
			}
			h, err := manager.New(hubOpts)
			if err != nil {
				return err
			}
			return h.Start(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&components, "components", []string{manager.AllComponents},
		"hub components this process runs: all, or any of "+strings.Join(manager.ComponentNames(), ", "))
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	// The hub operator (flotilla operator hub) reads the ClusterManager and renders these flags.
	// The chart passes this flag no more; it stays accepted (deprecated, hidden, ignored) because
	// the Deployments of an install made before still pass it until they are re-rendered.
	f.StringVar(&clusterManagerName, "cluster-manager-name", "", "ignored: the hub operator reads the ClusterManager")
	_ = f.MarkDeprecated("cluster-manager-name", "the hub operator (flotilla operator hub) reads the ClusterManager and renders the hub's flags")
	f.BoolVar(&leader.Enabled, "leader-elect", false,
		"run as one of several hub replicas: the holder of Lease --leader-elect-namespace/--leader-elect-name runs the controllers, every replica serves the webhooks")
	f.StringVar(&leader.Namespace, "leader-elect-namespace", manager.DefaultLeaderElectionNamespace, "namespace of the leader election Lease")
	f.StringVar(&leader.Name, "leader-elect-name", manager.DefaultLeaderElectionName, "name of the leader election Lease")
	f.DurationVar(&leader.LeaseDuration, "leader-elect-lease-duration", manager.DefaultLeaseDuration, "how long a leader's Lease holds without renewal")
	f.DurationVar(&leader.RenewDeadline, "leader-elect-renew-deadline", manager.DefaultRenewDeadline, "how long the leader tries to renew before it stops leading")
	f.DurationVar(&leader.RetryPeriod, "leader-elect-retry-period", manager.DefaultRetryPeriod, "how often replicas try to acquire or renew the Lease")
	f.StringVar(&pluginCacheDir, "plugin-cache-dir", "", "directory caching compiled Wasm plugins across restarts (default: no cache)")
	f.StringVar(&metricsAddr, "metrics-bind-address", "0", "address serving Prometheus metrics, e.g. :8080 (0 disables)")
	f.StringVar(&healthProbeAddr, "health-probe-bind-address", "0",
		"address serving /healthz and /readyz (ready once the caches have synced, the webhooks serve and the policies are loaded, on every replica), e.g. :8081 (0 disables)")
	f.StringVar(&placementDebugAddr, "placement-debug-bind-address", "0",
		"address serving the placement debug endpoint over HTTPS, e.g. :8443 as OCM (0 disables)")
	f.StringSliceVar(&autoUsers, "autoapprove-users", nil,
		"users whose first-time cluster CSRs csr-autoapprove approves (default: both bootstrap ServiceAccounts and, unless users are given, bootstrap tokens); OCM's --cluster-auto-approval-users")
	f.StringSliceVar(&autoPatterns, "autoapprove-cluster-patterns", nil,
		"cluster name globs (path.Match) whose first-time CSRs are auto-approved; enables csr-autoapprove")
	webhookFlags.AddFlags(f)
	f.StringSliceVar(&addons, "addons", nil,
		"built-in add-ons to serve: any of "+strings.Join(builtin.Names(), ", ")+" (cluster-gateway needs the other two)")
	f.BoolVar(&addonsInstallAll, "addons-install-all", false,
		"install the --addons on every cluster: their ClusterManagementAddOns, when the hub creates them, install over Placement global in open-cluster-management-addon")
	f.StringVar(&gatewaySecretNamespace, "gateway-secret-namespace", clustergatewayv1alpha1.DefaultSecretNamespace,
		"namespace of the cluster-gateway's credential Secrets (created when absent)")
	f.IntVar(&proxyServerCount, "cluster-proxy-server-count", 1,
		"hub replicas serving cluster-proxy tunnels: each agent keeps a tunnel to that many replicas (set it to the replica count)")
	f.StringVar(&proxyBindAddr, "cluster-proxy-bind-address", "0",
		"address serving cluster-proxy's ProxyService to konnectivity clients with mutual TLS (Secrets proxy-server-ca and proxy-client in open-cluster-management-cluster-proxy), e.g. :8090 (0 disables)")
	f.BoolVar(&dashboard, "dashboard", false,
		"serve the fleet dashboard as the aggregated API dashboard.flotilla.dev (kubectl proxy, then "+manager.DashboardPath+"), each viewer seeing what their RBAC allows")
	f.IntVar(&workMaxSize, "work-max-size", manifestwork.DefaultMaxSize,
		"cap in bytes on the total size of a ManifestWork's manifests (OCM's --manifestLimit)")
	f.DurationVar(&policyTimeout, "policy-eval-timeout", admission.DefaultEvalTimeout,
		"bound on evaluating one admission request's policies; an evaluation that takes longer denies")
	f.StringVar(&policyNamespace, "policy-namespace", policy.DefaultNamespace,
		"namespace of the policy ConfigMaps (labelled flotilla.dev/policy=true)")
	f.Float32Var(&qps, "kube-api-qps", manager.DefaultQPS, "requests a second the hub makes to the hub API server (OCM's --kube-api-qps)")
	f.IntVar(&burst, "kube-api-burst", manager.DefaultBurst, "burst of requests to the hub API server above --kube-api-qps (OCM's --kube-api-burst)")
	f.StringVar(&pprofAddr, "pprof-bind-address", "", "address serving Go's /debug/pprof profiles, e.g. 127.0.0.1:6060 (default: off)")
	f.IntVar(&verbosity, "v", 0, "log verbosity on standard error: 0 logs what the hub does and its errors, higher values add detail")
	if gateErr == nil {
		featuregates.AddFlag(f, gate)
	}
	return cmd
}
