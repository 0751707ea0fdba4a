package webhook_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
)

var _ = Describe("ManifestWork finalizer at create", Ordered, func() {
	const up, silent, configuration = "finalizer-up", "finalizer-silent", "flotilla-finalizer-spec"
	var c client.Client
	var srv *running

	work := func(ns, name string, finalizers ...string) *workv1.ManifestWork {
		return &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
				Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}`)}}}}},
		}
	}
	// created creates w as a client would and returns the finalizers the API server stored.
	created := func(ctx context.Context, w *workv1.ManifestWork, dryRun bool) []string {
		GinkgoHelper()
		var opts []client.CreateOption
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		Expect(c.Create(ctx, w, opts...)).To(Succeed())
		return w.Finalizers
	}

	BeforeAll(func(ctx SpecContext) {
		scheme := runtime.NewScheme()
		Expect(clusterv1.AddToScheme(scheme)).To(Succeed())
		Expect(workv1.AddToScheme(scheme)).To(Succeed())
		Expect(corev1.AddToScheme(scheme)).To(Succeed())
		var err error
		c, err = client.New(hubConf, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		for _, ns := range []string{up, silent} {
			Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			Expect(c.Create(ctx, mc)).To(Succeed())
			if ns == up {
				meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
					Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", Message: "its agent renews its lease"})
				Expect(c.Status().Update(ctx, mc)).To(Succeed())
			}
		}
		srv = start(webhook.Options{ConfigurationName: configuration}, manifestwork.NewFinalizer(c))
		cleanup(srv)
		// The API server picks up the mutating configuration on its own, moments after it is
		// written: dry runs call the webhook too.
		Eventually(func(ctx context.Context) []string {
			return created(ctx, work(up, fmt.Sprintf("probe-%d", GinkgoRandomSeed()), "example.com/keep"), true)
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(ContainElement(workv1.ManifestWorkFinalizer),
			"waiting for the API server to call the finalizer webhook through MutatingWebhookConfiguration %s", configuration)
	})

	It("adds the agent's cleanup finalizer to a work for a cluster whose agent is available", func(ctx SpecContext) {
		Expect(created(ctx, work(up, "plain"), false)).To(Equal([]string{workv1.ManifestWorkFinalizer}))
		Expect(created(ctx, work(up, "other-finalizer", "example.com/keep"), false)).
			To(Equal([]string{"example.com/keep", workv1.ManifestWorkFinalizer}))
		Expect(created(ctx, work(up, "already", workv1.ManifestWorkFinalizer), false)).To(Equal([]string{workv1.ManifestWorkFinalizer}))
	})

	It("adds none where no agent would clean up, so deleting such a work does not wait", func(ctx SpecContext) {
		Expect(created(ctx, work(silent, "silent"), false)).To(BeEmpty())
		Expect(created(ctx, work("default", "no-cluster"), false)).To(BeEmpty())
	})
})
