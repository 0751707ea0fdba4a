package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=manifestworks,scope=Namespaced
// +kubebuilder:subresource:status

// ManifestWork is a set of Kubernetes manifests the hub wants applied on one managed
// cluster. It lives in that cluster's namespace on the hub; the work agent of the
// cluster watches the namespace, applies the manifests and reports back in status.
type ManifestWork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what should be applied and how. Not required by the schema, as in OCM.
	// +optional
	Spec ManifestWorkSpec `json:"spec"`

	// Status is what the work agent observed.
	// +optional
	Status ManifestWorkStatus `json:"status,omitempty"`
}

// ManifestWorkSpec is the desired workload and how the agent handles it. The same
// struct is the template of ManifestWorkReplicaSet and the agentSpec of AddOnTemplate.
type ManifestWorkSpec struct {
	// Workload lists the manifests to apply.
	Workload ManifestsTemplate `json:"workload,omitempty"`

	// DeleteOption says what happens to applied resources when the work is deleted;
	// unset means Foreground for all of them.
	// +optional
	DeleteOption *DeleteOption `json:"deleteOption,omitempty"`

	// ManifestConfigs tune individual manifests of the workload: status feedback,
	// update strategy and condition rules.
	// +optional
	ManifestConfigs []ManifestConfigOption `json:"manifestConfigs,omitempty"`

	// Executor is the identity the agent checks permissions for before applying.
	// Unset keeps the legacy behaviour of applying with the agent's own identity.
	// +optional
	Executor *ManifestWorkExecutor `json:"executor,omitempty"`
}

// Manifest is one raw Kubernetes object of a workload. The API server keeps it
// verbatim apart from checking apiVersion, kind and metadata.
type Manifest struct {
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	runtime.RawExtension `json:",inline"`
}

// ManifestsTemplate is the list of manifests of a workload.
type ManifestsTemplate struct {
	// Manifests are the objects to apply on the managed cluster, in order.
	// +optional
	Manifests []Manifest `json:"manifests,omitempty"`
}

// DeletePropagationPolicyType says whether deleting a ManifestWork deletes the
// resources it applied.
// +kubebuilder:validation:Enum=Foreground;Orphan;SelectivelyOrphan
type DeletePropagationPolicyType string

const (
	// DeletePropagationPolicyTypeForeground deletes every applied resource before
	// the ManifestWork goes away.
	DeletePropagationPolicyTypeForeground DeletePropagationPolicyType = "Foreground"
	// DeletePropagationPolicyTypeOrphan leaves every applied resource in place.
	DeletePropagationPolicyTypeOrphan DeletePropagationPolicyType = "Orphan"
	// DeletePropagationPolicyTypeSelectivelyOrphan leaves only the resources listed
	// in selectivelyOrphans in place and deletes the rest.
	DeletePropagationPolicyTypeSelectivelyOrphan DeletePropagationPolicyType = "SelectivelyOrphan"
)

// DeleteOption controls garbage collection of applied resources.
type DeleteOption struct {
	// PropagationPolicy is Foreground, Orphan or SelectivelyOrphan. SelectivelyOrphan
	// exists to hand a resource over to another ManifestWork without an outage:
	// create the new work, orphan the resource in the old one, then drop it there.
	// Not required by the schema, which defaults it (as in OCM); but the tag has no
	// omitempty, so Go clients setting a DeleteOption must set the policy too, as
	// an empty string fails the enum.
	// +kubebuilder:default=Foreground
	// +optional
	PropagationPolicy DeletePropagationPolicyType `json:"propagationPolicy"`

	// SelectivelyOrphan lists the resources kept when the policy is SelectivelyOrphan.
	SelectivelyOrphan *SelectivelyOrphan `json:"selectivelyOrphans,omitempty"`

	// TTLSecondsAfterFinished deletes the ManifestWork this many seconds after its
	// condition rules marked it Complete. Unset never deletes it; 0 deletes it
	// right away.
	// +optional
	TTLSecondsAfterFinished *int64 `json:"ttlSecondsAfterFinished,omitempty"`
}

