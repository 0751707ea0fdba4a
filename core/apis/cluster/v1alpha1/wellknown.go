package v1alpha1

// Reserved ClusterClaim names. The registration agent reports these ahead of
// custom claims, and they do not count against the custom-claim limit.
const (
	// ClusterClaimID is a unique identifier of the cluster.
	ClusterClaimID = "id.k8s.io"
	// ClusterClaimKubeVersion is the cluster's Kubernetes version.
	ClusterClaimKubeVersion = "kubeversion.open-cluster-management.io"
	// ClusterClaimPlatform is the infrastructure the cluster runs on (AWS, GCP, ...).
	ClusterClaimPlatform = "platform.open-cluster-management.io"
	// ClusterClaimProduct is the Kubernetes distribution (OpenShift, EKS, GKE, ...).
	ClusterClaimProduct = "product.open-cluster-management.io"
)

// ReservedClusterClaimNames returns the reserved claim names, in reporting order.
// It returns a fresh slice so callers cannot change the list for others.
func ReservedClusterClaimNames() []string {
	return []string{ClusterClaimID, ClusterClaimKubeVersion, ClusterClaimPlatform, ClusterClaimProduct}
}

// IsReservedClusterClaimName reports whether name is one of the reserved claim names.
func IsReservedClusterClaimName(name string) bool {
	switch name {
	case ClusterClaimID, ClusterClaimKubeVersion, ClusterClaimPlatform, ClusterClaimProduct:
		return true
	}
	return false
}

// DefaultMaxCustomClusterClaims is how many non-reserved claims the agent
// reports unless configured otherwise (flag max-custom-cluster-claims).
const DefaultMaxCustomClusterClaims = 20

// Labels on ClusterClaims.
const (
	// ClusterClaimSpokeOnlyLabel keeps a claim on the managed cluster: it is not
	// copied into the hub's ManagedCluster status.
	ClusterClaimSpokeOnlyLabel = "open-cluster-management.io/spoke-only"
	// ClusterClaimHubManagedLabel marks claims created on the managed cluster on
	// behalf of the hub (rather than by the cluster's own admin).
	ClusterClaimHubManagedLabel = "open-cluster-management.io/hub-managed"
)

// AddOnPlacementScore condition types.
const (
	// AddOnPlacementScoreConditionUpdated is the condition producers set when they refresh the scores.
	AddOnPlacementScoreConditionUpdated = "AddOnPlacementScoreUpdated"
)

// Score bounds of AddOnPlacementScoreItem.Value and of prioritizer scores.
const (
	// MinScore is the lowest valid score.
	MinScore = -100
	// MaxScore is the highest valid score.
	MaxScore = 100
)
