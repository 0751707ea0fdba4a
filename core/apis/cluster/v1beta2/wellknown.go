package v1beta2

// Labels.
const (
	// ClusterSetLabel puts a ManagedCluster into the ExclusiveClusterSetLabel
	// set named by its value.
	ClusterSetLabel = "cluster.open-cluster-management.io/clusterset"
)

// Well-known cluster sets the hub maintains when the DefaultClusterSet feature is on.
const (
	// DefaultClusterSetName is the set that clusters without a ClusterSetLabel are put into.
	DefaultClusterSetName = "default"
	// GlobalClusterSetName is the LabelSelector set with an empty selector that contains every cluster.
	GlobalClusterSetName = "global"
)

// Condition types.
const (
	// ManagedClusterSetConditionEmpty is True when the set selects no cluster.
	ManagedClusterSetConditionEmpty = "ClusterSetEmpty"
	// ClusterSetBindingBoundType is True when a binding's ManagedClusterSet exists.
	ClusterSetBindingBoundType = "Bound"
)

// Condition reasons.
const (
	// ConditionReasonClustersSelected is the ClusterSetEmpty reason (status False) when the set has members.
	ConditionReasonClustersSelected = "ClustersSelected"
	// ConditionReasonNoClusterMatched is the ClusterSetEmpty reason (status True) when it has none.
	ConditionReasonNoClusterMatched = "NoClusterMatched"
	// ConditionReasonClusterSetBound is the Bound reason when the set exists.
	ConditionReasonClusterSetBound = "ClusterSetBound"
	// ConditionReasonClusterSetNotFound is the Bound reason when the set does not exist.
	ConditionReasonClusterSetNotFound = "ClusterSetNotFound"
)
