package addon_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gtypes "github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const agentNS = "hosted-agents"

// manifest is an object of the template: kind Deployment or ConfigMap, with the
// hosted-manifest-location annotation when location is set.
func manifest(kind, name, location string) workv1.Manifest {
	obj := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": agentNS}}
	if kind == "Deployment" {
		obj["apiVersion"] = "apps/v1"
		obj["spec"] = map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "agent", "image": "quay.io/example/agent:v1"}}}}}
	}
	if location != "" {
		obj["metadata"].(map[string]any)["annotations"] = map[string]any{addonv1alpha1.HostedManifestLocationAnnotationKey: location}
	}
	raw, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	var m workv1.Manifest
	m.Raw = raw
	return m
}

// createCluster creates ManagedCluster name and its namespace, deleted after the spec.
func createCluster(name string) {
	GinkgoHelper()
	createNamespace(name)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	Expect(admin.Create(suiteCtx, mc)).To(Succeed(), "creating ManagedCluster %s", name)
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, mc))).To(Succeed()) }, NodeTimeout(time.Minute))
}

func createNamespace(name string) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(admin.Create(suiteCtx, ns)).To(Succeed(), "creating Namespace %s", name)
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, ns))).To(Succeed()) }, NodeTimeout(time.Minute))
}

// create creates obj on the hub, deleted (not waited for) after the spec.
func create(obj client.Object) {
	GinkgoHelper()
	Expect(admin.Create(suiteCtx, obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, obj))).To(Succeed()) }, NodeTimeout(time.Minute))
}

// templateAddOn creates add-on name as an AddOnTemplate of manifests, enabled on cluster
// with the hosting-cluster-name annotation naming hosting.
func templateAddOn(name, cluster, hosting string, manifests ...workv1.Manifest) {
	GinkgoHelper()
	tmpl := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: name + "-v1"},
		Spec: addonv1alpha1.AddOnTemplateSpec{AddonName: name, AgentSpec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: manifests}}}}
	create(tmpl)
	create(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: addonv1alpha1.ClusterManagementAddOnSpec{
		SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: hubaddon.AddOnTemplateResource,
			DefaultConfig: &addonv1alpha1.ConfigReferent{Name: tmpl.Name}}},
		InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
	}})
	enable(name, cluster, hosting)
}

// enable creates ManagedClusterAddOn cluster/name in hosted mode on hosting.
func enable(name, cluster, hosting string) {
	GinkgoHelper()
	create(&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name,
		Annotations: map[string]string{addonv1alpha1.HostingClusterNameAnnotationKey: hosting}}})
}

func getMCA(g Gomega, cluster, name string) *addonv1alpha1.ManagedClusterAddOn {
	m := &addonv1alpha1.ManagedClusterAddOn{}
	g.Expect(admin.Get(suiteCtx, client.ObjectKey{Namespace: cluster, Name: name}, m)).To(Succeed())
	return m
}

// mcaCondition is a function for Eventually returning condition t of cluster/name.
func mcaCondition(cluster, name, t string) func(g Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		c := meta.FindStatusCondition(getMCA(g, cluster, name).Status.Conditions, t)
		g.Expect(c).NotTo(BeNil(), "condition %s of ManagedClusterAddOn %s/%s", t, cluster, name)
		return c
	}
}

func cond(status metav1.ConditionStatus, reason string) gtypes.GomegaMatcher {
	return And(HaveField("Status", status), HaveField("Reason", reason))
}

// work is a function for Eventually returning ManifestWork namespace/name.
func work(namespace, name string) func(g Gomega) *workv1.ManifestWork {
	return func(g Gomega) *workv1.ManifestWork {
		w := &workv1.ManifestWork{}
		g.Expect(admin.Get(suiteCtx, client.ObjectKey{Namespace: namespace, Name: name}, w)).To(Succeed(), "ManifestWork %s/%s", namespace, name)
		return w
	}
}

// gone is a function for Eventually saying whether ManifestWork namespace/name is gone.
func gone(namespace, name string) func() bool {
	return func() bool {
		err := admin.Get(suiteCtx, client.ObjectKey{Namespace: namespace, Name: name}, &workv1.ManifestWork{})
		return err != nil && client.IgnoreNotFound(err) == nil
	}
}