// SelectivelyOrphan names the resources to keep when the work is deleted.
type SelectivelyOrphan struct {
	// OrphaningRules each identify one resource of this ManifestWork.
	// +optional
	OrphaningRules []OrphaningRule `json:"orphaningRules,omitempty"`
}

// ResourceIdentifier points at one resource of the workload by group, resource,
// name and namespace.
type ResourceIdentifier struct {
	// Group is the API group; empty for the core group.
	// +optional
	Group string `json:"group"`

	// Resource is the plural resource name, e.g. deployments.
	// +kubebuilder:validation:Required
	// +required
	Resource string `json:"resource"`

	// Name is the object name.
	// +kubebuilder:validation:Required
	// +required
	Name string `json:"name"`

	// Namespace is the object namespace; empty for cluster-scoped resources.
	// +optional
	Namespace string `json:"namespace"`
}

// OrphaningRule identifies one resource to leave behind on deletion.
type OrphaningRule ResourceIdentifier

// ManifestConfigOption configures one manifest of the workload, found by its
// resource identifier. Rules for a resource this work did not create are ignored.
type ManifestConfigOption struct {
	// ResourceIdentifier selects the manifest.
	// +kubebuilder:validation:Required
	// +required
	ResourceIdentifier ResourceIdentifier `json:"resourceIdentifier"`

	// FeedbackRules choose which status fields are reported back; none when empty.
	// +optional
	FeedbackRules []FeedbackRule `json:"feedbackRules,omitempty"`

	// UpdateStrategy is how the agent writes the manifest; Update when unset.
	// +optional
	UpdateStrategy *UpdateStrategy `json:"updateStrategy,omitempty"`

	// ConditionRules derive ManifestWork conditions from the manifest's live state,
	// at most one rule per condition type.
	// +listType:=map
	// +listMapKey:=condition
	// +optional
	ConditionRules []ConditionRule `json:"conditionRules,omitempty"`

	// FeedbackScrapeType is how the agent collects the status feedback of this
	// manifest: Poll (the default) reads it every status sync interval; Watch
	// registers a watch on the resource and refreshes the feedback on every change,
	// falling back to Poll when the agent's watch limit is reached.
	// +kubebuilder:validation:Enum=Poll;Watch
	// +kubebuilder:default=Poll
	// +optional
	FeedbackScrapeType FeedbackScrapeType `json:"feedbackScrapeType,omitempty"`
}

// FeedbackScrapeType is how status feedback of a manifest is collected.
type FeedbackScrapeType string

const (
	// FeedbackPollType reads the feedback values periodically.
	FeedbackPollType FeedbackScrapeType = "Poll"
	// FeedbackWatchType watches the resource and reads the feedback values on
	// every change.
	FeedbackWatchType FeedbackScrapeType = "Watch"
)

// ConditionRule sets a condition on the manifest from its live object.
// +kubebuilder:validation:XValidation:rule="self.type != 'CEL' || self.condition != \"\"",message="Condition is required for CEL rules"
type ConditionRule struct {
	// Condition is the condition type to set; it keys the list of rules. Complete is
	// special: a completed manifest is no longer updated. For WellKnownConditions
	// rules it names the built-in condition to evaluate, e.g. Complete.
	// +kubebuilder:validation:Required
	// +required
	Condition string `json:"condition"`

	// Type is CEL (evaluate celExpressions) or WellKnownConditions (built-in
	// checks for common k8s.io/api kinds such as Job and Pod).
	// +kubebuilder:validation:Required
	// +required
	Type ConditionRuleType `json:"type"`

	// CelExpressions are CEL expressions over the live manifest (variable object);
	// the condition is True when all of them evaluate to true. An expression with
	// a non-boolean result makes the condition False.
	// +optional
	CelExpressions []string `json:"celExpressions"`

	// Message is written on the condition.
	// +optional
	Message string `json:"message"`

	// MessageExpression is a CEL expression producing the message; a non-empty
	// result overrides Message. Variables: object (the live manifest) and result
	// (the boolean outcome of celExpressions).
	// +optional
	MessageExpression string `json:"messageExpression"`
}

