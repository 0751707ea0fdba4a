// Package addon is the hub's add-on manager, OCM's addon-manager-controller: it acts on the
// ClusterManagementAddOns annotated addon.open-cluster-management.io/lifecycle: addon-manager
// and on template add-ons (a supportedConfig of addontemplates, or of flotilla.dev
// wasmplugins: templates written as Wasm plugins).
//
// Three reconcilers, each with its own field manager, as OCM splits them:
//
//   - InstallReconciler (per ClusterManagementAddOn): the Placements install strategy. A
//     ManagedClusterAddOn in the namespace of every cluster a listed placement selects,
//     labelled as installed by the strategy, and deleted when its cluster leaves every
//     placement; every ManagedClusterAddOn of the add-on gets the ClusterManagementAddOn as
//     owner, so deleting it removes them all (and, through their owner references, their
//     ManifestWorks and everything those applied).
//   - ConfigReconciler (per ClusterManagementAddOn): resolves each ManagedClusterAddOn's
//     configurations (supportedConfigs' defaults, overridden per group and resource by the
//     placement's configs, overridden by the ManagedClusterAddOn's spec.configs), with their
//     spec hashes, and rolls a change out with core/rollout under the placement's
//     rolloutStrategy: an admitted cluster gets the new desiredConfig and Configured=True (its
//     lastTransitionTime the admission, from which progressDeadline counts), the others
//     Configured=False until their turn. It writes the ClusterManagementAddOn's
//     defaultconfigReferences and installProgressions.
//   - DeployReconciler (per ManagedClusterAddOn of a template add-on): renders the
//     AddOnTemplate or Wasm template (hub/addon/render) with the desired configurations into
//     ManifestWorks in the cluster namespace (in hosted mode, the manifests located on the
//     hosting cluster in works in its namespace, removed by the add-on's finalizer), and
//     reports ManifestApplied, HostingClusterValidity, HostingManifestApplied, Progressing
//     (Installing, InstallSucceed, Upgrading, UpgradeSucceed, InstallFailed, UpgradeFailed),
//     lastAppliedConfig once the works are applied and available, and Available from the
//     works' health (WorkloadAvailability) unless the add-on reports a Lease, which the
//     klusterlet watches.
package addon
