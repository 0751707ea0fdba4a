package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterGateway is how the hub reaches one managed cluster's kube-apiserver: the endpoint
// and the credential. It is named after the cluster and cluster-scoped. Only hub admins
// should read it: it carries the cluster's credential.
//
// +kubebuilder:object:root=true
type ClusterGateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterGatewaySpec   `json:"spec,omitempty"`
	Status ClusterGatewayStatus `json:"status,omitempty"`
}

// ClusterGatewayList is a list of ClusterGateways.
//
// +kubebuilder:object:root=true
type ClusterGatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterGateway `json:"items"`
}

// ClusterGatewaySpec says how to reach the cluster.
type ClusterGatewaySpec struct {
	// provider of the cluster, free text (empty for OCM's managed clusters).
	Provider string `json:"provider"`
	// access is the endpoint and credential.
	Access ClusterAccess `json:"access"`
}

// ClusterAccess is the endpoint and credential of a cluster.
type ClusterAccess struct {
	// endpoint of the cluster's kube-apiserver.
	Endpoint *ClusterEndpoint `json:"endpoint"`
	// credential the hub authenticates with.
	Credential *ClusterAccessCredential `json:"credential,omitempty"`
}

// CredentialType is the kind of credential.
type CredentialType string

const (
	// CredentialTypeServiceAccountToken: a ServiceAccount token (the managed
	// serviceaccount add-on's).
	CredentialTypeServiceAccountToken CredentialType = "ServiceAccountToken"
	// CredentialTypeX509Certificate: a client certificate and key.
	CredentialTypeX509Certificate CredentialType = "X509Certificate"
	// CredentialTypeDynamic: a credential issued before each use.
	CredentialTypeDynamic CredentialType = "Dynamic"
)

// ClusterEndpointType is how the cluster's kube-apiserver is reached.
type ClusterEndpointType string

const (
	// ClusterEndpointTypeConst: at a fixed address (const).
	ClusterEndpointTypeConst ClusterEndpointType = "Const"
	// ClusterEndpointTypeClusterProxy: through the cluster-proxy tunnel; no address.
	ClusterEndpointTypeClusterProxy ClusterEndpointType = "ClusterProxy"
)

// ClusterEndpoint is where the cluster's kube-apiserver is.
type ClusterEndpoint struct {
	// type says which of the other fields applies.
	Type ClusterEndpointType `json:"type"`
	// const is the fixed endpoint (type Const).
	Const *ClusterEndpointConst `json:"const,omitempty"`
}

// ClusterEndpointConst is a fixed endpoint.
type ClusterEndpointConst struct {
	// address is the kube-apiserver's URL, e.g. https://example.com:6443.
	Address string `json:"address"`
	// caBundle verifies the kube-apiserver's serving certificate.
	CABundle []byte `json:"caBundle,omitempty"`
	// insecure skips that verification.
	Insecure *bool `json:"insecure,omitempty"`
	// proxyURL is an HTTP proxy to reach the address through.
	ProxyURL *string `json:"proxy-url,omitempty"`
}

// ClusterAccessCredential is how the hub authenticates to the cluster.
type ClusterAccessCredential struct {
	// type says which of the other fields applies.
	Type CredentialType `json:"type"`
	// serviceAccountToken is the bearer token (type ServiceAccountToken).
	ServiceAccountToken string `json:"serviceAccountToken,omitempty"`
	// x509 is the client certificate (type X509Certificate).
	X509 *X509 `json:"x509,omitempty"`
}

// X509 is a PEM client certificate and key.
type X509 struct {
	Certificate []byte `json:"certificate"`
	PrivateKey  []byte `json:"privateKey"`
}

// HealthyReasonType explains status.healthy: one of the HealthyReasonType* values, a value
// starting with HealthyReasonTypeUnknownPrefix, or the text of a probe error.
type HealthyReasonType string

const (
	HealthyReasonTypeClusterGatewayNotRegistered HealthyReasonType = "ClusterGatewayNotRegistered"
	HealthyReasonTypeCertificateMismatch         HealthyReasonType = "CertificateMismatch"
	HealthyReasonTypeConnectionTimeout           HealthyReasonType = "ConnectionTimeout"
	HealthyReasonTypeUnknownPrefix               HealthyReasonType = "Unknown:"
)

// ClusterGatewayStatus is whether the cluster can be reached.
type ClusterGatewayStatus struct {
	// healthy says whether requests to the cluster can be served.
	Healthy bool `json:"healthy"`
	// healthyReason explains healthy.
	HealthyReason HealthyReasonType `json:"healthyReason,omitempty"`
}

// ClusterGatewayProxyOptions are the options of the proxy subresource (query parameters
// of a request to clustergateways/<name>/proxy/<path>).
//
// +kubebuilder:object:root=true
type ClusterGatewayProxyOptions struct {
	metav1.TypeMeta `json:",inline"`

	// path is the path on the cluster's kube-apiserver, e.g. /healthz or /api/v1.
	Path string `json:"path"`
	// impersonate asks the cluster to impersonate the hub user instead of using the
	// gateway's credential (query impersonate=true).
	Impersonate bool `json:"impersonate"`
}