// ConditionRuleType says how a condition rule is evaluated.
// +kubebuilder:validation:Enum=WellKnownConditions;CEL
type ConditionRuleType string

const (
	// WellKnownConditionsType uses built-in condition checks for common kinds
	// (Complete for Job and Pod).
	WellKnownConditionsType ConditionRuleType = "WellKnownConditions"
	// CelConditionExpressionsType evaluates the rule's CEL expressions.
	CelConditionExpressionsType ConditionRuleType = "CEL"
)

// ManifestWorkExecutor is the identity the work agent acts as.
type ManifestWorkExecutor struct {
	// Subject is that identity. Not required by the schema, as in OCM.
	// +optional
	Subject ManifestWorkExecutorSubject `json:"subject"`
}

// ManifestWorkExecutorSubjectType is the kind of executor identity.
type ManifestWorkExecutorSubjectType string

const (
	// ExecutorSubjectTypeServiceAccount is a service account on the managed cluster.
	ExecutorSubjectTypeServiceAccount ManifestWorkExecutorSubjectType = "ServiceAccount"
)

// ManifestWorkExecutorSubject is the identity whose permissions the agent checks
// before applying each manifest.
type ManifestWorkExecutorSubject struct {
	// Type is the identity kind; only ServiceAccount exists.
	// +kubebuilder:validation:Enum=ServiceAccount
	// +kubebuilder:validation:Required
	// +required
	Type ManifestWorkExecutorSubjectType `json:"type"`

	// ServiceAccount names the service account when Type is ServiceAccount.
	// +optional
	ServiceAccount *ManifestWorkSubjectServiceAccount `json:"serviceAccount,omitempty"`
}

// ManifestWorkSubjectServiceAccount is a service account on the managed cluster.
type ManifestWorkSubjectServiceAccount struct {
	// Namespace of the service account.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	// +required
	Namespace string `json:"namespace"`

	// Name of the service account.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
	// +required
	Name string `json:"name"`
}

// UpdateStrategyType is how the agent writes a manifest to the managed cluster.
type UpdateStrategyType string

const (
	// UpdateStrategyTypeUpdate replaces the live object with an update call.
	UpdateStrategyTypeUpdate UpdateStrategyType = "Update"
	// UpdateStrategyTypeCreateOnly creates the object if missing and never touches
	// it afterwards, leaving ownership to someone else.
	UpdateStrategyTypeCreateOnly UpdateStrategyType = "CreateOnly"
	// UpdateStrategyTypeServerSideApply server-side-applies the manifest; a field
	// owned by another manager makes Applied False with reason ApplyConflict.
	UpdateStrategyTypeServerSideApply UpdateStrategyType = "ServerSideApply"
	// UpdateStrategyTypeReadOnly never writes: the agent only checks the object
	// exists and reads feedback from it. Only metadata is needed in the manifest.
	UpdateStrategyTypeReadOnly UpdateStrategyType = "ReadOnly"
)

// UpdateStrategy is how one manifest is written.
type UpdateStrategy struct {
	// Type is Update, CreateOnly, ServerSideApply or ReadOnly.
	// +kubebuilder:default=Update
	// +kubebuilder:validation:Enum=Update;CreateOnly;ServerSideApply;ReadOnly
	// +kubebuilder:validation:Required
	// +required
	Type UpdateStrategyType `json:"type,omitempty"`

	// ServerSideApply tunes the ServerSideApply type; ignored otherwise.
	// +optional
	ServerSideApply *ServerSideApplyConfig `json:"serverSideApply,omitempty"`
}

// DefaultFieldManager is the server-side-apply field manager used when none is set.
const DefaultFieldManager = "work-agent"

// ServerSideApplyConfig tunes server-side apply of one manifest.
type ServerSideApplyConfig struct {
	// Force takes ownership of conflicting fields.
	// +optional
	Force bool `json:"force"`

	// FieldManager is the apply field manager; it must start with work-agent.
	// +kubebuilder:default=work-agent
	// +kubebuilder:validation:Pattern=`^work-agent`
	// +optional
	FieldManager string `json:"fieldManager,omitempty"`

	// IgnoreFields are fields the agent leaves alone on the managed cluster, at
	// most one entry per condition.
	// +listType:=map
	// +listMapKey:=condition
	// +optional
	IgnoreFields []IgnoreField `json:"ignoreFields,omitempty"`
}

