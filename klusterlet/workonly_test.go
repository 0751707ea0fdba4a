package klusterlet_test

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

var _ = Describe("a work-only agent beside a registration agent without its work agent", func() {
	const (
		cluster = "cluster-workonly"
		ns      = "workonly-agent"
	)

	// applyConfigMap creates a ManifestWork with one ConfigMap and waits until the work is
	// Applied and the ConfigMap is on the managed cluster.
	applyConfigMap := func(ctx SpecContext, name string) {
		GinkgoHelper()
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"k": "v"}}
		work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{manifest(cm)}}}}
		Expect(hubClient.Create(ctx, work)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = hubClient.Delete(ctx, work) })
		Eventually(func(g Gomega) {
			got := &workv1.ManifestWork{}
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(work), got)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, workv1.WorkApplied)).To(BeTrue(), "Applied: %v", got.Status.Conditions)
			g.Expect(managedAdmin.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed())
		}).WithContext(ctx).WithTimeout(90*time.Second).Should(Succeed(),
			"ManifestWork %s/%s Applied and its ConfigMap default/%s on the managed cluster", cluster, name, name)
	}

	// storedCert is the certificate in the hub kubeconfig secret.
	storedCert := func(g Gomega) *x509.Certificate {
		sec, err := registration.ReadHubSecret(suiteCtx, managedKube.CoreV1(), ns, registration.DefaultHubKubeconfigSecret)
		g.Expect(err).NotTo(HaveOccurred())
		block, _ := pem.Decode(sec.CertPEM)
		g.Expect(block).NotTo(BeNil(), "secret %s/%s holds a certificate", ns, registration.DefaultHubKubeconfigSecret)
		cert, err := x509.ParseCertificate(block.Bytes)
		g.Expect(err).NotTo(HaveOccurred())
		return cert
	}

	It("waits for the hub kubeconfig secret, applies ManifestWorks with it and follows its rotated certificate", func(ctx SpecContext) {
		By("a work-only agent without the secret is not ready")
		w := startReplica(klusterlet.Options{
			Registration: registration.Config{ClusterName: cluster, AgentNamespace: ns},
			Work:         klusterlet.WorkOptions{Only: true},
		})
		Eventually(statusOf(w.probe("/healthz"))).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
		Consistently(statusOf(w.probe("/readyz")), "3s").Should(Equal(http.StatusInternalServerError),
			"readiness of the work-only agent before secret %s/%s exists", ns, registration.DefaultHubKubeconfigSecret)
		Expect(w.agent.HubCertificate()).To(BeNil())

		By("a registration agent without its work agent registers; its certificate rotates about 30 s after issue")
		// The signer's certificates live 15 minutes (backdated 5): renewing with 63% left
		// comes 5.5 minutes after NotBefore.
		reg := startReplica(klusterlet.Options{
			Registration: registration.Config{ClusterName: cluster, AgentNamespace: ns, BootstrapKubeconfig: bootstrapKubeconfig,
				RotationThreshold: 0.63, RotationRand: func() float64 { return 0 }},
			Work:  klusterlet.WorkOptions{Disabled: true},
			AddOn: klusterlet.AddOnOptions{Disabled: true},
		})
		Eventually(func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{cluster})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(60*time.Second).Should(Succeed(), "accepting ManagedCluster %s", cluster)

		Eventually(statusOf(w.probe("/readyz"))).WithTimeout(60*time.Second).Should(Equal(http.StatusOK),
			"readiness of the work-only agent once the registration agent wrote its secret")
		applyConfigMap(ctx, "workonly-before-rotation")
		Expect(reg.agent.HubCertificate()).To(BeNil(), "the registration agent runs no work session")

		By("the secret's certificate rotates: the work-only agent starts again with the new one")
		first := w.agent.HubCertificate()
		Expect(first).NotTo(BeNil())
		Eventually(func(g Gomega) {
			stored := storedCert(g)
			g.Expect(stored.SerialNumber).NotTo(Equal(first.SerialNumber), "the registration agent rotated the certificate")
			cur := w.agent.HubCertificate()
			g.Expect(cur).NotTo(BeNil(), "a work session runs")
			g.Expect(cur.SerialNumber).To(Equal(stored.SerialNumber), "the work session uses the secret's certificate")
		}).WithContext(ctx).WithTimeout(3*time.Minute).Should(Succeed(),
			"the work-only agent's hub certificate to follow the rotated one in secret %s/%s", ns, registration.DefaultHubKubeconfigSecret)
		applyConfigMap(ctx, "workonly-after-rotation")
	}, SpecTimeout(6*time.Minute))

	It("elects on its own Lease, apart from the registration agent's", func(ctx SpecContext) {
		const leaseNS = "workonly-election"
		startReplica(klusterlet.Options{
			Registration: registration.Config{ClusterName: "cluster-workonly-election", AgentNamespace: leaseNS},
			Work:         klusterlet.WorkOptions{Only: true},
			LeaderElection: klusterlet.LeaderElection{Enabled: true, Identity: "work-only-a",
				LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 300 * time.Millisecond},
		})
		Eventually(func(g Gomega) string {
			lease := &coordinationv1.Lease{}
			g.Expect(managedAdmin.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: klusterlet.DefaultWorkLeaderElectionName}, lease)).To(Succeed())
			return ptr.Deref(lease.Spec.HolderIdentity, "")
		}).WithContext(ctx).WithTimeout(60*time.Second).Should(Equal("work-only-a"),
			"holder of Lease %s/%s", leaseNS, klusterlet.DefaultWorkLeaderElectionName)
		Expect(managedAdmin.Get(ctx, client.ObjectKey{Namespace: leaseNS, Name: klusterlet.DefaultLeaderElectionName}, &coordinationv1.Lease{})).
			NotTo(Succeed(), "the registration agent's Lease is not taken")
	}, SpecTimeout(2*time.Minute))

	It("refuses to run with the work agent disabled", func() {
		_, err := klusterlet.New(klusterlet.Options{
			Registration: registration.Config{ClusterName: "x", ManagedConfig: fleet.Managed[0].Config},
			Work:         klusterlet.WorkOptions{Only: true, Disabled: true},
		})
		Expect(err).To(MatchError(And(ContainSubstring("--work-only"), ContainSubstring("--disable-work-agent"))))
	})
})
