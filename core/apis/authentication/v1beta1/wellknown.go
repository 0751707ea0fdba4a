package v1beta1

import "time"

// Names of the managed-serviceaccount add-on.
const (
	// AddonName is the add-on's ClusterManagementAddOn and ManagedClusterAddOn name.
	AddonName = "managed-serviceaccount"
	// AgentName is the add-on agent's name in its hub identity
	// (system:open-cluster-management:cluster:<cluster>:addon:managed-serviceaccount:agent:addon-agent).
	AgentName = "addon-agent"
	// AgentInstallNamespace is where the agent runs, and creates the ServiceAccounts, on a
	// managed cluster by default.
	AgentInstallNamespace = "open-cluster-management-managed-serviceaccount"
	// DefaultValidity is the token lifetime rotation.validity defaults to (360 days).
	DefaultValidity = 8640 * time.Hour
)

// Labels on the ServiceAccounts and hub Secrets of ManagedServiceAccounts.
const (
	// LabelKeyIsManagedServiceAccount ("true") marks the ServiceAccount on the managed
	// cluster and the token Secret on the hub.
	LabelKeyIsManagedServiceAccount = "authentication.open-cluster-management.io/is-managed-serviceaccount"
	// LabelKeyManagedServiceAccountNamespace and LabelKeyManagedServiceAccountName name the
	// ManagedServiceAccount a Secret was copied from (upstream's ClusterProfile
	// credential syncer).
	LabelKeyManagedServiceAccountNamespace = "authentication.open-cluster-management.io/managed-serviceaccount-namespace"
	LabelKeyManagedServiceAccountName      = "authentication.open-cluster-management.io/managed-serviceaccount-name"
)

// Condition types and reasons of ManagedServiceAccount.
const (
	// ConditionTypeSecretCreated is True (ReasonSecretCreated) once the hub Secret holds
	// a token.
	ConditionTypeSecretCreated = "SecretCreated"
	// ConditionTypeTokenReported is True (ReasonTokenReported) once the current token is
	// in the hub Secret, False (ReasonTokenReportFailed, with the error as message) when
	// the agent could not issue or write it.
	ConditionTypeTokenReported = "TokenReported"

	ReasonSecretCreated     = "SecretCreated"
	ReasonTokenReported     = "TokenReported"
	ReasonTokenReportFailed = "TokenReportFailed"
)

// Keys of the hub Secret of a ManagedServiceAccount.
const (
	// SecretKeyToken holds the ServiceAccount token.
	SecretKeyToken = "token"
	// SecretKeyCA holds the managed cluster's CA bundle.
	SecretKeyCA = "ca.crt"
)
