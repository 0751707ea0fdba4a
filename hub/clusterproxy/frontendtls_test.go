package clusterproxy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	konnectivityclient "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/pkg/client"

	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/certs"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
)

// frontendClient is what a konnectivity client reads from the Secrets of namespace ns: a TLS
// config trusting proxy-server-ca's ca.crt with proxy-client's certificate, and that bundle.
func frontendClient(ctx context.Context, ns string) (*tls.Config, []*x509.Certificate) {
	GinkgoHelper()
	var caSecret, clientSecret *corev1.Secret
	Eventually(func(ctx context.Context) (err error) {
		if caSecret, err = kube.CoreV1().Secrets(ns).Get(ctx, proxyv1alpha1.ProxyServerCASecretName, metav1.GetOptions{}); err != nil {
			return err
		}
		clientSecret, err = kube.CoreV1().Secrets(ns).Get(ctx, proxyv1alpha1.DefaultProxyClientSecretName, metav1.GetOptions{})
		return err
	}).WithContext(ctx).WithTimeout(20*time.Second).Should(Succeed(), "reading Secrets proxy-server-ca and proxy-client of %s", ns)
	bundle, err := certs.ParseCertificates(caSecret.Data["ca.crt"])
	Expect(err).NotTo(HaveOccurred(), "proxy-server-ca ca.crt")
	pool := x509.NewCertPool()
	for _, c := range bundle {
		pool.AddCert(c)
	}
	pair, err := tls.X509KeyPair(clientSecret.Data[corev1.TLSCertKey], clientSecret.Data[corev1.TLSPrivateKeyKey])
	Expect(err).NotTo(HaveOccurred(), "proxy-client tls.crt/tls.key")
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
		ServerName: proxyv1alpha1.DefaultInClusterServiceName + "." + ns}, bundle
}

// servedCertificate is the certificate the frontend at addr presents (not verified).
func servedCertificate(ctx context.Context, addr string) (*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}} //nolint:gosec // reads the certificate only
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0], nil
}

// frontendDial opens a konnectivity tunnel to the frontend at addr with cfg and dials a host no
// agent serves: the frontend's refusal proves the mutual TLS session.
func frontendDial(ctx context.Context, addr string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tun, err := konnectivityclient.CreateSingleUseGrpcTunnelWithContext(ctx, ctx, addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		return fmt.Errorf("konnectivity tunnel to %s: %w", addr, err)
	}
	defer tun.Done()
	c, err := tun.DialContext(ctx, "tcp", "nowhere.example:443")
	if err == nil {
		c.Close()
		return fmt.Errorf("dial of nowhere.example:443 succeeded")
	}
	const want = "no connected cluster-proxy agent serves host nowhere.example"
	if !strings.Contains(err.Error(), want) {
		return fmt.Errorf("dial of nowhere.example:443: %w, want the frontend's %q", err, want)
	}
	return nil
}

