// Package bootstrap prepares the hub for agents that have not joined yet: the shared bootstrap
// identities (the ServiceAccount agent-registration-bootstrap, the legacy cluster-bootstrap, and
// the group of Kubernetes bootstrap tokens, all bound to system:open-cluster-management:bootstrap)
// and the kubeconfigs handed to a managed cluster's admin to start its agent with.
package bootstrap

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/kubeconfig"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// DefaultTokenTTL is how long a bootstrap kubeconfig stays usable. OCM recommends a short life
// for bootstrap credentials; agents switch to their own certificate once approved.
const DefaultTokenTTL = 24 * time.Hour

// Ensure creates or updates the bootstrap namespace, both bootstrap ServiceAccounts, the
// bootstrap ClusterRole and its bindings.
func Ensure(ctx context.Context, c client.Client) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rbac.BootstrapNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: rbac.BootstrapServiceAccount, Namespace: rbac.BootstrapNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: rbac.LegacyBootstrapServiceAccount, Namespace: rbac.BootstrapNamespace}},
		rbac.BootstrapClusterRole(),
	}
	for _, b := range rbac.BootstrapClusterRoleBindings() {
		objs = append(objs, b)
	}
	for _, o := range objs {
		if err := rbac.Apply(ctx, c, o); err != nil {
			return fmt.Errorf("bootstrap RBAC: %w", err)
		}
	}
	return nil
}

// Kubeconfig returns a kubeconfig for the hub at hub (server and CA taken from it) that
// authenticates as the bootstrap ServiceAccount (agent-registration-bootstrap) with a token
// valid for ttl. Ensure must have run first.
func Kubeconfig(ctx context.Context, hub *rest.Config, ttl time.Duration) ([]byte, error) {
	return ServiceAccountKubeconfig(ctx, hub, rbac.BootstrapServiceAccount, ttl)
}

// ServiceAccountKubeconfig is Kubeconfig for the bootstrap-namespace ServiceAccount sa, e.g.
// rbac.LegacyBootstrapServiceAccount.
func ServiceAccountKubeconfig(ctx context.Context, hub *rest.Config, sa string, ttl time.Duration) ([]byte, error) {
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	kube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: hub client: %w", err)
	}
	secs := int64(ttl / time.Second)
	tr, err := kube.CoreV1().ServiceAccounts(rbac.BootstrapNamespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: token for ServiceAccount %s/%s: %w",
			rbac.BootstrapNamespace, sa, err)
	}
	return TokenKubeconfig(hub, tr.Status.Token)
}

const (
	// TokenSecretNamespace holds Kubernetes bootstrap tokens.
	TokenSecretNamespace = "kube-system"
	// TokenSecretPrefix starts the name of a bootstrap token Secret: bootstrap-token-<token-id>.
	TokenSecretPrefix = "bootstrap-token-"
	// TokenSecretType is the type of bootstrap token Secrets.
	TokenSecretType corev1.SecretType = "bootstrap.kubernetes.io/token"

	tokenChars = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// BootstrapTokenKubeconfig creates a Kubernetes bootstrap token (a bootstrap.kubernetes.io/token
// Secret bootstrap-token-<id> in kube-system, for authentication only, in the extra group
// rbac.BootstrapGroup, expiring after ttl) and returns a kubeconfig for the hub at hub that
// authenticates with it, as user system:bootstrap:<id>. This is the token `clusteradm join
// --hub-token` uses. The hub's kube-apiserver must run with --enable-bootstrap-token-auth;
// expired token Secrets are removed by kube-controller-manager's tokencleaner, where it runs
// (the authenticator refuses them either way).
func BootstrapTokenKubeconfig(ctx context.Context, hub *rest.Config, ttl time.Duration) ([]byte, error) {
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	kube, err := kubernetes.NewForConfig(hub)
	if err != nil {
		return nil, fmt.Errorf("bootstrap token: hub client: %w", err)
	}
	token, _, err := issueBootstrapToken(ctx, kube, ttl)
	if err != nil {
		return nil, err
	}
	return TokenKubeconfig(hub, token)
}

// randomToken returns n characters of [a-z0-9], the alphabet of bootstrap token ids and secrets.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	for i := range b {
		// Bytes from 252 (7×36) up are drawn again, so every character is equally likely.
		for b[i] >= 252 {
			var one [1]byte
			_, _ = rand.Read(one[:])
			b[i] = one[0]
		}
		b[i] = tokenChars[int(b[i])%len(tokenChars)]
	}
	return string(b)
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
	return kubeconfig.Bootstrap(kubeconfig.Params{Server: hub.Host, CA: ca, Token: token, TLSServerName: hub.ServerName, Insecure: hub.Insecure})
}
