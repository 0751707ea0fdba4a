package clusterproxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/backoff"
	"github.com/flotilla-dev/flotilla/core/certs"
)

// Defaults of the frontend's certificate policy (FrontendTLS).
const (
	DefaultFrontendCALifetime   = 10 * 365 * 24 * time.Hour
	DefaultFrontendCertLifetime = 365 * 24 * time.Hour
	// DefaultFrontendRenewalFraction: certificates are renewed when a fifth of their
	// lifetime remains (the serving and client certificates 73 days before they expire, the CA
	// two years before).
	DefaultFrontendRenewalFraction = 0.2
	DefaultFrontendResyncPeriod    = time.Minute
	// DefaultFrontendSettle is how long a new CA is in proxy-server-ca's ca.crt (and trusted
	// by every replica) before the certificates it signs replace ones that are merely due.
	DefaultFrontendSettle = 24 * time.Hour
)

// ProxyClientCommonName is the subject of the proxy-client certificate.
const ProxyClientCommonName = "open-cluster-management:cluster-proxy:proxy-client"

// Keys of the frontend's Secrets.
const (
	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"
	// signerBundleKey of the signer Secret holds every CA the frontend trusts (the current one
	// first, earlier ones until they expire), as the webhook's Secret does.
	signerBundleKey = "ca-bundle.crt"
)

// FrontendTLS is the ProxyService frontend's mutual TLS, laid out as upstream's konnectivity
// clients read it (cluster-proxy's GetKonnectivityTLSConfig): they trust ca.crt of Secret
// <Namespace>/proxy-server-ca, present tls.crt and tls.key of <Namespace>/proxy-client, and
// expect the server name proxy-entrypoint.<Namespace>. The CA (Secret cluster-proxy-signer,
// ca.crt and ca.key) is created by the first replica and shared by all; each replica issues
// its own serving certificate in memory. Who may read proxy-client may dial into every
// connected cluster.
//
// Every replica renews what is due each ResyncPeriod (certs.Policy): a certificate when less
// than RenewalFraction of its lifetime remains, the CA likewise, the old CA staying in both
// Secrets' ca.crt and in the trusted client CAs until it expires, and certificates of a new CA
// replacing ones that are merely due only after Settle, so that clients re-reading the
// Secrets within Settle never see a certificate they cannot verify. The serving certificate
// and client CAs change without restarting the listener.
type FrontendTLS struct {
	Kube kubernetes.Interface
	// Namespace of the Secrets (default: the ManagedProxyConfiguration default
	// spec.proxyServer.namespace, open-cluster-management-cluster-proxy; created when absent).
	Namespace string
	// Hosts are further names or IPs of the serving certificate (the bind address's host).
	Hosts []string
	// CALifetime and CertLifetime default to DefaultFrontendCALifetime and
	// DefaultFrontendCertLifetime; RenewalFraction, ResyncPeriod and Settle to their
	// DefaultFrontend values. Settle may be at most RenewalFraction × CertLifetime / 4, and
	// ResyncPeriod at most Settle.
	CALifetime, CertLifetime time.Duration
	RenewalFraction          float64
	ResyncPeriod, Settle     time.Duration
	Logger                   logr.Logger
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

func (f FrontendTLS) withDefaults() (FrontendTLS, error) {
	if f.CALifetime == 0 {
		f.CALifetime = DefaultFrontendCALifetime
	}
	if f.CertLifetime == 0 {
		f.CertLifetime = DefaultFrontendCertLifetime
	}
	if f.RenewalFraction == 0 {
		f.RenewalFraction = DefaultFrontendRenewalFraction
	}
	if f.ResyncPeriod == 0 {
		f.ResyncPeriod = DefaultFrontendResyncPeriod
	}
	if f.Settle == 0 {
		f.Settle = DefaultFrontendSettle
	}
	if f.Logger.GetSink() == nil {
		f.Logger = logr.Discard()
	}
	if err := f.policy().Validate(); err != nil {
		return f, fmt.Errorf("cluster-proxy frontend: %w", err)
	}
	if f.ResyncPeriod < 0 || f.ResyncPeriod > f.Settle {
		return f, fmt.Errorf("cluster-proxy frontend: resync period %s must be positive and at most the settle time %s", f.ResyncPeriod, f.Settle)
	}
	return f, nil
}

func (f FrontendTLS) policy() certs.Policy {
	return certs.Policy{Name: "cluster-proxy-frontend", CALifetime: f.CALifetime, LeafLifetime: f.CertLifetime,
		Fraction: f.RenewalFraction, Settle: f.Settle}
}

func (f FrontendTLS) servingLeaf() certs.Leaf {
	l := certs.LeafForHosts("frontend serving certificate", append([]string{f.ServerName(), f.ServerName() + ".svc", "localhost"}, f.Hosts...)...)
	l.CommonName = f.ServerName()
	return l
}

var clientLeaf = certs.Leaf{Role: "proxy-client certificate", CommonName: ProxyClientCommonName, Usage: x509.ExtKeyUsageClientAuth}

// Config ensures the Secrets and returns the server's TLS config, requiring client
// certificates of a trusted CA. Until ctx ends it keeps the certificates renewed, and the
// config serves the current ones.
func (f FrontendTLS) Config(ctx context.Context) (*tls.Config, error) {
	f, err := f.withDefaults()
	if err != nil {
		return nil, err
	}
	ns := f.namespace()
	if _, err := f.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("cluster-proxy frontend: creating namespace %s: %w", ns, err)
	}
	r := &frontendRenewer{f: f, servingLeaf: f.servingLeaf()}
	// Replicas starting together race to create the Secrets: the losers read the winner's.
	for attempt := 0; ; attempt++ {
		err = r.sync(ctx)
		if err == nil || attempt == 4 || !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	go r.loop(ctx)
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2"},
		ClientAuth: tls.RequireAndVerifyClientCert,
		// The current serving certificate and client CAs, replaced on renewal without a restart.
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.current.Load(), nil },
	}, nil
}

