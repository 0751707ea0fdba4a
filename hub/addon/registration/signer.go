package registration

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/certs"
)

const (
	// SignerControllerName names the Signer's controller and its Event source.
	SignerControllerName = "addon-csr-signer"

	// DefaultSigningCANamespace holds the signingCA Secrets that name no namespace: the
	// hub's namespace, as in OCM (whose add-on manager falls back to it without POD_NAMESPACE).
	DefaultSigningCANamespace = "open-cluster-management-hub"

	// DefaultCertificateLifetime is the lifetime of a certificate whose CSR sets no
	// spec.expirationSeconds: OCM's template add-on signer's.
	DefaultCertificateLifetime = 24 * time.Hour

	// ReasonSignFailed is the Warning Event reason on an add-on CSR the Signer could not sign.
	ReasonSignFailed = "AddonCSRSignFailed"

	// backdate is how far before signing a certificate's validity starts (clock skew); never
	// before the CA's.
	backdate = 5 * time.Minute
)

// TemplateFunc returns the AddOnTemplate add-on addon uses on cluster (its ManagedClusterAddOn's
// desired AddOnTemplate), or nil when there is none: not a template add-on, not configured
// yet, or no ManagedClusterAddOn. An error is retried.
type TemplateFunc func(ctx context.Context, cluster, addon string) (*addonv1alpha1.AddOnTemplate, error)

// Signer signs the approved CSRs of template add-on agents' CustomSigner registrations, as
// OCM's template add-on manager does: a CSR labelled with its add-on and cluster, approved and
// neither denied nor failed, without a certificate, whose signer is not a kubernetes.io one,
// is signed when the add-on's AddOnTemplate has a CustomSigner registration with that signer,
// with the CA (tls.crt, tls.key) in the registration's signingCA Secret. The certificate has
// the CSR's subject and SANs, its usages, and lasts spec.expirationSeconds
// (DefaultCertificateLifetime without) but not past the CA; it is written to status.certificate
// (the /status subresource). A failure (no Secret, bad CA, malformed CSR) is a Warning Event
// ReasonSignFailed on the CSR, and retried with backoff. CSRs of other signers are left alone.
type Signer struct {
	Client   client.Client
	Template TemplateFunc
	// SecretReader reads the signing CA Secrets; default the manager's API reader (uncached:
	// no cluster-wide Secret informer).
	SecretReader client.Reader
	// Namespace holds the signingCA Secrets that name none; default DefaultSigningCANamespace.
	Namespace string
	// Recorder receives the Events on CSRs; default the manager's.
	Recorder record.EventRecorder
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// SetupWithManager watches the CSRs the Signer may sign, and ManagedClusterAddOns (a change of
// an add-on's template may make its approved CSRs signable).
func (s *Signer) SetupWithManager(mgr ctrl.Manager) error {
	if s.Template == nil {
		return fmt.Errorf("%s: Template is required", SignerControllerName)
	}
	if s.SecretReader == nil {
		s.SecretReader = mgr.GetAPIReader()
	}
	if s.Namespace == "" {
		s.Namespace = DefaultSigningCANamespace
	}
	if s.Recorder == nil {
		s.Recorder = mgr.GetEventRecorderFor(SignerControllerName) //nolint:staticcheck // core/v1 Events, as the rest of the hub
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	// The CSRs of one add-on on one cluster by index: a label-selector list scans every CSR
	// of the fleet (two per cluster and more) on every ManagedClusterAddOn event.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &certificatesv1.CertificateSigningRequest{}, csrAddonIndex, func(o client.Object) []string {
		l := o.GetLabels()
		if l[clusterv1.ClusterNameLabelKey] == "" || l[addonv1alpha1.AddonLabelKey] == "" {
			return nil
		}
		return []string{l[clusterv1.ClusterNameLabelKey] + "/" + l[addonv1alpha1.AddonLabelKey]}
	}); err != nil {
		return fmt.Errorf("%s: indexing CertificateSigningRequests by add-on: %w", SignerControllerName, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(SignerControllerName).
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			c, ok := o.(*certificatesv1.CertificateSigningRequest)
			return ok && signable(c)
		}))).
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(s.addonCSRs)).
		Complete(apply.Quiet(s))
}

