// Package featuregates names the Open Cluster Management feature gates and gives,
// per component, the default state of each gate that component implements. Components
// build their own gate from these sets; there is no process-wide gate. For example:
//
//	gate, err := featuregates.NewGate(featuregates.DefaultHubRegistrationFeatureGates())
//	...
//	featuregates.AddFlag(flags, gate) // accepts --feature-gates=DefaultClusterSet=false
//
// A component's set lists only gates whose behaviour it has: a gate that is accepted
// but does nothing would mislead whoever sets it. The other OCM names are kept as
// constants so that sets can grow as the behaviour arrives.
//
// Each Default*FeatureGates function returns a fresh map, so callers may
// change it without affecting anyone else.
package featuregates

import (
	"fmt"
	"maps"

	"k8s.io/component-base/featuregate"
)

// Feature gate names, spelled as in OCM so that existing --feature-gates flags
// and ClusterManager/Klusterlet featureGates entries keep working.
const (
	// ClusterClaim makes the registration agent report ClusterClaims into
	// ManagedCluster status.clusterClaims, truncating custom claims beyond the
	// max-custom-cluster-claims limit.
	ClusterClaim featuregate.Feature = "ClusterClaim"

	// ClusterProperty makes the registration agent also report About-API ClusterProperties as claims.
	ClusterProperty featuregate.Feature = "ClusterProperty"

	// AddonManagement runs add-on registration, lease-based health and
	// install/rollout controllers (agent and hub).
	AddonManagement featuregate.Feature = "AddonManagement"

	// DefaultClusterSet makes the hub maintain the "default" set (clusters
	// without a clusterset label are put there) and the "global" set (every cluster).
	DefaultClusterSet featuregate.Feature = "DefaultClusterSet"

	// V1beta1CSRAPICompatibility makes the agent use the certificates/v1beta1 CSR API.
	V1beta1CSRAPICompatibility featuregate.Feature = "V1beta1CSRAPICompatibility"

	// NilExecutorValidating makes the work webhook check execute-as permission
	// for the default executor when a ManifestWork names none.
	NilExecutorValidating featuregate.Feature = "NilExecutorValidating"

	// ExecutorValidatingCaches makes the work agent cache executor SubjectAccessReview results.
	ExecutorValidatingCaches featuregate.Feature = "ExecutorValidatingCaches"

	// ManagedClusterAutoApproval makes the hub accept a cluster (spec.hubAcceptsClient)
	// whose first-time registration CSR a CSRApproval plugin approved, such as
	// csr-autoapprove for the users in --autoapprove-users; without it the plugin
	// approves the CSR only and the hub admin still accepts the cluster.
	ManagedClusterAutoApproval featuregate.Feature = "ManagedClusterAutoApproval"

	// ManifestWorkReplicaSet runs the hub controller that fans ManifestWorks out to placement decisions.
	ManifestWorkReplicaSet featuregate.Feature = "ManifestWorkReplicaSet"

	// CloudEventsDrivers lets the hub deliver ManifestWorks over CloudEvents (MQTT or gRPC).
	CloudEventsDrivers featuregate.Feature = "CloudEventsDrivers"

	// RawFeedbackJsonString lets status feedback return non-scalar values as a JSON string.
	RawFeedbackJsonString featuregate.Feature = "RawFeedbackJsonString"

	// ResourceCleanup runs the hub controller that cleans a deleted cluster's namespace.
	ResourceCleanup featuregate.Feature = "ResourceCleanup"

	// MultipleHubs lets the agent choose among several bootstrap kubeconfigs.
	MultipleHubs featuregate.Feature = "MultipleHubs"

	// ClusterProfile runs the hub controller that mirrors ManagedClusters into ClusterProfiles.
	ClusterProfile featuregate.Feature = "ClusterProfile"

	// ClusterImporter auto-imports clusters from cluster providers such as Cluster API.
	ClusterImporter featuregate.Feature = "ClusterImporter"

	// CleanUpCompletedManifestWork deletes Completed ManifestWorks after their TTL.
	CleanUpCompletedManifestWork featuregate.Feature = "CleanUpCompletedManifestWork"

	// ClusterProxy proxies HTTP to managed cluster API servers through the agent's gRPC tunnel.
	ClusterProxy featuregate.Feature = "ClusterProxy"

	// EphemeralIdentity deletes a ManagedServiceAccount spec.ttlSecondsAfterCreation seconds
	// after its creation (managed-serviceaccount's gate, alpha and off there too).
	EphemeralIdentity featuregate.Feature = "EphemeralIdentity"
)

