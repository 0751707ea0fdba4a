package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// Placement selects ManagedClusters out of the ManagedClusterSets bound to its
// namespace. Selection narrows step by step: sets bound to the namespace (and
// listed in spec.clusterSets, if given), then predicates and taints/tolerations,
// then prioritizers pick numberOfClusters of what is left. The result is
// written to PlacementDecisions labelled
// cluster.open-cluster-management.io/placement=<placement name>; consumers
// deploy to the listed clusters and withdraw from clusters that drop out.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Succeeded",type="string",JSONPath=".status.conditions[?(@.type==\"PlacementSatisfied\")].status"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type==\"PlacementSatisfied\")].reason"
// +kubebuilder:printcolumn:name="SelectedClusters",type="integer",JSONPath=".status.numberOfSelectedClusters"
type Placement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the selection policy.
	// +kubebuilder:validation:Required
	// +required
	Spec PlacementSpec `json:"spec"`

	// status is the outcome of the last scheduling.
	// +optional
	Status PlacementStatus `json:"status,omitempty"`
}

// PlacementSpec is a cluster selection policy. All fields are ANDed; an empty
// spec selects every cluster of every set bound to the namespace.
type PlacementSpec struct {
	// clusterSets restricts selection to these ManagedClusterSets (intersected
	// with the sets bound to the namespace). Empty means every bound set.
	// +optional
	ClusterSets []string `json:"clusterSets,omitempty"`

	// numberOfClusters is how many clusters to select. Unset selects every
	// feasible cluster. When fewer are feasible, all of them are selected and
	// PlacementSatisfied becomes False.
	// +optional
	NumberOfClusters *int32 `json:"numberOfClusters,omitempty"`

	// predicates filter clusters; a cluster passes if any predicate matches (ORed).
	// +optional
	Predicates []ClusterPredicate `json:"predicates,omitempty"`

	// prioritizerPolicy ranks the feasible clusters. Unset uses the default mode
	// and prioritizers.
	// +optional
	PrioritizerPolicy PrioritizerPolicy `json:"prioritizerPolicy"`

	// spreadPolicy spreads decisions across topologies.
	// +optional
	SpreadPolicy SpreadPolicy `json:"spreadPolicy,omitempty"`

	// tolerations let the placement select clusters with matching taints.
	// +optional
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// decisionStrategy splits the decisions into groups.
	// +optional
	DecisionStrategy DecisionStrategy `json:"decisionStrategy,omitempty"`

	// sortBy orders the decisions: ClusterName (the default) by name, Score by
	// descending score (ties by name).
	// +kubebuilder:validation:Enum=ClusterName;Score
	// +kubebuilder:default:=ClusterName
	// +optional
	SortBy PlacementSortBy `json:"sortBy,omitempty"`

	// scoreRateLimit is the least time between two writes of decisions whose only
	// change is scores (a Go duration, e.g. "1m"); a change of selected clusters
	// is written at once.
	// +kubebuilder:default:="1m"
	// +optional
	ScoreRateLimit *metav1.Duration `json:"scoreRateLimit,omitempty"`
}

// PlacementSortBy orders a placement's decisions.
type PlacementSortBy string

const (
	// PlacementSortByClusterName orders decisions by cluster name.
	PlacementSortByClusterName PlacementSortBy = "ClusterName"
	// PlacementSortByScore orders decisions by descending score, then name.
	PlacementSortByScore PlacementSortBy = "Score"
)

// DefaultScoreRateLimit is the default of spec.scoreRateLimit.
const DefaultScoreRateLimit = "1m"

// DecisionGroup is a named subset of the selected clusters.
type DecisionGroup struct {
	// groupName becomes the value of the label
	// cluster.open-cluster-management.io/decision-group-name on the group's PlacementDecisions.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern="^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$"
	// +required
	GroupName string `json:"groupName,omitempty"`

	// groupClusterSelector picks the group's clusters out of the selected ones.
	// +kubebuilder:validation:Required
	// +required
	ClusterSelector GroupClusterSelector `json:"groupClusterSelector,omitempty"`
}

