package registration

import (
	"crypto/tls"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/keyutil"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// CertificateRequest is a signing request built from a private key that stays on
// the managed cluster.
type CertificateRequest struct {
	Name    string
	KeyPEM  []byte
	CSRPEM  []byte
	Subject string
}

// NewPrivateKey returns a fresh ECDSA P-256 key in PEM form.
func NewPrivateKey() ([]byte, error) {
	key, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, fmt.Errorf("generating private key: %w", err)
	}
	return key, nil
}

// spec is the certificate the agent of id requests.
func (id Identity) spec(expirationSeconds int32) CertificateSpec {
	return CertificateSpec{
		Subject:           id.Subject(),
		Labels:            map[string]string{clusterv1.ClusterNameLabelKey: id.ClusterName},
		NamePrefix:        id.ClusterName,
		ExpirationSeconds: expirationSeconds,
	}
}

// NewCertificateRequest builds the PKCS#10 request for id signed with keyPEM and
// names it after its subject and public key (see CSRName).
func NewCertificateRequest(id Identity, keyPEM []byte) (*CertificateRequest, error) {
	obj, err := id.spec(0).Request(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", id.CommonName(), err)
	}
	subject := id.Subject()
	return &CertificateRequest{
		Name:    obj.Name,
		KeyPEM:  keyPEM,
		CSRPEM:  obj.Spec.Request,
		Subject: subject.String(),
	}, nil
}

// Object returns the CertificateSigningRequest to create on the hub.
// expirationSeconds of 0 leaves the duration to the signer.
func (r *CertificateRequest) Object(id Identity, expirationSeconds int32) *certificatesv1.CertificateSigningRequest {
	return id.spec(expirationSeconds).object(r.Name, r.CSRPEM)
}

// CSRState is where a signing request stands.
type CSRState int

const (
	// CSRPending has no decision yet, or is approved but not yet signed.
	CSRPending CSRState = iota
	// CSRIssued is approved and carries a certificate.
	CSRIssued
	// CSRRejected was denied or failed; its key is useless.
	CSRRejected
)

// errCSRRejected marks a request the hub will never sign.
var errCSRRejected = errors.New("certificate signing request rejected")

// InspectCSR classifies csr and, when it was rejected, returns why.
func InspectCSR(csr *certificatesv1.CertificateSigningRequest) (CSRState, string) {
	approved := false
	for _, c := range csr.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Status != "" {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return CSRRejected, fmt.Sprintf("%s: %s %s", c.Type, c.Reason, c.Message)
		case certificatesv1.CertificateApproved:
			approved = true
		}
	}
	if approved && len(csr.Status.Certificate) > 0 {
		return CSRIssued, ""
	}
	return CSRPending, ""
}

// IssuedCredentials pairs the signed certificate with its key after checking
// that they belong together and that the certificate is for id.
func IssuedCredentials(id Identity, csrName string, certPEM, keyPEM []byte) (*Credentials, error) {
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("certificate in CSR %s status.certificate does not match the agent's private key: %w", csrName, err)
	}
	creds, err := ParseCredentials(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CSR %s status.certificate: %w", csrName, err)
	}
	if !id.MatchesCertificate(creds.Leaf) {
		return nil, fmt.Errorf("CSR %s status.certificate is for %q, not %q", csrName, creds.Leaf.Subject.String(), id.Subject().String())
	}
	return creds, nil
}
