// Package bootstrap prepares the hub for agents that have not joined yet: the shared bootstrap
// identity (a ServiceAccount bound to system:open-cluster-management:bootstrap) and the
// kubeconfig handed to a managed cluster's admin to start its agent with.
package bootstrap

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// DefaultTokenTTL is how long a bootstrap kubeconfig stays usable. OCM recommends a short life
// for bootstrap credentials; agents switch to their own certificate once approved.
const DefaultTokenTTL = 24 * time.Hour

// Ensure creates or updates the bootstrap namespace, ServiceAccount, ClusterRole and binding.
func Ensure(ctx context.Context, c client.Client) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rbac.BootstrapNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: rbac.BootstrapServiceAccount, Namespace: rbac.BootstrapNamespace}},
		rbac.BootstrapClusterRole(),
		rbac.BootstrapClusterRoleBinding(),
	}
	for _, o := range objs {
		if err := rbac.Apply(ctx, c, o); err != nil {
			return fmt.Errorf("bootstrap RBAC: %w", err)
		}
	}
	return nil
}

// Kubeconfig returns a kubeconfig for the hub at hub (server and CA taken from it) that
// authenticates as the bootstrap ServiceAccount with a token valid for ttl. Ensure must have
// run first.
func Kubeconfig(ctx context.Context, hub *rest.Config, ttl time.Duration) ([]byte, error) {
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	kube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: hub client: %w", err)
	}
	secs := int64(ttl / time.Second)
	tr, err := kube.CoreV1().ServiceAccounts(rbac.BootstrapNamespace).CreateToken(ctx, rbac.BootstrapServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: token for ServiceAccount %s/%s: %w",
			rbac.BootstrapNamespace, rbac.BootstrapServiceAccount, err)
	}
	return TokenKubeconfig(hub, tr.Status.Token)
}

// TokenKubeconfig renders a kubeconfig for the server and CA of hub authenticating with token.
func TokenKubeconfig(hub *rest.Config, token string) ([]byte, error) {
	ca := hub.CAData
	if len(ca) == 0 && hub.CAFile != "" {
		b, err := os.ReadFile(hub.CAFile)
		if err != nil {
			return nil, fmt.Errorf("bootstrap kubeconfig: reading hub CA file %s: %w", hub.CAFile, err)
		}
		ca = b
	}
	if len(ca) == 0 && !hub.Insecure {
		return nil, fmt.Errorf("bootstrap kubeconfig: hub config for %s has no CA data", hub.Host)
	}
	const name = "hub"
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{name: {
			Server:                   hub.Host,
			CertificateAuthorityData: ca,
			TLSServerName:            hub.ServerName,
			InsecureSkipTLSVerify:    hub.Insecure,
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"bootstrap": {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: "bootstrap"}},
		CurrentContext: name,
	}
	out, err := clientcmd.Write(cfg)
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	return out, nil
}
