package clusterproxy

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
)

// Lifetimes of the frontend's certificates. They are not rotated yet: a Secret whose
// certificate expired is issued again when a hub replica starts.
const (
	frontendCALifetime   = 10 * 365 * 24 * time.Hour
	frontendCertLifetime = 365 * 24 * time.Hour
)

// ProxyClientCommonName is the subject of the proxy-client certificate.
const ProxyClientCommonName = "open-cluster-management:cluster-proxy:proxy-client"

// FrontendTLS is the ProxyService frontend's mutual TLS, laid out as upstream's konnectivity
// clients read it (cluster-proxy's GetKonnectivityTLSConfig): they trust ca.crt of Secret
// <Namespace>/proxy-server-ca, present tls.crt and tls.key of <Namespace>/proxy-client, and
// expect the server name proxy-entrypoint.<Namespace>. The CA (Secret cluster-proxy-signer,
// ca.crt and ca.key) is created by the first replica and shared by all; each replica issues
// its own serving certificate in memory. Who may read proxy-client may dial into every
// connected cluster.
type FrontendTLS struct {
	Kube kubernetes.Interface
	// Namespace of the Secrets (default: the ManagedProxyConfiguration default
	// spec.proxyServer.namespace, open-cluster-management-cluster-proxy; created when absent).
	Namespace string
	// Hosts are further names or IPs of the serving certificate (the bind address's host).
	Hosts []string
}

func (f FrontendTLS) namespace() string {
	if f.Namespace != "" {
		return f.Namespace
	}
	return proxyv1alpha1.AgentInstallNamespace
}

// ServerName is the name clients verify: proxy-entrypoint.<namespace>, as upstream's.
func (f FrontendTLS) ServerName() string {
	return proxyv1alpha1.DefaultInClusterServiceName + "." + f.namespace()
}

// Config ensures the Secrets and returns the server's TLS config, requiring client
// certificates of the CA.
func (f FrontendTLS) Config(ctx context.Context) (*tls.Config, error) {
	ns := f.namespace()
	if _, err := f.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cluster-proxy frontend: creating namespace %s: %w", ns, err)
	}
	ca, err := f.signer(ctx)
	if err != nil {
		return nil, err
	}
	caPEM := pemCert(ca.cert)
	if err := f.ensure(ctx, proxyv1alpha1.ProxyServerCASecretName, corev1.SecretTypeOpaque,
		func(data map[string][]byte) bool { return bytes.Equal(data["ca.crt"], caPEM) },
		func() (map[string][]byte, error) { return map[string][]byte{"ca.crt": caPEM}, nil }); err != nil {
		return nil, err
	}
	if err := f.ensure(ctx, proxyv1alpha1.DefaultProxyClientSecretName, corev1.SecretTypeTLS,
		func(data map[string][]byte) bool { return ca.signed(data[corev1.TLSCertKey]) },
		func() (map[string][]byte, error) {
			kp, err := ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: ProxyClientCommonName},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, frontendCertLifetime)
			if err != nil {
				return nil, err
			}
			key, err := pemKey(kp.key)
			if err != nil {
				return nil, err
			}
			return map[string][]byte{corev1.TLSCertKey: pemCert(kp.cert), corev1.TLSPrivateKeyKey: key, "ca.crt": caPEM}, nil
		}); err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: f.ServerName()}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{f.ServerName(), f.ServerName() + ".svc", "localhost"}}
	for _, h := range f.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	serving, err := ca.issue(tmpl, frontendCertLifetime)
	if err != nil {
		return nil, fmt.Errorf("cluster-proxy frontend: serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{serving.cert.Raw}, PrivateKey: serving.key, Leaf: serving.cert}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		NextProtos:   []string{"h2"},
	}, nil
}

// signer reads the CA, or creates it when absent (another replica may win the race).
func (f FrontendTLS) signer(ctx context.Context) (*keyPair, error) {
	secrets := f.Kube.CoreV1().Secrets(f.namespace())
	name := proxyv1alpha1.SignerSecretName
	for range 2 {
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			kp, err := parseKeyPair(s.Data["ca.crt"], s.Data["ca.key"])
			if err != nil {
				return nil, fmt.Errorf("cluster-proxy frontend: Secret %s/%s: %w", f.namespace(), name, err)
			}
			return kp, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("cluster-proxy frontend: reading Secret %s/%s: %w", f.namespace(), name, err)
		}
		ca, err := newCA()
		if err != nil {
			return nil, err
		}
		key, err := pemKey(ca.key)
		if err != nil {
			return nil, err
		}
		_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string][]byte{"ca.crt": pemCert(ca.cert), "ca.key": key}}, metav1.CreateOptions{})
		if err == nil {
			return ca, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("cluster-proxy frontend: creating Secret %s/%s: %w", f.namespace(), name, err)
		}
	}
	return nil, fmt.Errorf("cluster-proxy frontend: Secret %s/%s neither readable nor creatable", f.namespace(), name)
}

// ensure makes Secret name hold data that passes ok, writing fresh data when absent or not ok.
func (f FrontendTLS) ensure(ctx context.Context, name string, typ corev1.SecretType, ok func(map[string][]byte) bool, fresh func() (map[string][]byte, error)) error {
	secrets := f.Kube.CoreV1().Secrets(f.namespace())
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && ok(s.Data):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("cluster-proxy frontend: reading Secret %s/%s: %w", f.namespace(), name, err)
	}
	data, ferr := fresh()
	if ferr != nil {
		return fmt.Errorf("cluster-proxy frontend: Secret %s/%s: %w", f.namespace(), name, ferr)
	}
	if err != nil { // not found
		_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: typ, Data: data}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return f.ensure(ctx, name, typ, ok, fresh)
		}
	} else {
		s.Data = data
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("cluster-proxy frontend: writing Secret %s/%s: %w", f.namespace(), name, err)
	}
	return nil
}

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA() (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: "cluster-proxy-frontend-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	return sign(tmpl, key, nil, frontendCALifetime)
}

// issue signs a new key's certificate from tmpl with ca.
func (ca *keyPair) issue(tmpl *x509.Certificate, lifetime time.Duration) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	return sign(tmpl, key, ca, lifetime)
}

// signed reports whether certPEM is a current certificate of ca.
func (ca *keyPair) signed(certPEM []byte) bool {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return false
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil || time.Now().After(c.NotAfter) {
		return false
	}
	return c.CheckSignatureFrom(ca.cert) == nil
}

func sign(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *keyPair, lifetime time.Duration) (*keyPair, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, now.Add(-5*time.Minute), now.Add(lifetime)
	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("ca.key is not an ECDSA key")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key}, nil
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func pemKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
