package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

// ManifestWorkReplicaSetOverride changes, per cluster, the work that ManifestWorkReplicaSets
// of its namespace write: ordered rules select clusters and manifests and apply one
// overrider each. OCM's ManifestWorkReplicaSet is not changed, so OCM clients keep working.
// Overrides change manifests' content only, never their identity or the rest of the work.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=mwrso,categories=flotilla
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.order`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManifestWorkReplicaSetOverride struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ManifestWorkReplicaSetOverrideSpec `json:"spec"`
	// +optional
	Status ManifestWorkReplicaSetOverrideStatus `json:"status,omitempty"`
}

// ManifestWorkReplicaSetOverrideList is a list of ManifestWorkReplicaSetOverrides.
//
// +kubebuilder:object:root=true
type ManifestWorkReplicaSetOverrideList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManifestWorkReplicaSetOverride `json:"items"`
}

// ManifestWorkReplicaSetOverrideSpec is the desired override.
type ManifestWorkReplicaSetOverrideSpec struct {
	// replicaSets are the ManifestWorkReplicaSets of this namespace the override shapes.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	ReplicaSets []ReplicaSetReference `json:"replicaSets"`
	// order places this override among the overrides of a replica set: lower applies
	// first, equal orders by name; a later override wins.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Order int32 `json:"order,omitempty"`
	// rules apply in the order written; a later rule wins.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(r, self.exists_one(x, x.name == r.name))",message="rule names must be unique"
	// +required
	Rules []OverrideRule `json:"rules"`
}

// ReplicaSetReference names a ManifestWorkReplicaSet in the override's namespace.
type ReplicaSetReference struct {
	// name of the ManifestWorkReplicaSet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// OverrideRule selects clusters and manifests and sets exactly one overrider.
//
// +kubebuilder:validation:XValidation:rule="[has(self.jsonPatch), has(self.mergePatch), has(self.image), has(self.command), has(self.args), has(self.labels), has(self.annotations), has(self.replicas), has(self.env), has(self.expandTemplates), has(self.transform)].filter(x, x).size() == 1",message="a rule sets exactly one of jsonPatch, mergePatch, image, command, args, labels, annotations, replicas, env, expandTemplates, transform"
type OverrideRule struct {
	// name of the rule, unique in the override; failures and works' annotations name it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// clusters the rule applies to; unset: every cluster of the replica set.
	// +optional
	Clusters *ClusterMatch `json:"clusters,omitempty"`
	// manifests of the template the rule changes (any of them matches); unset: every manifest.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Manifests []ManifestSelector `json:"manifests,omitempty"`

	// jsonPatch is an RFC 6902 patch; replace and remove of a missing path fail.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	JSONPatch []JSONPatchOperation `json:"jsonPatch,omitempty"`
	// mergePatch is an RFC 7386 JSON merge patch; its string leaves are templates.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	MergePatch *apiextensionsv1.JSON `json:"mergePatch,omitempty"`
	// image rewrites container image references component-wise.
	// +optional
	Image *ImageOverride `json:"image,omitempty"`
	// command replaces, appends to or prepends to containers' commands.
	// +optional
	Command *ContainerListOverride `json:"command,omitempty"`
	// args replaces, appends to or prepends to containers' args.
	// +optional
	Args *ContainerListOverride `json:"args,omitempty"`
	// labels sets or removes labels of the manifest and of its pod template.
	// +optional
	Labels *MetadataOverride `json:"labels,omitempty"`
	// annotations sets or removes annotations of the manifest and of its pod template.
	// +optional
	Annotations *MetadataOverride `json:"annotations,omitempty"`
	// replicas sets spec.replicas.
	// +optional
	Replicas *ReplicasOverride `json:"replicas,omitempty"`
	// env sets or removes containers' environment variables.
	// +optional
	Env *EnvOverride `json:"env,omitempty"`
	// expandTemplates renders {{ }} in every string of the selected manifests. It is opt-in
	// because manifests may hold "{{" meant for another tool (Argo Workflows, Helm, Prometheus).
	// +optional
	ExpandTemplates *ExpandTemplates `json:"expandTemplates,omitempty"`
	// transform hands each selected manifest to a WasmPlugin of type ManifestTransformer.
	// +optional
	Transform *TransformOverride `json:"transform,omitempty"`
}

// ClusterMatch ANDs its members; empty matches every cluster.
type ClusterMatch struct {
	// labelSelector, claimSelector and celSelector, as a Placement predicate's
	// requiredClusterSelector.
	clusterv1beta1.ClusterSelector `json:",inline"`
	// clusterSets: the cluster is a member of one of these ManagedClusterSets.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	ClusterSets []string `json:"clusterSets,omitempty"`
	// decisionGroups: the cluster is in one of these decision groups of the replica set's placements.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	DecisionGroups []DecisionGroupMatch `json:"decisionGroups,omitempty"`
}

// DecisionGroupMatch names a decision group by name or by index.
//
// +kubebuilder:validation:XValidation:rule="has(self.groupName) != has(self.groupIndex)",message="set groupName or groupIndex"
type DecisionGroupMatch struct {
	// placement is one of the replica set's placementRefs; empty: any.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Placement string `json:"placement,omitempty"`
	// groupName of the decision group.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	GroupName string `json:"groupName,omitempty"`
	// groupIndex of the decision group.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GroupIndex *int32 `json:"groupIndex,omitempty"`
}

// ManifestSelector selects manifests of the template; empty fields match anything. group is
// compared only when kind is set ("" is the core group).
type ManifestSelector struct {
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Kind string `json:"kind,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
}

