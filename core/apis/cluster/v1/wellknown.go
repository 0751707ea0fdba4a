package v1

// Condition types on ManagedCluster status.
const (
	// ManagedClusterConditionJoined is True once the agent has connected with its signed certificate.
	ManagedClusterConditionJoined = "ManagedClusterJoined"
	// ManagedClusterConditionHubAccepted is True once spec.hubAcceptsClient is true and the hub has set up the cluster namespace and RBAC.
	ManagedClusterConditionHubAccepted = "HubAcceptedManagedCluster"
	// ManagedClusterConditionHubDenied is set when the hub admin refuses the cluster.
	ManagedClusterConditionHubDenied = "HubDeniedManagedCluster"
	// ManagedClusterConditionAvailable tells whether the cluster's API server is healthy and its agent keeps renewing its lease.
	ManagedClusterConditionAvailable = "ManagedClusterConditionAvailable"
	// ManagedClusterConditionClockSynced tells whether the agent's clock agrees with the hub's.
	ManagedClusterConditionClockSynced = "ManagedClusterConditionClockSynced"
	// ManagedClusterConditionDeleting is present while the hub cleans up a deleted cluster's namespace.
	ManagedClusterConditionDeleting = "Deleting"
)

// Condition reasons on ManagedCluster status.
const (
	// ConditionReasonHubClusterAdminAccepted is the HubAcceptedManagedCluster reason once accepted.
	ConditionReasonHubClusterAdminAccepted = "HubClusterAdminAccepted"
	// ConditionReasonHubClusterAdminDenied is the HubAcceptedManagedCluster reason when hubAcceptsClient is false.
	ConditionReasonHubClusterAdminDenied = "HubClusterAdminDenied"
	// ConditionReasonManagedClusterJoined is the ManagedClusterJoined reason once joined.
	ConditionReasonManagedClusterJoined = "ManagedClusterJoined"
	// ConditionReasonManagedClusterAvailable is the Available reason when healthy.
	ConditionReasonManagedClusterAvailable = "ManagedClusterAvailable"
	// ConditionReasonManagedClusterKubeAPIServerUnavailable is the Available reason when the agent's health probe of its API server fails.
	ConditionReasonManagedClusterKubeAPIServerUnavailable = "ManagedClusterKubeAPIServerUnavailable"
	// ConditionReasonManagedClusterLeaseUpdateStopped is the Available reason (status Unknown) when the agent's lease went stale.
	ConditionReasonManagedClusterLeaseUpdateStopped = "ManagedClusterLeaseUpdateStopped"
	// ConditionReasonManagedClusterClockSynced is the ClockSynced reason when clocks agree.
	ConditionReasonManagedClusterClockSynced = "ManagedClusterClockSynced"
	// ConditionReasonManagedClusterClockOutOfSync is the ClockSynced reason when clocks drift apart.
	ConditionReasonManagedClusterClockOutOfSync = "ManagedClusterClockOutOfSync"
	// ConditionDeletingReasonResourceRemaining: resources are still left in the cluster namespace.
	ConditionDeletingReasonResourceRemaining = "ResourceRemaining"
	// ConditionDeletingReasonNoResource: nothing is left in the cluster namespace.
	ConditionDeletingReasonNoResource = "NoResource"
	// ConditionDeletingReasonResourceError: cleanup hit errors.
	ConditionDeletingReasonResourceError = "DeletingError"
)

// Taint keys the hub manages on ManagedClusters.
const (
	// ManagedClusterTaintUnavailable is added (effect NoSelect, empty value)
	// while the Available condition is False.
	ManagedClusterTaintUnavailable = "cluster.open-cluster-management.io/unavailable"
	// ManagedClusterTaintUnreachable is added (effect NoSelect, empty value)
	// while the Available condition is missing or Unknown.
	ManagedClusterTaintUnreachable = "cluster.open-cluster-management.io/unreachable"
	// ManagedClusterTaintTerminating is added once the ManagedCluster has a deletion timestamp.
	ManagedClusterTaintTerminating = "cluster.open-cluster-management.io/terminating"
)

// Labels.
const (
	// ClusterNameLabelKey carries a cluster's name on objects that belong to it
	// (registration CSRs, addon resources, ...). It is only a hint: anyone who
	// can create the object can set it.
	ClusterNameLabelKey = "open-cluster-management.io/cluster-name"
)

// Annotations.
const (
	// ClusterImageRegistriesAnnotationKey on a ManagedCluster overrides the
	// image registries of the addons running there. The value is JSON:
	// {"registries":[{"source":"quay.io/ocm","mirrors":"quay.io/open-cluster-management"}]}.
	// Registries set in an AddOnDeploymentConfig win over it.
	ClusterImageRegistriesAnnotationKey = "open-cluster-management.io/image-registries"
	// CleanupPriorityAnnotationKey orders the deletion of resources left in a
	// deleted cluster's namespace: an integer in [0,100], higher goes later.
	// Resources without it go first, then those with an invalid value.
	CleanupPriorityAnnotationKey = "open-cluster-management.io/cleanup-priority"
)

// Finalizers.
const (
	// ManagedClusterFinalizer holds a ManagedCluster until the hub has removed
	// the cluster's namespace content and RBAC.
	ManagedClusterFinalizer = "cluster.open-cluster-management.io/api-resource-cleanup"
)

// Identities used by registration: a cluster's agent authenticates to the hub
// with a client certificate whose organizations are
// SubjectPrefix+<cluster> and ManagedClustersGroup, and whose common name is
// SubjectPrefix+<cluster>:<agent>.
const (
	// SubjectPrefix prefixes every user and group Open Cluster Management issues.
	SubjectPrefix = "system:open-cluster-management:"
	// ManagedClustersGroup is the group every registered cluster agent belongs to.
	ManagedClustersGroup = SubjectPrefix + "managed-clusters"
)
