package registration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Keys of the hub kubeconfig secret, as OCM writes them.
const (
	KubeconfigKey  = "kubeconfig"
	TLSCertKey     = "tls.crt"
	TLSKeyKey      = "tls.key"
	ClusterNameKey = "cluster-name"
	AgentNameKey   = "agent-name"
	// PendingKeyKey holds the private key of a CSR that is not signed yet, so
	// that a request approved while the agent was down can still be used.
	PendingKeyKey = "pending-tls.key"
)

// HubSecret is the content of the hub kubeconfig secret on the managed cluster.
type HubSecret struct {
	Namespace, Name string

	ClusterName string
	AgentName   string
	Kubeconfig  []byte
	CertPEM     []byte
	KeyPEM      []byte
	PendingKey  []byte

	// resourceVersion is empty when the secret does not exist yet.
	resourceVersion string
	// extra keeps keys written by others (they are preserved on update).
	extra map[string][]byte
}

// ref names the secret in errors.
func (s *HubSecret) ref() string { return "secret " + s.Namespace + "/" + s.Name }

// Credentials returns the signed client certificate stored in the secret, or nil
// when there is none or it cannot be parsed.
func (s *HubSecret) Credentials() (*Credentials, error) {
	if len(s.CertPEM) == 0 || len(s.KeyPEM) == 0 {
		return nil, nil
	}
	creds, err := ParseCredentials(s.CertPEM, s.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s keys %s/%s: %w", s.ref(), TLSCertKey, TLSKeyKey, err)
	}
	return creds, nil
}

// ReadHubSecret returns the secret; a missing secret yields an empty HubSecret.
func ReadHubSecret(ctx context.Context, secrets corev1client.SecretsGetter, namespace, name string) (*HubSecret, error) {
	s := &HubSecret{Namespace: namespace, Name: name}
	obj, err := secrets.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.ref(), err)
	}
	s.resourceVersion = obj.ResourceVersion
	s.extra = map[string][]byte{}
	for k, v := range obj.Data {
		switch k {
		case ClusterNameKey:
			s.ClusterName = string(v)
		case AgentNameKey:
			s.AgentName = string(v)
		case KubeconfigKey:
			s.Kubeconfig = v
		case TLSCertKey:
			s.CertPEM = v
		case TLSKeyKey:
			s.KeyPEM = v
		case PendingKeyKey:
			s.PendingKey = v
		default:
			s.extra[k] = v
		}
	}
	return s, nil
}

// Exists reports whether the secret was read from (or written to) the cluster.
func (s *HubSecret) Exists() bool { return s.resourceVersion != "" }

// Write creates or updates the secret with the fields of s. The update is
// guarded by the resource version read, so a concurrent change is not lost.
func (s *HubSecret) Write(ctx context.Context, secrets corev1client.SecretsGetter) error {
	data := map[string][]byte{}
	for k, v := range s.extra {
		data[k] = v
	}
	put := func(k string, v []byte) {
		if len(v) > 0 {
			data[k] = v
		}
	}
	put(ClusterNameKey, []byte(s.ClusterName))
	put(AgentNameKey, []byte(s.AgentName))
	put(KubeconfigKey, s.Kubeconfig)
	put(TLSCertKey, s.CertPEM)
	put(TLSKeyKey, s.KeyPEM)
	put(PendingKeyKey, s.PendingKey)
	obj := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, ResourceVersion: s.resourceVersion},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	var (
		out *corev1.Secret
		err error
	)
	if s.resourceVersion == "" {
		out, err = secrets.Secrets(s.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	} else {
		out, err = secrets.Secrets(s.Namespace).Update(ctx, obj, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			// Deleted under us (e.g. by an admin forcing a re-bootstrap): recreate.
			obj.ResourceVersion = ""
			out, err = secrets.Secrets(s.Namespace).Create(ctx, obj, metav1.CreateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", s.ref(), err)
	}
	s.resourceVersion = out.ResourceVersion
	return nil
}
