package addon

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// agentTemplate is an AddOnTemplate deploying one agent Deployment <name>-agent.
func agentTemplate(name string) *addonv1alpha1.AddOnTemplate {
	d := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `-agent","namespace":"` + addonNS + `"},
"spec":{"replicas":1,"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},
"spec":{"containers":[{"name":"agent","image":"registry.k8s.io/pause:3.10"}]}}}}`
	return &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: addonv1alpha1.AddOnTemplateSpec{AddonName: name, AgentSpec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
			Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(d)}}}}}}}
}

func envOf(d *appsv1.Deployment) map[string]string {
	out := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

var _ = Describe("proxy settings from an AddOnDeploymentConfig (the seeds' proxy example)", Ordered, func() {
	const name = "my-addon"

	BeforeAll(func(ctx SpecContext) {
		create(agentTemplate(name), &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				SupportedConfigs: []addonv1alpha1.ConfigMeta{
					{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"}, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: name}},
					{ConfigGroupResource: adcGR},
				},
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
			}})
		// The seeds' AddOnDeploymentConfig and ManagedClusterAddOn, as written.
		createFile("seeds/addon-scenarios-1-addondeploymentconfig.yaml")
		createFile("seeds/addon-scenarios-2-managedclusteraddon.yaml")
	}, NodeTimeout(5*time.Minute))

	It("puts the proxy environment and CA bundle into the agent", func(ctx SpecContext) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: name + "-agent"}}
		Eventually(func(g Gomega) {
			g.Expect(onManaged(cluster1, d)()).To(BeTrue())
			g.Expect(envOf(d)).To(HaveKeyWithValue("NO_PROXY", ".cluster.local,.svc,"))
		}).Should(Succeed())
		Expect(envOf(d)).NotTo(HaveKey("HTTP_PROXY"), "the seed's httpProxy is empty")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: name + "-proxy-ca"}}
		Eventually(onManaged(cluster1, cm)).Should(BeTrue())
		Expect(cm.Data).To(ContainElement("------\n"), "the seed's caBundle, decoded")

		// (Changed while still installing, the change would just be part of the install.)
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonInstallSucceed))

		By("a proxy URL set later reaches the agent")
		Eventually(func(g Gomega) {
			a := &addonv1alpha1.AddOnDeploymentConfig{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster1, Name: "addon-proxy-settings"}, a)).To(Succeed())
			a.Spec.ProxyConfig.HTTPProxy = "http://proxy.example.com:3128"
			a.Spec.ProxyConfig.HTTPSProxy = "http://proxy.example.com:3128"
			g.Expect(hubClient.Update(ctx, a)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(onManaged(cluster1, d)()).To(BeTrue())
			g.Expect(envOf(d)).To(And(HaveKeyWithValue("HTTP_PROXY", "http://proxy.example.com:3128"), HaveKeyWithValue("HTTPS_PROXY", "http://proxy.example.com:3128")))
		}).Should(Succeed())
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonUpgradeSucceed))
	}, SpecTimeout(5*time.Minute))
})