// addonWorks lists the works in namespace labelled with add-on name.
func addonWorks(g Gomega, namespace, name string) []string {
	list := &workv1.ManifestWorkList{}
	g.Expect(admin.List(suiteCtx, list, client.InNamespace(namespace), client.MatchingLabels{addonv1alpha1.AddonLabelKey: name})).To(Succeed())
	var out []string
	for _, w := range list.Items {
		out = append(out, w.Name)
	}
	return out
}

// manifestNames are the kind/name of a work's manifests.
func manifestNames(w *workv1.ManifestWork) []string {
	var out []string
	for _, m := range w.Spec.Workload.Manifests {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		Expect(json.Unmarshal(m.Raw, &o)).To(Succeed())
		out = append(out, o.Kind+"/"+o.Metadata.Name)
	}
	return out
}

// report plays the work agent: the work is applied and available for its generation, with
// the Deployment agent's feedback when readyReplicas ≥ 0.
func report(namespace, name, deployment string, readyReplicas int64) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		w := work(namespace, name)(g)
		now := metav1.Now()
		w.Status.Conditions = []metav1.Condition{
			{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", ObservedGeneration: w.Generation, LastTransitionTime: now},
			{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "ResourcesAvailable", ObservedGeneration: w.Generation, LastTransitionTime: now},
		}
		w.Status.ResourceStatus = workv1.ManifestResourceStatus{}
		if readyReplicas >= 0 {
			one := int64(1)
			w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
				ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: agentNS, Name: deployment},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
					{Name: workv1.WellKnownReadyReplicas, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &readyReplicas}},
					{Name: workv1.WellKnownReplicas, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &one}},
				}},
				Conditions: []metav1.Condition{},
			}}
		}
		g.Expect(admin.Status().Update(suiteCtx, w)).To(Succeed())
	}).Should(Succeed(), "writing the status of ManifestWork %s/%s", namespace, name)
}

var specs int

// names gives a spec its add-on, managed cluster and hosting cluster names.
func names(prefix string) (addon, cluster, hosting string) {
	specs++
	id := fmt.Sprintf("%s%d", prefix, specs)
	return id, id + "-managed", id + "-hosting"
}

func hostedWorkName(addon, cluster string) string {
	return "addon-" + addon + "-deploy-hosting-" + cluster + "-0"
}

