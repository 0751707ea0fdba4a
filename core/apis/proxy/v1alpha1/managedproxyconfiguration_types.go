package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManagedProxyConfiguration configures the cluster-proxy add-on: how the certificates
// between proxy servers and agents are signed, how the hub's proxy server is reached and
// how the agents run. The add-on's default config is the one named DefaultName.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
type ManagedProxyConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ManagedProxyConfigurationSpec   `json:"spec,omitempty"`
	Status ManagedProxyConfigurationStatus `json:"status,omitempty"`
}

// ManagedProxyConfigurationList is a list of ManagedProxyConfigurations.
//
// +kubebuilder:object:root=true
type ManagedProxyConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedProxyConfiguration `json:"items"`
}

// ManagedProxyConfigurationSpec is the desired setup of the cluster-proxy add-on.
type ManagedProxyConfigurationSpec struct {
	// authentication says how the certificates between proxy servers and agents are
	// signed and where they are kept.
	// +required
	Authentication ManagedProxyConfigurationAuthentication `json:"authentication"`
	// proxyServer says how the proxy server on the hub runs and is reached.
	// +required
	ProxyServer ManagedProxyConfigurationProxyServer `json:"proxyServer"`
	// proxyAgent says how the agents on the managed clusters run.
	// +required
	ProxyAgent ManagedProxyConfigurationProxyAgent `json:"proxyAgent"`
	// deploy overrides the ports of the proxy servers and agents.
	// +optional
	Deploy *ManagedProxyConfigurationDeploy `json:"deploy,omitempty"`
	// userServer asks for a rotated serving certificate of the user server.
	// +optional
	UserServer *ManagedProxyConfigurationUserServer `json:"userServer,omitempty"`
}

