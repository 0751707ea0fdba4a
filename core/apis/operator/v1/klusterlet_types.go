package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Klusterlet describes a managed cluster's agent: which hub it registers with and as
// what cluster, where it runs and how it is configured. It is cluster-scoped and lives
// on the managed cluster; OCM's operator serves the one named "klusterlet" (in Hosted
// mode, on the management cluster, one per managed cluster). The agent needs a
// bootstrap-hub-kubeconfig secret in its namespace to register, and in Hosted mode an
// external-managed-kubeconfig secret to reach the managed cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
type Klusterlet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired configuration of the agent.
	Spec KlusterletSpec `json:"spec,omitempty"`

	// status is the state of the agent as the operator last saw it.
	Status KlusterletStatus `json:"status,omitempty"`
}

// KlusterletSpec is the desired configuration of a managed cluster's agent.
type KlusterletSpec struct {
	// namespace the agent is deployed to on the managed cluster; it must start with
	// open-cluster-management- and defaults to open-cluster-management-agent. Add-ons go
	// to <namespace>-addon. In Hosted mode the agent itself runs on the management
	// cluster in the namespace named after the Klusterlet, and this namespace only holds
	// its service accounts and RBAC.
	// +optional
	// +kubebuilder:validation:MaxLength=57
	// +kubebuilder:validation:Pattern=^open-cluster-management-[-a-z0-9]*[a-z0-9]$
	Namespace string `json:"namespace,omitempty"`

	// registrationImagePullSpec is the image of the registration agent.
	// +optional
	RegistrationImagePullSpec string `json:"registrationImagePullSpec,omitempty"`

	// workImagePullSpec is the image of the work agent.
	// +optional
	WorkImagePullSpec string `json:"workImagePullSpec,omitempty"`

	// imagePullSpec is the image of the combined agent in the Singleton modes.
	// +optional
	ImagePullSpec string `json:"imagePullSpec,omitempty"`

	// clusterName is the name the cluster registers under on the hub (its ManagedCluster
	// and cluster namespace); a generated one when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
	ClusterName string `json:"clusterName,omitempty"`

	// externalServerURLs are the managed cluster's API server endpoints reachable from
	// outside; they become the ManagedCluster's managedClusterClientConfigs. Empty means
	// the hub has no address for the cluster.
	// +optional
	ExternalServerURLs []ServerURL `json:"externalServerURLs,omitempty"`

	// nodePlacement says where the agent's Pods may be scheduled.
	// +optional
	NodePlacement NodePlacement `json:"nodePlacement,omitempty"`

	// deployOption says how the agent is deployed.
	// +optional
	DeployOption KlusterletDeployOption `json:"deployOption,omitempty"`

	// registrationConfiguration configures the registration agent.
	// +optional
	RegistrationConfiguration *RegistrationConfiguration `json:"registrationConfiguration,omitempty"`

	// workConfiguration configures the work agent.
	// +optional
	WorkConfiguration *WorkAgentConfiguration `json:"workConfiguration,omitempty"`

	// hubApiServerHostAlias maps the hub API server's host name to an IP address in the
	// agents' hosts file, for hubs whose kubeconfig names a host DNS cannot resolve.
	// +optional
	HubApiServerHostAlias *HubApiServerHostAlias `json:"hubApiServerHostAlias,omitempty"`

	// resourceRequirement sets the resources of every container the klusterlet deploys.
	// +optional
	ResourceRequirement *ResourceRequirement `json:"resourceRequirement,omitempty"`

	// priorityClassName of the agent's Pods; ignored where the PriorityClass API is not served.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ServerURL is an API server endpoint of the managed cluster.
type ServerURL struct {
	// url of the API server.
	// +required
	URL string `json:"url"`

	// caBundle verifies the API server's certificate; system roots are used when empty.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// HubApiServerHostAlias is a hosts-file entry for the hub's API server.
type HubApiServerHostAlias struct {
	// ip address (IPv4) of the entry.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)$`
	IP string `json:"ip"`

	// hostname mapped to ip.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])$`
	Hostname string `json:"hostname"`
}

// RegistrationConfiguration configures a klusterlet's registration agent.
type RegistrationConfiguration struct {
	// clientCertExpirationSeconds is the lifetime the agent asks for its hub client
	// certificate; 0 leaves it to the hub, which caps it at its maximum signing duration.
	// +optional
	ClientCertExpirationSeconds int32 `json:"clientCertExpirationSeconds,omitempty"`

	// featureGates of the registration agent; the defaults when empty.
	// +optional
	FeatureGates []FeatureGate `json:"featureGates,omitempty"`

	// clusterAnnotations are put on the ManagedCluster when the agent creates it (keys
	// with the agent.open-cluster-management.io prefix); others may change them later.
	// +optional
	ClusterAnnotations map[string]string `json:"clusterAnnotations,omitempty"`

	// clusterLabels are put on the ManagedCluster when the agent creates it; others may
	// change them later.
	// +optional
	ClusterLabels map[string]string `json:"clusterLabels,omitempty"`

	// kubeAPIQPS limits the agent's requests to the managed cluster's API server; 50 by default.
	// +optional
	// +kubebuilder:default:=50
	KubeAPIQPS int32 `json:"kubeAPIQPS,omitempty"`

	// kubeAPIBurst is the burst of the agent's requests to the managed cluster's API
	// server; 100 by default.
	// +optional
	// +kubebuilder:default:=100
	KubeAPIBurst int32 `json:"kubeAPIBurst,omitempty"`

	// bootstrapKubeConfigs lists, in order of preference, the bootstrap kubeconfigs of the
	// hubs the agent may register with (MultipleHubs). When the agent loses its hub for
	// longer than hubConnectionTimeoutSeconds, or the hub sets hubAcceptsClient to false,
	// it marks that kubeconfig failed and bootstraps again with the next one; a failed
	// kubeconfig is used again once its content changes.
	// +optional
	BootstrapKubeConfigs BootstrapKubeConfigs `json:"bootstrapKubeConfigs,omitempty"`

	// registrationDriver says how the agent authenticates to register and to pull work.
	// +optional
	RegistrationDriver RegistrationDriver `json:"registrationDriver,omitempty"`

	// addOnKubeClientRegistrationDriver says how add-ons of registration type kubeClient
	// authenticate with the hub.
	// +optional
	AddOnKubeClientRegistrationDriver *AddOnRegistrationDriver `json:"addOnKubeClientRegistrationDriver,omitempty"`

	// clusterClaimConfiguration limits the ClusterClaims the agent reports (with the
	// ClusterClaim feature gate).
	// +optional
	ClusterClaimConfiguration *ClusterClaimConfiguration `json:"clusterClaimConfiguration,omitempty"`
}

// ClusterClaimConfiguration limits the ClusterClaims a klusterlet reports to its hub.
type ClusterClaimConfiguration struct {
	// maxCustomClusterClaims is how many custom (not reserved) claims are reported; 20 by default.
	// +kubebuilder:validation:Required
	// +kubebuilder:default:=20
	// +required
	MaxCustomClusterClaims int32 `json:"maxCustomClusterClaims"`

	// reservedClusterClaimSuffixes are further name suffixes of claims treated as
	// reserved (always reported).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	ReservedClusterClaimSuffixes []string `json:"reservedClusterClaimSuffixes,omitempty"`
}

// RegistrationDriver says how a klusterlet authenticates with its hub.
type RegistrationDriver struct {
	// authType is csr (Kubernetes CSRs, the default), awsirsa (AWS IAM roles for
	// service accounts, hub and cluster on EKS) or grpc.
	// +required
	// +kubebuilder:default:=csr
	// +kubebuilder:validation:Enum=csr;awsirsa;grpc
	AuthType string `json:"authType,omitempty"`

	// awsIrsa holds the EKS clusters' ARNs when authType is awsirsa.
	AwsIrsa *AwsIrsa `json:"awsIrsa,omitempty"`
}

// AwsIrsa names the EKS clusters of an awsirsa registration.
type AwsIrsa struct {
	// hubClusterArn is the ARN of the hub's EKS cluster,
	// e.g. arn:aws:eks:us-west-2:123456789012:cluster/hub1 (other partitions such as
	// aws-us-gov too). The hub creates the klusterlet's IAM identities with it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^arn:aws(?:-[a-z0-9]+)*:eks:([a-zA-Z0-9-]+):(\d{12}):cluster/([a-zA-Z0-9-]+)$`
	HubClusterArn string `json:"hubClusterArn"`

	// managedClusterArn is the ARN of this managed cluster's EKS cluster; its hash
	// suffixes the IAM role the hub creates and the agent assumes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^arn:aws(?:-[a-z0-9]+)*:eks:([a-zA-Z0-9-]+):(\d{12}):cluster/([a-zA-Z0-9-]+)$`
	ManagedClusterArn string `json:"managedClusterArn"`
}

// AddOnRegistrationDriver says how add-ons authenticate with the hub.
type AddOnRegistrationDriver struct {
	// authType is csr or token. It applies to add-on registrations of type kubeClient
	// only; the other registrations always use CSRs.
	// +optional
	// +kubebuilder:validation:Enum=csr;token
	AuthType string `json:"authType,omitempty"`

	// token configures token-based registration.
	// +optional
	Token *TokenConfig `json:"token,omitempty"`
}

// TokenConfig configures token-based add-on registration.
type TokenConfig struct {
	// expirationSeconds is the lifetime of the tokens; 0 means the hub's certificate
	// signing duration (typically a year). Use at least 3600 outside tests.
	// +optional
	ExpirationSeconds int64 `json:"expirationSeconds,omitempty"`
}

// TypeBootstrapKubeConfigs is the kind of a BootstrapKubeConfigs.
type TypeBootstrapKubeConfigs string

const (
	// LocalSecrets takes the bootstrap kubeconfigs from secrets in the agent's namespace.
	LocalSecrets TypeBootstrapKubeConfigs = "LocalSecrets"
	// None uses only the bootstrap-hub-kubeconfig secret.
	None TypeBootstrapKubeConfigs = "None"
)

// BootstrapKubeConfigs lists the bootstrap kubeconfigs of the hubs a klusterlet may register with.
type BootstrapKubeConfigs struct {
	// type is None (the default: no ordered list) or LocalSecrets.
	// +required
	// +kubebuilder:default:=None
	// +kubebuilder:validation:Enum=None;LocalSecrets
	Type TypeBootstrapKubeConfigs `json:"type,omitempty"`

	// localSecretsConfig lists the secrets, in the agent's namespace, holding the
	// bootstrap kubeconfigs, for type LocalSecrets.
	// +optional
	LocalSecrets *LocalSecretsConfig `json:"localSecretsConfig,omitempty"`
}

// LocalSecretsConfig lists bootstrap kubeconfig secrets in order of preference.
type LocalSecretsConfig struct {
	// kubeConfigSecrets in order of preference. OCM documents at least two; its CRD does
	// not enforce that, and neither does this one.
	// +required
	KubeConfigSecrets []KubeConfigSecret `json:"kubeConfigSecrets"`

	// hubConnectionTimeoutSeconds is how long the agent may lose its hub before it
	// bootstraps again; 600 by default, at least 180.
	// +optional
	// +kubebuilder:default:=600
	// +kubebuilder:validation:Minimum=180
	HubConnectionTimeoutSeconds int32 `json:"hubConnectionTimeoutSeconds,omitempty"`
}

// KubeConfigSecret names a secret holding a bootstrap kubeconfig.
type KubeConfigSecret struct {
	// name of the secret.
	// +required
	Name string `json:"name"`
}

// WorkAgentConfiguration configures a klusterlet's work agent.
type WorkAgentConfiguration struct {
	// featureGates of the work agent; the defaults when empty.
	// +optional
	FeatureGates []FeatureGate `json:"featureGates,omitempty"`

	// kubeAPIQPS limits the agent's requests to the managed cluster's API server; 50 by default.
	// +optional
	// +kubebuilder:default:=50
	KubeAPIQPS int32 `json:"kubeAPIQPS,omitempty"`

	// kubeAPIBurst is the burst of the agent's requests to the managed cluster's API
	// server; 100 by default.
	// +optional
	// +kubebuilder:default:=100
	KubeAPIBurst int32 `json:"kubeAPIBurst,omitempty"`

	// hubKubeAPIQPS limits the agent's requests to the hub's API server; 50 by default.
	// +optional
	// +kubebuilder:default:=50
	HubKubeAPIQPS int32 `json:"hubKubeAPIQPS,omitempty"`

	// hubKubeAPIBurst is the burst of the agent's requests to the hub's API server; 100 by default.
	// +optional
	// +kubebuilder:default:=100
	HubKubeAPIBurst int32 `json:"hubKubeAPIBurst,omitempty"`

	// appliedManifestWorkEvictionGracePeriod is how long the agent keeps an
	// AppliedManifestWork whose ManifestWork is gone from the hub before it evicts it;
	// the agent's default when unset.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(s|m|h))+$"
	AppliedManifestWorkEvictionGracePeriod *metav1.Duration `json:"appliedManifestWorkEvictionGracePeriod,omitempty"`

	// statusSyncInterval is how often the agent checks the status of the applied
	// resources, between 5s and 1h.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(s|m|h))+$"
	StatusSyncInterval *metav1.Duration `json:"statusSyncInterval,omitempty"`
}

// KlusterletDeployOption says how a klusterlet is deployed.
type KlusterletDeployOption struct {
	// mode is Default (the agent runs on the managed cluster; also when unset), Hosted
	// (it runs on a management cluster and reaches the managed cluster through the
	// external-managed-kubeconfig secret), Singleton (registration and work agents as one
	// deployment) or SingletonHosted. Do not change it once applied.
	// +optional
	Mode InstallMode `json:"mode"`

	// reportHostingCluster, when Enable, makes the klusterlet report where its
	// controllers run (its own cluster name, or hosted.managementClusterName) in the
	// reserved ClusterClaim hosting-cluster.open-cluster-management.io. Disabled by default.
	// +optional
	ReportHostingCluster ReportHostingClusterMode `json:"reportHostingCluster,omitempty"`

	// hosted holds settings for the modes whose controllers run on a management cluster.
	// +optional
	Hosted *KlusterletHostedConfiguration `json:"hosted,omitempty"`
}

// ReportHostingClusterMode switches KlusterletDeployOption.ReportHostingCluster.
// +kubebuilder:validation:Enum=Enable;Disable
type ReportHostingClusterMode string

const (
	// ReportHostingClusterModeEnable reports the hosting cluster.
	ReportHostingClusterModeEnable ReportHostingClusterMode = "Enable"
	// ReportHostingClusterModeDisable does not report it (the default).
	ReportHostingClusterModeDisable ReportHostingClusterMode = "Disable"
)

// KlusterletHostedConfiguration holds settings for a klusterlet running on a management cluster.
type KlusterletHostedConfiguration struct {
	// managementClusterName is the hub's name for the cluster the controllers run on.
	// +optional
	ManagementClusterName string `json:"managementClusterName,omitempty"`
}

// KlusterletStatus is the state of a managed cluster's agent.
type KlusterletStatus struct {
	// observedGeneration is the metadata.generation the operator last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions of the agent: Applied, Available, Progressing, Degraded, ReadyToApply,
	// HubConnectionDegraded, RegistrationDesiredDegraded, WorkDesiredDegraded.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions"`

	// generations of the objects the operator applied.
	// +optional
	Generations []GenerationStatus `json:"generations,omitempty"`

	// relatedResources are the objects the operator manages for this Klusterlet.
	// +optional
	RelatedResources []RelatedResourceMeta `json:"relatedResources,omitempty"`
}

// KlusterletList is a list of Klusterlets.
//
// +kubebuilder:object:root=true
type KlusterletList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the klusterlets.
	Items []Klusterlet `json:"items"`
}