var _ = Describe("a hosted add-on (addon.open-cluster-management.io/hosting-cluster-name)", func() {
	// The template: a hosting Deployment, a managed ConfigMap and one that goes nowhere.
	templateManifests := func() []workv1.Manifest {
		return []workv1.Manifest{
			manifest("Deployment", "agent", addonv1alpha1.HostedManifestLocationHostingValue),
			manifest("ConfigMap", "conf", addonv1alpha1.HostedManifestLocationManagedValue),
			manifest("ConfigMap", "skipped", addonv1alpha1.HostedManifestLocationNoneValue),
		}
	}

	It("sends hosting manifests to the hosting cluster's namespace and managed ones to the cluster's, none nowhere", func(ctx SpecContext) {
		addon, cluster, hosting := names("place")
		createCluster(cluster)
		createCluster(hosting)
		templateAddOn(addon, cluster, hosting, templateManifests()...)

		Eventually(work(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(Not(BeNil()))
		h := work(hosting, hostedWorkName(addon, cluster))(Default)
		Expect(h.Labels).To(And(HaveKeyWithValue(addonv1alpha1.AddonLabelKey, addon), HaveKeyWithValue(addonv1alpha1.AddonNamespaceLabelKey, cluster)))
		Expect(h.OwnerReferences).To(BeEmpty(), "a hosted work is not owned across namespaces")
		Expect(manifestNames(h)).To(Equal([]string{"Deployment/agent"}))

		Eventually(work(cluster, "addon-"+addon+"-deploy-0")).WithContext(ctx).Should(Not(BeNil()))
		mw := work(cluster, "addon-"+addon+"-deploy-0")(Default)
		Expect(manifestNames(mw)).To(Equal([]string{"ConfigMap/conf"}))
		Expect(mw.Labels).NotTo(HaveKey(addonv1alpha1.AddonNamespaceLabelKey))
		Expect(mw.OwnerReferences).To(ContainElement(HaveField("Kind", "ManagedClusterAddOn")))
		Expect(addonWorks(Default, hosting, addon)).To(ConsistOf(hostedWorkName(addon, cluster)), "works of the add-on in the hosting namespace")
		Expect(addonWorks(Default, cluster, addon)).To(ConsistOf("addon-"+addon+"-deploy-0"), "works of the add-on in the cluster namespace")

		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnHostingClusterValidity)).WithContext(ctx).Should(And(
			cond(metav1.ConditionTrue, addonv1alpha1.HostingClusterValidityReasonValid),
			HaveField("Message", fmt.Sprintf("hosting cluster %s is a managed cluster of the hub", hosting))))
		Expect(getMCA(Default, cluster, addon).Finalizers).To(ContainElement(addonv1alpha1.AddonHostingManifestFinalizer))
	}, SpecTimeout(2*time.Minute))

	It("counts the hosted works in its progress and availability", func(ctx SpecContext) {
		addon, cluster, hosting := names("progress")
		createCluster(cluster)
		createCluster(hosting)
		templateAddOn(addon, cluster, hosting, templateManifests()...)
		Eventually(work(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(Not(BeNil()))
		Eventually(work(cluster, "addon-"+addon+"-deploy-0")).WithContext(ctx).Should(Not(BeNil()))

		By("the cluster's work applied and available, the hosted one not yet: still installing")
		report(cluster, "addon-"+addon+"-deploy-0", "", -1)
		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnManifestApplied)).WithContext(ctx).Should(
			cond(metav1.ConditionTrue, addonv1alpha1.AddonManifestAppliedReasonManifestsApplied))
		// Written with ManifestApplied, in the same status.
		Expect(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnConditionProgressing)(Default)).To(
			cond(metav1.ConditionTrue, addonv1alpha1.ProgressingReasonInstalling))

		By("the hosted work applied, its Deployment not reported yet: no probe result")
		report(hosting, hostedWorkName(addon, cluster), "agent", -1)
		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnHostingManifestApplied)).WithContext(ctx).Should(
			cond(metav1.ConditionTrue, addonv1alpha1.AddonManifestAppliedReasonManifestsApplied))
		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).WithContext(ctx).Should(
			cond(metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonNoProbeResult))
		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).WithContext(ctx).Should(
			cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonInstallSucceed))

		By("the hosted Deployment ready: available")
		report(hosting, hostedWorkName(addon, cluster), "agent", 1)
		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).WithContext(ctx).Should(
			cond(metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonProbeAvailable))
	}, SpecTimeout(2*time.Minute))

	It("refuses a manifest with an unknown location: ManifestApplied False names it and the value, nothing is deployed", func(ctx SpecContext) {
		addon, cluster, hosting := names("badloc")
		createCluster(cluster)
		createCluster(hosting)
		templateAddOn(addon, cluster, hosting, append(templateManifests(), manifest("Deployment", "odd", "elsewhere"))...)

		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnManifestApplied)).WithContext(ctx).Should(And(
			cond(metav1.ConditionFalse, addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed),
			HaveField("Message", And(ContainSubstring("Deployment "+agentNS+"/odd"), ContainSubstring("not supported manifest location: elsewhere")))))
		Expect(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnHostingManifestApplied)(Default)).To(
			cond(metav1.ConditionFalse, addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed))
		Expect(addonWorks(Default, cluster, addon)).To(BeEmpty())
		Expect(addonWorks(Default, hosting, addon)).To(BeEmpty())
	}, SpecTimeout(2*time.Minute))

	It("deploys nothing to a hosting cluster that is not a ManagedCluster (HostingClusterValidity False), and does once it is one", func(ctx SpecContext) {
		addon, cluster, hosting := names("invalid")
		createCluster(cluster)
		createNamespace(hosting)
		templateAddOn(addon, cluster, hosting, templateManifests()...)

		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnHostingClusterValidity)).WithContext(ctx).Should(And(
			cond(metav1.ConditionFalse, addonv1alpha1.HostingClusterValidityReasonInvalid),
			HaveField("Message", fmt.Sprintf("hosting cluster %s is not a managed cluster of the hub", hosting))))
		// The managed part still goes to the cluster.
		Eventually(work(cluster, "addon-"+addon+"-deploy-0")).WithContext(ctx).Should(Not(BeNil()))
		Expect(addonWorks(Default, hosting, addon)).To(BeEmpty())
		Expect(getMCA(Default, cluster, addon).Finalizers).NotTo(ContainElement(addonv1alpha1.AddonHostingManifestFinalizer))

		By("the hosting cluster registered")
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: hosting}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		create(mc)
		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnHostingClusterValidity)).WithContext(ctx).Should(
			cond(metav1.ConditionTrue, addonv1alpha1.HostingClusterValidityReasonValid))
		Eventually(work(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(Not(BeNil()))
	}, SpecTimeout(2*time.Minute))

	It("deletes its hosted works when the annotation is removed, deploying everything on the managed cluster", func(ctx SpecContext) {
		addon, cluster, hosting := names("unhost")
		createCluster(cluster)
		createCluster(hosting)
		templateAddOn(addon, cluster, hosting, templateManifests()...)
		Eventually(work(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(Not(BeNil()))

		Eventually(func(g Gomega) {
			m := getMCA(g, cluster, addon)
			delete(m.Annotations, addonv1alpha1.HostingClusterNameAnnotationKey)
			g.Expect(admin.Update(ctx, m)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(gone(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(BeTrue(), "the hosted work is deleted")
		Eventually(func(g Gomega) []string {
			return manifestNames(work(cluster, "addon-"+addon+"-deploy-0")(g))
		}).WithContext(ctx).Should(Equal([]string{"Deployment/agent", "ConfigMap/conf", "ConfigMap/skipped"}))
		Eventually(func(g Gomega) []string { return getMCA(g, cluster, addon).Finalizers }).WithContext(ctx).Should(
			Not(ContainElement(addonv1alpha1.AddonHostingManifestFinalizer)))
	}, SpecTimeout(2*time.Minute))

	It("deletes its hosted works through its finalizer when it is deleted", func(ctx SpecContext) {
		addon, cluster, hosting := names("delete")
		createCluster(cluster)
		createCluster(hosting)
		templateAddOn(addon, cluster, hosting, templateManifests()...)
		Eventually(work(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(Not(BeNil()))
		Eventually(func(g Gomega) []string { return getMCA(g, cluster, addon).Finalizers }).WithContext(ctx).Should(
			ContainElement(addonv1alpha1.AddonHostingManifestFinalizer))

		m := getMCA(Default, cluster, addon)
		Expect(admin.Delete(ctx, m)).To(Succeed())
		Eventually(gone(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(BeTrue(), "the hosted work is deleted")
		Eventually(func() bool {
			err := admin.Get(ctx, client.ObjectKeyFromObject(m), &addonv1alpha1.ManagedClusterAddOn{})
			return err != nil && client.IgnoreNotFound(err) == nil
		}).WithContext(ctx).Should(BeTrue(), "the ManagedClusterAddOn is gone")
	}, SpecTimeout(2*time.Minute))

	It("runs a hosting pre-delete hook in the hosting cluster's namespace before letting the add-on go", func(ctx SpecContext) {
		addon, cluster, hosting := names("hook")
		createCluster(cluster)
		createCluster(hosting)
		var hook workv1.Manifest
		hook.Raw = []byte(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"cleanup","namespace":"` + agentNS + `","annotations":{` +
			`"` + addonv1alpha1.AddonPreDeleteHookAnnotationKey + `":"","` + addonv1alpha1.HostedManifestLocationAnnotationKey + `":"hosting"}},` +
			`"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"quay.io/example/cleanup:v1"}]}}}}`)
		templateAddOn(addon, cluster, hosting, append(templateManifests(), hook)...)
		hookName := "addon-" + addon + "-pre-delete-hosting-" + cluster
		Eventually(work(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(Not(BeNil()))
		Eventually(func(g Gomega) []string { return getMCA(g, cluster, addon).Finalizers }).WithContext(ctx).Should(
			ContainElements(addonv1alpha1.AddonHostingPreDeleteHookFinalizer, addonv1alpha1.AddonHostingManifestFinalizer))
		Expect(gone(hosting, hookName)()).To(BeTrue(), "no hook work before the add-on is deleted")

		m := getMCA(Default, cluster, addon)
		Expect(admin.Delete(ctx, m)).To(Succeed())
		Eventually(mcaCondition(cluster, addon, addonv1alpha1.ManagedClusterAddOnHookManifestCompleted)).WithContext(ctx).Should(And(
			cond(metav1.ConditionFalse, "HookManifestIsNotCompleted"), HaveField("Message", "hook manifestWork "+hookName+" is not completed.")))
		h := work(hosting, hookName)(Default)
		Expect(h.Labels).To(HaveKeyWithValue(addonv1alpha1.AddonNamespaceLabelKey, cluster))
		Expect(manifestNames(h)).To(Equal([]string{"Job/cleanup"}))
		Expect(work(hosting, hostedWorkName(addon, cluster))(Default)).NotTo(BeNil(), "the hosted works stay while the hook runs")

		By("the hook Job completed on the hosting cluster")
		Eventually(func(g Gomega) {
			w := work(hosting, hookName)(g)
			done := "True"
			w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
				ResourceMeta: workv1.ManifestResourceMeta{Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs", Namespace: agentNS, Name: "cleanup"},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
					{Name: workv1.WellKnownJobComplete, Value: workv1.FieldValue{Type: workv1.String, String: &done}}}},
				Conditions: []metav1.Condition{},
			}}
			g.Expect(admin.Status().Update(ctx, w)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(gone(hosting, hostedWorkName(addon, cluster))).WithContext(ctx).Should(BeTrue(), "the hosted deploy work is deleted")
		Eventually(gone(hosting, hookName)).WithContext(ctx).Should(BeTrue(), "the hosted hook work is deleted")
		Eventually(func() bool {
			err := admin.Get(ctx, client.ObjectKeyFromObject(m), &addonv1alpha1.ManagedClusterAddOn{})
			return err != nil && client.IgnoreNotFound(err) == nil
		}).WithContext(ctx).Should(BeTrue(), "the ManagedClusterAddOn is gone")
	}, SpecTimeout(2*time.Minute))

	It("places the manifests of a Wasm template by their location too", func(ctx SpecContext) {
		addon, cluster, hosting := names("wasm")
		createCluster(cluster)
		createCluster(hosting)
		setPlugin(addon+"-guest", guestModule())
		adc := &addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "location"},
			Spec: addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: agentNS,
				CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "LOCATION", Value: addonv1alpha1.HostedManifestLocationHostingValue}}}}
		create(adc)
		create(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: addon}, Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: hubaddon.WasmPluginResource, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: addon + "-guest"}},
				{ConfigGroupResource: hubaddon.AddOnDeploymentConfigResource, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: cluster, Name: adc.Name}},
			},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
		}})
		enable(addon, cluster, hosting)

		Eventually(func(g Gomega) []string {
			return manifestNames(work(hosting, hostedWorkName(addon, cluster))(g))
		}).WithContext(ctx).Should(Equal([]string{"Deployment/" + addon + "-agent"}))
		Eventually(func(g Gomega) []string {
			return manifestNames(work(cluster, "addon-"+addon+"-deploy-0")(g))
		}).WithContext(ctx).Should(Equal([]string{"ConfigMap/" + addon + "-request"}))
		// The plugin's output keeps its annotation.
		raw := string(work(hosting, hostedWorkName(addon, cluster))(Default).Spec.Workload.Manifests[0].Raw)
		Expect(raw).To(ContainSubstring(`"` + addonv1alpha1.HostedManifestLocationAnnotationKey + `":"hosting"`))
	}, SpecTimeout(3*time.Minute))
})