// GroupClusterSelector ANDs its selectors. Empty matches every cluster.
type GroupClusterSelector struct {
	// labelSelector matches cluster labels.
	// +optional
	LabelSelector metav1.LabelSelector `json:"labelSelector,omitempty"`

	// claimSelector matches the clusterClaims in the cluster's status.
	// +optional
	ClaimSelector ClusterClaimSelector `json:"claimSelector,omitempty"`
}

// GroupStrategy divides the selected clusters into decision groups.
type GroupStrategy struct {
	// decisionGroups are filled first; the remaining clusters go into unnamed
	// groups afterwards. No group holds more than clustersPerDecisionGroup
	// clusters: a larger named group is split into several groups with the same
	// name and different indexes.
	// +optional
	DecisionGroups []DecisionGroup `json:"decisionGroups,omitempty"`

	// clustersPerDecisionGroup caps the size of a group, as a count ("25") or
	// a percentage of the selected clusters ("20%" of 100 clusters makes five
	// groups of 20). The default keeps everything in one group.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$`
	// +kubebuilder:default:="100%"
	// +optional
	ClustersPerDecisionGroup intstr.IntOrString `json:"clustersPerDecisionGroup,omitempty"`
}

// DecisionStrategy says how decisions are grouped.
type DecisionStrategy struct {
	// groupStrategy divides the selected clusters into decision groups.
	// +optional
	GroupStrategy GroupStrategy `json:"groupStrategy,omitempty"`
}

// ClusterPredicate is one hard requirement on clusters.
type ClusterPredicate struct {
	// requiredClusterSelector must match for a cluster to be selected by this
	// predicate. A selected cluster that stops matching is eventually removed
	// from the decisions; one that starts matching becomes eligible.
	// +optional
	RequiredClusterSelector ClusterSelector `json:"requiredClusterSelector,omitempty"`
}

// ClusterSelector ANDs its selectors. Empty matches every cluster.
type ClusterSelector struct {
	// labelSelector matches cluster labels.
	// +optional
	LabelSelector metav1.LabelSelector `json:"labelSelector,omitempty"`

	// claimSelector matches the clusterClaims in the cluster's status.
	// +optional
	ClaimSelector ClusterClaimSelector `json:"claimSelector,omitempty"`

	// celSelector matches CEL expressions evaluated against the ManagedCluster.
	// +optional
	CelSelector ClusterCelSelector `json:"celSelector,omitempty"`
}

// ClusterCelSelector is a list of CEL expressions that must all be true.
type ClusterCelSelector struct {
	// celExpressions are evaluated with the variable managedCluster bound to the cluster.
	// +optional
	CelExpressions []string `json:"celExpressions,omitempty"`
}

