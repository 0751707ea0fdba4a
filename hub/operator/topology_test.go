package operator_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/hub/operator"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// The topology spec's own ClusterManager and operator namespace.
const (
	topoCM        = "topo-hub"
	topoNamespace = "topo-operator"
)

var _ = Describe("the hub operator switching topology", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: topoNamespace}}))).To(Succeed())
		Expect(hubClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: topoNamespace, Name: operator.ValuesConfigMap},
			Data: map[string]string{operator.ValuesKey: "topology: Single\n"}})).To(Succeed())
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(operator.RunClusterManagerOperator(runCtx, operator.OperatorOptions{
				Config: hubConfig, ClusterManagerName: topoCM, Namespace: topoNamespace, Image: opImage,
				Logger: GinkgoLogr.WithName("hub-operator-topology"),
			})).To(Succeed())
		}()
		DeferCleanup(func() {
			stop()
			Eventually(done).WithTimeout(time.Minute).Should(BeClosed(), "the hub operator stopping")
		})
		Expect(hubClient.Create(ctx, &operatorv1.ClusterManager{ObjectMeta: metav1.ObjectMeta{Name: topoCM}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, &operatorv1.ClusterManager{ObjectMeta: metav1.ObjectMeta{Name: topoCM}}))).To(Succeed())
		}, NodeTimeout(time.Minute))
	}, NodeTimeout(2*time.Minute))

	It("deletes what Single rendered and the webhook configurations and Secret its process wrote when the values switch to Split", func(ctx SpecContext) {
		Eventually(func() error {
			return hubClient.Get(ctx, types.NamespacedName{Namespace: hubNS, Name: "flotilla-hub"}, &appsv1.Deployment{})
		}).WithTimeout(time.Minute).Should(Succeed(), "the Single hub's Deployment flotilla-hub")
		// What the Single hub's process writes (hub/webhook's Server), labelled as it labels them.
		labels := map[string]string{webhook.ManagedByLabel: "flotilla-hub"}
		meta := metav1.ObjectMeta{Name: webhook.DefaultConfigurationName, Labels: labels}
		Expect(hubClient.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta})).To(Succeed())
		Expect(hubClient.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta})).To(Succeed())
		Expect(hubClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: webhook.DefaultSecretName, Labels: labels}})).To(Succeed())
		// Someone else's configuration of a Split name stays.
		foreign := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: topoCM + "-addon-webhook"}}
		Expect(hubClient.Create(ctx, foreign)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, foreign))).To(Succeed()) }, NodeTimeout(time.Minute))

		cmap := &corev1.ConfigMap{}
		Expect(hubClient.Get(ctx, types.NamespacedName{Namespace: topoNamespace, Name: operator.ValuesConfigMap}, cmap)).To(Succeed())
		cmap.Data[operator.ValuesKey] = "topology: Split\n"
		Expect(hubClient.Update(ctx, cmap)).To(Succeed())

		Eventually(func() error {
			return hubClient.Get(ctx, types.NamespacedName{Namespace: hubNS, Name: topoCM + "-registration-webhook"}, &appsv1.Deployment{})
		}).WithTimeout(time.Minute).Should(Succeed(), "the Split hub's Deployments")
		gone := func(o client.Object, key types.NamespacedName) func() bool {
			return func() bool { return apierrors.IsNotFound(hubClient.Get(ctx, key, o)) }
		}
		for what, check := range map[string]func() bool{
			"Deployment flotilla-hub":                     gone(&appsv1.Deployment{}, types.NamespacedName{Namespace: hubNS, Name: "flotilla-hub"}),
			"Service flotilla-hub-webhook":                gone(&corev1.Service{}, types.NamespacedName{Namespace: hubNS, Name: "flotilla-hub-webhook"}),
			"ValidatingWebhookConfiguration flotilla-hub": gone(&admissionregistrationv1.ValidatingWebhookConfiguration{}, types.NamespacedName{Name: webhook.DefaultConfigurationName}),
			"MutatingWebhookConfiguration flotilla-hub":   gone(&admissionregistrationv1.MutatingWebhookConfiguration{}, types.NamespacedName{Name: webhook.DefaultConfigurationName}),
			"Secret " + webhook.DefaultSecretName:         gone(&corev1.Secret{}, types.NamespacedName{Namespace: hubNS, Name: webhook.DefaultSecretName}),
		} {
			Eventually(check).WithTimeout(time.Minute).Should(BeTrue(), "%s deleted after the switch to Split", what)
		}
		Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(foreign), &admissionregistrationv1.ValidatingWebhookConfiguration{})).To(Succeed(),
			"a configuration the hub did not write stays")
	}, SpecTimeout(3*time.Minute))
})