// IgnoreFieldsCondition says when ignored fields are left alone.
type IgnoreFieldsCondition string

const (
	// IgnoreFieldsConditionOnSpokeChange ignores the fields once another actor on
	// the managed cluster changed them.
	IgnoreFieldsConditionOnSpokeChange IgnoreFieldsCondition = "OnSpokeChange"
	// IgnoreFieldsConditionOnSpokePresent ignores the fields whenever the object
	// exists on the managed cluster.
	IgnoreFieldsConditionOnSpokePresent IgnoreFieldsCondition = "OnSpokePresent"
)

// IgnoreField is a set of fields not enforced while a condition holds. The fields
// are selected by any mix of JSON paths, JSON pointers and jq path expressions,
// at least one in all; the agent removes them in that order before applying.
// The rule only tests presence (each list has MinItems 1): a cheaper rule fits the CEL cost
// budget also where the type is nested in further lists (AddOnTemplate's agentSpec).
// +kubebuilder:validation:XValidation:rule="has(self.jsonPaths) || has(self.jsonPointers) || has(self.jqPathExpressions)",message="at least one of jsonPaths, jsonPointers or jqPathExpressions must be set"
type IgnoreField struct {
	// Condition is when the fields are ignored.
	// +kubebuilder:default=OnSpokePresent
	// +kubebuilder:validation:Enum=OnSpokePresent;OnSpokeChange
	// +kubebuilder:validation:Required
	// +required
	Condition IgnoreFieldsCondition `json:"condition"`

	// JSONPaths are kubectl-style JSON paths of the ignored fields, e.g. .spec.replicas.
	// +kubebuilder:validation:MinItems=1
	// +optional
	JSONPaths []string `json:"jsonPaths,omitempty"`

	// JSONPointers are RFC 6901 JSON pointers of the ignored fields, e.g.
	// /spec/replicas; in a key, ~ is written ~0 and / is written ~1.
	// +kubebuilder:validation:MinItems=1
	// +optional
	JSONPointers []string `json:"jsonPointers,omitempty"`

	// JQPathExpressions are jq path expressions selecting the ignored fields, e.g.
	// .spec.template.spec.containers[] | select(.name == "sidecar") | .image.
	// +kubebuilder:validation:MinItems=1
	// +optional
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
}

// FeedBackType is how status values are picked from a live resource.
// +kubebuilder:validation:Enum=WellKnownStatus;JSONPaths
type FeedBackType string

const (
	// WellKnownStatusType reports a fixed set of status fields for well-known kinds
	// (see the WellKnown* feedback names).
	WellKnownStatusType FeedBackType = "WellKnownStatus"
	// JSONPathsType reports the fields named by the rule's jsonPaths.
	JSONPathsType FeedBackType = "JSONPaths"
)

// FeedbackRule picks status fields of a manifest to report to the hub.
type FeedbackRule struct {
	// Type is WellKnownStatus or JSONPaths; JSONPaths needs jsonPaths.
	// +kubebuilder:validation:Required
	// +required
	Type FeedBackType `json:"type"`

	// JsonPaths are the fields to report, each under its own name.
	// +listType:=map
	// +listMapKey:=name
	// +optional
	JsonPaths []JsonPath `json:"jsonPaths,omitempty"`
}

// JsonPath names one field to report.
type JsonPath struct {
	// Name is the alias the value is reported under.
	// +kubebuilder:validation:Required
	// +required
	Name string `json:"name"`

	// Version of the resource to read the path from; the latest when unset.
	// +optional
	Version string `json:"version,omitempty"`

	// Path is a kubectl-style JSONPath into the resource that must select a single
	// integer, boolean or string (or JSON when raw feedback is enabled). A missing
	// field reports nothing; a structure makes StatusFeedbackSynced False.
	// +kubebuilder:validation:Required
	// +required
	Path string `json:"path"`
}

