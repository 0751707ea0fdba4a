package webhook

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
)

var _ = Describe("The hub's ManifestWork finalizer policy", func() {
	It("adds the cleanup finalizer at create only while the cluster's agent is available, with no finalizer webhook left", func(ctx SpecContext) {
		const cluster = "finalizer-policy"
		scheme := runtime.NewScheme()
		Expect(clusterv1.AddToScheme(scheme)).To(Succeed())
		Expect(workv1.AddToScheme(scheme)).To(Succeed())
		Expect(corev1.AddToScheme(scheme)).To(Succeed())
		c, err := client.New(controlPlane.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())

		By("a hub of the previous version left its finalizer webhook in the mutating configuration")
		oldEntry := applyOldFinalizerWebhook(ctx)

		hub := startHub(manager.Options{})
		DeferCleanup(hub.stop)
		Eventually(func(g Gomega) []string {
			cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhook.DefaultConfigurationName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			g.Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, w := range cfg.Webhooks {
				names = append(names, w.Name)
			}
			return names
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Not(ContainElement(oldEntry)),
			"waiting for the hub to drop webhook %s from MutatingWebhookConfiguration %s", oldEntry, webhook.DefaultConfigurationName)
		_, err = kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Get(ctx, manifestwork.FinalizerPolicyName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the hub installed MutatingAdmissionPolicyBinding %s", manifestwork.FinalizerPolicyName)

		By("an accepted cluster whose agent is available: its namespace is labelled")
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		Expect(c.Create(ctx, mc)).To(Succeed())
		setAvailable(ctx, c, cluster, metav1.ConditionTrue)
		ns := &corev1.Namespace{}
		Eventually(func(g Gomega) map[string]string {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: cluster}, ns)).To(Succeed())
			return ns.Labels
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(HaveKeyWithValue(managedcluster.AgentAvailableLabel, "true"),
			"waiting for the hub to label namespace %s %s", cluster, managedcluster.AgentAvailableLabel)

		By("a status report that leaves Available True does not write the namespace")
		rv := ns.ResourceVersion
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: cluster}, mc)).To(Succeed())
			mc.Status.Version.Kubernetes = "v1.36.3"
			g.Expect(c.Status().Update(ctx, mc)).To(Succeed())
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "reporting ManagedCluster %s's version", cluster)
		Consistently(func(g Gomega) string {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: cluster}, ns)).To(Succeed())
			return ns.ResourceVersion
		}).WithContext(ctx).WithTimeout(2*time.Second).Should(Equal(rv), "namespace %s written after a status report", cluster)

		By("works created there get the finalizer once, others' finalizers kept")
		// The API server follows the policy, its binding and the namespace's labels through
		// informers: a dry run shows when it sees all three.
		Eventually(func(g Gomega) []string {
			return createWork(ctx, g, c, cluster, "probe", true).Finalizers
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(ContainElement(workv1.ManifestWorkFinalizer),
			"waiting for MutatingAdmissionPolicy %s to add the finalizer to a dry-run create in %s", manifestwork.FinalizerPolicyName, cluster)
		Expect(createWork(ctx, Default, c, cluster, "plain", false).Finalizers).To(Equal([]string{workv1.ManifestWorkFinalizer}))
		Expect(createWork(ctx, Default, c, cluster, "already", false, workv1.ManifestWorkFinalizer).Finalizers).
			To(Equal([]string{workv1.ManifestWorkFinalizer}))
		Expect(createWork(ctx, Default, c, cluster, "other", false, "example.com/keep").Finalizers).
			To(ConsistOf("example.com/keep", workv1.ManifestWorkFinalizer))

		By("Available goes False: the label goes, and new works get no finalizer")
		setAvailable(ctx, c, cluster, metav1.ConditionFalse)
		Eventually(func(g Gomega) map[string]string {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: cluster}, ns)).To(Succeed())
			return ns.Labels
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(And(Not(HaveKey(managedcluster.AgentAvailableLabel)), HaveKeyWithValue(clusterv1.ClusterNameLabelKey, cluster)),
			"waiting for the hub to remove %s from namespace %s", managedcluster.AgentAvailableLabel, cluster)
		Eventually(func(g Gomega) []string {
			return createWork(ctx, g, c, cluster, "probe", true).Finalizers
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(BeEmpty(),
			"waiting for the API server to see namespace %s without %s", cluster, managedcluster.AgentAvailableLabel)
		Expect(createWork(ctx, Default, c, cluster, "unavailable", false).Finalizers).To(BeEmpty())
		Expect(createWork(ctx, Default, c, "default", "no-cluster", false).Finalizers).To(BeEmpty())
	}, SpecTimeout(3*time.Minute))
})

// applyOldFinalizerWebhook writes, as a hub before the finalizer policy did, a finalizer
// webhook entry into the hub's MutatingWebhookConfiguration, and returns its name.
func applyOldFinalizerWebhook(ctx context.Context) string {
	GinkgoHelper()
	const name = "manifestworks.finalizer.flotilla.dev"
	ignore, none, never := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.NeverReinvocationPolicy
	url := "https://127.0.0.1:1/mutate/work.open-cluster-management.io/v1/manifestworks"
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: webhook.DefaultConfigurationName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{workv1.GroupVersion.Group},
					APIVersions: []string{workv1.GroupVersion.Version}, Resources: []string{"manifestworks"}},
			}},
			FailurePolicy: &ignore, SideEffects: &none, ReinvocationPolicy: &never,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	data, err := json.Marshal(cfg)
	Expect(err).NotTo(HaveOccurred())
	force := true
	_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, cfg.Name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: webhook.FieldManager, Force: &force})
	Expect(err).NotTo(HaveOccurred(), "applying MutatingWebhookConfiguration %s as the previous hub did", cfg.Name)
	return name
}

// setAvailable sets the cluster's Available condition as its agent (True) or the hub's lease
// controller would.
func setAvailable(ctx context.Context, c client.Client, cluster string, status metav1.ConditionStatus) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: cluster}, mc)).To(Succeed())
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
			Status: status, Reason: "Test", Message: "set by the spec"})
		g.Expect(c.Status().Update(ctx, mc)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "setting ManagedCluster %s Available=%s", cluster, status)
}

// createWork creates (or dry-runs) a ManifestWork with finalizers in ns and returns it as stored.
func createWork(ctx context.Context, g Gomega, c client.Client, ns, name string, dryRun bool, finalizers ...string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}`)}}}}},
	}
	var opts []client.CreateOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	g.Expect(c.Create(ctx, w, opts...)).To(Succeed(), "creating ManifestWork %s/%s", ns, name)
	return w
}
