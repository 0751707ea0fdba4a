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
