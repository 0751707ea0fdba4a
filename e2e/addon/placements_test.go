package addon

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// levelTemplate is an AddOnTemplate deploying ConfigMap <name>-level, whose data.level is
// the customized variable LEVEL and whose name suffix is NAME_SUFFIX (default "level").
func levelTemplate(name string) *addonv1alpha1.AddOnTemplate {
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s-{{NAME_SUFFIX}}","namespace":"%s"},"data":{"level":"{{LEVEL}}"}}`, name, addonNS)
	return &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: addonv1alpha1.AddOnTemplateSpec{AddonName: name, AgentSpec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{
			Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(cm)}}}}}}}
}

// adc is an AddOnDeploymentConfig setting LEVEL and NAME_SUFFIX.
func adc(ns, name, level, suffix string) *addonv1alpha1.AddOnDeploymentConfig {
	return &addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{
			{Name: "LEVEL", Value: level}, {Name: "NAME_SUFFIX", Value: suffix}}}}
}

// levelOn is data.level of ConfigMap <addon>-<suffix> on cluster, "" when absent.
func levelOn(cluster, addon, suffix string) func() string {
	return func() string {
		cm := &corev1.ConfigMap{}
		if err := managed[cluster].client.Get(suiteCtx, client.ObjectKey{Namespace: addonNS, Name: addon + "-" + suffix}, cm); err != nil {
			return ""
		}
		return cm.Data["level"]
	}
}

func desiredName(cluster, addon string, gr addonv1alpha1.ConfigGroupResource) func(g Gomega) string {
	return func(g Gomega) string {
		for _, r := range mca(g, cluster, addon).Status.ConfigReferences {
			if r.ConfigGroupResource == gr && r.DesiredConfig != nil {
				return r.DesiredConfig.Name
			}
		}
		return ""
	}
}

var adcGR = addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}

// adcRef is the add-on's configReference of AddOnDeploymentConfigs (nil without one).
func adcRef(m *addonv1alpha1.ManagedClusterAddOn) *addonv1alpha1.ConfigReference {
	for i := range m.Status.ConfigReferences {
		if m.Status.ConfigReferences[i].ConfigGroupResource == adcGR {
			return &m.Status.ConfigReferences[i]
		}
	}
	return nil
}

// watchMCAs watches the ManagedClusterAddOns named name in every cluster namespace until the
// spec ends, and returns a function that reports the versions seen so far: the existing ones
// first, then every change in the order the API server made them.
func watchMCAs(name string) func() []*addonv1alpha1.ManagedClusterAddOn {
	GinkgoHelper()
	c, err := client.NewWithWatch(fleet.Hub.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(suiteCtx)
	w, err := c.Watch(ctx, &addonv1alpha1.ManagedClusterAddOnList{}, client.MatchingFields{"metadata.name": name})
	Expect(err).NotTo(HaveOccurred(), "watching the ManagedClusterAddOns %s", name)
	var (
		mu   sync.Mutex
		seen []*addonv1alpha1.ManagedClusterAddOn
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if m, ok := ev.Object.(*addonv1alpha1.ManagedClusterAddOn); ok {
				mu.Lock()
				seen = append(seen, m)
				mu.Unlock()
			}
		}
	}()
	DeferCleanup(func(ctx SpecContext) {
		w.Stop()
		cancel()
		<-done
	}, NodeTimeout(2*time.Minute))
	return func() []*addonv1alpha1.ManagedClusterAddOn {
		mu.Lock()
		defer mu.Unlock()
		return append([]*addonv1alpha1.ManagedClusterAddOn(nil), seen...)
	}
}

func updateCMA(name string, edit func(*addonv1alpha1.ClusterManagementAddOn)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		c := &addonv1alpha1.ClusterManagementAddOn{}
		g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Name: name}, c)).To(Succeed())
		edit(c)
		g.Expect(hubClient.Update(suiteCtx, c)).To(Succeed())
	}).Should(Succeed())
}

