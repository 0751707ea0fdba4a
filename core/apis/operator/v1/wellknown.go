package v1

// Names OCM gives the objects and namespaces of an install.
const (
	// ClusterManagerName is the name of the hub's ClusterManager.
	ClusterManagerName = "cluster-manager"
	// KlusterletName is the name of a managed cluster's Klusterlet (Default mode).
	KlusterletName = "klusterlet"
	// ClusterManagerDefaultNamespace holds the hub's controllers in Default mode.
	ClusterManagerDefaultNamespace = "open-cluster-management-hub"
	// KlusterletDefaultNamespace holds the agent when spec.namespace is unset.
	KlusterletDefaultNamespace = "open-cluster-management-agent"
	// ClusterAnnotationsKeyPrefix is the prefix of the keys of
	// RegistrationConfiguration.ClusterAnnotations.
	ClusterAnnotationsKeyPrefix = "agent.open-cluster-management.io"
)

// Registration authentication types (RegistrationDriver.AuthType,
// RegistrationDriverHub.AuthType, AddOnRegistrationDriver.AuthType).
const (
	// CSRAuthType authenticates with certificates from Kubernetes CSRs.
	CSRAuthType = "csr"
	// AwsIrsaAuthType authenticates with AWS IAM roles for service accounts.
	AwsIrsaAuthType = "awsirsa"
	// GRPCAuthType authenticates through the hub's gRPC server.
	GRPCAuthType = "grpc"
	// TokenAuthType authenticates add-ons with service account tokens.
	TokenAuthType = "token"
)

// Condition types on ClusterManager and Klusterlet status.
const (
	// ConditionClusterManagerApplied: every hub component has been applied.
	ConditionClusterManagerApplied = "Applied"
	// ConditionHubRegistrationDegraded: the hub's registration controller does not serve.
	ConditionHubRegistrationDegraded = "HubRegistrationDegraded"
	// ConditionHubPlacementDegraded: the hub's placement controller does not serve.
	ConditionHubPlacementDegraded = "HubPlacementDegraded"
	// ConditionProgressing: the components are being rolled out.
	ConditionProgressing = "Progressing"
	// ConditionMigrationSucceeded: the storage version migration of the hub's APIs is done.
	ConditionMigrationSucceeded = "MigrationSucceeded"

	// ConditionKlusterletApplied: every agent component has been applied.
	ConditionKlusterletApplied = "Applied"
	// ConditionReadyToApply: the operator can reach the managed cluster (Hosted mode).
	ConditionReadyToApply = "ReadyToApply"
	// ConditionKlusterletAvailable: every agent component is available.
	ConditionKlusterletAvailable = "Available"
	// ConditionHubConnectionDegraded: the agent cannot reach its hub.
	ConditionHubConnectionDegraded = "HubConnectionDegraded"
	// ConditionRegistrationDesiredDegraded: the registration agent does not serve.
	ConditionRegistrationDesiredDegraded = "RegistrationDesiredDegraded"
	// ConditionWorkDesiredDegraded: the work agent does not serve.
	ConditionWorkDesiredDegraded = "WorkDesiredDegraded"
)

// Reasons of ClusterManager conditions, as OCM names them.
const (
	// ReasonClusterManagerApplied: ConditionClusterManagerApplied True, every resource applied.
	ReasonClusterManagerApplied = "ClusterManagerApplied"
	// ReasonRegistrationFunctional: ConditionHubRegistrationDegraded False.
	ReasonRegistrationFunctional = "RegistrationFunctional"
	// ReasonPlacementFunctional: ConditionHubPlacementDegraded False.
	ReasonPlacementFunctional = "PlacementFunctional"
	// ReasonDeploymentRolling: ConditionProgressing True, a Deployment still rolls out.
	ReasonDeploymentRolling = "ClusterManagerDeploymentRolling"
	// ReasonUpToDate: ConditionProgressing False, every Deployment rolled out.
	ReasonUpToDate = "ClusterManagerUpToDate"
)

// Reasons of Klusterlet conditions, as OCM names them.
const (
	// ReasonKlusterletApplied: ConditionKlusterletApplied True, every resource applied.
	ReasonKlusterletApplied = "KlusterletApplied"
	// ReasonKlusterletAvailable: ConditionKlusterletAvailable True.
	ReasonKlusterletAvailable = "KlusterletAvailable"

	// ReasonHubConnectionFunctional: ConditionHubConnectionDegraded False, the hub identity works.
	ReasonHubConnectionFunctional = "HubConnectionFunctional"
	// ReasonHubKubeConfigSecretMissing: the hub kubeconfig Secret cannot be read.
	ReasonHubKubeConfigSecretMissing = "HubKubeConfigSecretMissing"
	// ReasonHubKubeConfigMissing: the hub kubeconfig Secret has no kubeconfig (no signed
	// certificate yet).
	ReasonHubKubeConfigMissing = "HubKubeConfigMissing"
	// ReasonHubKubeConfigError: the hub kubeconfig does not work.
	ReasonHubKubeConfigError = "HubKubeConfigError"
	// ReasonClusterNameMissing: the hub kubeconfig Secret names no cluster.
	ReasonClusterNameMissing = "ClusterNameMissing"
	// ReasonHubKubeConfigUnauthorized: the hub identity may not do what an accepted cluster's
	// may.
	ReasonHubKubeConfigUnauthorized = "HubKubeConfigUnauthorized"
)

// Condition and reasons OCM's operator writes on ClusterManager and Klusterlet status beyond
// those its API names (its helpers and Klusterlet status controller spell them).
const (
	// ConditionValidFeatureGates: every featureGates entry names a gate the component implements.
	ConditionValidFeatureGates = "ValidFeatureGates"
	// ReasonFeatureGatesAllValid: ConditionValidFeatureGates True.
	ReasonFeatureGatesAllValid = "FeatureGatesAllValid"
	// ReasonInvalidFeatureGatesExisting: ConditionValidFeatureGates False; the message names them.
	ReasonInvalidFeatureGatesExisting = "InvalidFeatureGatesExisting"

	// The bootstrap kubeconfig's state, put before a ConditionHubConnectionDegraded reason
	// ("BootstrapSecretFunctional,HubKubeConfigMissing") while the agent has no hub identity.
	ReasonBootstrapSecretFunctional = "BootstrapSecretFunctional"
	ReasonBootstrapSecretMissing    = "BootstrapSecretMissing"
	ReasonBootstrapSecretError      = "BootstrapSecretError"
)