// DefaultSpokeRegistrationFeatureGates are the gates of the registration agent.
func DefaultSpokeRegistrationFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		ClusterClaim:               {Default: true, PreRelease: featuregate.Beta},
		ClusterProperty:            {Default: false, PreRelease: featuregate.Alpha},
		AddonManagement:            {Default: true, PreRelease: featuregate.Beta},
		V1beta1CSRAPICompatibility: {Default: false, PreRelease: featuregate.Alpha},
		MultipleHubs:               {Default: false, PreRelease: featuregate.Alpha},
	}
}

// DefaultHubRegistrationFeatureGates are the gates `flotilla hub` implements:
// DefaultClusterSet (the default and global sets), ManagedClusterAutoApproval
// (a first-time CSR approved by a CSRApproval plugin also accepts its cluster) and,
// from OCM's hub work set with their specs, CleanUpCompletedManifestWork (a Complete
// ManifestWork is deleted deleteOption.ttlSecondsAfterFinished seconds later) and
// NilExecutorValidating (a ManifestWork without executor needs execute-as for the agent's
// klusterlet-work-sa: policies/execute_as.rego), and ManifestWorkReplicaSet, which Flotilla
// turns on by default (OCM's hub work set has it off), and AddonManagement (the add-on
// manager, hub/addon; on by default as in OCM), and from managed-serviceaccount's set
// EphemeralIdentity (ManagedServiceAccounts deleted after spec.ttlSecondsAfterCreation, when
// the add-on managed-serviceaccount is served).
func DefaultHubRegistrationFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		ManifestWorkReplicaSet:       {Default: true, PreRelease: featuregate.Beta},
		AddonManagement:              {Default: true, PreRelease: featuregate.Beta},
		DefaultClusterSet:            {Default: true, PreRelease: featuregate.Alpha},
		ManagedClusterAutoApproval:   {Default: false, PreRelease: featuregate.Alpha},
		CleanUpCompletedManifestWork: {Default: false, PreRelease: featuregate.Alpha},
		NilExecutorValidating:        {Default: false, PreRelease: featuregate.Alpha},
		EphemeralIdentity:            {Default: false, PreRelease: featuregate.Alpha},
	}
}

// DefaultHubAddonManagerFeatureGates are the gates of the hub add-on manager.
func DefaultHubAddonManagerFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		AddonManagement: {Default: true, PreRelease: featuregate.Beta},
	}
}

// DefaultHubWorkFeatureGates are the gates of the hub work webhook and controllers.
func DefaultHubWorkFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		NilExecutorValidating:        {Default: false, PreRelease: featuregate.Alpha},
		ManifestWorkReplicaSet:       {Default: false, PreRelease: featuregate.Alpha},
		CloudEventsDrivers:           {Default: false, PreRelease: featuregate.Alpha},
		CleanUpCompletedManifestWork: {Default: false, PreRelease: featuregate.Alpha},
	}
}

// DefaultSpokeWorkFeatureGates are the gates of the work agent.
func DefaultSpokeWorkFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		ExecutorValidatingCaches: {Default: false, PreRelease: featuregate.Alpha},
		RawFeedbackJsonString:    {Default: false, PreRelease: featuregate.Alpha},
	}
}

// DefaultServerConfigFeatureGates are the gates of the hub's gRPC server.
func DefaultServerConfigFeatureGates() map[featuregate.Feature]featuregate.FeatureSpec {
	return map[featuregate.Feature]featuregate.FeatureSpec{
		ClusterProxy: {Default: false, PreRelease: featuregate.Alpha},
	}
}

// NewGate returns a fresh mutable feature gate knowing the given sets of gates.
// A gate listed in several sets must have the same spec in each.
func NewGate(sets ...map[featuregate.Feature]featuregate.FeatureSpec) (featuregate.MutableFeatureGate, error) {
	merged := map[featuregate.Feature]featuregate.FeatureSpec{}
	for _, set := range sets {
		for name, spec := range set {
			if prev, ok := merged[name]; ok && prev != spec {
				return nil, fmt.Errorf("feature gate %q: conflicting defaults %+v and %+v", name, prev, spec)
			}
		}
		maps.Copy(merged, set)
	}
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(merged); err != nil {
		return nil, fmt.Errorf("registering feature gates: %w", err)
	}
	return gate, nil
}
