package v1beta1

// Labels on PlacementDecisions.
const (
	// PlacementLabel names the Placement a PlacementDecision belongs to.
	PlacementLabel = "cluster.open-cluster-management.io/placement"
	// DecisionGroupIndexLabel carries the decision group index of a PlacementDecision.
	DecisionGroupIndexLabel = "cluster.open-cluster-management.io/decision-group-index"
	// DecisionGroupNameLabel carries the decision group name of a PlacementDecision (empty for unnamed groups).
	DecisionGroupNameLabel = "cluster.open-cluster-management.io/decision-group-name"
)

// Annotations on Placements.
const (
	// PlacementDisableAnnotation (experimental) makes the placement scheduler
	// skip a placement so another scheduler can write its decisions.
	PlacementDisableAnnotation = "cluster.open-cluster-management.io/experimental-scheduling-disable"
)

// MaxClusterDecisionsPerPlacementDecision is the page size of PlacementDecisions.
const MaxClusterDecisionsPerPlacementDecision = 100

// Built-in prioritizer names for ScoreCoordinate.BuiltIn.
const (
	// PrioritizerBalance balances decisions among clusters.
	PrioritizerBalance = "Balance"
	// PrioritizerSteady keeps existing decisions stable.
	PrioritizerSteady = "Steady"
	// PrioritizerResourceAllocatableCPU prefers clusters with more allocatable CPU.
	PrioritizerResourceAllocatableCPU = "ResourceAllocatableCPU"
	// PrioritizerResourceAllocatableMemory prefers clusters with more allocatable memory.
	PrioritizerResourceAllocatableMemory = "ResourceAllocatableMemory"
	// PrioritizerSpread spreads workload evenly over topologies.
	PrioritizerSpread = "Spread"
)

// Condition types on Placement status.
const (
	// PlacementConditionSatisfied is True when every requested decision could be made.
	PlacementConditionSatisfied = "PlacementSatisfied"
	// PlacementConditionMisconfigured is True when the placement's configuration is invalid.
	PlacementConditionMisconfigured = "PlacementMisconfigured"
)

// Condition reasons on Placement status.
const (
	// PlacementReasonNoManagedClusterSetBindings: no binding in the placement namespace (Satisfied False).
	PlacementReasonNoManagedClusterSetBindings = "NoManagedClusterSetBindings"
	// PlacementReasonNoIntersection: none of spec.clusterSets is bound to the namespace (Satisfied False).
	PlacementReasonNoIntersection = "NoIntersection"
	// PlacementReasonAllManagedClusterSetsEmpty: the eligible sets have no members (Satisfied False).
	PlacementReasonAllManagedClusterSetsEmpty = "AllManagedClusterSetsEmpty"
	// PlacementReasonNoManagedClusterMatched: no cluster passes the predicates (Satisfied False).
	PlacementReasonNoManagedClusterMatched = "NoManagedClusterMatched"
	// PlacementReasonAllDecisionsScheduled: every decision was made (Satisfied True).
	PlacementReasonAllDecisionsScheduled = "AllDecisionsScheduled"
	// PlacementReasonNotAllDecisionsScheduled: fewer clusters than requested, or a scheduling error (Satisfied False).
	PlacementReasonNotAllDecisionsScheduled = "NotAllDecisionsScheduled"
	// PlacementReasonMisconfigured: the configuration is invalid (Misconfigured True).
	PlacementReasonMisconfigured = "Misconfigured"
	// PlacementReasonSucceedconfigured: the configuration check passed (Misconfigured False). The spelling is OCM's.
	PlacementReasonSucceedconfigured = "Succeedconfigured"
)
