package addon

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

const addonNS = "open-cluster-management-agent-addon"

var _ = Describe("the seeds' hello-template add-on", Ordered, func() {
	var cma client.Object

	BeforeAll(func(ctx SpecContext) {
		createFile("hello-template.yaml")
		cma = createFile("seeds/addon-addon-gitops-upgrades-1-clustermanagementaddon.yaml")
	}, NodeTimeout(5*time.Minute))

	It("is installed on a cluster by enabling it there (Manual), rendered into the work OCM names", func(ctx SpecContext) {
		enable(cluster1, "hello-template")
		Eventually(func(g Gomega) {
			w := &workv1.ManifestWork{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster1, Name: "addon-hello-template-deploy-0"}, w)).To(Succeed())
			g.Expect(w.Labels).To(HaveKeyWithValue(addonv1alpha1.AddonLabelKey, "hello-template"))
			g.Expect(w.Spec.Workload.Manifests).To(HaveLen(3))
		}).Should(Succeed())
		By("the agent Deployment runs on cluster1 with the cluster's name substituted")
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: "hello-template-agent"}}
		Eventually(onManaged(cluster1, d)).Should(BeTrue())
		Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--cluster-name=cluster1"))
		Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig"))
		By("the ManagedClusterAddOn reports the OCM conditions")
		Eventually(mcaCondition(cluster1, "hello-template", addonv1alpha1.ManagedClusterAddOnConditionConfigured)).Should(cond(metav1.ConditionTrue, "ConfigurationsConfigured"))
		Eventually(mcaCondition(cluster1, "hello-template", addonv1alpha1.ManagedClusterAddOnManifestApplied)).Should(cond(metav1.ConditionTrue, addonv1alpha1.AddonManifestAppliedReasonManifestsApplied))
		Eventually(mcaCondition(cluster1, "hello-template", addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonInstallSucceed))
		Eventually(mcaCondition(cluster1, "hello-template", addonv1alpha1.ManagedClusterAddOnConditionAvailable)).Should(cond(metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonProbeAvailable))
		m := mca(Default, cluster1, "hello-template")
		Expect(m.Status.Namespace).To(Equal(addonNS))
		Expect(m.Status.HealthCheck.Mode).To(Equal(addonv1alpha1.HealthCheckModeCustomized))
		Expect(m.Status.ConfigReferences).To(HaveLen(1))
		ref := m.Status.ConfigReferences[0]
		Expect(ref.DesiredConfig.Name).To(Equal("hello-template"))
		Expect(ref.DesiredConfig.SpecHash).To(HaveLen(64))
		Expect(ref.LastAppliedConfig).To(Equal(ref.DesiredConfig))
		By("the ClusterManagementAddOn reports its default configuration's hash")
		Eventually(func(g Gomega) {
			c := &addonv1alpha1.ClusterManagementAddOn{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: "hello-template"}, c)).To(Succeed())
			g.Expect(c.Status.DefaultConfigReferences).To(ConsistOf(HaveField("DesiredConfig", Equal(ref.DesiredConfig))))
		}).Should(Succeed())
		By("cluster2, not enabled, has nothing")
		Consistently(func() bool {
			return isNotFound(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster2, Name: "addon-hello-template-deploy-0"}, &workv1.ManifestWork{}))
		}, "2s").Should(BeTrue())
	}, SpecTimeout(5*time.Minute))

	It("is removed from both sides when its ClusterManagementAddOn is deleted", func(ctx SpecContext) {
		deleteAndWait(cma)
		Eventually(mcaGone(cluster1, "hello-template")).Should(BeTrue())
		Eventually(func() bool {
			return isNotFound(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster1, Name: "addon-hello-template-deploy-0"}, &workv1.ManifestWork{}))
		}).Should(BeTrue())
		Eventually(onManaged(cluster1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: "hello-template-agent"}})).Should(BeFalse())
	}, SpecTimeout(5*time.Minute))
})
