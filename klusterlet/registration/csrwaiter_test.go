package registration_test

import (
	"net/http"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/core/backoff"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// countingTransport counts the GETs of single objects that pass through it.
type countingTransport struct {
	next http.RoundTripper
	gets *atomic.Int32
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Query().Get("watch") == "" {
		t.gets.Add(1)
	}
	return t.next.RoundTrip(r)
}

var _ = Describe("CSRWaiter", func() {
	It("follows the request through its watch: it reads it once after creating it, not again on approval and issuance", func(ctx SpecContext) {
		var gets atomic.Int32
		cfg := rest.CopyConfig(fleet.Hub.Config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, gets: &gets} })
		kube := kubernetes.NewForConfigOrDie(cfg)
		key, err := registration.NewPrivateKey()
		Expect(err).NotTo(HaveOccurred())
		id := registration.Identity{ClusterName: "csr-waiter", AgentName: "agent"}
		req, err := registration.NewCertificateRequest(id, key)
		Expect(err).NotTo(HaveOccurred())
		w := registration.CSRWaiter{CSRs: kube.CertificatesV1().CertificateSigningRequests(),
			Backoff: backoff.New(100*time.Millisecond, time.Second), Clock: clock.RealClock{}, Log: GinkgoLogr}
		issued := make(chan []byte, 1)
		go func() {
			defer GinkgoRecover()
			cert, err := w.Wait(ctx, req.Object(id, 0))
			Expect(err).NotTo(HaveOccurred())
			issued <- cert
		}()
		// Approved here; kube-controller-manager's signer issues it.
		Eventually(func(g Gomega) {
			csr, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(ctx, req.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test"})
			_, err = hubKube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, req.Name, csr, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "approving CertificateSigningRequest %s", req.Name)
		var cert []byte
		Eventually(issued).WithContext(ctx).WithTimeout(60*time.Second).Should(Receive(&cert), "the waiter returning the issued certificate")
		Expect(cert).NotTo(BeEmpty())
		// One GET finds nothing (then the create), one reads the created request for the
		// watch's resourceVersion; approval and issuance arrive through the watch.
		Expect(gets.Load()).To(BeNumerically("<=", 2), "GETs of the CertificateSigningRequest")
		DeferCleanup(func(ctx SpecContext) {
			Expect(hubKube.CertificatesV1().CertificateSigningRequests().Delete(ctx, req.Name, metav1.DeleteOptions{})).To(Succeed())
		}, NodeTimeout(30*time.Second))
	}, SpecTimeout(2*time.Minute))
})
