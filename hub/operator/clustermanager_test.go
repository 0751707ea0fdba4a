package operator_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/core/leaderelection"
	"github.com/flotilla-dev/flotilla/hub/operator"
)

// The operator spec's own names: its ClusterManager and the namespace of its values ConfigMap
// and Lease.
const (
	opCM        = "wp1-hub"
	opNamespace = "wp1-operator"
	opImage     = "example.com/flotilla:operator-test"
	hubNS       = "open-cluster-management-hub"
)

// opComponents are the Deployments of topology Split for opCM, by OCM's names.
var opComponents = []string{
	opCM + "-addon-manager-controller", opCM + "-placement-controller", opCM + "-registration-controller",
	opCM + "-registration-webhook", opCM + "-work-controller", opCM + "-work-webhook",
}

// opDeployments returns the generations of opCM's Deployments by name.
func opDeployments(ctx context.Context) map[string]int64 {
	GinkgoHelper()
	list := &appsv1.DeploymentList{}
	Expect(hubClient.List(ctx, list, client.InNamespace(hubNS),
		client.MatchingLabels{operator.ManagedByLabel: operator.ManagedByValue, operator.ClusterManagerLabel: opCM})).To(Succeed())
	out := map[string]int64{}
	for _, d := range list.Items {
		out[d.Name] = d.Generation
	}
	return out
}

// opClusterManager reads opCM.
func opClusterManager(ctx context.Context) *operatorv1.ClusterManager {
	GinkgoHelper()
	cm := &operatorv1.ClusterManager{}
	Expect(hubClient.Get(ctx, types.NamespacedName{Name: opCM}, cm)).To(Succeed())
	return cm
}

// updateSpec changes opCM's spec and returns its new generation.
func updateSpec(ctx context.Context, change func(*operatorv1.ClusterManagerSpec)) int64 {
	GinkgoHelper()
	var gen int64
	Eventually(func() error {
		cm := opClusterManager(ctx)
		change(&cm.Spec)
		if err := hubClient.Update(ctx, cm); err != nil {
			return err
		}
		gen = cm.Generation
		return nil
	}).WithTimeout(30*time.Second).Should(Succeed(), "updating ClusterManager %s", opCM)
	return gen
}

// observed waits until opCM's status observes generation gen and returns it.
func observed(ctx context.Context, gen int64) *operatorv1.ClusterManager {
	GinkgoHelper()
	var cm *operatorv1.ClusterManager
	Eventually(func(g Gomega) {
		cm = opClusterManager(ctx)
		g.Expect(cm.Status.ObservedGeneration).To(Equal(gen))
	}).WithTimeout(time.Minute).Should(Succeed(), "ClusterManager %s status.observedGeneration reaching %d", opCM, gen)
	return cm
}

func opCondition(cm *operatorv1.ClusterManager, typ string) metav1.Condition {
	c := meta.FindStatusCondition(cm.Status.Conditions, typ)
	if c == nil {
		return metav1.Condition{Type: typ, Status: "<absent>"}
	}
	return *c
}

// changed lists the Deployments whose generation differs between before and after.
func changed(before, after map[string]int64) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(after)) {
		if before[n] != after[n] {
			out = append(out, n)
		}
	}
	return out
}