// addonCSRs lists the signable CSRs of one ManagedClusterAddOn's add-on on its cluster.
// csrAddonIndex indexes CertificateSigningRequests by "<cluster>/<add-on>" from their labels.
const csrAddonIndex = "flotilla.dev/addon-csr"

func (s *Signer) addonCSRs(ctx context.Context, o client.Object) []reconcile.Request {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := s.Client.List(ctx, list, client.MatchingFields{csrAddonIndex: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing add-on CSRs to sign")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if signable(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
		}
	}
	return out
}

// signable reports whether c is an add-on CSR of a non-Kubernetes signer waiting for its
// certificate.
func signable(c *certificatesv1.CertificateSigningRequest) bool {
	if c.Labels[clusterv1.ClusterNameLabelKey] == "" || c.Labels[addonv1alpha1.AddonLabelKey] == "" ||
		strings.HasPrefix(c.Spec.SignerName, "kubernetes.io/") || len(c.Status.Certificate) > 0 {
		return false
	}
	approved := false
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		case certificatesv1.CertificateApproved:
			approved = cond.Status == corev1.ConditionTrue || cond.Status == ""
		}
	}
	return approved
}

// Reconcile signs one CSR if it is the Signer's to sign.
func (s *Signer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &certificatesv1.CertificateSigningRequest{}
	if err := s.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !signable(c) {
		return reconcile.Result{}, nil
	}
	cluster, addon := c.Labels[clusterv1.ClusterNameLabelKey], c.Labels[addonv1alpha1.AddonLabelKey]
	logger := log.FromContext(ctx).WithValues("csr", c.Name, "cluster", cluster, "addon", addon, "signer", c.Spec.SignerName)
	tmpl, err := s.Template(ctx, cluster, addon)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("CSR %s: reading the AddOnTemplate of add-on %s on %s: %w", c.Name, addon, cluster, err)
	}
	if tmpl == nil {
		logger.V(1).Info("add-on has no AddOnTemplate; CSR left to its own signer")
		return reconcile.Result{}, nil
	}
	reg := customSigner(tmpl, c.Spec.SignerName)
	if reg == nil {
		logger.V(1).Info("no CustomSigner registration of the add-on's template has this signer; CSR left to its own signer", "template", tmpl.Name)
		return reconcile.Result{}, nil
	}
	cert, err := s.sign(ctx, c, reg)
	if err != nil {
		s.Recorder.Eventf(c, corev1.EventTypeWarning, ReasonSignFailed, "AddOnTemplate %s: %v", tmpl.Name, err)
		return reconcile.Result{}, fmt.Errorf("CSR %s: %w", c.Name, err)
	}
	// Guarded by the resourceVersion read: a CSR that changed meanwhile is looked at again.
	if err := apply.Guarded(ctx, s.Client, c, fieldManager, true, map[string]any{"status": map[string]any{"certificate": cert}}); err != nil {
		return reconcile.Result{}, fmt.Errorf("CSR %s: writing its certificate: %w", c.Name, err)
	}
	logger.Info("signed add-on CSR", "template", tmpl.Name)
	return reconcile.Result{}, nil
}

// customSigner returns tmpl's CustomSigner registration of signer, or nil.
func customSigner(tmpl *addonv1alpha1.AddOnTemplate, signer string) *addonv1alpha1.CustomSignerRegistrationConfig {
	for _, r := range tmpl.Spec.Registration {
		if r.Type == addonv1alpha1.RegistrationTypeCustomSigner && r.CustomSigner != nil && r.CustomSigner.SignerName == signer {
			return r.CustomSigner
		}
	}
	return nil
}