// ManagedProxyConfigurationStatus is the observed state of a ManagedProxyConfiguration.
type ManagedProxyConfigurationStatus struct {
	// lastObservedGeneration is the generation of the spec the status describes.
	// +optional
	LastObservedGeneration int64 `json:"lastObservedGeneration,omitempty"`
	// conditions: ProxyServerDeployed and the *SecretSigned types (ConditionType*).
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AuthenticationSignerType is who signs the certificates of proxy servers and agents.
// +kubebuilder:validation:Enum=SelfSigned;Provided;CertManager
type AuthenticationSignerType string

const (
	// SelfSigned: a CA generated on the hub (kept in a Secret) signs them. It is the only
	// signer type upstream implements.
	SelfSigned AuthenticationSignerType = "SelfSigned"
)

// ManagedProxyConfigurationAuthentication says how the mTLS certificates between proxy
// servers and agents are signed and stored.
type ManagedProxyConfigurationAuthentication struct {
	// signer signs the server and client certificates.
	// +optional
	Signer ManagedProxyConfigurationCertificateSigner `json:"signer"`
	// dump names the Secrets the signed certificates are written to.
	// +optional
	Dump ManagedProxyConfigurationCertificateDump `json:"dump"`
}

// ManagedProxyConfigurationCertificateSigner chooses the signer.
type ManagedProxyConfigurationCertificateSigner struct {
	// type of signer; only SelfSigned is implemented.
	// +optional
	// +kubebuilder:default=SelfSigned
	Type AuthenticationSignerType `json:"type,omitempty"`
	// selfSigned tunes the self-signed certificates.
	// +optional
	SelfSigned *AuthenticationSelfSigned `json:"selfSigned,omitempty"`
}

// ManagedProxyConfigurationCertificateDump says where the signed certificates go.
type ManagedProxyConfigurationCertificateDump struct {
	// secrets are the names of the Secrets holding the signed certificates.
	// +optional
	Secrets CertificateSigningSecrets `json:"secrets"`
}

// AuthenticationSelfSigned tunes the self-signed certificates.
type AuthenticationSelfSigned struct {
	// additionalSANs are further host names or IPs the certificates are valid for.
	// +optional
	AdditionalSANs []string `json:"additionalSANs,omitempty"`
}

// CertificateSigningSecrets names the Secrets that receive the signed certificates.
type CertificateSigningSecrets struct {
	// signingProxyServerSecretName holds the proxy server's serving certificate for proxy
	// requests.
	// +optional
	// +kubebuilder:default=proxy-server
	SigningProxyServerSecretName string `json:"signingProxyServerSecretName,omitempty"`
	// signingProxyClientSecretName holds the client certificate for sending requests
	// through the proxy server.
	// +optional
	// +kubebuilder:default=proxy-client
	SigningProxyClientSecretName string `json:"signingProxyClientSecretName,omitempty"`
	// signingAgentServerSecretName holds the proxy server's serving certificate for the
	// agents' tunnels.
	// +optional
	// +kubebuilder:default=agent-server
	SigningAgentServerSecretName string `json:"signingAgentServerSecretName,omitempty"`
}

// ManagedProxyConfigurationDeploy overrides deployment details of servers and agents.
type ManagedProxyConfigurationDeploy struct {
	// ports of the proxy server.
	Ports ManagedProxyConfigurationDeployPorts `json:"ports"`
}

// NodePlacement says which Nodes the proxy server's Pods run on.
type NodePlacement struct {
	// nodeSelector the Nodes must match; empty by default.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// tolerations of the Pods; empty by default.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// ManagedProxyConfigurationDeployPorts are the proxy server's ports.
type ManagedProxyConfigurationDeployPorts struct {
	// proxyServer serves proxy requests.
	// +optional
	// +kubebuilder:default=8090
	ProxyServer int32 `json:"proxyServer,omitempty"`
	// agentServer serves the agents' tunnels.
	// +optional
	// +kubebuilder:default=8091
	AgentServer int32 `json:"agentServer,omitempty"`
	// healthServer serves health probes.
	// +optional
	// +kubebuilder:default=8092
	HealthServer int32 `json:"healthServer,omitempty"`
	// adminServer serves debugging and operations.
	// +optional
	// +kubebuilder:default=8095
	AdminServer int32 `json:"adminServer,omitempty"`
}

// ManagedProxyConfigurationProxyServer says how the proxy server runs on the hub.
type ManagedProxyConfigurationProxyServer struct {
	// image of the proxy server.
	// +required
	Image string `json:"image"`
	// replicas of the proxy server; also its --server-count, so that agents find every
	// replica.
	// +optional
	// +kubebuilder:default=3
	Replicas int32 `json:"replicas,omitempty"`
	// inClusterServiceName is the Service through which hub clients reach the proxy
	// server.
	// +optional
	// +kubebuilder:default=proxy-entrypoint
	InClusterServiceName string `json:"inClusterServiceName,omitempty"`
	// namespace the proxy server and its objects live in.
	// +optional
	// +kubebuilder:default=open-cluster-management-cluster-proxy
	Namespace string `json:"namespace,omitempty"`
	// entrypoint says how agents reach the proxy server.
	// +optional
	Entrypoint *ManagedProxyConfigurationProxyServerEntrypoint `json:"entrypoint,omitempty"`
	// additionalArgs are appended to the proxy server's command line.
	// +optional
	AdditionalArgs []string `json:"additionalArgs,omitempty"`
	// nodePlacement of the proxy server's Pods.
	// +optional
	NodePlacement NodePlacement `json:"nodePlacement,omitempty"`
}

// ManagedProxyConfigurationProxyServerEntrypoint is where agents open their tunnels.
type ManagedProxyConfigurationProxyServerEntrypoint struct {
	// type of entrypoint.
	// +required
	Type EntryPointType `json:"type"`
	// loadBalancerService names a LoadBalancer Service on the hub (type
	// LoadBalancerService).
	// +optional
	LoadBalancerService *EntryPointLoadBalancerService `json:"loadBalancerService,omitempty"`
	// hostname is a fixed host name (type Hostname).
	// +optional
	Hostname *EntryPointHostname `json:"hostname,omitempty"`
	// port agents dial.
	// +optional
	// +kubebuilder:default=8091
	// +kubebuilder:validation:Minimum=1
	Port int32 `json:"port,omitempty"`
}

// EntryPointType is how agents reach the proxy server.
// +kubebuilder:validation:Enum=Hostname;LoadBalancerService;PortForward
type EntryPointType string

const (
	// EntryPointTypeLoadBalancerService: agents dial the address of a LoadBalancer
	// Service.
	EntryPointTypeLoadBalancerService EntryPointType = "LoadBalancerService"
	// EntryPointTypeHostname: agents dial a fixed host name.
	EntryPointTypeHostname EntryPointType = "Hostname"
	// EntryPointTypePortForward: agents tunnel through the hub's kube-apiserver (upstream:
	// Pod port-forwarding; Flotilla: its tunnel API).
	EntryPointTypePortForward EntryPointType = "PortForward"
)

// EntryPointLoadBalancerService names a LoadBalancer Service in the proxy server's
// namespace.
type EntryPointLoadBalancerService struct {
	// name of the Service.
	// +optional
	// +kubebuilder:default=proxy-agent-entrypoint
	Name string `json:"name,omitempty"`
	// annotations of the Service, e.g. a cloud provider's load-balancer settings.
	// +optional
	Annotations []AnnotationVar `json:"annotations,omitempty"`
}

// AnnotationVar is one annotation of the LoadBalancer Service.
type AnnotationVar struct {
	// key of the annotation.
	// +required
	// +kubebuilder:validation:Required
	Key string `json:"key"`
	// value of the annotation.
	// +optional
	Value string `json:"value,omitempty"`
}

// EntryPointHostname is a fixed host name.
type EntryPointHostname struct {
	// value is the host name.
	// +required
	Value string `json:"value"`
}

// ManagedProxyConfigurationProxyAgent says how the agents run on the managed clusters.
type ManagedProxyConfigurationProxyAgent struct {
	// image of the agent.
	// +required
	Image string `json:"image"`
	// replicas of the agent.
	// +optional
	// +kubebuilder:default=3
	Replicas int32 `json:"replicas,omitempty"`
	// additionalArgs are appended to the agent's command line.
	// +optional
	AdditionalArgs []string `json:"additionalArgs,omitempty"`
	// additionalServiceProxyArgs are appended to the agent's service-proxy command line.
	// +optional
	AdditionalServiceProxyArgs []string `json:"additionalServiceProxyArgs,omitempty"`
	// imagePullSecrets of the agent's Pods.
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// additionalServiceCAConfigMap names a ConfigMap on the managed cluster whose key
	// service-ca.crt holds further CA certificates for services.
	// +optional
	AdditionalServiceCAConfigMap string `json:"additionalServiceCAConfigMap,omitempty"`
}

// ManagedProxyConfigurationUserServer asks for a rotated serving certificate of the user
// server (Secret UserServerSecretName, Service UserServerServiceName, in the proxy server's
// namespace). The certificate always covers the Service's in-cluster names.
type ManagedProxyConfigurationUserServer struct {
	// additionalSANs are further host names or IPs, e.g. for exposing the user server
	// outside the cluster.
	// +optional
	AdditionalSANs []string `json:"additionalSANs,omitempty"`
}
