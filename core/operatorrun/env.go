package operatorrun

import (
	"os"

	"k8s.io/apimachinery/pkg/types"
)

// Environment variables DeploymentFromEnv reads; the Helm charts set them (POD_NAMESPACE from
// the downward API).
const (
	PodNamespaceEnv   = "POD_NAMESPACE"
	DeploymentNameEnv = "FLOTILLA_DEPLOYMENT_NAME"
)

// DeploymentFromEnv is the Deployment the process runs in, from $POD_NAMESPACE and
// $FLOTILLA_DEPLOYMENT_NAME; zero unless both are set.
func DeploymentFromEnv() types.NamespacedName {
	ns, name := os.Getenv(PodNamespaceEnv), os.Getenv(DeploymentNameEnv)
	if ns == "" || name == "" {
		return types.NamespacedName{}
	}
	return types.NamespacedName{Namespace: ns, Name: name}
}