// ManifestWorkStatus is what the work agent reports.
type ManifestWorkStatus struct {
	// Conditions summarise the whole work: Applied, Progressing, Available,
	// Degraded (and Deleted, Complete where used).
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ResourceStatus reports each manifest separately.
	// +optional
	ResourceStatus ManifestResourceStatus `json:"resourceStatus,omitempty"`
}

// ManifestResourceStatus holds the per-manifest status.
type ManifestResourceStatus struct {
	// Manifests has one entry per manifest, with Progressing, Applied, Available
	// and Degraded conditions.
	Manifests []ManifestCondition `json:"manifests,omitempty"`
}

// ManifestCondition is the status of one manifest on the managed cluster.
type ManifestCondition struct {
	// ResourceMeta identifies the manifest.
	// +required
	ResourceMeta ManifestResourceMeta `json:"resourceMeta"`

	// StatusFeedbacks are the values picked by the feedback rules.
	// +optional
	StatusFeedbacks StatusFeedbackResult `json:"statusFeedback,omitempty"`

	// Conditions of this manifest.
	// +required
	Conditions []metav1.Condition `json:"conditions"`
}

// ManifestResourceMeta identifies a manifest by position, kind and resource.
type ManifestResourceMeta struct {
	// Ordinal is the index of the manifest in spec.workload.manifests.
	// +required
	Ordinal int32 `json:"ordinal"`

	// Group is the API group.
	// +optional
	Group string `json:"group"`

	// Version is the API version.
	// +optional
	Version string `json:"version"`

	// Kind is the object kind.
	// +optional
	Kind string `json:"kind"`

	// Resource is the plural resource name.
	// +optional
	Resource string `json:"resource"`

	// Name is the object name.
	// +optional
	Name string `json:"name"`

	// Namespace is the object namespace.
	// +optional
	Namespace string `json:"namespace"`
}

// StatusFeedbackResult holds the reported values of one manifest.
type StatusFeedbackResult struct {
	// Values are the reported fields.
	// +listType:=map
	// +listMapKey:=name
	// +optional
	Values []FeedbackValue `json:"values,omitempty"`
}

// FeedbackValue is one reported field.
type FeedbackValue struct {
	// Name is the alias from the feedback rule (or the well-known name).
	// +kubebuilder:validation:Required
	// +required
	Name string `json:"name"`

	// Value is the field's value.
	// +kubebuilder:validation:Required
	// +required
	Value FieldValue `json:"fieldValue"`
}

// ValueType is the type of a reported value.
// +kubebuilder:validation:Enum=Integer;String;Boolean;JsonRaw
type ValueType string

const (
	// Integer values are in FieldValue.Integer.
	Integer ValueType = "Integer"
	// String values are in FieldValue.String.
	String ValueType = "String"
	// Boolean values are in FieldValue.Boolean.
	Boolean ValueType = "Boolean"
	// JsonRaw values (lists and objects) are in FieldValue.JsonRaw as JSON text.
	JsonRaw ValueType = "JsonRaw"
)

// FieldValue is a typed value; the member matching Type is set.
type FieldValue struct {
	// Type is Integer, String, Boolean or JsonRaw.
	// +kubebuilder:validation:Required
	// +required
	Type ValueType `json:"type"`

	// Integer is set for type Integer.
	// +optional
	Integer *int64 `json:"integer,omitempty"`

	// String is set for type String.
	// +optional
	String *string `json:"string,omitempty"`

	// Boolean is set for type Boolean.
	// +optional
	Boolean *bool `json:"boolean,omitempty"`

	// JsonRaw is set for type JsonRaw, at most 1024 bytes of JSON.
	// +kubebuilder:validation:MaxLength=1024
	JsonRaw *string `json:"jsonRaw,omitempty"`
}

// +kubebuilder:object:root=true

// ManifestWorkList is a list of ManifestWorks.
type ManifestWorkList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ManifestWorks.
	Items []ManifestWork `json:"items"`
}
