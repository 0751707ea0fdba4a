package managedserviceaccount_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/hub/managedserviceaccount"
)

// holdFinalizer keeps a deleted ManagedServiceAccount readable, so a spec can read when the
// API server recorded its deletion.
const holdFinalizer = "test.flotilla.dev/hold"

func newMSA(cluster, name string, ttlSeconds int32, finalizers ...string) *authv1beta1.ManagedServiceAccount {
	return &authv1beta1.ManagedServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name, Finalizers: finalizers},
		Spec: authv1beta1.ManagedServiceAccountSpec{
			Rotation:                authv1beta1.ManagedServiceAccountRotation{Enabled: true, Validity: metav1.Duration{Duration: time.Hour}},
			TTLSecondsAfterCreation: ptr.To(ttlSeconds),
		},
	}
}

// tokenSecret waits until the agent reported m's token, and returns the hub Secret it wrote.
func tokenSecret(ctx context.Context, m *authv1beta1.ManagedServiceAccount, within time.Duration) *corev1.Secret {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		got := &authv1beta1.ManagedServiceAccount{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, authv1beta1.ConditionTypeTokenReported)
		g.Expect(c).NotTo(BeNil(), "TokenReported condition")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "TokenReported: %s", c.Message)
	}).WithTimeout(within).Should(Succeed(), "ManagedServiceAccount %s/%s: TokenReported=True", m.Namespace, m.Name)
	s := &corev1.Secret{}
	Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), s)).To(Succeed(), "hub Secret %s/%s", m.Namespace, m.Name)
	return s
}

// events are the Events regarding the ManagedServiceAccount name in namespace ns.
func events(ctx context.Context, ns, name string) []eventsv1.Event {
	GinkgoHelper()
	l, err := kube.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + name})
	Expect(err).NotTo(HaveOccurred())
	return l.Items
}

var _ = Describe("ManagedServiceAccount ttlSecondsAfterCreation", func() {
	It("with EphemeralIdentity on, deletes the ManagedServiceAccount at creation + TTL; its hub Secret and ServiceAccount go with it", func(ctx SpecContext) {
		const cluster, ns, name, ttl = "msa-ttl-on", "msa-ttl-on-agent", "short-lived", 15
		startAgent(ctx, cluster, ns)
		startTTLController(true)
		m := newMSA(cluster, name, ttl, holdFinalizer)
		Expect(admin.Create(ctx, m)).To(Succeed())
		secret := tokenSecret(ctx, m, ttl*time.Second)
		_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "ServiceAccount %s/%s on the managed cluster before the TTL", ns, name)

		got := &authv1beta1.ManagedServiceAccount{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
			g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		}).WithTimeout(ttl*time.Second+30*time.Second).Should(Succeed(), "ManagedServiceAccount %s/%s deleted after its TTL", cluster, name)
		// Times the API server recorded (to the second): not before the TTL, and not long after.
		lifetime := got.DeletionTimestamp.Sub(got.CreationTimestamp.Time)
		Expect(lifetime).To(BeNumerically(">=", ttl*time.Second), "deleted %s after creation, before its TTL %ds", lifetime, ttl)
		Expect(lifetime).To(BeNumerically("<=", (ttl+10)*time.Second), "deleted %s after creation, long after its TTL %ds", lifetime, ttl)
		Eventually(ctx, func(g Gomega) {
			g.Expect(events(ctx, cluster, name)).To(ContainElement(HaveField("Reason", managedserviceaccount.ReasonTTLExpired)))
		}).WithTimeout(30*time.Second).Should(Succeed(), "Event %s on ManagedServiceAccount %s/%s", managedserviceaccount.ReasonTTLExpired, cluster, name)

		// Let it go: the garbage collector takes the hub Secret, the agent the ServiceAccount.
		Expect(admin.Patch(ctx, got, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		Eventually(ctx, func() error {
			return admin.Get(ctx, client.ObjectKeyFromObject(m), &authv1beta1.ManagedServiceAccount{})
		}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "ManagedServiceAccount %s/%s gone", cluster, name)
		Eventually(ctx, func() error {
			return admin.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})
		}).WithTimeout(60*time.Second).Should(Satisfy(apierrors.IsNotFound), "hub Secret %s/%s garbage collected with its owner", cluster, name)
		Eventually(ctx, func() error {
			_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
			return err
		}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "ServiceAccount %s/%s deleted by the agent", ns, name)
	}, SpecTimeout(3*time.Minute))

	It("with EphemeralIdentity off, keeps the ManagedServiceAccount past its TTL and says why in an Event", func(ctx SpecContext) {
		const cluster, ns, name, ttl = "msa-ttl-off", "msa-ttl-off-agent", "kept", 2
		startAgent(ctx, cluster, ns)
		startTTLController(false)
		m := newMSA(cluster, name, ttl)
		Expect(admin.Create(ctx, m)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(admin.Delete(ctx, m))).To(Succeed())
		})
		tokenSecret(ctx, m, 60*time.Second)
		Eventually(ctx, func(g Gomega) {
			g.Expect(events(ctx, cluster, name)).To(ContainElement(And(
				HaveField("Reason", managedserviceaccount.ReasonEphemeralIdentityDisabled),
				HaveField("Type", corev1.EventTypeWarning),
				HaveField("Note", ContainSubstring("spec.ttlSecondsAfterCreation")))))
		}).WithTimeout(30*time.Second).Should(Succeed(), "Warning Event %s on ManagedServiceAccount %s/%s", managedserviceaccount.ReasonEphemeralIdentityDisabled, cluster, name)
		// Watched until 5 s past its TTL (as the server recorded its creation).
		got := &authv1beta1.ManagedServiceAccount{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
		until := time.Until(got.CreationTimestamp.Add((ttl + 5) * time.Second))
		Consistently(ctx, func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
			g.Expect(got.DeletionTimestamp).To(BeNil())
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), &corev1.Secret{})).To(Succeed())
		}).WithTimeout(max(until, 2*time.Second)).Should(Succeed(), "ManagedServiceAccount %s/%s and its hub Secret kept past the TTL", cluster, name)
	}, SpecTimeout(2*time.Minute))
})