// JSONPatchOperation is one RFC 6902 operation. CEL cannot see value (schemaless JSON), so
// "add, replace and test take value or valueTemplate, the others neither" is checked by
// override.Compile (the webhook and the controller); the schema checks valueTemplate.
//
// +kubebuilder:validation:XValidation:rule="!has(self.valueTemplate) || self.op in ['add', 'replace', 'test']",message="valueTemplate is for add, replace and test"
// +kubebuilder:validation:XValidation:rule="(self.op in ['move', 'copy']) == has(self.from)",message="from is for move and copy"
// +kubebuilder:validation:XValidation:rule="!has(self.valueType) || has(self.valueTemplate)",message="valueType goes with valueTemplate"
type JSONPatchOperation struct {
	// +kubebuilder:validation:Enum=add;remove;replace;move;copy;test
	// +required
	Op string `json:"op"`
	// path is a JSON pointer.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^(/([^~/]|~[01])*)*$`
	// +required
	Path string `json:"path"`
	// from is the JSON pointer move and copy read.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^(/([^~/]|~[01])*)*$`
	// +optional
	From string `json:"from,omitempty"`
	// value of add, replace and test; its strings are not templates (see valueTemplate).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
	// valueTemplate is rendered, then converted to valueType.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ValueTemplate string `json:"valueTemplate,omitempty"`
	// valueType of the rendered valueTemplate: String (the default), Integer, Number,
	// Boolean or JSON (the rendered text parsed as JSON).
	// +kubebuilder:validation:Enum=String;Integer;Number;Boolean;JSON
	// +optional
	ValueType string `json:"valueType,omitempty"`
}

// Types of a JSON patch operation's valueTemplate.
const (
	ValueTypeString  = "String"
	ValueTypeInteger = "Integer"
	ValueTypeNumber  = "Number"
	ValueTypeBoolean = "Boolean"
	ValueTypeJSON    = "JSON"
)

// ImageOverride rewrites image references [registry/]repository[:tag][@digest] component-wise.
// Each of registry, repository, tag and digest may be a template.
//
// +kubebuilder:validation:XValidation:rule="has(self.registry) || has(self.repository) || has(self.tag) || has(self.digest)",message="set at least one of registry, repository, tag, digest"
// +kubebuilder:validation:XValidation:rule="!(has(self.path) && has(self.containers))",message="path and containers are exclusive"
type ImageOverride struct {
	// containers (and initContainers) by name; empty: all of them.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Containers []string `json:"containers,omitempty"`
	// path is a JSON pointer to an image string, for kinds without a pod template.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^(/([^~/]|~[01])*)*$`
	// +optional
	Path string `json:"path,omitempty"`
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Registry string `json:"registry,omitempty"`
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Repository string `json:"repository,omitempty"`
	// tag; setting it drops a digest unless digest is set too.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Tag string `json:"tag,omitempty"`
	// digest, sha256:<64 hex> once rendered.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Digest string `json:"digest,omitempty"`
}

