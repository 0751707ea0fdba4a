package operator_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
)

const restartLog = "ClusterManager settings changed; restarting the hub"

// clusterManager reads cluster-manager.
func clusterManager(ctx context.Context) *operatorv1.ClusterManager {
	GinkgoHelper()
	cm := &operatorv1.ClusterManager{}
	Expect(hubClient.Get(ctx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
	return cm
}

// setWorkGates replaces the workConfiguration feature gates of cluster-manager and returns its
// new generation.
func setWorkGates(ctx context.Context, gates ...operatorv1.FeatureGate) int64 {
	GinkgoHelper()
	var gen int64
	Eventually(func() error {
		cm := clusterManager(ctx)
		cm.Spec.WorkConfiguration = &operatorv1.WorkConfiguration{FeatureGates: gates, WorkDriver: operatorv1.WorkDriverTypeKube}
		if err := hubClient.Update(ctx, cm); err != nil {
			return err
		}
		gen = cm.Generation
		return nil
	}).Should(Succeed())
	return gen
}

// applied waits until the hub running the ClusterManager's generation gen reported it.
func applied(ctx context.Context, gen int64) *operatorv1.ClusterManager {
	GinkgoHelper()
	var cm *operatorv1.ClusterManager
	Eventually(func(g Gomega) {
		cm = clusterManager(ctx)
		g.Expect(cm.Status.ObservedGeneration).To(Equal(gen))
		g.Expect(cm.Status.Conditions).To(ContainElement(condition(operatorv1.ConditionClusterManagerApplied, metav1.ConditionTrue, operatorv1.ReasonClusterManagerApplied)))
	}).Should(Succeed())
	return cm
}

func condition(typ string, status metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(HaveField("Type", typ), HaveField("Status", status), HaveField("Reason", reason))
}

func crd(name string) operatorv1.RelatedResourceMeta {
	return operatorv1.RelatedResourceMeta{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Name: name}
}

const mwrsCRD = "manifestworkreplicasets.work.open-cluster-management.io"

var (
	mwrsEnable  = operatorv1.FeatureGate{Feature: "ManifestWorkReplicaSet", Mode: operatorv1.FeatureGateModeTypeEnable}
	mwrsDisable = operatorv1.FeatureGate{Feature: "ManifestWorkReplicaSet", Mode: operatorv1.FeatureGateModeTypeDisable}
)

var _ = Describe("RunHub", Ordered, func() {
	var clusters = []string{"op-cluster1", "op-cluster2"}

	It("runs the hub from its flags without a ClusterManager", SpecTimeout(specTimeout), func(ctx SpecContext) {
		fleet(ctx, "op-apps", clusters...)
		// The flags leave the replica set controller on.
		replicaSet(ctx, "op-apps", "from-flags")
		Eventually(func() []string { return workClusters(ctx, "op-apps", "from-flags") }).Should(ConsistOf(clusters))
	})

	It("switches the replica set controller off when cluster-manager disables it", SpecTimeout(specTimeout), func(ctx SpecContext) {
		Expect(hubClient.Create(ctx, &operatorv1.ClusterManager{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-manager"},
			Spec: operatorv1.ClusterManagerSpec{
				RegistrationConfiguration: &operatorv1.RegistrationHubConfiguration{},
				WorkConfiguration:         &operatorv1.WorkConfiguration{FeatureGates: []operatorv1.FeatureGate{mwrsDisable}},
				AddOnManagerConfiguration: &operatorv1.AddOnManagerConfiguration{},
			},
		})).To(Succeed())
		cm := applied(ctx, clusterManager(ctx).Generation)
		Expect(logs.Count(restartLog)).To(Equal(1))

		Expect(cm.Status.Conditions).To(ContainElements(
			condition(operatorv1.ConditionValidFeatureGates, metav1.ConditionTrue, operatorv1.ReasonFeatureGatesAllValid),
			condition(operatorv1.ConditionHubRegistrationDegraded, metav1.ConditionFalse, operatorv1.ReasonRegistrationFunctional),
			condition(operatorv1.ConditionHubPlacementDegraded, metav1.ConditionFalse, operatorv1.ReasonPlacementFunctional),
			// Its Pod cannot be scheduled: the Deployment has not rolled out.
			condition(operatorv1.ConditionProgressing, metav1.ConditionTrue, operatorv1.ReasonDeploymentRolling)))
		for _, c := range cm.Status.Conditions {
			Expect(c.ObservedGeneration).To(Equal(cm.Generation), "condition %s", c.Type)
		}
		dep := &appsv1.Deployment{}
		Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(deploymentObject()), dep)).To(Succeed())
		Expect(cm.Status.Generations).To(Equal([]operatorv1.GenerationStatus{{Group: "apps", Version: "v1", Resource: "deployments",
			Namespace: deployment.Namespace, Name: deployment.Name, LastGeneration: dep.Generation}}))
		Expect(cm.Status.RelatedResources).To(ContainElements(
			crd("managedclusters.cluster.open-cluster-management.io"),
			crd("placements.cluster.open-cluster-management.io"),
			crd("manifestworks.work.open-cluster-management.io"),
			operatorv1.RelatedResourceMeta{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations", Name: "flotilla-hub"},
			operatorv1.RelatedResourceMeta{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations", Name: "flotilla-hub"},
			operatorv1.RelatedResourceMeta{Group: "apps", Version: "v1", Resource: "deployments", Namespace: deployment.Namespace, Name: deployment.Name}))
		Expect(cm.Status.RelatedResources).NotTo(ContainElement(crd(mwrsCRD)), "the controller is off")

		replicaSet(ctx, "op-apps", "while-off")
		Consistently(func() []string { return workClusters(ctx, "op-apps", "while-off") }, "3s").Should(BeEmpty())
	})

	It("switches it on again when cluster-manager enables it", SpecTimeout(specTimeout), func(ctx SpecContext) {
		gen := setWorkGates(ctx, mwrsEnable)
		Eventually(func() []string { return workClusters(ctx, "op-apps", "while-off") }).Should(ConsistOf(clusters))
		cm := applied(ctx, gen)
		Expect(logs.Count(restartLog)).To(Equal(2))
		Expect(cm.Status.RelatedResources).To(ContainElement(crd(mwrsCRD)))
		Expect(cond(cm, operatorv1.ConditionClusterManagerApplied).Message).To(ContainSubstring("ManifestWorkReplicaSet"))
	})

	It("leaves a new replica set alone once cluster-manager disables it again", SpecTimeout(specTimeout), func(ctx SpecContext) {
		gen := setWorkGates(ctx, mwrsDisable)
		applied(ctx, gen)
		Expect(logs.Count(restartLog)).To(Equal(3))
		replicaSet(ctx, "op-apps", "off-again")
		Consistently(func() []string { return workClusters(ctx, "op-apps", "off-again") }, "3s").Should(BeEmpty())
	})

	It("reports a gate it does not know and keeps running, without a restart", SpecTimeout(specTimeout), func(ctx SpecContext) {
		gen := setWorkGates(ctx, mwrsDisable, operatorv1.FeatureGate{Feature: "NoSuchGate", Mode: operatorv1.FeatureGateModeTypeEnable},
			operatorv1.FeatureGate{Feature: "CloudEventsDrivers", Mode: operatorv1.FeatureGateModeTypeEnable})
		Eventually(func(g Gomega) {
			cm := clusterManager(ctx)
			g.Expect(cm.Status.ObservedGeneration).To(Equal(gen))
			c := cond(cm, operatorv1.ConditionValidFeatureGates)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(operatorv1.ReasonInvalidFeatureGatesExisting))
			g.Expect(c.Message).To(ContainSubstring("Work: [NoSuchGate CloudEventsDrivers]"))
		}).Should(Succeed())
		Expect(logs.Count(restartLog)).To(Equal(3), "the gates the hub runs with did not change")

		// The hub still runs: it makes an accepted cluster's namespace.
		Expect(hubClient.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "op-alive"},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})).To(Succeed())
		Eventually(func() error {
			return hubClient.Get(ctx, client.ObjectKey{Name: "op-alive"}, &metav1.PartialObjectMetadata{TypeMeta: namespaceType})
		}).Should(Succeed())
		Consistently(runHubDone, "1s").ShouldNot(BeClosed())
	})

	It("reports the Deployment rolled out", SpecTimeout(specTimeout), func(ctx SpecContext) {
		// The Pod may go to the simulated Node: kube-controller-manager rolls the new template
		// out, KWOK runs its Pod, and the Deployment's status says so.
		Expect(hubClient.Patch(ctx, deploymentObject(), client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"nodeSelector":null}}}}`)))).To(Succeed())
		var dep *appsv1.Deployment
		Eventually(func(g Gomega) {
			dep = &appsv1.Deployment{}
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(deploymentObject()), dep)).To(Succeed())
			g.Expect(dep.Status).To(And(HaveField("ObservedGeneration", dep.Generation), HaveField("UpdatedReplicas", int32(1)),
				HaveField("ReadyReplicas", int32(1)), HaveField("AvailableReplicas", int32(1))))
		}, "2m").Should(Succeed(), "the Deployment rolled out by kube-controller-manager")
		// The status resync is a minute away: the Deployment's watch brings the change.
		Eventually(func(g Gomega) {
			cm := clusterManager(ctx)
			g.Expect(cm.Status.Conditions).To(ContainElement(condition(operatorv1.ConditionProgressing, metav1.ConditionFalse, operatorv1.ReasonUpToDate)))
			g.Expect(cm.Status.Generations).To(ContainElement(HaveField("LastGeneration", dep.Generation)))
		}, "30s").Should(Succeed())
	})

	It("goes back to its flags when cluster-manager is deleted", SpecTimeout(specTimeout), func(ctx SpecContext) {
		Expect(hubClient.Delete(ctx, clusterManager(ctx))).To(Succeed())
		Eventually(func() int { return logs.Count(restartLog) }).Should(Equal(4))
		replicaSet(ctx, "op-apps", "flags-again")
		Eventually(func() []string { return workClusters(ctx, "op-apps", "flags-again") }).Should(ConsistOf(clusters))
	})
})

var namespaceType = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}

func deploymentObject() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: deployment.Namespace, Name: deployment.Name}}
}

// cond returns cm's condition typ (zero when missing).
func cond(cm *operatorv1.ClusterManager, typ string) metav1.Condition {
	for _, c := range cm.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
