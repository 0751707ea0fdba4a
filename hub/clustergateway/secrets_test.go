package clustergateway_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	authenticationv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/hub/clustergateway"
)

var _ = Describe("SecretReconciler", func() {
	It("keeps the ManagedServiceAccount and the labelled credential copy of each cluster-gateway add-on, and deletes the copy with the add-on", SpecTimeout(3*time.Minute), func(ctx SpecContext) {
		const cluster = "secrets1"
		mgr, err := ctrl.NewManager(hub.Config, ctrl.Options{Scheme: scheme.New(), Logger: logger.WithName("manager"),
			Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
		Expect(err).NotTo(HaveOccurred())
		Expect((&clustergateway.SecretReconciler{}).SetupWithManager(mgr)).To(Succeed())
		mctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		DeferCleanup(func(ctx SpecContext) {
			stop()
			Eventually(done).WithContext(ctx).Should(Receive(BeNil()), "waiting for the manager to stop")
		}, NodeTimeout(time.Minute))

		_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(kube.CoreV1().Namespaces().Delete(ctx, cluster, metav1.DeleteOptions{})).To(Succeed())
		}, NodeTimeout(30*time.Second))
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: clustergatewayv1alpha1.AddonName}}
		Expect(cl.Create(ctx, mca)).To(Succeed())

		By("the ManagedServiceAccount, owned by the add-on")
		msa := &authenticationv1beta1.ManagedServiceAccount{}
		Eventually(func(ctx context.Context) error {
			return cl.Get(ctx, client.ObjectKey{Namespace: cluster, Name: clustergatewayv1alpha1.ManagedServiceAccountName}, msa)
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "waiting for ManagedServiceAccount %s/cluster-gateway", cluster)
		Expect(msa.Spec.Rotation.Validity.Duration).To(Equal(4320 * time.Hour))
		Expect(msa.OwnerReferences).To(ConsistOf(HaveField("UID", mca.UID)))

		By("the agent reports the token: the copy follows, labelled")
		src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: clustergatewayv1alpha1.ManagedServiceAccountName},
			Data: map[string][]byte{"token": []byte("token-1"), "ca.crt": []byte("ca-1")}}
		Expect(cl.Create(ctx, src)).To(Succeed())
		copyOf := func(g Gomega, ctx context.Context) *corev1.Secret {
			s := &corev1.Secret{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: clustergatewayv1alpha1.DefaultSecretNamespace, Name: cluster}, s)).To(Succeed())
			return s
		}
		Eventually(func(g Gomega, ctx context.Context) {
			s := copyOf(g, ctx)
			g.Expect(s.Labels).To(Equal(map[string]string{
				"cluster.core.oam.dev/cluster-credential-type": "ServiceAccountToken",
				"cluster.core.oam.dev/cluster-endpoint-type":   "ClusterProxy",
			}))
			g.Expect(s.Data).To(Equal(map[string][]byte{"token": []byte("token-1"), "ca.crt": []byte("ca-1")}))
			g.Expect(s.ManagedFields).To(ContainElement(HaveField("Manager", clustergateway.FieldManager)))
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "waiting for the credential copy of %s", cluster)

		src.Data["token"] = []byte("token-2")
		Expect(cl.Update(ctx, src)).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			g.Expect(string(copyOf(g, ctx).Data["token"])).To(Equal("token-2"))
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "waiting for the copy to follow the rotated token")

		By("the add-on goes: so does the copy")
		Expect(cl.Delete(ctx, mca)).To(Succeed())
		Eventually(func(ctx context.Context) bool {
			err := cl.Get(ctx, client.ObjectKey{Namespace: clustergatewayv1alpha1.DefaultSecretNamespace, Name: cluster}, &corev1.Secret{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(BeTrue(), "waiting for the credential copy of %s to be deleted", cluster)
	})

	It("leaves a credential Secret it did not write", SpecTimeout(time.Minute), func(ctx SpecContext) {
		r := &clustergateway.SecretReconciler{Client: cl, Reader: cl, SecretNamespace: clustergatewayv1alpha1.DefaultSecretNamespace}
		setCredential(ctx, "manual1", "t", []byte("ca"))
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(cl.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: clustergatewayv1alpha1.DefaultSecretNamespace, Name: "manual1"}}))).To(Succeed())
		}, NodeTimeout(30*time.Second))
		_, err := r.Reconcile(ctx, ctrlRequest("manual1"))
		Expect(err).NotTo(HaveOccurred())
		Expect(cl.Get(ctx, client.ObjectKey{Namespace: clustergatewayv1alpha1.DefaultSecretNamespace, Name: "manual1"}, &corev1.Secret{})).To(Succeed())
	})
})

func ctrlRequest(cluster string) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKey{Namespace: cluster, Name: clustergatewayv1alpha1.AddonName}}
}