var _ = Describe("the Placements install strategy and configurations", Ordered, func() {
	const (
		name   = "levels"
		ns     = "addon-levels"
		ringLb = "e2e.flotilla.dev/levels"
	)

	BeforeAll(func(ctx SpecContext) {
		placement(ns, "ring", ringLb)
		create(levelTemplate(name), adc(ns, "level-default", "default", "level"), adc(ns, "level-placement", "placement", "level"),
			adc(cluster2, "level-cluster", "cluster", "level"))
		create(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				SupportedConfigs: []addonv1alpha1.ConfigMeta{
					{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"}, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: name}},
					{ConfigGroupResource: adcGR, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: ns, Name: "level-default"}},
				},
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements,
					Placements: []addonv1alpha1.PlacementStrategy{{PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: "ring"},
						RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}}},
			}})
		DeferCleanup(func(ctx SpecContext) {
			labelCluster(cluster1, ringLb, "")
			labelCluster(cluster2, ringLb, "")
		}, NodeTimeout(2*time.Minute))
	}, NodeTimeout(5*time.Minute))

	It("installs on the clusters a placement selects as they join it, with the default configuration", func(ctx SpecContext) {
		labelCluster(cluster1, ringLb, "a")
		Eventually(levelOn(cluster1, name, "level")).Should(Equal("default"))
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).Should(cond(metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonProbeAvailable))
		Expect(mca(Default, cluster1, name).Labels).To(HaveKeyWithValue("addon.flotilla.dev/install-strategy", "placements"))
		Consistently(mcaGone(cluster2, name), "2s").Should(BeTrue())
		labelCluster(cluster2, ringLb, "b")
		Eventually(levelOn(cluster2, name, "level")).Should(Equal("default"))
	}, SpecTimeout(5*time.Minute))

	It("takes the placement's configuration over the default, and a cluster's own over both", func(ctx SpecContext) {
		updateCMA(name, func(c *addonv1alpha1.ClusterManagementAddOn) {
			c.Spec.InstallStrategy.Placements[0].Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "level-placement"}}}
		})
		Eventually(levelOn(cluster1, name, "level")).Should(Equal("placement"))
		Eventually(levelOn(cluster2, name, "level")).Should(Equal("placement"))
		Eventually(desiredName(cluster1, name, adcGR)).Should(Equal("level-placement"))

		Eventually(func(g Gomega) {
			m := mca(g, cluster2, name)
			m.Spec.Configs = []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "level-cluster"}}}
			g.Expect(hubClient.Update(ctx, m)).To(Succeed())
		}).Should(Succeed())
		Eventually(levelOn(cluster2, name, "level")).Should(Equal("cluster"))
		Eventually(desiredName(cluster2, name, adcGR)).Should(Equal("level-cluster"))
		Eventually(mcaCondition(cluster2, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonUpgradeSucceed))
		Consistently(levelOn(cluster1, name, "level"), "2s").Should(Equal("placement"))

		By("the ClusterManagementAddOn's install progression records what the placement applied")
		Eventually(func(g Gomega) {
			c := &addonv1alpha1.ClusterManagementAddOn{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
			g.Expect(c.Status.InstallProgressions).To(HaveLen(1))
			p := c.Status.InstallProgressions[0]
			g.Expect(p.Conditions).To(ContainElement(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonUpgradeSucceed)))
			var adcRef *addonv1alpha1.InstallConfigReference
			for i := range p.ConfigReferences {
				if p.ConfigReferences[i].ConfigGroupResource == adcGR {
					adcRef = &p.ConfigReferences[i]
				}
			}
			g.Expect(adcRef).NotTo(BeNil())
			g.Expect(adcRef.DesiredConfig.Name).To(Equal("level-placement"))
			g.Expect(adcRef.LastAppliedConfig).To(Equal(adcRef.DesiredConfig))
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("uninstalls from a cluster that leaves the placement", func(ctx SpecContext) {
		labelCluster(cluster2, ringLb, "")
		Eventually(mcaGone(cluster2, name)).Should(BeTrue())
		Eventually(levelOn(cluster2, name, "level")).Should(BeEmpty())
		Consistently(levelOn(cluster1, name, "level"), "2s").Should(Equal("placement"))
	}, SpecTimeout(5*time.Minute))
})

