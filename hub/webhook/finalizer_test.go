package webhook_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
)

var _ = Describe("ManifestWork finalizer policy at create", Ordered, func() {
	// up is labelled as the hub labels the namespace of a cluster whose agent is available.
	const up, silent = "finalizer-up", "finalizer-silent"
	var c client.Client

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
		Expect(workv1.AddToScheme(scheme)).To(Succeed())
		Expect(corev1.AddToScheme(scheme)).To(Succeed())
		var err error
		c, err = client.New(hubConf, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: up,
			Labels: map[string]string{managedcluster.AgentAvailableLabel: "true"}}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: silent}})).To(Succeed())

		installed, err := manifestwork.InstallFinalizerPolicy(ctx, kube)
		Expect(err).NotTo(HaveOccurred())
		Expect(installed).To(BeTrue(), "kube-apiserver v1.36 serves admissionregistration.k8s.io/v1 mutatingadmissionpolicies")
		DeferCleanup(func(ctx SpecContext) {
			policies := kube.AdmissionregistrationV1()
			err := policies.MutatingAdmissionPolicyBindings().Delete(ctx, manifestwork.FinalizerPolicyName, metav1.DeleteOptions{})
			Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "deleting the binding: %v", err)
			err = policies.MutatingAdmissionPolicies().Delete(ctx, manifestwork.FinalizerPolicyName, metav1.DeleteOptions{})
			Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "deleting the policy: %v", err)
		})
		// Installing it twice (a second replica, a restart) changes nothing.
		Expect(manifestwork.InstallFinalizerPolicy(ctx, kube)).To(BeTrue())
		// The API server picks up the policy and its binding on its own, moments after they are
		// written: dry runs are mutated too.
		Eventually(func(ctx context.Context) []string {
			return created(ctx, work(up, fmt.Sprintf("probe-%d", GinkgoRandomSeed()), "example.com/keep"), true)
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(ContainElement(workv1.ManifestWorkFinalizer),
			"waiting for the API server to apply MutatingAdmissionPolicy %s to a dry-run create", manifestwork.FinalizerPolicyName)
	})

	It("adds the agent's cleanup finalizer to a work in the namespace of a cluster whose agent is available", func(ctx SpecContext) {
		Expect(created(ctx, work(up, "plain"), false)).To(Equal([]string{workv1.ManifestWorkFinalizer}))
		Expect(created(ctx, work(up, "other-finalizer", "example.com/keep"), false)).
			To(ConsistOf("example.com/keep", workv1.ManifestWorkFinalizer))
		Expect(created(ctx, work(up, "already", workv1.ManifestWorkFinalizer), false)).To(Equal([]string{workv1.ManifestWorkFinalizer}))
		Expect(created(ctx, work(up, "already-with-other", "example.com/keep", workv1.ManifestWorkFinalizer), false)).
			To(Equal([]string{"example.com/keep", workv1.ManifestWorkFinalizer}))
	})

	It("adds none where no agent would clean up, so deleting such a work does not wait", func(ctx SpecContext) {
		Expect(created(ctx, work(silent, "silent"), false)).To(BeEmpty(), "namespace %s has no %s label", silent, managedcluster.AgentAvailableLabel)
		Expect(created(ctx, work("default", "no-cluster"), false)).To(BeEmpty())
	})
})
