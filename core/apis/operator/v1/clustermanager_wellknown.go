package v1

// ClusterManager condition reasons OCM's cluster-manager operator writes beyond those in
// wellknown.go (ocm pkg/operator/operators/clustermanager/controllers), spelled as OCM
// spells them, and the conditions Flotilla adds.
const (
	// ReasonRuntimeResourceApplyFailed: Applied False, a component object could not be applied.
	ReasonRuntimeResourceApplyFailed = "RuntimeResourceApplyFailed"
	// ReasonServiceAccountSyncFailed: Applied False, a component ServiceAccount could not be applied.
	ReasonServiceAccountSyncFailed = "ServiceAccountSyncFailed"
	// ReasonClusterManagerCRDApplyFailed: Applied False, a CRD could not be applied.
	ReasonClusterManagerCRDApplyFailed = "CRDApplyFailed"
	// ReasonWebhookApplyFailed: Applied False, a webhook configuration could not be applied.
	ReasonWebhookApplyFailed = "WebhookApplyFailed"

	// ReasonGetRegistrationDeploymentFailed: HubRegistrationDegraded True, the
	// registration-controller Deployment cannot be read.
	ReasonGetRegistrationDeploymentFailed = "GetRegistrationDeploymentFailed"
	// ReasonUnavailableRegistrationPod: HubRegistrationDegraded True, replicas unavailable.
	ReasonUnavailableRegistrationPod = "UnavailableRegistrationPod"
	// ReasonGetPlacementDeploymentFailed: HubPlacementDegraded True, the placement-controller
	// Deployment cannot be read.
	ReasonGetPlacementDeploymentFailed = "GetPlacementDeploymentFailed"
	// ReasonUnavailablePlacementPod: HubPlacementDegraded True, replicas unavailable.
	ReasonUnavailablePlacementPod = "UnavailablePlacementPod"
)

// Flotilla's condition on ClusterManager and Klusterlet: which spec fields it acts on.
const (
	// ConditionValidConfiguration: every spec field set is one Flotilla implements.
	ConditionValidConfiguration = "ValidConfiguration"
	// ReasonConfigurationValid: ConditionValidConfiguration True.
	ReasonConfigurationValid = "ConfigurationValid"
	// ReasonUnsupportedFields: ConditionValidConfiguration False; the message lists the JSON
	// paths of the fields ignored.
	ReasonUnsupportedFields = "UnsupportedFields"
	// ReasonUnsupportedConfiguration: Applied False; the spec asks for something Flotilla does
	// not implement (ClusterManager deployOption.mode Hosted, a Klusterlet registrationDriver
	// other than csr, a change of a Klusterlet's deployOption.mode) and nothing new is applied.
	ReasonUnsupportedConfiguration = "UnsupportedConfiguration"
)
