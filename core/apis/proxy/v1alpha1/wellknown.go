package v1alpha1

// Names of the cluster-proxy add-on.
const (
	// AddonName is the add-on's ClusterManagementAddOn and ManagedClusterAddOn name.
	AddonName = "cluster-proxy"
	// DefaultName is the ManagedProxyConfiguration the add-on's ClusterManagementAddOn
	// names as its default config.
	DefaultName = "cluster-proxy"
	// AgentInstallNamespace is where the agent runs on a managed cluster by default, and
	// the default namespace of the proxy server on the hub (spec.proxyServer.namespace).
	AgentInstallNamespace = "open-cluster-management-cluster-proxy"
	// ProxyAgentSignerName is the custom signer of the agents' tunnel client
	// certificates.
	ProxyAgentSignerName = "open-cluster-management.io/proxy-agent-signer"
	// SignerSecretName is the hub Secret (keys ca.crt and ca.key) of the self-signed CA
	// that signs the proxy certificates.
	SignerSecretName = "cluster-proxy-signer"
	// AgentCASecretName is the Secret on a managed cluster holding the CA the agent
	// verifies the proxy server with.
	AgentCASecretName = "cluster-proxy-ca"
	// ProxyServerCASecretName is the hub Secret holding the proxy server's CA.
	ProxyServerCASecretName = "proxy-server-ca"
	// UserServerSecretName is the hub Secret holding the user server's serving
	// certificate (spec.userServer).
	UserServerSecretName = "cluster-proxy-user-serving-cert"
	// UserServerServiceName is the Service of the user server.
	UserServerServiceName = "cluster-proxy-addon-user"
)

// Defaults the CRD fills in (kept here for code that builds objects without the API
// server).
const (
	DefaultProxyServerSecretName   = "proxy-server"
	DefaultProxyClientSecretName   = "proxy-client"
	DefaultAgentServerSecretName   = "agent-server"
	DefaultProxyServerReplicas     = 3
	DefaultProxyAgentReplicas      = 3
	DefaultInClusterServiceName    = "proxy-entrypoint"
	DefaultLoadBalancerServiceName = "proxy-agent-entrypoint"
	DefaultEntrypointPort          = 8091
	DefaultProxyServerPort         = 8090
	DefaultAgentServerPort         = 8091
	DefaultHealthServerPort        = 8092
	DefaultAdminServerPort         = 8095
)

// Labels and annotations on the add-on's objects.
const (
	// LabelKeyComponentName names the component an object belongs to (the
	// ComponentName* values).
	LabelKeyComponentName = "proxy.open-cluster-management.io/component-name"
	// AnnotationKeyConfigurationGeneration carries the ManagedProxyConfiguration
	// generation an object was rendered from.
	AnnotationKeyConfigurationGeneration = "proxy.open-cluster-management.io/configuration-generation"

	ComponentNameProxyAgent       = "proxy-agent"
	ComponentNameProxyServer      = "proxy-server"
	ComponentNameProxyClient      = "proxy-client"
	ComponentNameProxyAgentServer = "proxy-agent-server"
)

// ManagedProxyConfiguration condition types and reasons.
const (
	// ConditionTypeProxyServerDeployed is True once the proxy server serves
	// (ReasonSuccessfullyDeployed), False with ReasonNotYetDeployed before.
	ConditionTypeProxyServerDeployed = "ProxyServerDeployed"
	// The *SecretSigned types are True once the named certificate is signed
	// (ReasonSuccessfullySigned), False with ReasonNotYetSigned before.
	ConditionTypeProxyServerSecretSigned = "ProxyServerSecretSigned"
	ConditionTypeAgentServerSecretSigned = "AgentServerSecretSigned"
	ConditionTypeProxyClientSecretSigned = "ProxyClientSecretSigned"
	ConditionTypeUserServerSecretSigned  = "UserServerSecretSigned"

	ReasonNotYetDeployed       = "NotYetDeployed"
	ReasonSuccessfullyDeployed = "SuccessfullyDeployed"
	ReasonNotYetSigned         = "NotYetSigned"
	ReasonSuccessfullySigned   = "SuccessfullySigned"
)

// ManagedProxyServiceResolver condition type and reasons, spelled as upstream spells them
// ("Avaliable").
const (
	// ConditionTypeServiceResolverAvaliable says whether the resolver is in effect.
	ConditionTypeServiceResolverAvaliable = "ServiceResolverAvaliable"

	// ReasonManagedProxyServiceResolverNotLegal: a selector type other than
	// ManagedClusterSet or ServiceRef, or managedClusterSet or serviceRef unset (False).
	ReasonManagedProxyServiceResolverNotLegal = "ManagedProxyServiceResolverNotLegal"
	// ReasonManagedClusterSetNotExisted: the named ManagedClusterSet does not exist
	// (False).
	ReasonManagedClusterSetNotExisted = "ManagedClusterSetNotExisted"
	// ReasonManagedClusterSetDeleting: the named ManagedClusterSet is being deleted
	// (False).
	ReasonManagedClusterSetDeleting = "ManagedClusterSetDeleting"
	// ReasonManagedProxyServiceResolverAvaliable: the resolver is in effect (True).
	ReasonManagedProxyServiceResolverAvaliable = "ManagedProxyServiceResolverAvaliable"
)
