// Package operator makes the klusterlet take its configuration from OCM's operator API: the
// Klusterlet (operator.open-cluster-management.io/v1) named "klusterlet" on the managed
// cluster, as OCM's klusterlet operator does, without an operator of its own.
// RunKlusterlet supervises the agents (klusterlet.Run) in-process:
//
//  1. It reads the Klusterlet; without one the agents run from their flags.
//  2. It runs the agents with the flags' options and the Klusterlet's settings over them,
//     under a context of its own.
//  3. A watch on the Klusterlet, outside the agents so that it runs on every replica whether
//     or not it leads, stops them when the settings it would give differ from those they run
//     with (a leader hands its Lease over as it stops), logs what changed and goes back to
//     step 2. Agents that fail (a lost Lease, a port in use) are started again after a
//     backoff (1 s doubling to 1 min).
//
// # Settings taken from the Klusterlet
//
//   - spec.clusterName: the cluster's name on the hub (--cluster-name). A new name makes the
//     agent register again as that cluster, as it does when the flag changes.
//   - spec.namespace: the agent namespace (--agent-namespace), holding the bootstrap and hub
//     kubeconfig Secrets (and, by default, the leader election Lease).
//   - registrationConfiguration.featureGates: AddonManagement (the add-on agent);
//     workConfiguration.featureGates: ExecutorValidatingCaches and RawFeedbackJsonString.
//     They are set over the defaults and --feature-gates. A gate the klusterlet does not
//     implement in that list (ClusterClaim, MultipleHubs, a misspelling...) is ignored, and
//     the ValidFeatureGates condition names it, as OCM's operator does.
//   - hubApiServerHostAlias {ip, hostname}: connections the agents make to hostname go to ip
//     (registration.Config.HubDial), as the hosts-file entry OCM gives its agents' Pods: the
//     bootstrap identity, the signed one and with it the work and add-on agents' hub clients.
//     TLS still verifies the host name of the kubeconfig (or its tls-server-name). Through a
//     proxy (proxy-url) the proxy resolves the host, as with a hosts file. The kubeconfigs
//     the klusterlet writes for add-on agents name the host unchanged: an add-on agent's Pod
//     needs the entry itself.
//
// The rest of the spec describes how OCM's operator deploys its agents: image pull specs,
// nodePlacement, deployOption, resourceRequirement, priorityClassName, the agents' client
// QPS, externalServerURLs, clusterAnnotations and clusterLabels, bootstrapKubeConfigs
// (MultipleHubs), the registration drivers, clientCertExpirationSeconds,
// appliedManifestWorkEvictionGracePeriod and statusSyncInterval. Flotilla's klusterlet is one
// binary in one Deployment, which the Helm chart (charts/flotilla-klusterlet) describes with
// its values and flags. RunKlusterlet does not act on those fields.
//
// # Status
//
// The agent that runs (with leader election, the leader) writes the Klusterlet's status
// (server-side apply, field manager FieldManager), only while the Klusterlet asks for the
// settings the agents run with, so observedGeneration says which generation they follow:
//
//   - Applied True, KlusterletApplied, naming the cluster, namespace, feature gates and host
//     alias the agents run with.
//   - ValidFeatureGates True FeatureGatesAllValid, or False InvalidFeatureGatesExisting
//     naming the gates ignored per agent.
//   - Available True, KlusterletAvailable: the agents run.
//   - HubConnectionDegraded, checked as OCM's operator does it: False
//     HubConnectionFunctional when the hub kubeconfig Secret's identity may update its
//     ManagedCluster's status (a SelfSubjectAccessReview on the hub: the cluster is
//     accepted); otherwise True with HubKubeConfigSecretMissing, HubKubeConfigMissing (no
//     signed certificate yet), ClusterNameMissing, HubKubeConfigError or
//     HubKubeConfigUnauthorized (not accepted), preceded while the agent has no hub identity
//     by the bootstrap kubeconfig's state: BootstrapSecretMissing, BootstrapSecretError or
//     BootstrapSecretFunctional (e.g. "BootstrapSecretFunctional,HubKubeConfigMissing").
//     It is checked when the Klusterlet or the agent's state changes and every 30 s.
//
// status.generations lists the klusterlet's Deployment (from $POD_NAMESPACE and
// $FLOTILLA_DEPLOYMENT_NAME) with its generation; status.relatedResources the agent
// namespace, the hub kubeconfig and bootstrap Secrets, the add-on namespace, the leader
// election Lease, the Deployment and the CRDs of a managed cluster (ClusterClaim,
// AppliedManifestWork, Klusterlet).
//
// The klusterlet needs get, list and watch on klusterlets, update and patch on
// klusterlets/status, and get, list and watch on its Deployment.
//
// The watch, the restart loop with its backoff and the status plumbing are core/operatorrun's,
// shared with hub/operator; this package says what the agents take from their Klusterlet, how
// they start and what they report.
package operator
