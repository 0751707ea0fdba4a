package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterManager describes the hub's controllers: registration, work, placement and the
// add-on manager, with their images, feature gates and deployment options. It is
// cluster-scoped; OCM's operator serves the one named "cluster-manager" and, in Default
// mode, deploys into the open-cluster-management-hub namespace (in Hosted mode into the
// namespace named after the ClusterManager).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
type ClusterManager struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired configuration of the hub's controllers.
	// +kubebuilder:default={deployOption: {mode: Default}}
	Spec ClusterManagerSpec `json:"spec"`

	// status is the state of the hub's controllers as the operator last saw them.
	// +optional
	Status ClusterManagerStatus `json:"status,omitempty"`
}

// ClusterManagerSpec is the desired configuration of the hub's controllers.
type ClusterManagerSpec struct {
	// registrationImagePullSpec is the image of the registration controller and webhook.
	// +optional
	// +kubebuilder:default=quay.io/open-cluster-management/registration
	RegistrationImagePullSpec string `json:"registrationImagePullSpec,omitempty"`

	// workImagePullSpec is the image of the work controller and webhook.
	// +optional
	// +kubebuilder:default=quay.io/open-cluster-management/work
	WorkImagePullSpec string `json:"workImagePullSpec,omitempty"`

	// placementImagePullSpec is the image of the placement controller.
	// +optional
	// +kubebuilder:default=quay.io/open-cluster-management/placement
	PlacementImagePullSpec string `json:"placementImagePullSpec,omitempty"`

	// addOnManagerImagePullSpec is the image of the add-on manager and its webhook.
	// +optional
	// +kubebuilder:default=quay.io/open-cluster-management/addon-manager
	AddOnManagerImagePullSpec string `json:"addOnManagerImagePullSpec,omitempty"`

	// nodePlacement says where the controllers' Pods may be scheduled.
	// +optional
	NodePlacement NodePlacement `json:"nodePlacement,omitempty"`

	// deployOption says how the hub is deployed; Default mode when unset.
	// +optional
	// +kubebuilder:default={mode: Default}
	DeployOption ClusterManagerDeployOption `json:"deployOption,omitempty"`

	// registrationConfiguration configures the registration controller.
	// +optional
	RegistrationConfiguration *RegistrationHubConfiguration `json:"registrationConfiguration,omitempty"`

	// workConfiguration configures the work controller.
	// +optional
	// +kubebuilder:default={workDriver: kube}
	WorkConfiguration *WorkConfiguration `json:"workConfiguration,omitempty"`

	// addOnManagerConfiguration configures the add-on manager.
	// +optional
	AddOnManagerConfiguration *AddOnManagerConfiguration `json:"addOnManagerConfiguration,omitempty"`

	// placementConfiguration configures the placement controller.
	// +optional
	PlacementConfiguration *PlacementConfiguration `json:"placementConfiguration,omitempty"`

	// serverConfiguration configures the hub's gRPC/HTTPS server for agents and consumers.
	// +optional
	ServerConfiguration *ServerConfiguration `json:"serverConfiguration,omitempty"`

	// resourceRequirement sets the resources of every container the cluster manager deploys.
	// +optional
	ResourceRequirement *ResourceRequirement `json:"resourceRequirement,omitempty"`

	// networkPolicyConfiguration configures the NetworkPolicies of the hub's namespaces.
	// +optional
	NetworkPolicyConfiguration *NetworkPolicyConfiguration `json:"networkPolicyConfiguration,omitempty"`
}

// NetworkPolicyConfiguration configures the NetworkPolicies of the hub's namespaces.
type NetworkPolicyConfiguration struct {
	// monitoringNamespace is where the Prometheus that scrapes the hub's metrics runs;
	// when set, ingress from it is allowed. Unset means no such policy.
	// +optional
	MonitoringNamespace string `json:"monitoringNamespace,omitempty"`

	// apiServerNamespace is where the kube-apiserver's webhook calls come from; when set,
	// ingress to the webhooks is restricted to it.
	// +optional
	APIServerNamespace string `json:"apiServerNamespace,omitempty"`
}

