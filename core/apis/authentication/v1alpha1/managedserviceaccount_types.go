package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManagedServiceAccount asks for a ServiceAccount on the managed cluster whose namespace on
// the hub holds it. The add-on agent creates the ServiceAccount (named as this object, in
// the agent's install namespace), requests a token for it and writes the token and the
// cluster's CA into the hub Secret named as this object (status.tokenSecretRef), renewing it
// before it expires.
//
// This version is deprecated; authentication.open-cluster-management.io/v1beta1 has the same
// schema and is stored.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="authentication.open-cluster-management.io/v1alpha1 ManagedServiceAccount is deprecated; use authentication.open-cluster-management.io/v1beta1 ManagedServiceAccount; version v1alpha1 will be removed in the next release"
type ManagedServiceAccount struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ManagedServiceAccountSpec   `json:"spec,omitempty"`
	Status ManagedServiceAccountStatus `json:"status,omitempty"`
}

// ManagedServiceAccountList is a list of ManagedServiceAccounts.
//
// +kubebuilder:object:root=true
type ManagedServiceAccountList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedServiceAccount `json:"items"`
}

// ManagedServiceAccountSpec is the desired ServiceAccount and token.
type ManagedServiceAccountSpec struct {
	// rotation is how the token is renewed.
	Rotation ManagedServiceAccountRotation `json:"rotation"`

	// ttlSecondsAfterCreation deletes the ManagedServiceAccount this many seconds after
	// its creation, whatever its status (finalizers are honoured). It needs the
	// EphemeralIdentity feature gate.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterCreation *int32 `json:"ttlSecondsAfterCreation,omitempty"`
}

// ManagedServiceAccountStatus is what the agent reported.
type ManagedServiceAccountStatus struct {
	// conditions: ConditionTypeSecretCreated and ConditionTypeTokenReported.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// expirationTimestamp is when the current token expires (as the managed cluster
	// issued it, which may be sooner than rotation.validity asks).
	// +optional
	ExpirationTimestamp *metav1.Time `json:"expirationTimestamp,omitempty"`
	// tokenSecretRef names the hub Secret holding the token (key token) and the managed
	// cluster's CA (key ca.crt).
	TokenSecretRef *SecretRef `json:"tokenSecretRef,omitempty"`
}

// ManagedServiceAccountRotation is how the token is renewed.
type ManagedServiceAccountRotation struct {
	// enabled is ignored: every token is renewed before it expires.
	// +optional
	// +kubebuilder:default=true
	Enabled bool `json:"enabled,omitempty"`
	// validity is the lifetime asked for each token.
	// +optional
	// +kubebuilder:default="8640h0m0s"
	Validity metav1.Duration `json:"validity"`
}

// SecretRef names the hub Secret of a token.
type SecretRef struct {
	// name of the Secret.
	// +required
	Name string `json:"name"`
	// lastRefreshTimestamp is when the token in the Secret was last renewed.
	// +required
	LastRefreshTimestamp metav1.Time `json:"lastRefreshTimestamp"`
}