// sign reads reg's signing CA and signs c with it.
func (s *Signer) sign(ctx context.Context, c *certificatesv1.CertificateSigningRequest, reg *addonv1alpha1.CustomSignerRegistrationConfig) ([]byte, error) {
	key := client.ObjectKey{Namespace: reg.SigningCA.Namespace, Name: reg.SigningCA.Name}
	if key.Namespace == "" {
		key.Namespace = s.Namespace
	}
	secret := &corev1.Secret{}
	if err := s.SecretReader.Get(ctx, key, secret); err != nil {
		return nil, fmt.Errorf("reading signing CA Secret %s: %w", key, err)
	}
	now := s.Now()
	ca, err := parseCA(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], now)
	if err != nil {
		return nil, fmt.Errorf("signing CA Secret %s: %w", key, err)
	}
	return signCSR(c, ca, now)
}

// signingCA is a CA certificate with its private key.
type signingCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// parseCA reads a CA from PEM: the first certificate of certPEM and its key (PKCS#1,
// PKCS#8 or SEC 1), which must match it. A CA not valid at now is refused.
func parseCA(certPEM, keyPEM []byte, now time.Time) (*signingCA, error) {
	cs, err := certs.ParseCertificates(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", corev1.TLSCertKey, err)
	}
	cert := cs[0]
	key, err := certs.ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", corev1.TLSPrivateKeyKey, err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s is not the key of the certificate in %s", corev1.TLSPrivateKeyKey, corev1.TLSCertKey)
	}
	if now.After(cert.NotAfter) {
		return nil, fmt.Errorf("CA certificate expired at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(cert.NotBefore) {
		return nil, fmt.Errorf("CA certificate not valid before %s", cert.NotBefore.UTC().Format(time.RFC3339))
	}
	return &signingCA{cert: cert, key: key}, nil
}

// signCSR issues the certificate c requests, signed by ca at now: c's subject and SANs, its
// usages, valid from shortly before now for spec.expirationSeconds (DefaultCertificateLifetime
// without) or until the CA expires if sooner. Never a CA certificate.
func signCSR(c *certificatesv1.CertificateSigningRequest, ca *signingCA, now time.Time) ([]byte, error) {
	b, _ := pem.Decode(c.Spec.Request)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("spec.request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing spec.request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("spec.request: %w", err)
	}
	keyUsage, extKeyUsage, err := usages(c.Spec.Usages)
	if err != nil {
		return nil, err
	}
	lifetime := DefaultCertificateLifetime
	if e := c.Spec.ExpirationSeconds; e != nil && *e > 0 {
		lifetime = time.Duration(*e) * time.Second
	}
	notBefore, notAfter := now.Add(-backdate), now.Add(lifetime)
	if notBefore.Before(ca.cert.NotBefore) {
		notBefore = ca.cert.NotBefore
	}
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	serial, err := certs.Serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// RawSubject keeps the request's subject exactly as encoded.
		Subject:               req.Subject,
		RawSubject:            req.RawSubject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              keyUsage,
		ExtKeyUsage:           extKeyUsage,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, req.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: certs.CertificateBlock, Bytes: der}), nil
}

var (
	keyUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
		certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
		certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
		certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
		certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
		certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
		certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
		certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
		certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
	}
	extKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
		certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
		certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
		certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
		certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
		certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
		certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
		certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
		certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
		certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
		certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
		certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
		certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
		certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
	}
)

// usages maps a CSR's spec.usages to X.509 key usages; none means a client certificate
// (digital signature, key encipherment, client auth). cert sign and crl sign are refused:
// the Signer issues no CA certificates.
func usages(us []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	if len(us) == 0 {
		return x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil
	}
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	seen := map[x509.ExtKeyUsage]bool{}
	for _, u := range us {
		if k, ok := keyUsages[u]; ok {
			ku |= k
		} else if e, ok := extKeyUsages[u]; ok {
			if !seen[e] {
				seen[e] = true
				eku = append(eku, e)
			}
		} else {
			return 0, nil, fmt.Errorf("usage %q is not supported", u)
		}
	}
	return ku, eku, nil
}