// guestModule is hub/addon/render's test plugin (an AddOnTemplate), built for wasip1.
func guestModule() []byte {
	GinkgoHelper()
	_, file, _, _ := goruntime.Caller(0)
	return wasmrun.Build(GinkgoT(), filepath.Join(filepath.Dir(file), "render", "testdata", "guest"))
}

// setPlugin creates WasmPlugin name (type AddOnTemplate) serving module from a ConfigMap,
// and waits until the hub serves it.
func setPlugin(name string, module []byte) {
	GinkgoHelper()
	zst, err := wasm.Compress(module)
	Expect(err).NotTo(HaveOccurred())
	createNamespace(name)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "plugin"}, BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: zst}}
	create(cm)
	wp := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flotillav1alpha1.WasmPluginSpec{
		Type: flotillav1alpha1.PluginTypeAddOnTemplate, SHA256: wasm.Digest(module),
		Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: cm.Namespace, Name: cm.Name, Key: flotillav1alpha1.SourceKeyWasmZstd}}}}
	create(wp)
	Eventually(func(g Gomega) {
		g.Expect(admin.Get(suiteCtx, client.ObjectKeyFromObject(wp), wp)).To(Succeed())
		c := meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(wp.Generation))
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}).Should(Succeed(), "WasmPlugin %s is ready", name)
}
