package msa_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/klusterlet/addon/msa"
)

// reported waits until the agent reported a token for m and returns the status and token.
func reported(ctx context.Context, m *authv1beta1.ManagedServiceAccount) (*authv1beta1.ManagedServiceAccount, string) {
	GinkgoHelper()
	got := &authv1beta1.ManagedServiceAccount{}
	Eventually(ctx, func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, authv1beta1.ConditionTypeTokenReported)
		g.Expect(c).NotTo(BeNil(), "TokenReported condition")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "TokenReported: %s", c.Message)
	}).WithTimeout(60*time.Second).Should(Succeed(), "ManagedServiceAccount %s/%s: TokenReported=True", m.Namespace, m.Name)
	return got, secretToken(ctx, m)
}

// secretToken reads the token of m's hub Secret.
func secretToken(ctx context.Context, m *authv1beta1.ManagedServiceAccount) string {
	GinkgoHelper()
	s := &corev1.Secret{}
	Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), s)).To(Succeed())
	return string(s.Data[authv1beta1.SecretKeyToken])
}

// review asks the managed API server whether token authenticates, and as whom.
func review(ctx context.Context, token string) authenticationv1.TokenReviewStatus {
	GinkgoHelper()
	tr, err := kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status
}

// touch changes m's annotations, so that the agent reconciles it now.
func touch(ctx context.Context, m *authv1beta1.ManagedServiceAccount, value string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &authv1beta1.ManagedServiceAccount{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil {
			return err
		}
		cur.Annotations = map[string]string{"test.flotilla.dev/touch": value}
		return admin.Update(ctx, cur)
	})).To(Succeed())
}