var _ = Describe("a configuration change rolled out Progressive", Ordered, func() {
	const (
		name   = "canary"
		ns     = "addon-canary"
		ringLb = "e2e.flotilla.dev/canary"
	)

	BeforeAll(func(ctx SpecContext) {
		labelCluster(cluster1, ringLb, "canary")
		labelCluster(cluster2, ringLb, "rest")
		DeferCleanup(func(ctx SpecContext) {
			labelCluster(cluster1, ringLb, "")
			labelCluster(cluster2, ringLb, "")
		}, NodeTimeout(2*time.Minute))
		placement(ns, "ring", ringLb, "canary")
		create(levelTemplate(name), adc(ns, "conf", "v1", "level"))
		create(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				SupportedConfigs: []addonv1alpha1.ConfigMeta{
					{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"}, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: name}},
					{ConfigGroupResource: adcGR},
				},
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements,
					Placements: []addonv1alpha1.PlacementStrategy{{PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: "ring"},
						Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "conf"}}},
						RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
							MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: []clusterv1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}}},
							MaxConcurrency:          intstr.FromInt32(1),
							RolloutConfig:           clusterv1alpha1.RolloutConfig{ProgressDeadline: "5s"},
						}}}}},
			}})
		Eventually(levelOn(cluster1, name, "level")).Should(Equal("v1"))
		Eventually(levelOn(cluster2, name, "level")).Should(Equal("v1"))
		Eventually(mcaCondition(cluster2, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonInstallSucceed))
	}, NodeTimeout(5*time.Minute))

	setConf := func(level, suffix string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			a := &addonv1alpha1.AddOnDeploymentConfig{}
			g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "conf"}, a)).To(Succeed())
			a.Spec = adc(ns, "conf", level, suffix).Spec
			g.Expect(hubClient.Update(suiteCtx, a)).To(Succeed())
		}).Should(Succeed())
	}

	It("stops at the canary when the new configuration fails there (maxFailures 0), leaving the rest on the old one", func(ctx SpecContext) {
		// A ConfigMap name the managed API server refuses: the canary's work cannot apply.
		setConf("v2", "Not_A_Valid_Name")
		Eventually(func(g Gomega) {
			c := &addonv1alpha1.ClusterManagementAddOn{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
			g.Expect(c.Status.InstallProgressions).To(HaveLen(1))
			g.Expect(c.Status.InstallProgressions[0].Conditions).To(ContainElement(And(
				cond(metav1.ConditionTrue, addonv1alpha1.ProgressingReasonUpgrading), HaveField("Message", ContainSubstring("Rollout stopped")))))
		}).Should(Succeed())
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnManifestApplied)).Should(cond(metav1.ConditionFalse, addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed))
		Expect(mcaCondition(cluster2, name, addonv1alpha1.ManagedClusterAddOnConditionConfigured)(Default)).To(cond(metav1.ConditionFalse, "ConfigurationsNotConfigured"))
		Consistently(levelOn(cluster2, name, "level"), "3s").Should(Equal("v1"))
		Expect(mca(Default, cluster2, name).Status.ConfigReferences).To(ContainElement(HaveField("LastAppliedConfig", Equal(mca(Default, cluster2, name).Status.ConfigReferences[1].DesiredConfig))))
	}, SpecTimeout(5*time.Minute))

	It("goes on, canary first, once the configuration is fixed", func(ctx SpecContext) {
		// Every change of the two add-ons, in the order the hub made them (one watch: events
		// come in resourceVersion order), from their state before the fix on.
		changes := watchMCAs(name)
		setConf("v3", "level")
		Eventually(levelOn(cluster1, name, "level")).Should(Equal("v3"))
		Eventually(levelOn(cluster2, name, "level")).Should(Equal("v3"))
		Eventually(mcaCondition(cluster2, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonUpgradeSucceed))

		By("cluster2 was given the fixed configuration only after cluster1 succeeded with it")
		fixed := adcRef(mca(Default, cluster2, name)).DesiredConfig.SpecHash
		canaryDone, seen := false, false
		for _, m := range changes() {
			ref := adcRef(m)
			if ref == nil || ref.DesiredConfig == nil || ref.DesiredConfig.SpecHash != fixed {
				continue
			}
			switch m.Namespace {
			case cluster1:
				canaryDone = canaryDone || ref.LastAppliedConfig != nil && ref.LastAppliedConfig.SpecHash == fixed
			case cluster2:
				if !seen {
					seen = true
					Expect(canaryDone).To(BeTrue(), "cluster2's add-on got the fixed configuration (resourceVersion %s) before cluster1's reported it applied", m.ResourceVersion)
				}
			}
		}
		Expect(seen).To(BeTrue(), "the watch never saw cluster2's add-on get the fixed configuration")
	}, SpecTimeout(5*time.Minute))
})
