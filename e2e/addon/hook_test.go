package addon

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

var _ = Describe("an add-on with a pre-delete hook", Ordered, func() {
	const name = "hooked"

	BeforeAll(func(ctx SpecContext) {
		tmpl := agentTemplate(name)
		job := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `-cleanup","namespace":"` + addonNS + `",
"labels":{"open-cluster-management.io/addon-pre-delete":""}},"spec":{"template":{"spec":{"restartPolicy":"Never",
"containers":[{"name":"cleanup","image":"registry.k8s.io/pause:3.10"}]}}}}`
		tmpl.Spec.AgentSpec.Workload.Manifests = append(tmpl.Spec.AgentSpec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(job)}})
		create(tmpl, &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
					DefaultConfig: &addonv1alpha1.ConfigReferent{Name: name}}},
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
			}})
		enable(cluster1, name)
	}, NodeTimeout(5*time.Minute))

	It("deploys the agent without the hook, and runs the hook to completion before the add-on goes", func(ctx SpecContext) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: name + "-agent"}}
		Eventually(onManaged(cluster1, d)).Should(BeTrue())
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonInstallSucceed))
		Expect(mca(Default, cluster1, name).Finalizers).To(ContainElement(addonv1alpha1.AddonPreDeleteHookFinalizer))
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: name + "-cleanup"}}
		Expect(onManaged(cluster1, job)()).To(BeFalse(), "the hook does not run at install")

		Expect(hubClient.Delete(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster1, Name: name}})).To(Succeed())
		By("the hook Job runs while the agent is still there")
		Eventually(onManaged(cluster1, job)).Should(BeTrue())
		Expect(onManaged(cluster1, d)()).To(BeTrue())
		By("once it completed, the add-on and its agent go")
		Eventually(mcaGone(cluster1, name)).Should(BeTrue())
		Eventually(onManaged(cluster1, d)).Should(BeFalse())
		Eventually(func() bool {
			return isNotFound(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster1, Name: "addon-" + name + "-pre-delete"}, &workv1.ManifestWork{}))
		}).Should(BeTrue())
	}, SpecTimeout(5*time.Minute))
})