var _ = Describe("managed-serviceaccount agent", func() {
	It("creates the ServiceAccount, projects an accepted token to the hub and reports it; deletion takes the ServiceAccount and the Secret", func(ctx SpecContext) {
		const cluster, ns = "msa-life", "msa-life-agent"
		run := startAgent(ctx, cluster, ns, nil)
		Eventually(run.healthy.Load).WithTimeout(30*time.Second).Should(BeTrue(), "agent healthy once its caches synced")
		m := newMSA(cluster, "my-sa", time.Hour)
		Expect(admin.Create(ctx, m)).To(Succeed())
		got, token := reported(ctx, m)

		sa, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "my-sa", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "ServiceAccount %s/my-sa on the managed cluster", ns)
		Expect(sa.Labels).To(HaveKeyWithValue(authv1beta1.LabelKeyIsManagedServiceAccount, "true"))

		s := &corev1.Secret{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "my-sa"}, s)).To(Succeed())
		Expect(s.Type).To(Equal(corev1.SecretTypeOpaque))
		Expect(s.Labels).To(HaveKeyWithValue(authv1beta1.LabelKeyIsManagedServiceAccount, "true"))
		Expect(s.Data).To(HaveKeyWithValue(authv1beta1.SecretKeyCA, fleet.Hub.Config.CAData))
		Expect(s.OwnerReferences).To(ConsistOf(metav1.OwnerReference{
			APIVersion: "authentication.open-cluster-management.io/v1beta1", Kind: "ManagedServiceAccount", Name: "my-sa", UID: got.UID,
		}))
		st := review(ctx, token)
		Expect(st.Authenticated).To(BeTrue(), "TokenReview of the projected token: %s", st.Error)
		Expect(st.User.Username).To(Equal("system:serviceaccount:" + ns + ":my-sa"))

		sc := meta.FindStatusCondition(got.Status.Conditions, authv1beta1.ConditionTypeSecretCreated)
		Expect(sc).NotTo(BeNil())
		Expect(sc.Status).To(Equal(metav1.ConditionTrue))
		Expect(sc.Reason).To(Equal(authv1beta1.ReasonSecretCreated))
		Expect(meta.FindStatusCondition(got.Status.Conditions, authv1beta1.ConditionTypeTokenReported).Reason).To(Equal(authv1beta1.ReasonTokenReported))
		Expect(got.Status.TokenSecretRef).NotTo(BeNil())
		Expect(got.Status.TokenSecretRef.Name).To(Equal("my-sa"))
		Expect(got.Status.ExpirationTimestamp).NotTo(BeNil())
		last := got.Status.TokenSecretRef.LastRefreshTimestamp.Time
		Expect(got.Status.ExpirationTimestamp.Time).To(BeTemporally("~", last.Add(time.Hour), time.Minute),
			"expirationTimestamp is the token's, about validity after the refresh")

		Expect(admin.Delete(ctx, got)).To(Succeed())
		Eventually(ctx, func() error {
			_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "my-sa", metav1.GetOptions{})
			return err
		}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "ServiceAccount %s/my-sa deleted with its ManagedServiceAccount", ns)
		Eventually(ctx, func() error {
			return admin.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "my-sa"}, &corev1.Secret{})
		}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "hub Secret %s/my-sa garbage collected with its owner", cluster)
	}, SpecTimeout(3*time.Minute))

	It("issues a new token once the clock passes 80 % of the token's real life, not before", func(ctx SpecContext) {
		const cluster, ns = "msa-rotate", "msa-rotate-agent"
		clk := clocktesting.NewFakePassiveClock(time.Now())
		startAgent(ctx, cluster, ns, clk)
		m := newMSA(cluster, "rotating", 10*time.Minute)
		Expect(admin.Create(ctx, m)).To(Succeed())
		got, token := reported(ctx, m)
		last, exp := got.Status.TokenSecretRef.LastRefreshTimestamp.Time, got.Status.ExpirationTimestamp.Time
		threshold := msa.Threshold(last, exp)

		clk.SetTime(threshold.Add(-time.Minute))
		touch(ctx, m, "before")
		Consistently(ctx, func() string { return secretToken(ctx, m) }).WithTimeout(3*time.Second).
			Should(Equal(token), "no new token a minute before the threshold")

		after := threshold.Add(2 * time.Second)
		clk.SetTime(after)
		touch(ctx, m, "after")
		Eventually(ctx, func(g Gomega) {
			cur := &authv1beta1.ManagedServiceAccount{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), cur)).To(Succeed())
			g.Expect(cur.Status.TokenSecretRef).NotTo(BeNil())
			g.Expect(cur.Status.TokenSecretRef.LastRefreshTimestamp.Unix()).To(Equal(after.Unix()), "lastRefreshTimestamp is the clock's")
			g.Expect(cur.Status.ExpirationTimestamp.Time).To(BeTemporally(">", exp), "a new expiry")
		}).WithTimeout(30*time.Second).Should(Succeed(), "token renewed past the threshold")
		renewed := secretToken(ctx, m)
		Expect(renewed).NotTo(Equal(token))
		Expect(review(ctx, renewed).Authenticated).To(BeTrue())
	}, SpecTimeout(3*time.Minute))

	It("refuses a validity under 10m naming the object and field, and creates nothing", func(ctx SpecContext) {
		const cluster, ns = "msa-invalid", "msa-invalid-agent"
		startAgent(ctx, cluster, ns, nil)
		m := newMSA(cluster, "x", 5*time.Minute)
		Expect(admin.Create(ctx, m)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			cur := &authv1beta1.ManagedServiceAccount{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), cur)).To(Succeed())
			c := meta.FindStatusCondition(cur.Status.Conditions, authv1beta1.ConditionTypeTokenReported)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(authv1beta1.ReasonTokenReportFailed))
			g.Expect(c.Message).To(Equal("ManagedServiceAccount msa-invalid/x: spec.rotation.validity 5m0s: must be at least 10m0s (the TokenRequest minimum)"))
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, authv1beta1.ConditionTypeSecretCreated)).To(BeNil())
		}).WithTimeout(30*time.Second).Should(Succeed(), "TokenReported=False/TokenReportFailed naming spec.rotation.validity")
		Consistently(ctx, func(g Gomega) {
			_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "x", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no ServiceAccount %s/x (error %v)", ns, err)
			g.Expect(apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "x"}, &corev1.Secret{}))).To(BeTrue(), "no hub Secret")
		}).WithTimeout(3 * time.Second).Should(Succeed())
	}, SpecTimeout(2*time.Minute))

	It("deletes, when it starts, the ServiceAccounts of ManagedServiceAccounts deleted while it was down, and only those", func(ctx SpecContext) {
		const cluster, ns = "msa-orphan", "msa-orphan-agent"
		run := startAgent(ctx, cluster, ns, nil)
		gone, kept := newMSA(cluster, "gone", time.Hour), newMSA(cluster, "kept", time.Hour)
		Expect(admin.Create(ctx, gone)).To(Succeed())
		Expect(admin.Create(ctx, kept)).To(Succeed())
		reported(ctx, gone)
		reported(ctx, kept)
		// A ServiceAccount of the user's, not labelled.
		_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "users"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		run.stop()
		Expect(admin.Delete(ctx, gone)).To(Succeed())
		_, err = kube.CoreV1().ServiceAccounts(ns).Get(ctx, "gone", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the ServiceAccount stays while the agent is down")

		startAgent(ctx, cluster, ns, nil)
		Eventually(ctx, func() error {
			_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "gone", metav1.GetOptions{})
			return err
		}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "orphaned ServiceAccount %s/gone deleted after the restart", ns)
		for _, name := range []string{"kept", "users"} {
			_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), "ServiceAccount %s/%s stays", ns, name)
		}
	}, SpecTimeout(3*time.Minute))

	It("issues a new token when the managed cluster no longer accepts the old one (ServiceAccount recreated)", func(ctx SpecContext) {
		const cluster, ns = "msa-review", "msa-review-agent"
		startAgent(ctx, cluster, ns, nil)
		m := newMSA(cluster, "reviewed", time.Hour)
		Expect(admin.Create(ctx, m)).To(Succeed())
		_, token := reported(ctx, m)
		Expect(kube.CoreV1().ServiceAccounts(ns).Delete(ctx, "reviewed", metav1.DeleteOptions{})).To(Succeed())
		Eventually(ctx, func() bool { return review(ctx, token).Authenticated }).WithTimeout(30*time.Second).
			Should(BeFalse(), "the old token stops authenticating once its ServiceAccount is gone")
		Eventually(ctx, func(g Gomega) {
			renewed := secretToken(ctx, m)
			g.Expect(renewed).NotTo(Equal(token))
			g.Expect(review(ctx, renewed).Authenticated).To(BeTrue())
		}).WithTimeout(60*time.Second).Should(Succeed(), "a new, accepted token in the hub Secret")
	}, SpecTimeout(3*time.Minute))
})