// RegistrationHubConfiguration configures the hub's registration controller.
type RegistrationHubConfiguration struct {
	// autoApproveUsers are the users whose bootstrap credentials get their clusters'
	// CSRs approved and their clusters accepted without an admin (with the
	// ManagedClusterAutoApproval feature gate).
	// +optional
	AutoApproveUsers []string `json:"autoApproveUsers,omitempty"`

	// featureGates of the registration controller; the defaults when empty.
	// +optional
	FeatureGates []FeatureGate `json:"featureGates,omitempty"`

	// registrationDrivers are the ways agents may authenticate to register, one per authType.
	// +optional
	// +listType=map
	// +listMapKey=authType
	RegistrationDrivers []RegistrationDriverHub `json:"registrationDrivers,omitempty"`

	// importerConfiguration configures the cluster importer.
	// +optional
	ImporterConfiguration *ImporterConfiguration `json:"importerConfiguration,omitempty"`
}

// ImporterConfiguration configures the hub's cluster importer.
type ImporterConfiguration struct {
	// renderers are the import renderers to use: render-auto, render-from-config-secret.
	// +optional
	Renderers []string `json:"renderers,omitempty"`
}

// RegistrationDriverHub is one way agents may authenticate to register with the hub.
type RegistrationDriverHub struct {
	// authType is csr (Kubernetes CSRs, the default), awsirsa (AWS IAM roles for
	// service accounts) or grpc.
	// +required
	// +kubebuilder:default:=csr
	// +kubebuilder:validation:Enum=csr;awsirsa;grpc
	AuthType string `json:"authType,omitempty"`

	// csr configures the csr driver.
	// +optional
	CSR *CSRConfig `json:"csr,omitempty"`

	// awsirsa configures the awsirsa driver.
	// +optional
	AwsIrsa *AwsIrsaConfig `json:"awsirsa,omitempty"`

	// grpc configures the grpc driver.
	// +optional
	GRPC *GRPCRegistrationConfig `json:"grpc,omitempty"`
}

// CSRConfig configures the csr registration driver.
type CSRConfig struct {
	// autoApprovedIdentities are the users whose CSRs are approved automatically.
	// +optional
	AutoApprovedIdentities []string `json:"autoApprovedIdentities,omitempty"`
}

// AwsIrsaConfig configures the awsirsa registration driver on the hub.
type AwsIrsaConfig struct {
	// hubClusterArn is the ARN of the hub's EKS cluster,
	// e.g. arn:aws:eks:us-west-2:123456789012:cluster/hub1.
	// +optional
	// +kubebuilder:validation:Pattern=`^arn:aws:eks:([a-zA-Z0-9-]+):(\d{12}):cluster/([a-zA-Z0-9-]+)$`
	HubClusterArn string `json:"hubClusterArn,omitempty"`

	// autoApprovedIdentities are the ARN patterns approved automatically.
	// +optional
	AutoApprovedIdentities []string `json:"autoApprovedIdentities,omitempty"`

	// tags are added to the AWS resources the hub creates for a registration,
	// e.g. "product:v1:tenant:app-name=My-App".
	// +optional
	Tags []string `json:"tags,omitempty"`
}

// GRPCRegistrationConfig configures the grpc registration driver.
type GRPCRegistrationConfig struct {
	// autoApprovedIdentities are the users whose registrations are approved automatically.
	// +optional
	AutoApprovedIdentities []string `json:"autoApprovedIdentities,omitempty"`
}

// ServerConfiguration configures the hub's gRPC/HTTPS server.
type ServerConfiguration struct {
	// imagePullSpec is the server's image.
	ImagePullSpec string `json:"imagePullSpec,omitempty"`

	// featureGates of the server.
	FeatureGates []FeatureGate `json:"featureGates,omitempty"`

	// endpointsExposure says how the server's endpoints are reached.
	// +optional
	EndpointsExposure []EndpointExposure `json:"endpointsExposure,omitempty"`
}

// EndpointExposure says how one endpoint of the hub's server is exposed.
type EndpointExposure struct {
	// usage of the endpoint: agentToHub (agents talking to the hub) or consumer
	// (external consumers).
	// +optional
	Usage string `json:"usage,omitempty"`

	// protocol of the endpoint: grpc (the default) or https.
	// +kubebuilder:default:=grpc
	// +kubebuilder:validation:Enum=grpc;https
	// +required
	Protocol string `json:"protocol"`

	// grpc configures the endpoint when protocol is grpc.
	GRPC *Endpoint `json:"grpc,omitempty"`

	// https configures the endpoint when protocol is https.
	HTTPS *Endpoint `json:"https,omitempty"`
}