var _ = Describe("the hub operator", Ordered, func() {
	var stop context.CancelFunc
	var done chan struct{}

	BeforeAll(func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opNamespace}}))).To(Succeed())
		Expect(hubClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: opNamespace, Name: operator.ValuesConfigMap},
			Data: map[string]string{operator.ValuesKey: "topology: Split\ncomponents:\n  placement-controller: {replicas: 2}\n"}})).To(Succeed())
		// The components' ServiceAccounts, which templates/components/rbac.yaml renders (another
		// change): without them no Pod is created.
		for _, sa := range []string{"registration-controller-sa", "registration-webhook-sa", "work-webhook-sa", "work-controller-sa",
			"placement-controller-sa", "addon-manager-controller-sa"} {
			Expect(client.IgnoreAlreadyExists(hubClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: sa}}))).To(Succeed())
		}
		runCtx, cancel := context.WithCancel(context.Background())
		stop, done = cancel, make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(operator.RunClusterManagerOperator(runCtx, operator.OperatorOptions{
				Config: hubConfig, ClusterManagerName: opCM, Namespace: opNamespace, Image: opImage,
				LeaderElection: leaderelection.Config{Enabled: true}, Logger: GinkgoLogr.WithName("hub-operator"),
			})).To(Succeed())
		}()
		DeferCleanup(func() {
			stop()
			Eventually(done).WithTimeout(time.Minute).Should(BeClosed(), "the hub operator stopping")
		})
		Expect(hubClient.Create(ctx, &operatorv1.ClusterManager{ObjectMeta: metav1.ObjectMeta{Name: opCM},
			Spec: operatorv1.ClusterManagerSpec{DeployOption: operatorv1.ClusterManagerDeployOption{Mode: operatorv1.InstallModeDefault}}})).To(Succeed())
	}, NodeTimeout(2*time.Minute))

	It("renders OCM's Split Deployments, owned by the ClusterManager, and reports them", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			g.Expect(slices.Sorted(maps.Keys(opDeployments(ctx)))).To(Equal(opComponents))
		}).WithTimeout(time.Minute).Should(Succeed(), "the six Deployments of %s", opCM)
		cm := opClusterManager(ctx)
		for _, name := range opComponents {
			d := &appsv1.Deployment{}
			Expect(hubClient.Get(ctx, types.NamespacedName{Namespace: hubNS, Name: name}, d)).To(Succeed())
			Expect(d.OwnerReferences).To(ContainElement(HaveField("UID", cm.UID)), "%s owned by the ClusterManager", name)
			Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(opImage), "%s runs the operator's image", name)
			if strings.HasSuffix(name, "placement-controller") {
				Expect(*d.Spec.Replicas).To(BeEquivalentTo(2), "replicas from the values ConfigMap")
			}
		}
		svc := &corev1.Service{}
		Expect(hubClient.Get(ctx, types.NamespacedName{Namespace: hubNS, Name: opCM + "-work-webhook"}, svc)).To(Succeed())

		Eventually(func(g Gomega) {
			cm := opClusterManager(ctx)
			g.Expect(cm.Status.ObservedGeneration).To(Equal(cm.Generation))
			g.Expect(opCondition(cm, operatorv1.ConditionClusterManagerApplied)).To(HaveField("Reason", operatorv1.ReasonClusterManagerApplied))
			g.Expect(opCondition(cm, operatorv1.ConditionValidFeatureGates)).To(HaveField("Status", metav1.ConditionTrue))
			g.Expect(opCondition(cm, operatorv1.ConditionValidConfiguration)).To(HaveField("Reason", operatorv1.ReasonConfigurationValid))
			g.Expect(opCondition(cm, operatorv1.ConditionProgressing)).To(HaveField("Reason", operatorv1.ReasonUpToDate))
			g.Expect(opCondition(cm, operatorv1.ConditionHubRegistrationDegraded)).To(HaveField("Reason", operatorv1.ReasonRegistrationFunctional))
			g.Expect(opCondition(cm, operatorv1.ConditionHubPlacementDegraded)).To(HaveField("Reason", operatorv1.ReasonPlacementFunctional))
			var gens []string
			for _, gs := range cm.Status.Generations {
				g.Expect(gs.Resource).To(Equal("deployments"))
				gens = append(gens, gs.Name)
			}
			g.Expect(gens).To(Equal(opComponents))
			for _, name := range opComponents {
				g.Expect(cm.Status.RelatedResources).To(ContainElement(operatorv1.RelatedResourceMeta{
					Group: "apps", Version: "v1", Resource: "deployments", Namespace: hubNS, Name: name}))
			}
			g.Expect(cm.Status.RelatedResources).To(ContainElement(operatorv1.RelatedResourceMeta{
				Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Name: "managedclusters.cluster.open-cluster-management.io"}))
		}).WithTimeout(2*time.Minute).Should(Succeed(), "the status of %s: applied, rolled out, functional", opCM)
	})

	It("re-creates a Deployment deleted by someone else", func(ctx SpecContext) {
		name := opCM + "-placement-controller"
		d := &appsv1.Deployment{}
		Expect(hubClient.Get(ctx, types.NamespacedName{Namespace: hubNS, Name: name}, d)).To(Succeed())
		Expect(hubClient.Delete(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &appsv1.Deployment{}
			g.Expect(hubClient.Get(ctx, types.NamespacedName{Namespace: hubNS, Name: name}, got)).To(Succeed())
			g.Expect(got.UID).NotTo(Equal(d.UID))
		}).WithTimeout(30*time.Second).Should(Succeed(), "Deployment %s applied again", name)
	})

	It("reports a values ConfigMap it cannot read, naming it, and changes nothing", func(ctx SpecContext) {
		before := opDeployments(ctx)
		setValues := func(data string) {
			GinkgoHelper()
			cmap := &corev1.ConfigMap{}
			Expect(hubClient.Get(ctx, types.NamespacedName{Namespace: opNamespace, Name: operator.ValuesConfigMap}, cmap)).To(Succeed())
			cmap.Data[operator.ValuesKey] = data
			Expect(hubClient.Update(ctx, cmap)).To(Succeed())
		}
		good := "topology: Split\ncomponents:\n  placement-controller: {replicas: 2}\n"
		setValues("topology: [Split\n")
		Eventually(func(g Gomega) {
			g.Expect(opCondition(opClusterManager(ctx), operatorv1.ConditionClusterManagerApplied)).To(And(
				HaveField("Reason", operatorv1.ReasonRuntimeResourceApplyFailed),
				HaveField("Message", ContainSubstring("ConfigMap "+opNamespace+"/"+operator.ValuesConfigMap))))
		}).WithTimeout(30*time.Second).Should(Succeed(), "Applied False naming the values ConfigMap")
		Expect(opDeployments(ctx)).To(Equal(before), "nothing applied from a values ConfigMap that does not parse")
		setValues(good)
		Eventually(func(g Gomega) {
			g.Expect(opCondition(opClusterManager(ctx), operatorv1.ConditionClusterManagerApplied)).To(HaveField("Reason", operatorv1.ReasonClusterManagerApplied))
		}).WithTimeout(30*time.Second).Should(Succeed(), "Applied True again")
	})

	It("rolls every Deployment on a nodePlacement change", func(ctx SpecContext) {
		before := opDeployments(ctx)
		gen := updateSpec(ctx, func(s *operatorv1.ClusterManagerSpec) {
			s.NodePlacement.Tolerations = []corev1.Toleration{{Key: "wp1", Operator: corev1.TolerationOpExists}}
		})
		observed(ctx, gen)
		Eventually(func() []string { return changed(before, opDeployments(ctx)) }).WithTimeout(30*time.Second).
			Should(Equal(opComponents), "every Deployment's generation bumped")
	})

	It("rolls only the work Deployments on a work gate, and names an unknown placement gate", func(ctx SpecContext) {
		before := opDeployments(ctx)
		gen := updateSpec(ctx, func(s *operatorv1.ClusterManagerSpec) {
			s.WorkConfiguration = &operatorv1.WorkConfiguration{FeatureGates: []operatorv1.FeatureGate{{Feature: "ManifestWorkReplicaSet", Mode: operatorv1.FeatureGateModeTypeEnable}}}
			s.PlacementConfiguration = &operatorv1.PlacementConfiguration{FeatureGates: []operatorv1.FeatureGate{{Feature: "PlacementDebugServer", Mode: operatorv1.FeatureGateModeTypeEnable}}}
		})
		cm := observed(ctx, gen)
		Expect(opCondition(cm, operatorv1.ConditionValidFeatureGates)).To(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring("Placement: [PlacementDebugServer]"))))
		Expect(changed(before, opDeployments(ctx))).To(Equal([]string{opCM + "-work-controller", opCM + "-work-webhook"}))
	})

	It("lists refused fields in ValidConfiguration and still applies", func(ctx SpecContext) {
		gen := updateSpec(ctx, func(s *operatorv1.ClusterManagerSpec) {
			s.NetworkPolicyConfiguration = &operatorv1.NetworkPolicyConfiguration{MonitoringNamespace: "monitoring"}
		})
		Eventually(func(g Gomega) {
			cm := opClusterManager(ctx)
			g.Expect(cm.Status.ObservedGeneration).To(Equal(gen))
			g.Expect(opCondition(cm, operatorv1.ConditionValidConfiguration)).To(And(HaveField("Reason", operatorv1.ReasonUnsupportedFields),
				HaveField("Message", ContainSubstring("spec.networkPolicyConfiguration.monitoringNamespace"))))
			g.Expect(opCondition(cm, operatorv1.ConditionClusterManagerApplied)).To(HaveField("Status", metav1.ConditionTrue))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("prunes the add-on manager when AddonManagement is off", func(ctx SpecContext) {
		before := opDeployments(ctx)
		gen := updateSpec(ctx, func(s *operatorv1.ClusterManagerSpec) {
			s.AddOnManagerConfiguration = &operatorv1.AddOnManagerConfiguration{FeatureGates: []operatorv1.FeatureGate{{Feature: "AddonManagement", Mode: operatorv1.FeatureGateModeTypeDisable}}}
		})
		observed(ctx, gen)
		Eventually(func(g Gomega) {
			err := hubClient.Get(ctx, types.NamespacedName{Namespace: hubNS, Name: opCM + "-addon-manager-controller"}, &appsv1.Deployment{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment %s-addon-manager-controller: %v", opCM, err)
			err = hubClient.Get(ctx, types.NamespacedName{Namespace: hubNS, Name: opCM + "-addon-webhook"}, &corev1.Service{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service %s-addon-webhook: %v", opCM, err)
		}).WithTimeout(30*time.Second).Should(Succeed(), "the add-on manager pruned")
		after := opDeployments(ctx)
		delete(before, opCM+"-addon-manager-controller")
		Expect(after).To(Equal(before), "the other Deployments unchanged")
		Eventually(func(g Gomega) {
			g.Expect(opClusterManager(ctx).Status.Generations).To(HaveLen(5))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("refuses Hosted mode and applies nothing new", func(ctx SpecContext) {
		before := opDeployments(ctx)
		gen := updateSpec(ctx, func(s *operatorv1.ClusterManagerSpec) {
			s.DeployOption.Mode = operatorv1.InstallModeHosted
			s.NodePlacement.NodeSelector = map[string]string{"wp1": "hosted"}
		})
		cm := observed(ctx, gen)
		Expect(opCondition(cm, operatorv1.ConditionClusterManagerApplied)).To(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", operatorv1.ReasonUnsupportedConfiguration),
			HaveField("Message", "spec.deployOption.mode: Hosted ClusterManager is not supported")))
		Expect(opDeployments(ctx)).To(Equal(before), "no Deployment changed once observedGeneration caught up")
	})

	It("leaves the components to garbage collection when the ClusterManager is deleted", func(ctx SpecContext) {
		Expect(hubClient.Delete(ctx, opClusterManager(ctx))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(opDeployments(ctx)).To(BeEmpty())
			svcs := &corev1.ServiceList{}
			g.Expect(hubClient.List(ctx, svcs, client.InNamespace(hubNS), client.MatchingLabels{operator.ClusterManagerLabel: opCM})).To(Succeed())
			g.Expect(svcs.Items).To(BeEmpty())
		}).WithTimeout(time.Minute).Should(Succeed(), "the Deployments and Services of %s deleted with it", opCM)
	})
})

// rbacCM is the ClusterManager of the spec that runs the operator as the chart's
// ServiceAccount.
const rbacCM = "wp1-rbac"

var _ = Describe("the hub operator with its chart's RBAC", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		objs, err := install.Render(install.HubChart, install.HubChart, operator.OperatorNamespace, map[string]any{
			"render": "operator", "topology": "Split", "clusterManager": map[string]any{"name": rbacCM}})
		Expect(err).NotTo(HaveOccurred())
		// Its RBAC, values ConfigMap and ClusterManager; the operator runs here, not in a Pod.
		var apply []*unstructured.Unstructured
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "Deployment" {
				apply = append(apply, o)
			}
		}
		Expect(install.Apply(ctx, hubConfig, apply)).To(Succeed())
		for _, sa := range []string{"registration-controller-sa", "registration-webhook-sa", "work-webhook-sa", "work-controller-sa",
			"placement-controller-sa", "addon-manager-controller-sa"} {
			Expect(client.IgnoreAlreadyExists(hubClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: hubNS, Name: sa}}))).To(Succeed())
		}
		cfg := rest.CopyConfig(hubConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + operator.OperatorNamespace + ":cluster-manager",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operator.OperatorNamespace, "system:authenticated"}}
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(operator.RunClusterManagerOperator(runCtx, operator.OperatorOptions{
				Config: cfg, ClusterManagerName: rbacCM, Image: opImage,
				LeaderElection: leaderelection.Config{Enabled: true}, Logger: GinkgoLogr.WithName("hub-operator-rbac"),
			})).To(Succeed())
		}()
		DeferCleanup(func() {
			stop()
			Eventually(done).WithTimeout(time.Minute).Should(BeClosed(), "the hub operator stopping")
		})
	}, NodeTimeout(2*time.Minute))

	It("deploys and reports with no more than the chart grants", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			cm := &operatorv1.ClusterManager{}
			g.Expect(hubClient.Get(ctx, types.NamespacedName{Name: rbacCM}, cm)).To(Succeed())
			g.Expect(opCondition(cm, operatorv1.ConditionClusterManagerApplied)).To(HaveField("Reason", operatorv1.ReasonClusterManagerApplied))
			g.Expect(cm.Status.ObservedGeneration).To(Equal(cm.Generation))
			g.Expect(cm.Status.Generations).To(HaveLen(6))
			g.Expect(opCondition(cm, operatorv1.ConditionProgressing)).To(HaveField("Reason", operatorv1.ReasonUpToDate))
		}).WithTimeout(2*time.Minute).Should(Succeed(), "ClusterManager %s applied and rolled out by the operator as its ServiceAccount", rbacCM)
	})
})
