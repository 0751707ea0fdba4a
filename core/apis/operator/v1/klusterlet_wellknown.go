package v1

// Klusterlet condition reasons OCM's klusterlet operator writes beyond those in wellknown.go,
// spelled as OCM's API (operator/v1 types_klusterlet.go) and its SSAR controller spell them.
const (
	// ReasonKlusterletApplyFailed: Applied False, an object could not be applied.
	ReasonKlusterletApplyFailed = "KlusterletApplyFailed"
	// ReasonKlusterletCRDApplyFailed: Applied False, a CRD could not be applied.
	ReasonKlusterletCRDApplyFailed = "CRDApplyFailed"
	// ReasonManagedClusterResourceApplyFailed: Applied False, an object on the managed cluster
	// could not be applied.
	ReasonManagedClusterResourceApplyFailed = "ManagedClusterResourceApplyFailed"
	// ReasonManagementClusterResourceApplyFailed: Applied False, an object on the management
	// cluster could not be applied.
	ReasonManagementClusterResourceApplyFailed = "ManagementClusterResourceApplyFailed"

	// ReasonKlusterletPrepared: ReadyToApply True, the managed cluster's clients were built from
	// the external-managed-kubeconfig Secret (Hosted modes).
	ReasonKlusterletPrepared = "KlusterletPrepared"
	// ReasonKlusterletPrepareFailed: ReadyToApply False, the managed cluster's clients could not
	// be built; the message carries the error.
	ReasonKlusterletPrepareFailed = "KlusterletPrepareFailed"

	// ReasonKlusterletGetDeploymentFailed: Available, RegistrationDesiredDegraded or
	// WorkDesiredDegraded, an agent Deployment cannot be read.
	ReasonKlusterletGetDeploymentFailed = "GetDeploymentFailed"
	// ReasonKlusterletUnavailablePods: some replicas of an agent Deployment are unavailable.
	ReasonKlusterletUnavailablePods = "UnavailablePods"
	// ReasonKlusterletDeploymentsFunctional: every replica of the agent Deployments is available.
	ReasonKlusterletDeploymentsFunctional = "DeploymentsFunctional"
	// ReasonKlusterletNoAvailablePods: an agent Deployment has no available replica.
	ReasonKlusterletNoAvailablePods = "NoAvailablePods"

	// ReasonBootstrapSecretUnauthorized: the bootstrap kubeconfig may not do what registration
	// needs (put before a HubConnectionDegraded reason, as ReasonBootstrapSecretFunctional).
	ReasonBootstrapSecretUnauthorized = "BootstrapSecretUnauthorized"
)

// Names OCM's klusterlet operator gives what it manages.
const (
	// KlusterletFinalizer holds a Klusterlet until its agents and objects are removed.
	KlusterletFinalizer = "operator.open-cluster-management.io/klusterlet-cleanup"
	// KlusterletHostedFinalizer holds a Hosted Klusterlet until the objects on the managed
	// cluster are removed.
	KlusterletHostedFinalizer = "operator.open-cluster-management.io/klusterlet-hosted-cleanup"
	// KlusterletNamespaceLabel marks a klusterlet namespace on the managed cluster with the
	// Klusterlet's name; the add-on namespace goes with the last namespace so labelled.
	KlusterletNamespaceLabel = "operator.open-cluster-management.io/klusterlet"
	// AddOnDefaultNamespace is the add-on agents' namespace on the managed cluster.
	AddOnDefaultNamespace = "open-cluster-management-agent-addon"

	// ExternalManagedKubeConfigSecret, in the agent namespace of a Hosted Klusterlet (its
	// name) on the management cluster, holds (key kubeconfig) the kubeconfig of the managed
	// cluster the user gives the operator.
	ExternalManagedKubeConfigSecret = "external-managed-kubeconfig"
	// ExternalManagedKubeConfigAgentSecret is the kubeconfig the operator hands the
	// SingletonHosted agent; ...Registration and ...Work those of the Hosted agents.
	ExternalManagedKubeConfigAgentSecret        = "external-managed-kubeconfig-agent"
	ExternalManagedKubeConfigRegistrationSecret = "external-managed-kubeconfig-registration"
	ExternalManagedKubeConfigWorkSecret         = "external-managed-kubeconfig-work"
)

// Flotilla's label on what the klusterlet chart renders in the Hosted modes: the cluster the
// operator applies the object to.
const (
	// TargetLabel is the label; its value is TargetManaged or TargetManagement.
	TargetLabel = "flotilla.dev/target"
	// TargetManaged: the managed cluster, through the external-managed-kubeconfig Secret.
	TargetManaged = "managed"
	// TargetManagement: the management cluster, where the operator and the agents run.
	TargetManagement = "management"
)