// Endpoint says how an endpoint is exposed outside the hub.
type Endpoint struct {
	// type of exposure: hostname (the default), loadBalancer or route. Exposing it may
	// need further objects, e.g. a Route.
	// +kubebuilder:default:=hostname
	// +kubebuilder:validation:Enum=hostname;loadBalancer;route
	// +required
	Type EndpointExposureType `json:"type,omitempty"`

	// hostname is the fixed host agents connect to, for type hostname.
	// +optional
	Hostname *HostnameConfig `json:"hostname,omitempty"`

	// loadBalancer customizes type loadBalancer.
	// +optional
	LoadBalancer *LoadBalancerConfig `json:"loadBalancer,omitempty"`

	// route customizes type route.
	// +optional
	Route *RouteConfig `json:"route,omitempty"`
}

// EndpointExposureType is how an Endpoint is exposed.
type EndpointExposureType string

const (
	// EndpointTypeHostname exposes the endpoint at a fixed host name.
	EndpointTypeHostname EndpointExposureType = "hostname"
	// EndpointTypeLoadBalancer exposes the endpoint through a LoadBalancer Service.
	EndpointTypeLoadBalancer EndpointExposureType = "loadBalancer"
	// EndpointTypeRoute exposes the endpoint through an OpenShift Route.
	EndpointTypeRoute EndpointExposureType = "route"
)

