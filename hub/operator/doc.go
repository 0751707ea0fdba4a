// Package operator makes the hub take its configuration from OCM's operator API: the
// ClusterManager (operator.open-cluster-management.io/v1) named "cluster-manager", as OCM's
// cluster-manager operator does, without an operator of its own. RunHub supervises the hub
// (hub/manager) in-process:
//
//  1. It reads the ClusterManager; without one the hub runs from its flags.
//  2. It builds the hub from the flags with the ClusterManager's settings over them and starts
//     it under a context of its own.
//  3. A watch on the ClusterManager, outside the hub's manager so that it runs on every
//     replica whether or not it leads, stops that hub when the settings it would give differ
//     from those the hub runs with (the hub hands its leader Lease over as it stops: hub/manager
//     releases it on cancel), logs what changed and goes back to step 2. Editing the ClusterManager,
//     e.g. `kubectl edit clustermanager cluster-manager`, thus takes effect without restarting
//     the process. A hub that fails is started again after a backoff (1 s doubling to 1 min).
//
// # Settings taken from the ClusterManager
//
// The feature gates of spec.registrationConfiguration, spec.workConfiguration and
// spec.addOnManagerConfiguration (mode Enable or Disable) are set over the defaults and
// --feature-gates. Each list takes the gates the hub implements from the OCM component it
// configures: workConfiguration NilExecutorValidating, ManifestWorkReplicaSet and
// CleanUpCompletedManifestWork (OCM's hub work set), addOnManagerConfiguration
// AddonManagement, registrationConfiguration the others (DefaultClusterSet,
// ManagedClusterAutoApproval). A gate the hub does not implement there (OCM's
// CloudEventsDrivers, ResourceCleanup, a misspelling...) is ignored, and the
// ValidFeatureGates condition names it, as OCM's operator does.
//
// With ManagedClusterAutoApproval on, registrationConfiguration.autoApproveUsers and the csr
// registration driver's autoApprovedIdentities replace --autoapprove-users: their first-time
// CSRs are approved and their clusters accepted, for any cluster name unless
// --autoapprove-cluster-patterns narrows it (OCM's --cluster-auto-approval-users).
//
// The rest of the spec describes how OCM's operator deploys its separate controllers: image
// pull specs, nodePlacement, deployOption (Default or Hosted mode, webhook bind
// configuration), resourceRequirement, placementConfiguration and serverConfiguration,
// workConfiguration.workDriver, registrationDrivers other than csr, networkPolicyConfiguration.
// Flotilla's hub is one binary in one Deployment, which the Helm chart
// (charts/flotilla-hub) describes: its image, replicas, resources, node selector,
// tolerations and flags are chart values. RunHub does not act on those fields.
//
// Deleting the ClusterManager brings the hub back to its flags; nothing is cleaned up (OCM's
// operator removes the hub it deployed; Flotilla's hub is removed with its Helm release).
//
// # Status
//
// The hub that leads writes the ClusterManager's status (server-side apply, field manager
// FieldManager) once its webhooks serve, and only while the ClusterManager asks for the
// settings it runs with, so observedGeneration says which generation the running hub
// follows:
//
//   - Applied True, ClusterManagerApplied, naming the enabled feature gates.
//   - ValidFeatureGates True FeatureGatesAllValid, or False InvalidFeatureGatesExisting
//     naming the gates ignored per component.
//   - HubRegistrationDegraded False RegistrationFunctional and HubPlacementDegraded False
//     PlacementFunctional: those controllers run in the hub that writes.
//   - Progressing False ClusterManagerUpToDate, or True ClusterManagerDeploymentRolling while
//     the hub's Deployment rolls out.
//
// status.generations lists the hub's own Deployment (apps/v1 deployments) with its
// generation when the hub runs in one (Options.Deployment, from $POD_NAMESPACE and
// $FLOTILLA_DEPLOYMENT_NAME): the hub has one Deployment, where OCM's operator lists one per
// controller, so no entry stands for a controller that has no Deployment of its own.
// status.relatedResources lists the CRDs the hub installed (apiextensions.k8s.io/v1
// customresourcedefinitions), its Validating- and MutatingWebhookConfiguration and certificate Secret, its
// leader election Lease and its Deployment. The CRDs of a controller that is switched off are
// left out: every CRD is installed whatever the gates (clients and agents find the API), but
// nothing on the hub acts on manifestworkreplicasets.work.open-cluster-management.io without
// the ManifestWorkReplicaSet gate, or on the addon.open-cluster-management.io kinds without
// AddonManagement. That entry is how the status shows the ManifestWorkReplicaSet controller
// running, where OCM's lists its cluster-manager-work-controller Deployment.
//
// The hub needs get, list and watch on clustermanagers, update and patch on
// clustermanagers/status, and get, list and watch on its Deployment.
//
// The watch, the restart loop with its backoff and the status plumbing are core/operatorrun's,
// shared with klusterlet/operator; this package says what the hub takes from its
// ClusterManager, how it starts and what it reports.
package operator