// Operations of a ContainerListOverride.
const (
	ListReplace = "Replace"
	ListAppend  = "Append"
	ListPrepend = "Prepend"
)

// ContainerListOverride changes a list of strings of containers (command or args).
type ContainerListOverride struct {
	// containers by name; empty: every container (not initContainers).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Containers []string `json:"containers,omitempty"`
	// +kubebuilder:validation:Enum=Replace;Append;Prepend
	// +kubebuilder:default=Replace
	// +optional
	Operation string `json:"operation,omitempty"`
	// values are templates.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	// +required
	Values []string `json:"values"`
}

// MetadataOverride sets and removes keys of labels or annotations.
//
// +kubebuilder:validation:XValidation:rule="has(self.set) || has(self.remove)",message="set or remove a key"
type MetadataOverride struct {
	// set: values are templates.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Set map[string]string `json:"set,omitempty"`
	// remove these keys.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +listType=set
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// ReplicasOverride sets spec.replicas to a value or to a rendered template.
//
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.template)",message="set value or template"
type ReplicasOverride struct {
	// +kubebuilder:validation:Minimum=0
	// +optional
	Value *int32 `json:"value,omitempty"`
	// template is rendered and must parse as an int32 >= 0.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Template string `json:"template,omitempty"`
}

// EnvOverride sets and removes environment variables of containers.
//
// +kubebuilder:validation:XValidation:rule="has(self.set) || has(self.remove)",message="set or remove a variable"
type EnvOverride struct {
	// containers (and initContainers) by name; empty: all of them.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Containers []string `json:"containers,omitempty"`
	// set replaces a variable of that name (also one with valueFrom) or appends it.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Set []EnvValue `json:"set,omitempty"`
	// remove these variables.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	Remove []string `json:"remove,omitempty"`
}

// EnvValue is one environment variable.
type EnvValue struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// value is a template.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Value string `json:"value,omitempty"`
}

// ExpandTemplates renders {{ }} in every string of the selected manifests.
type ExpandTemplates struct{}

// TransformOverride calls a ManifestTransformer WasmPlugin for each selected manifest.
type TransformOverride struct {
	// plugin names a WasmPlugin of type ManifestTransformer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Plugin string `json:"plugin"`
	// params is free JSON handed to the plugin with each call (at most 16 KiB).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Params *apiextensionsv1.JSON `json:"params,omitempty"`
}

// ConditionValid says whether the override's spec compiles.
const ConditionValid = "Valid"

// Reasons of the Valid condition.
const (
	ReasonCompiled             = "Compiled"
	ReasonPluginNotTransformer = "PluginNotTransformer"
	// ReasonInvalidSpec (shared with WasmPlugin's Ready) names the field in its message.
)

// ManifestWorkReplicaSetOverrideStatus is what the hub made of the override.
type ManifestWorkReplicaSetOverrideStatus struct {
	// observedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Valid.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// replicaSets: one entry per replica set the override shaped.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ReplicaSets []ReplicaSetOverrideStatus `json:"replicaSets,omitempty"`
}

// ReplicaSetOverrideStatus is the override's effect on one replica set.
type ReplicaSetOverrideStatus struct {
	// name of the ManifestWorkReplicaSet.
	// +required
	Name string `json:"name"`
	// observedGeneration of the override these counts are for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// revision of the replica set it was rendered in.
	// +optional
	Revision string `json:"revision,omitempty"`
	// clustersMatched: clusters some rule selected.
	// +optional
	ClustersMatched int32 `json:"clustersMatched"`
	// clustersChanged: clusters whose rendered work the override changed.
	// +optional
	ClustersChanged int32 `json:"clustersChanged"`
	// clustersFailed: clusters whose render failed in a rule of this override.
	// +optional
	ClustersFailed int32 `json:"clustersFailed"`
	// failures: the first ten by cluster name.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	Failures []RuleFailure `json:"failures,omitempty"`
}

// RuleFailure is a rule that failed on one cluster.
type RuleFailure struct {
	// rule name.
	// +required
	Rule string `json:"rule"`
	// cluster name.
	// +required
	Cluster string `json:"cluster"`
	// manifest, as "apps/Deployment web/web"; empty when the rule failed before a manifest.
	// +optional
	Manifest string `json:"manifest,omitempty"`
	// message says what failed.
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Message string `json:"message"`
}