// HostnameConfig is a fixed host name of an endpoint.
type HostnameConfig struct {
	// host name of the endpoint.
	// +required
	Host string `json:"host"`

	// caBundle verifies the endpoint's certificate.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// LoadBalancerConfig customizes an endpoint exposed through a LoadBalancer Service.
type LoadBalancerConfig struct {
	// host overrides the endpoint's host name.
	// +optional
	Host string `json:"host,omitempty"`

	// caBundle verifies the endpoint's certificate.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// RouteConfig customizes an endpoint exposed through an OpenShift Route.
type RouteConfig struct {
	// host overrides the endpoint's host name.
	// +optional
	Host string `json:"host,omitempty"`

	// caBundle verifies the endpoint's certificate.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// WorkConfiguration configures the hub's work controller.
type WorkConfiguration struct {
	// featureGates of the work controller and webhook; the defaults when empty.
	// +optional
	FeatureGates []FeatureGate `json:"featureGates,omitempty"`

	// workDriver is how ManifestWorks reach the agents: kube (the default, through the
	// hub's API server), mqtt or grpc. A non-kube driver reads its configuration from the
	// work-driver-config secret of the cluster manager's namespace, and the klusterlets
	// must use the same driver.
	// +optional
	// +kubebuilder:default:=kube
	// +kubebuilder:validation:Enum=kube;mqtt;grpc
	WorkDriver WorkDriverType `json:"workDriver,omitempty"`
}

// WorkDriverType is how ManifestWorks are delivered to agents.
type WorkDriverType string

const (
	// WorkDriverTypeKube delivers ManifestWorks through the hub's API server.
	WorkDriverTypeKube WorkDriverType = "kube"
	// WorkDriverTypeMqtt delivers ManifestWorks as CloudEvents over MQTT.
	WorkDriverTypeMqtt WorkDriverType = "mqtt"
	// WorkDriverTypeGrpc delivers ManifestWorks as CloudEvents over gRPC.
	WorkDriverTypeGrpc WorkDriverType = "grpc"
)

// AddOnManagerConfiguration configures the hub's add-on manager.
type AddOnManagerConfiguration struct {
	// featureGates of the add-on manager; the defaults when empty.
	// +optional
	FeatureGates []FeatureGate `json:"featureGates,omitempty"`
}

// PlacementConfiguration configures the hub's placement controller.
type PlacementConfiguration struct {
	// featureGates of the placement controller; the defaults when empty.
	// +optional
	FeatureGates []FeatureGate `json:"featureGates,omitempty"`
}

// ClusterManagerDeployOption says how the hub's controllers are deployed.
type ClusterManagerDeployOption struct {
	// mode is Default (everything on the hub) or Hosted (only CRDs and configuration on
	// the hub; the controllers run on a management cluster and reach the hub through the
	// external-hub-kubeconfig secret). Do not change it once applied.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:default=Default
	// +kubebuilder:validation:Enum=Default;Hosted
	Mode InstallMode `json:"mode,omitempty"`

	// default holds settings for Default mode.
	// +optional
	Default *DefaultClusterManagerConfiguration `json:"default,omitempty"`

	// hosted holds settings for Hosted mode.
	// +optional
	Hosted *HostedClusterManagerConfiguration `json:"hosted,omitempty"`
}

// DefaultClusterManagerConfiguration holds Default-mode settings of the hub's webhooks.
type DefaultClusterManagerConfiguration struct {
	// registrationWebhookConfiguration customizes the registration webhook server.
	// +optional
	RegistrationWebhookConfiguration DefaultWebhookConfiguration `json:"registrationWebhookConfiguration,omitempty"`

	// workWebhookConfiguration customizes the work webhook server.
	// +optional
	WorkWebhookConfiguration DefaultWebhookConfiguration `json:"workWebhookConfiguration,omitempty"`

	// addonWebhookConfiguration customizes the add-on webhook server.
	// +optional
	AddonWebhookConfiguration DefaultWebhookConfiguration `json:"addonWebhookConfiguration,omitempty"`
}

// HostedClusterManagerConfiguration holds Hosted-mode settings of the hub's webhooks.
type HostedClusterManagerConfiguration struct {
	// registrationWebhookConfiguration says where the hub's API server reaches the
	// registration webhook server.
	// +optional
	RegistrationWebhookConfiguration HostedWebhookConfiguration `json:"registrationWebhookConfiguration,omitempty"`

	// workWebhookConfiguration says where the hub's API server reaches the work webhook server.
	// +optional
	WorkWebhookConfiguration HostedWebhookConfiguration `json:"workWebhookConfiguration,omitempty"`
}

// DefaultWebhookConfiguration customizes a webhook server in Default mode.
type DefaultWebhookConfiguration struct {
	// bindConfiguration sets the server's ports and networking.
	BindConfiguration *BindConfiguration `json:"bindConfiguration,omitempty"`
}

// HostedWebhookConfiguration customizes a webhook server in Hosted mode.
type HostedWebhookConfiguration struct {
	// address (IP or DNS name) at which the hub's API server reaches the webhook server.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])$
	Address string `json:"address"`

	// port at which the hub's API server reaches the webhook server; 443 by default.
	// +optional
	// +kubebuilder:default=443
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// bindConfiguration sets the server's ports and networking.
	BindConfiguration *BindConfiguration `json:"bindConfiguration,omitempty"`
}

// BindConfiguration sets where a webhook server listens.
type BindConfiguration struct {
	// port the server listens on; 9443 by default.
	// +optional
	// +kubebuilder:default=9443
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// healthProbePort serves the health checks; 8000 by default, 0 or less disables them.
	// +optional
	// +kubebuilder:default=8000
	// +kubebuilder:validation:Maximum=65535
	HealthProbePort int32 `json:"healthProbePort"`

	// metricsPort serves the metrics; 8080 by default, 0 or less disables them.
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Maximum=65535
	MetricsPort int32 `json:"metricsPort"`

	// hostNetwork runs the webhook Pods in the host's network, as some CNIs (e.g. Calico
	// on EKS) need for the API server to reach them.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
}

// ClusterManagerStatus is the state of the hub's controllers.
type ClusterManagerStatus struct {
	// observedGeneration is the metadata.generation the operator last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions of the hub's components: Applied, Available, Progressing, Degraded and
	// the per-component *Degraded conditions.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions"`

	// generations of the objects the operator applied.
	// +optional
	Generations []GenerationStatus `json:"generations,omitempty"`

	// relatedResources are the objects the operator manages for this ClusterManager.
	// +optional
	RelatedResources []RelatedResourceMeta `json:"relatedResources,omitempty"`
}

// ClusterManagerList is a list of ClusterManagers.
//
// +kubebuilder:object:root=true
type ClusterManagerList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the cluster managers.
	Items []ClusterManager `json:"items"`
}
