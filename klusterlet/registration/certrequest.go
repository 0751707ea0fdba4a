package registration

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base32"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/core/backoff"
)

// ErrCSRRejected marks a request the hub will never sign (denied or failed, or signed with a
// certificate that does not fit the request): its key is useless and a new request is needed.
var ErrCSRRejected = errCSRRejected

// CertificateSpec is a client certificate to request from a hub signer: the registration
// agent's own (Identity), or one of an add-on agent's (klusterlet/addon).
type CertificateSpec struct {
	Subject pkix.Name
	// DNSNames go into the request's subjectAltName.
	DNSNames []string
	// SignerName defaults to kubernetes.io/kube-apiserver-client.
	SignerName string
	// Labels of the CertificateSigningRequest.
	Labels map[string]string
	// NamePrefix starts the CSR's name, which continues with a digest of the subject, the
	// signer and the public key: the same pending key always maps to the same CSR (a
	// restarted agent finds its request again), a new key never collides with an old one.
	NamePrefix string
	// ExpirationSeconds asks the signer for this lifetime; 0 leaves it to the signer.
	ExpirationSeconds int32
}

func (s CertificateSpec) signer() string {
	if s.SignerName == "" {
		return certificatesv1.KubeAPIServerClientSignerName
	}
	return s.SignerName
}

// Request returns the CertificateSigningRequest for s signed with keyPEM.
func (s CertificateSpec) Request(keyPEM []byte) (*certificatesv1.CertificateSigningRequest, error) {
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing private key for %s: %w", s.Subject.CommonName, err)
	}
	signer, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key for %s cannot sign", s.Subject.CommonName)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding public key for %s: %w", s.Subject.CommonName, err)
	}
	subject := s.Subject
	csrPEM, err := certutil.MakeCSR(signer, &subject, s.DNSNames, nil)
	if err != nil {
		return nil, fmt.Errorf("building certificate request for %s: %w", s.Subject.CommonName, err)
	}
	name := CSRName(s.NamePrefix, subject, pubDER)
	if s.signer() != certificatesv1.KubeAPIServerClientSignerName {
		name = CSRName(s.NamePrefix, pkix.Name{CommonName: subject.CommonName, Organization: append(slices.Clone(subject.Organization), s.signer())}, pubDER)
	}
	return s.object(name, csrPEM), nil
}

// object is the CertificateSigningRequest called name with the PKCS#10 request csrPEM.
func (s CertificateSpec) object(name string, csrPEM []byte) *certificatesv1.CertificateSigningRequest {
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(s.Labels)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    csrPEM,
			SignerName: s.signer(),
			Usages: []certificatesv1.KeyUsage{
				certificatesv1.UsageDigitalSignature,
				certificatesv1.UsageKeyEncipherment,
				certificatesv1.UsageClientAuth,
			},
		},
	}
	if s.ExpirationSeconds > 0 {
		exp := s.ExpirationSeconds
		csr.Spec.ExpirationSeconds = &exp
	}
	return csr
}

// CSRName derives a CSR name from prefix, the subject and the public key (see
// CertificateSpec.NamePrefix); the registration agent's prefix is its cluster name.
func CSRName(prefix string, subject pkix.Name, publicKeyDER []byte) string {
	h := sha256.New()
	h.Write([]byte(subject.CommonName))
	for _, o := range subject.Organization {
		h.Write([]byte{0})
		h.Write([]byte(o))
	}
	h.Write([]byte{0})
	h.Write(publicKeyDER)
	sum := h.Sum(nil)
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:10])
	return prefix + "-" + strings.ToLower(enc)
}

// CSRWaiter creates CertificateSigningRequests on a hub and waits for their certificate.
type CSRWaiter struct {
	CSRs certificatesv1client.CertificateSigningRequestInterface
	// Backoff paces retries of failed hub calls and of watches that end without news.
	Backoff *backoff.Backoff
	Clock   clock.Clock
	Log     logr.Logger
	// OnError receives the hub errors that are retried; nil means they are only logged.
	OnError func(error)
}

// Wait creates csr unless it exists and waits until it is issued, returning
// status.certificate, or rejected (an error wrapping ErrCSRRejected). Hub errors are retried
// with backoff; it returns early only when ctx ends or the request is rejected.
func (w CSRWaiter) Wait(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	onErr := w.OnError
	if onErr == nil {
		onErr = func(err error) { w.Log.Info("Retrying", "error", err.Error()) }
	}
	name := csr.Name
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cur, err := w.CSRs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = w.CSRs.Create(ctx, csr, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				w.Log.Info("Created CertificateSigningRequest on the hub; waiting for approval",
					"csr", name, "signer", csr.Spec.SignerName, "labels", csr.Labels)
				continue
			}
			err = fmt.Errorf("creating CertificateSigningRequest %s on the hub: %w", name, err)
		} else if err != nil {
			err = fmt.Errorf("reading CertificateSigningRequest %s on the hub: %w", name, err)
		}
		if err != nil {
			onErr(err)
			if !backoff.Sleep(ctx, w.Clock, w.Backoff.Next()) {
				return nil, ctx.Err()
			}
			continue
		}
		w.Backoff.Reset()
		switch state, why := InspectCSR(cur); state {
		case CSRIssued:
			return cur.Status.Certificate, nil
		case CSRRejected:
			return nil, fmt.Errorf("%w: CertificateSigningRequest %s: %s", errCSRRejected, name, why)
		}
		timeout := int64(csrWatchTimeoutSeconds)
		wt, err := w.CSRs.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: cur.ResourceVersion,
			TimeoutSeconds:  &timeout,
		})
		if err != nil {
			onErr(fmt.Errorf("watching CertificateSigningRequest %s on the hub: %w", name, err))
			if !backoff.Sleep(ctx, w.Clock, w.Backoff.Next()) {
				return nil, ctx.Err()
			}
			continue
		}
		// The watch's events carry the request: it is read again only when the watch ends
		// (one GET per approval and one per issuance would double the hub reads of a
		// joining fleet). A watch that ends or fails without news is retried after a
		// pause, so a flapping hub is not hammered.
		cert, done, err := w.follow(ctx, wt, name)
		wt.Stop()
		if done || err != nil {
			return cert, err
		}
		if !backoff.Sleep(ctx, w.Clock, w.Backoff.Next()) {
			return nil, ctx.Err()
		}
	}
}

// follow reads the watch wt of the request name until it is issued (its certificate,
// done), rejected (an error), or the watch ends (not done: the caller reads it again).
func (w CSRWaiter) follow(ctx context.Context, wt watch.Interface, name string) ([]byte, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case ev, ok := <-wt.ResultChan():
			if !ok || ev.Type == watch.Error {
				return nil, false, nil
			}
			cur, isCSR := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !isCSR || ev.Type == watch.Deleted {
				return nil, false, nil
			}
			switch state, why := InspectCSR(cur); state {
			case CSRIssued:
				return cur.Status.Certificate, true, nil
			case CSRRejected:
				return nil, true, fmt.Errorf("%w: CertificateSigningRequest %s: %s", errCSRRejected, name, why)
			}
		}
	}
}

// IsRejected reports whether err says the hub will never sign the request.
func IsRejected(err error) bool { return errors.Is(err, errCSRRejected) }