var _ = Describe("The ProxyService frontend's certificates", func() {
	It("are renewed before expiry, CA included, without restarting the listener; clients that re-read the Secrets keep connecting", SpecTimeout(3*time.Minute), func(ctx SpecContext) {
		ns := "frontend-rotation-" + rand.String(5)
		DeferCleanup(func(ctx SpecContext) {
			Expect(kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
		})
		// Serving and client certificates renew about 7 s after issue, the CA about 22 s after;
		// certificates of a new CA replace due ones 2 s (Settle) after it joined the bundle.
		runCtx, stop := context.WithCancel(context.Background())
		DeferCleanup(stop)
		creds := clusterproxy.FrontendTLS{Kube: kube, Namespace: ns, Hosts: []string{"127.0.0.1"},
			CertLifetime: 16 * time.Second, CALifetime: 48 * time.Second, RenewalFraction: 0.5,
			ResyncPeriod: 250 * time.Millisecond, Settle: 2 * time.Second, Logger: log.WithName("frontend-tls")}
		cfg, err := creds.Config(runCtx)
		Expect(err).NotTo(HaveOccurred())
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		served := make(chan error, 1)
		go func() { served <- server.ServeFrontend(runCtx, l, grpc.Creds(credentials.NewTLS(cfg))) }()
		DeferCleanup(func() {
			stop()
			Eventually(served).WithTimeout(30*time.Second).Should(Receive(BeNil()), "frontend stopped")
		})
		addr := l.Addr().String()

		first, bundle0 := frontendClient(ctx, ns)
		Expect(bundle0).To(HaveLen(1), "proxy-server-ca ca.crt at first")
		ca0 := bundle0[0]
		Expect(frontendDial(ctx, addr, first)).To(Succeed(), "a client with the Secrets as first written")
		serving0, err := servedCertificate(ctx, addr)
		Expect(err).NotTo(HaveOccurred())
		Expect(serving0.CheckSignatureFrom(ca0)).To(Succeed(), "the first serving certificate is the CA's")

		By("renewing the serving certificate with the same CA")
		var serving1 *x509.Certificate
		Eventually(func(ctx context.Context) (*x509.Certificate, error) {
			serving1, err = servedCertificate(ctx, addr)
			return serving1, err
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).ShouldNot(
			Satisfy(func(c *x509.Certificate) bool { return c.Equal(serving0) }), "waiting for a renewed serving certificate on the same listener")
		Expect(serving1.CheckSignatureFrom(ca0)).To(Succeed(), "the renewed serving certificate is the same CA's")
		Expect(serving1.NotAfter).To(BeTemporally(">", serving0.NotAfter), "the renewed serving certificate expires later")
		reread, _ := frontendClient(ctx, ns)
		Expect(frontendDial(ctx, addr, reread)).To(Succeed(), "a client with the re-read Secrets after the serving certificate's renewal")

		By("rotating the CA: the old one stays trusted")
		var before *tls.Config // a client as the Secrets were just before the rotation
		var bundle []*x509.Certificate
		Eventually(func(g Gomega, ctx context.Context) {
			cfg, b := frontendClient(ctx, ns)
			bundle = b
			if b[0].Equal(ca0) {
				before = cfg
			}
			g.Expect(b[0].Equal(ca0)).To(BeFalse(), "proxy-server-ca ca.crt still starts with the first CA")
		}).WithContext(ctx).WithTimeout(60*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "waiting for a new CA in proxy-server-ca")
		Expect(bundle).To(HaveLen(2), "proxy-server-ca ca.crt after the rotation: the new CA, then the old one")
		Expect(bundle[1].Equal(ca0)).To(BeTrue(), "the old CA stays in proxy-server-ca ca.crt")
		ca1 := bundle[0]
		Expect(before).NotTo(BeNil())
		Expect(frontendDial(ctx, addr, before)).To(Succeed(), "a client that read the Secrets before the CA rotation, right after it")

		By("serving a certificate of the new CA once it settled, which clients with the re-read Secrets accept")
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := servedCertificate(ctx, addr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.CheckSignatureFrom(ca1)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "waiting for a serving certificate of the new CA")
		Eventually(func(g Gomega, ctx context.Context) {
			cfg, _ := frontendClient(ctx, ns)
			pair, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pair.CheckSignatureFrom(ca1)).To(Succeed(), "proxy-client is the new CA's")
			g.Expect(frontendDial(ctx, addr, cfg)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(),
			"waiting for a proxy-client certificate of the new CA that connects")

		By("dropping the old CA from the bundle once it expired")
		Eventually(func(ctx context.Context) []*x509.Certificate {
			_, b := frontendClient(ctx, ns)
			return b
		}).WithContext(ctx).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).ShouldNot(
			ContainElement(Satisfy(func(c *x509.Certificate) bool { return c.Equal(ca0) })), "waiting for the expired first CA to leave proxy-server-ca ca.crt")
		last, _ := frontendClient(ctx, ns)
		Expect(frontendDial(ctx, addr, last)).To(Succeed(), "a client with the Secrets after the old CA expired")
	})
})

// A policy that cannot renew in time is refused before anything is written.
func TestFrontendTLSRejectsBadPolicy(t *testing.T) {
	for name, tc := range map[string]struct {
		f    clusterproxy.FrontendTLS
		want string
	}{
		"settle longer than a quarter of the renewal window": {clusterproxy.FrontendTLS{Settle: 30 * 24 * time.Hour}, "settle time 720h0m0s must be at most"},
		"certificate outliving the CA":                       {clusterproxy.FrontendTLS{CALifetime: time.Hour}, "need 0 < certificate lifetime"},
		"fraction 1":                                         {clusterproxy.FrontendTLS{RenewalFraction: 1}, "renewal fraction 1 must be between 0 and 1"},
		"resync longer than settle":                          {clusterproxy.FrontendTLS{ResyncPeriod: 2 * time.Hour, Settle: time.Hour}, "resync period 2h0m0s must be positive and at most the settle time 1h0m0s"},
	} {
		_, err := tc.f.Config(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cluster-proxy frontend") {
			t.Errorf("%s: error %v, want one naming the cluster-proxy frontend and %q", name, err, tc.want)
		}
	}
}
