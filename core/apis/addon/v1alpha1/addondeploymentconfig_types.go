package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=addondeploymentconfigs,scope=Namespaced
// +kubebuilder:storageversion

// AddOnDeploymentConfig customises how an add-on agent is deployed: variables for
// its manifests, node placement, image mirrors, proxy settings, install namespace,
// resources and replicas. Add-ons reference it through supportedConfigs/configs.
type AddOnDeploymentConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the deployment customisation.
	// +required
	Spec AddOnDeploymentConfigSpec `json:"spec"`
}

// AddOnDeploymentConfigSpec is the deployment customisation of an add-on.
type AddOnDeploymentConfigSpec struct {
	// CustomizedVariables are name/value pairs the add-on renders its manifests with.
	// +optional
	// +listType=map
	// +listMapKey=name
	CustomizedVariables []CustomizedVariable `json:"customizedVariables,omitempty"`

	// NodePlacement constrains where agent pods run. Nil leaves scheduling alone; an
	// empty object matches all nodes and tolerates no taint.
	// +optional
	NodePlacement *NodePlacement `json:"nodePlacement,omitempty"`

	// Registries rewrite agent image references, e.g. source
	// quay.io/open-cluster-management/addon-agent to mirror quay.io/ocm/addon-agent.
	// +optional
	Registries []ImageMirror `json:"registries,omitempty"`

	// ProxyConfig are the proxy settings for the agent; empty means no proxy.
	// +optional
	ProxyConfig ProxyConfig `json:"proxyConfig,omitempty"`

	// AgentInstallNamespace is where the agent is installed. For template add-ons an
	// empty string keeps the namespace written in the AddOnTemplate.
	// +optional
	// +kubebuilder:default=open-cluster-management-agent-addon
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$
	AgentInstallNamespace string `json:"agentInstallNamespace,omitempty"`

	// ResourceRequirements set container resources; when several entries match a
	// container the last one wins.
	// +optional
	// +listType=map
	// +listMapKey=containerID
	ResourceRequirements []ContainerResourceRequirements `json:"resourceRequirements,omitempty"`

	// ReplicaConfigs set replica counts of agent deployments and statefulsets; when
	// several entries match the last one wins.
	// +optional
	// +listType=atomic
	ReplicaConfigs []ReplicaConfig `json:"replicaConfigs,omitempty"`
}

// ReplicaConfig sets the replicas of matching workloads.
type ReplicaConfig struct {
	// WorkloadID is "<deployments|statefulsets>:<name>"; "*" matches any segment.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^(deployments|statefulsets|\*):.+$`
	WorkloadID string `json:"workloadID"`

	// Replicas is the desired replica count.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=0
	Replicas int32 `json:"replicas"`
}

// ContainerResourceRequirements sets the resources of matching containers.
type ContainerResourceRequirements struct {
	// ContainerID is "<resource type>:<resource name>:<container name>" where the
	// resource type is deployments, daemonsets, statefulsets, replicasets, jobs,
	// cronjobs or pods; "*" matches any segment, so "*:*:*" is every container.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^(deployments|daemonsets|statefulsets|replicasets|jobs|cronjobs|pods|\*):.+:.+$`
	ContainerID string `json:"containerID"`

	// Resources are the compute resources of the matching containers.
	// +required
	// +kubebuilder:validation:Required
	Resources corev1.ResourceRequirements `json:"resources"`
}

// CustomizedVariable is a variable for rendering add-on manifests.
type CustomizedVariable struct {
	// Name of the variable.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=^[a-zA-Z_][_a-zA-Z0-9]*$
	Name string `json:"name"`

	// Value of the variable.
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value"`
}

// NodePlacement is node scheduling for agent pods.
type NodePlacement struct {
	// NodeSelector picks the nodes; empty matches all.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let agent pods run on tainted nodes; empty tolerates nothing.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// ImageMirror maps an image source to a mirror.
type ImageMirror struct {
	// Mirror replaces Source; an empty mirror is ignored.
	// +kubebuilder:validation:Required
	// +required
	Mirror string `json:"mirror"`

	// Source is the registry or image prefix to replace; empty replaces every registry.
	// +optional
	Source string `json:"source"`
}

// ProxyConfig are the proxy settings of an add-on agent.
type ProxyConfig struct {
	// HTTPProxy is the proxy URL for HTTP requests.
	// +optional
	HTTPProxy string `json:"httpProxy,omitempty"`

	// HTTPSProxy is the proxy URL for HTTPS requests.
	// +optional
	HTTPSProxy string `json:"httpsProxy,omitempty"`

	// CABundle verifies an HTTPS proxy server; only used with HTTPSProxy.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`

	// NoProxy is a comma-separated list of hosts, CIDRs and IPs to reach directly.
	// +optional
	NoProxy string `json:"noProxy,omitempty"`
}

// +kubebuilder:object:root=true

// AddOnDeploymentConfigList is a list of AddOnDeploymentConfigs.
type AddOnDeploymentConfigList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the AddOnDeploymentConfigs.
	Items []AddOnDeploymentConfig `json:"items"`
}
