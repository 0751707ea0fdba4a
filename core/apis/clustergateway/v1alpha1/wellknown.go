package v1alpha1

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The aggregated API.
const (
	// APIServiceName is the APIService that serves this group version.
	APIServiceName = "v1alpha1.cluster.core.oam.dev"
	// APIServiceGroupPriorityMinimum and APIServiceVersionPriority are the APIService's
	// priorities.
	APIServiceGroupPriorityMinimum = 5000
	APIServiceVersionPriority      = 10

	// ResourceClusterGateways is the resource (plural); SingularClusterGateway its
	// singular name.
	ResourceClusterGateways = "clustergateways"
	SingularClusterGateway  = "clustergateway"
	// SubresourceProxy forwards a request to the cluster; SubresourceHealth reads and
	// writes status.
	SubresourceProxy  = "proxy"
	SubresourceHealth = "health"
)

// Names of the cluster-gateway add-on.
const (
	// AddonName is the add-on's ClusterManagementAddOn and ManagedClusterAddOn name.
	AddonName = "cluster-gateway"
	// AgentInstallNamespace is the add-on's install namespace on a managed cluster.
	AgentInstallNamespace = "open-cluster-management-cluster-gateway"
	// DefaultSecretNamespace is the hub namespace of the credential Secrets, one per
	// cluster, named after it.
	DefaultSecretNamespace = "open-cluster-management-credentials"
	// ManagedServiceAccountName is the ManagedServiceAccount, in each cluster's namespace,
	// whose token the gateway uses for that cluster.
	ManagedServiceAccountName = "cluster-gateway"
	// ManagedServiceAccountValidity is that ManagedServiceAccount's rotation.validity.
	ManagedServiceAccountValidity = 4320 * time.Hour
)

// Labels and annotations on credential Secrets.
const (
	// LabelKeyClusterCredentialType makes a Secret a ClusterGateway: its value is the
	// CredentialType. A Secret without it is not one.
	LabelKeyClusterCredentialType = "cluster.core.oam.dev/cluster-credential-type"
	// LabelKeyClusterEndpointType is the ClusterEndpointType (Const if unset).
	LabelKeyClusterEndpointType = "cluster.core.oam.dev/cluster-endpoint-type"
	// AnnotationKeyClusterGatewayStatusHealthy and
	// AnnotationKeyClusterGatewayStatusHealthyReason hold status.healthy and
	// status.healthyReason.
	AnnotationKeyClusterGatewayStatusHealthy       = "status.cluster.core.oam.dev/healthy"
	AnnotationKeyClusterGatewayStatusHealthyReason = "status.cluster.core.oam.dev/healthy-reason"
	// AnnotationClusterGatewayProxyConfiguration holds the client identity penetration
	// configuration (not supported by Flotilla).
	AnnotationClusterGatewayProxyConfiguration = "cluster.core.oam.dev/cluster-gateway-proxy-configuration"
)

// Data keys of credential Secrets.
const (
	SecretKeyToken    = "token"
	SecretKeyCACrt    = "ca.crt"
	SecretKeyCA       = "ca"
	SecretKeyEndpoint = "endpoint"
	SecretKeyProxyURL = "proxy-url"
	SecretKeyTLSCrt   = "tls.crt"
	SecretKeyTLSKey   = "tls.key"
	SecretKeyExec     = "exec"
)

// ProxyPath is the hub path of cluster's proxy subresource: a kubeconfig whose server is
// the hub's URL plus this path talks to the cluster.
func ProxyPath(cluster string) string {
	return "/apis/" + GroupVersion.Group + "/" + GroupVersion.Version + "/" + ResourceClusterGateways + "/" + cluster + "/" + SubresourceProxy
}

// TableColumns are the columns `kubectl get clustergateway` shows, as cluster-gateway
// prints them.
func TableColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "the name of the cluster"},
		{Name: "Provider", Type: "string", Description: "the cluster provider type"},
		{Name: "Credential-Type", Type: "string", Description: "the credential type"},
		{Name: "Endpoint-Type", Type: "string", Description: "the endpoint type"},
		{Name: "Healthy", Type: "string", Description: "the healthiness of the gateway"},
	}
}

// TableCells are the cells of g's row under TableColumns.
func TableCells(g *ClusterGateway) []any {
	cred := "<none>"
	if g.Spec.Access.Credential != nil {
		cred = string(g.Spec.Access.Credential.Type)
	}
	endpoint := ""
	if g.Spec.Access.Endpoint != nil {
		endpoint = string(g.Spec.Access.Endpoint.Type)
	}
	return []any{g.Name, g.Spec.Provider, cred, endpoint, strconv.FormatBool(g.Status.Healthy)}
}