// ClusterClaimSelector matches cluster claims the way a label selector matches
// labels. Empty matches every cluster.
type ClusterClaimSelector struct {
	// matchExpressions are ANDed requirements on claim names and values.
	// +optional
	MatchExpressions []metav1.LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// PrioritizerPolicy says which prioritizers rank clusters and how much each counts.
type PrioritizerPolicy struct {
	// mode is Additive (the default; prioritizers not listed keep their default
	// weight: 1 for Steady and Balance, 0 for the others) or Exact (prioritizers
	// not listed weigh 0).
	// +kubebuilder:default:=Additive
	// +optional
	Mode PrioritizerPolicyModeType `json:"mode,omitempty"`

	// configurations set prioritizers and their weights.
	// +optional
	Configurations []PrioritizerConfig `json:"configurations,omitempty"`
}

// PrioritizerPolicyModeType is the mode of a PrioritizerPolicy.
type PrioritizerPolicyModeType string

const (
	// PrioritizerPolicyModeAdditive keeps the default prioritizers and adds the configured ones.
	PrioritizerPolicyModeAdditive PrioritizerPolicyModeType = "Additive"
	// PrioritizerPolicyModeExact uses only the configured prioritizers.
	PrioritizerPolicyModeExact PrioritizerPolicyModeType = "Exact"
)

// PrioritizerConfig is one prioritizer with its weight.
type PrioritizerConfig struct {
	// scoreCoordinate names the prioritizer and where its score comes from.
	// +kubebuilder:validation:Required
	// +required
	ScoreCoordinate *ScoreCoordinate `json:"scoreCoordinate,omitempty"`

	// weight multiplies the prioritizer's score (each score is in [-100, 100]);
	// a cluster's final score is the sum of weight*score. 0 disables the
	// prioritizer and a negative weight prefers the lowest scores.
	// +kubebuilder:validation:Minimum:=-10
	// +kubebuilder:validation:Maximum:=10
	// +kubebuilder:default:=1
	// +optional
	Weight int32 `json:"weight,omitempty"`
}

// ScoreCoordinate locates a prioritizer score.
type ScoreCoordinate struct {
	// type is BuiltIn (set builtIn), AddOn (set addOn) or Plugin (set plugin,
	// Flotilla's addition: a WasmPlugin of type Prioritizer).
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=BuiltIn;AddOn;Plugin
	// +kubebuilder:default:=BuiltIn
	// +required
	Type string `json:"type,omitempty"`

	// builtIn names a built-in prioritizer: Balance, Steady,
	// ResourceAllocatableCPU, ResourceAllocatableMemory or Spread.
	// +optional
	BuiltIn string `json:"builtIn,omitempty"`

	// addOn names an AddOnPlacementScore and a score in it.
	// +optional
	AddOn *AddOnScore `json:"addOn,omitempty"`

	// plugin names a WasmPlugin (flotilla.dev/v1alpha1, type Prioritizer) in
	// the hub's namespace that scores the clusters.
	// +optional
	Plugin *PluginScore `json:"plugin,omitempty"`
}

// PluginScore names a Prioritizer WasmPlugin.
type PluginScore struct {
	// name of the WasmPlugin.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// ScoreCoordinate types.
const (
	// ScoreCoordinateTypeBuiltIn reads the score from a built-in prioritizer.
	ScoreCoordinateTypeBuiltIn = "BuiltIn"
	// ScoreCoordinateTypeAddOn reads the score from an AddOnPlacementScore.
	ScoreCoordinateTypeAddOn = "AddOn"
	// ScoreCoordinateTypePlugin reads the score from a Prioritizer WasmPlugin.
	ScoreCoordinateTypePlugin = "Plugin"
)

// AddOnScore names a score published in AddOnPlacementScores.
type AddOnScore struct {
	// resourceName is the name of the AddOnPlacementScore, looked up in each cluster's namespace.
	// +kubebuilder:validation:Required
	// +required
	ResourceName string `json:"resourceName"`

	// scoreName is the entry of status.scores to use.
	// +kubebuilder:validation:Required
	// +required
	ScoreName string `json:"scoreName"`
}

// SpreadPolicy spreads decisions over topologies.
type SpreadPolicy struct {
	// spreadConstraints are applied in order; earlier ones matter more.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	SpreadConstraints []SpreadConstraintsTerm `json:"spreadConstraints,omitempty"`
}

// SpreadConstraintsTerm spreads decisions over the values of one label or claim.
type SpreadConstraintsTerm struct {
	// topologyKey is a label key or a claim name of ManagedClusters.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:MaxLength=316
	TopologyKey string `json:"topologyKey"`

	// topologyKeyType says whether topologyKey is a Label or a Claim.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=Label;Claim
	TopologyKeyType TopologyKeyType `json:"topologyKeyType"`

	// maxSkew is the largest allowed difference between the number of selected
	// clusters in a topology and the smallest such number.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	MaxSkew int32 `json:"maxSkew"`

	// whenUnsatisfiable is DoNotSchedule or ScheduleAnyway.
	// +optional
	// +kubebuilder:validation:Enum=DoNotSchedule;ScheduleAnyway
	// +kubebuilder:default=ScheduleAnyway
	WhenUnsatisfiable UnsatisfiableMaxSkewAction `json:"whenUnsatisfiable"`
}

// TopologyKeyType says what a topologyKey refers to.
type TopologyKeyType string

const (
	// TopologyKeyTypeClaim: the key is a cluster claim name.
	TopologyKeyTypeClaim TopologyKeyType = "Claim"
	// TopologyKeyTypeLabel: the key is a label key.
	TopologyKeyTypeLabel TopologyKeyType = "Label"
)

// UnsatisfiableMaxSkewAction is what to do when maxSkew cannot be met.
type UnsatisfiableMaxSkewAction string

const (
	// DoNotSchedule stops selecting clusters once maxSkew would be exceeded.
	DoNotSchedule UnsatisfiableMaxSkewAction = "DoNotSchedule"
	// ScheduleAnyway keeps selecting clusters regardless of maxSkew.
	ScheduleAnyway UnsatisfiableMaxSkewAction = "ScheduleAnyway"
)

// Toleration lets a placement select clusters carrying a matching taint
// (same key and effect, and a value matched according to operator).
type Toleration struct {
	// key of the taints to tolerate. Empty, with operator Exists, tolerates every taint.
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +kubebuilder:validation:MaxLength=316
	// +optional
	Key string `json:"key,omitempty"`

	// operator is Equal (values must match; the default) or Exists (any value).
	// +kubebuilder:default:="Equal"
	// +optional
	Operator TolerationOperator `json:"operator,omitempty"`

	// value to match with operator Equal; empty with Exists.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Value string `json:"value,omitempty"`

	// effect to match; empty matches every effect.
	// +kubebuilder:validation:Enum:=NoSelect;PreferNoSelect;NoSelectIfNew
	// +optional
	Effect clusterv1.TaintEffect `json:"effect,omitempty"`

	// tolerationSeconds bounds how long a NoSelect/PreferNoSelect taint is
	// tolerated, counted from the taint's timeAdded. Nil tolerates forever.
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// TolerationOperator is how a toleration compares taint values.
type TolerationOperator string

const (
	// TolerationOpExists matches any value.
	TolerationOpExists TolerationOperator = "Exists"
	// TolerationOpEqual matches equal values.
	TolerationOpEqual TolerationOperator = "Equal"
)

// DecisionGroupStatus reports one decision group.
type DecisionGroupStatus struct {
	// decisionGroupIndex of the group; without a decision strategy every decision is in group 0.
	// +optional
	DecisionGroupIndex int32 `json:"decisionGroupIndex"`

	// decisionGroupName from the strategy's decisionGroups; empty for the remainder groups.
	// +optional
	DecisionGroupName string `json:"decisionGroupName"`

	// decisions are the names of the group's PlacementDecisions.
	// +optional
	Decisions []string `json:"decisions"`

	// clusterCount is the number of clusters in the group, at most clustersPerDecisionGroup.
	// +kubebuilder:default:=0
	// +optional
	ClustersCount int32 `json:"clusterCount"`
}

// PlacementStatus is the outcome of scheduling a Placement.
type PlacementStatus struct {
	// numberOfSelectedClusters is how many clusters are selected.
	// +optional
	NumberOfSelectedClusters int32 `json:"numberOfSelectedClusters"`

	// decisionGroups lists the decision groups.
	// +optional
	DecisionGroups []DecisionGroupStatus `json:"decisionGroups"`

	// conditions of the placement.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions"`

	// lastScoreUpdateTime is when the decisions' scores were last written.
	// +optional
	LastScoreUpdateTime *metav1.Time `json:"lastScoreUpdateTime,omitempty"`
}

// PlacementList is a list of Placements.
//
// +kubebuilder:object:root=true
type PlacementList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the placements.
	Items []Placement `json:"items"`
}