// frontendRenewer keeps one replica's certificates renewed.
type frontendRenewer struct {
	f           FrontendTLS
	servingLeaf certs.Leaf
	current     atomic.Pointer[tls.Config]
	// loop state
	serving *certs.KeyPair
}

func (r *frontendRenewer) loop(ctx context.Context) {
	retry := backoff.New(100*time.Millisecond, r.f.ResyncPeriod)
	for {
		wait := r.f.ResyncPeriod
		if err := r.sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			wait = retry.Next()
			r.f.Logger.Error(err, "Renewing the cluster-proxy frontend certificates; retrying", "in", wait.String())
		} else {
			retry.Reset()
		}
		if !backoff.Sleep(ctx, clock.RealClock{}, wait) {
			return
		}
	}
}

// sync renews what is due in the Secrets and in memory, and serves the result.
func (r *frontendRenewer) sync(ctx context.Context) error {
	now := time.Now()
	pol := r.f.policy()
	a, rotated, err := r.syncSigner(ctx, pol, now)
	if err != nil {
		return err
	}
	bundle := a.BundlePEM()
	if err := r.ensure(ctx, proxyv1alpha1.ProxyServerCASecretName, corev1.SecretTypeOpaque, func(data map[string][]byte) (map[string][]byte, []string, error) {
		if bytes.Equal(data[caCertKey], bundle) {
			return nil, nil, nil
		}
		return map[string][]byte{caCertKey: bundle}, []string{"ca.crt is not the trusted CAs"}, nil
	}); err != nil {
		return err
	}
	if err := r.ensure(ctx, proxyv1alpha1.DefaultProxyClientSecretName, corev1.SecretTypeTLS, func(data map[string][]byte) (map[string][]byte, []string, error) {
		cur, perr := certs.ParseKeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
		next, reasons, err := pol.RenewLeaf(a, rotated, clientLeaf, cur, now)
		if err != nil {
			return nil, nil, err
		}
		if perr != nil && len(data) > 0 {
			reasons = append([]string{"tls.crt/tls.key: " + perr.Error()}, reasons...)
		}
		if len(reasons) == 0 && !bytes.Equal(data[caCertKey], bundle) {
			reasons = []string{"ca.crt is not the trusted CAs"}
		}
		if len(reasons) == 0 {
			return nil, nil, nil
		}
		return map[string][]byte{corev1.TLSCertKey: next.CertPEM, corev1.TLSPrivateKeyKey: next.KeyPEM, caCertKey: bundle}, reasons, nil
	}); err != nil {
		return err
	}
	serving, reasons, err := pol.RenewLeaf(a, rotated, r.servingLeaf, r.serving, now)
	if err != nil {
		return fmt.Errorf("cluster-proxy frontend: %w", err)
	}
	if len(reasons) > 0 {
		r.f.Logger.Info("Renewed the cluster-proxy frontend serving certificate", "reasons", reasons, "expires", serving.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if cfg := r.current.Load(); cfg == nil || serving != r.serving || !cfg.ClientCAs.Equal(a.Pool()) {
		r.serving = serving
		r.current.Store(&tls.Config{
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"h2"},
			Certificates: []tls.Certificate{*serving.TLSCertificate()},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    a.Pool(),
		})
	}
	return nil
}

// syncSigner reads the CA Secret and renews what is due (a missing or unreadable CA too).
func (r *frontendRenewer) syncSigner(ctx context.Context, pol certs.Policy, now time.Time) (*certs.Authority, bool, error) {
	var a *certs.Authority
	var rotated bool
	err := r.ensure(ctx, proxyv1alpha1.SignerSecretName, corev1.SecretTypeOpaque, func(data map[string][]byte) (map[string][]byte, []string, error) {
		cur, perr := certs.ParseAuthority(data[caCertKey], data[caKeyKey], data[signerBundleKey])
		next, rot, reasons, err := pol.RenewAuthority(cur, now)
		if err != nil {
			return nil, nil, err
		}
		a, rotated = next, rot
		if perr != nil && len(data) > 0 {
			reasons = append([]string{"ca.crt/ca.key: " + perr.Error()}, reasons...)
		}
		if len(reasons) == 0 && !bytes.Equal(data[signerBundleKey], next.BundlePEM()) {
			reasons = []string{"ca-bundle.crt is not the trusted CAs"}
		}
		if len(reasons) == 0 {
			return nil, nil, nil
		}
		return map[string][]byte{caCertKey: next.CA.CertPEM, caKeyKey: next.CA.KeyPEM, signerBundleKey: next.BundlePEM()}, reasons, nil
	})
	return a, rotated, err
}

// ensure reads Secret name and writes what renew returns (nil: it is fine as it is), creating
// it when absent. The update is guarded by the resourceVersion read: a replica that loses a
// race returns the conflict and reads the winner's data next time.
func (r *frontendRenewer) ensure(ctx context.Context, name string, typ corev1.SecretType,
	renew func(data map[string][]byte) (map[string][]byte, []string, error)) error {
	ns := r.f.namespace()
	secrets := r.f.Kube.CoreV1().Secrets(ns)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s = nil
	case err != nil:
		return fmt.Errorf("cluster-proxy frontend: reading Secret %s/%s: %w", ns, name, err)
	}
	var data map[string][]byte
	if s != nil {
		data = s.Data
	}
	next, reasons, err := renew(data)
	if err != nil {
		return fmt.Errorf("cluster-proxy frontend: Secret %s/%s: %w", ns, name, err)
	}
	if next == nil {
		return nil
	}
	if s == nil {
		_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: typ, Data: next}, metav1.CreateOptions{})
	} else {
		s = s.DeepCopy()
		s.Data = next
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("cluster-proxy frontend: writing Secret %s/%s: %w", ns, name, err)
	}
	msg := "Renewed a cluster-proxy frontend Secret"
	if s == nil {
		msg = "Created a cluster-proxy frontend Secret"
	}
	r.f.Logger.Info(msg, "secret", ns+"/"+name, "reasons", reasons)
	return nil
}
