package install

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	hubop "github.com/flotilla-dev/flotilla/hub/operator"
)

// actingPatch sets every ClusterManager field the operator acts on (hubop.ClusterManagerFields,
// Acts), each to a value that changes what it renders.
const actingPatch = `
spec:
  registrationImagePullSpec: example.com/e2e/registration:fields
  workImagePullSpec: example.com/e2e/work:fields
  placementImagePullSpec: example.com/e2e/placement:fields
  addOnManagerImagePullSpec: example.com/e2e/addon-manager:fields
  nodePlacement:
    nodeSelector: {e2e.flotilla.dev/pool: hub}
    tolerations: [{key: e2e.flotilla.dev/pool, operator: Exists, effect: NoSchedule}]
  deployOption:
    mode: Default
    default:
      registrationWebhookConfiguration: {bindConfiguration: {port: 9501, healthProbePort: 9502, metricsPort: 9503, hostNetwork: true}}
      workWebhookConfiguration: {bindConfiguration: {port: 9511, healthProbePort: 9512, metricsPort: 9513, hostNetwork: true}}
      addonWebhookConfiguration: {bindConfiguration: {port: 9521, healthProbePort: 9522, metricsPort: 9523, hostNetwork: true}}
  registrationConfiguration:
    autoApproveUsers: [e2e-approver]
    featureGates: [{feature: ManagedClusterAutoApproval, mode: Enable}]
    registrationDrivers: [{authType: csr, csr: {autoApprovedIdentities: [e2e-csr-identity]}}]
  workConfiguration:
    featureGates: [{feature: ManifestWorkReplicaSet, mode: Enable}]
    workDriver: kube
  addOnManagerConfiguration:
    featureGates: [{feature: AddonManagement, mode: Enable}]
  placementConfiguration:
    featureGates: [{feature: PlacementDebugServer, mode: Enable}]
  resourceRequirement:
    type: ResourceRequirement
    resourceRequirements: {requests: {cpu: 7m, memory: 17Mi}, limits: {memory: 77Mi}}
`

// refusedPatch sets, over actingPatch, every field the operator refuses without blocking
// (mode stays Default): the registration driver list keeps its csr entry.
const refusedPatch = `
spec:
  deployOption:
    hosted:
      registrationWebhookConfiguration: {address: registration.example.com, port: 8443, bindConfiguration: {port: 9601, healthProbePort: 9602, metricsPort: 9603, hostNetwork: true}}
      workWebhookConfiguration: {address: work.example.com, port: 8444, bindConfiguration: {port: 9611, healthProbePort: 9612, metricsPort: 9613, hostNetwork: true}}
  registrationConfiguration:
    registrationDrivers:
    - {authType: csr, csr: {autoApprovedIdentities: [e2e-csr-identity]}}
    - {authType: awsirsa, awsirsa: {hubClusterArn: "arn:aws:eks:us-west-2:123456789012:cluster/hub", autoApprovedIdentities: [e2e-irsa], tags: [a=b]}}
    - {authType: grpc, grpc: {autoApprovedIdentities: [e2e-grpc]}}
    importerConfiguration: {renderers: [render-auto]}
  workConfiguration:
    workDriver: grpc
  serverConfiguration:
    imagePullSpec: example.com/e2e/server:fields
    featureGates: [{feature: SomeServerGate, mode: Enable}]
    endpointsExposure:
    - usage: agentToHub
      protocol: grpc
      grpc: &endpoint
        type: hostname
        hostname: {host: grpc.example.com, caBundle: Y2E=}
        loadBalancer: {host: lb.example.com, caBundle: Y2E=}
        route: {host: route.example.com, caBundle: Y2E=}
      https: *endpoint
  networkPolicyConfiguration: {monitoringNamespace: monitoring, apiServerNamespace: kube-system}
`

// refusedPaths are the paths ValidConfiguration names for refusedPatch.
var refusedPaths = func() []string {
	out := []string{
		"spec.registrationConfiguration.registrationDrivers[1].authType",
		"spec.registrationConfiguration.registrationDrivers[1].awsirsa.hubClusterArn",
		"spec.registrationConfiguration.registrationDrivers[1].awsirsa.autoApprovedIdentities",
		"spec.registrationConfiguration.registrationDrivers[1].awsirsa.tags",
		"spec.registrationConfiguration.registrationDrivers[2].authType",
		"spec.registrationConfiguration.registrationDrivers[2].grpc.autoApprovedIdentities",
		"spec.registrationConfiguration.importerConfiguration.renderers",
		"spec.workConfiguration.workDriver",
		"spec.serverConfiguration.imagePullSpec",
		"spec.serverConfiguration.featureGates[0].feature",
		"spec.serverConfiguration.featureGates[0].mode",
		"spec.serverConfiguration.endpointsExposure[0].usage",
		"spec.serverConfiguration.endpointsExposure[0].protocol",
		"spec.networkPolicyConfiguration.monitoringNamespace",
		"spec.networkPolicyConfiguration.apiServerNamespace",
	}
	for _, w := range []string{"registration", "work"} {
		for _, f := range []string{"address", "port", "bindConfiguration.port", "bindConfiguration.healthProbePort", "bindConfiguration.metricsPort", "bindConfiguration.hostNetwork"} {
			out = append(out, "spec.deployOption.hosted."+w+"WebhookConfiguration."+f)
		}
	}
	for _, p := range []string{"grpc", "https"} {
		for _, f := range []string{"type", "hostname.host", "hostname.caBundle", "loadBalancer.host", "loadBalancer.caBundle", "route.host", "route.caBundle"} {
			out = append(out, "spec.serverConfiguration.endpointsExposure[0]."+p+"."+f)
		}
	}
	return out
}()

// patchLeaves lists the field paths a patch sets, as hubop.ClusterManagerFields names them:
// list entries as [], nodeSelector, tolerations and resourceRequirements whole.
func patchLeaves(doc string) []string {
	GinkgoHelper()
	var m map[string]any
	Expect(yaml.Unmarshal([]byte(doc), &m)).To(Succeed())
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		if slices.Contains([]string{"nodeSelector", "tolerations", "resourceRequirements"}, path[strings.LastIndex(path, ".")+1:]) {
			out = append(out, path)
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				walk(c, path+"."+k)
			}
			return
		case []any:
			if len(t) > 0 {
				if _, ok := t[0].(map[string]any); ok {
					for _, e := range t {
						walk(e, path+"[]")
					}
					return
				}
			}
		}
		out = append(out, path)
	}
	walk(m["spec"], "spec")
	slices.Sort(out)
	return slices.Compact(out)
}

// hubFields lists the ClusterManager fields that act (acts) or are refused.
func hubFields(acts bool) []string {
	var out []string
	for _, f := range hubop.ClusterManagerFields() {
		if f.Acts == acts {
			out = append(out, f.Path)
		}
	}
	return out
}

var _ = Describe("operator fields", Ordered, func() {
	// The components' Deployments of a Split hub, by the component whose settings they take.
	deployments := map[string]string{
		"registration-controller": "cluster-manager-registration-controller",
		"registration-webhook":    "cluster-manager-registration-webhook",
		"work-webhook":            "cluster-manager-work-webhook",
		"work-controller":         "cluster-manager-work-controller",
		"placement-controller":    "cluster-manager-placement-controller",
		"addon-manager":           "cluster-manager-addon-manager-controller",
	}
	var (
		cp   *environment.ControlPlane
		c    client.Client
		log  *deploymentsLog
		gens map[string]int64
	)
	BeforeAll(func(ctx SpecContext) {
		var err error
		// Its own hub: the suite's hubs belong to other containers, run in any order.
		cp, err = environment.StartControlPlane(suiteCtx, environment.ControlPlaneOptions{Name: "fields"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cp.Stop)
		c = clientFor(cp)
		log = runDeployments(cp)
		_, errOut, err := flotilla(ctx, "init", "--kubeconfig", cp.KubeconfigPath, "--set", "flags.plugin-cache-dir="+wasmCache, "--timeout", "3m")
		Expect(err).NotTo(HaveOccurred(), errOut)
		rolledOutAt(c, 1)
	}, NodeTimeout(5*time.Minute))

	It("one ClusterManager patch of every acting field rolls each component with it", func(ctx SpecContext) {
		Expect(patchLeaves(actingPatch)).To(Equal(hubFields(true)), "the patch sets every field the operator acts on (hub/operator's table)")
		before := hubGenerations(c)
		restarts := map[string]int{}
		for _, d := range deployments {
			restarts[d] = log.count("restarting " + hubNS + "/" + d)
		}
		gen := patchClusterManager(c, actingPatch)
		Expect(gen).To(BeNumerically(">", 1))
		rolledOutAt(c, gen)

		cm := &operatorv1.ClusterManager{}
		Expect(c.Get(ctx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
		vfg := meta.FindStatusCondition(cm.Status.Conditions, operatorv1.ConditionValidFeatureGates)
		Expect(vfg).NotTo(BeNil())
		Expect([]string{string(vfg.Status), vfg.Reason}).To(Equal([]string{"False", operatorv1.ReasonInvalidFeatureGatesExisting}), vfg.Message)
		Expect(vfg.Message).To(ContainSubstring("PlacementDebugServer"), "placement has no gate Flotilla implements")
		Expect(meta.IsStatusConditionTrue(cm.Status.Conditions, operatorv1.ConditionValidConfiguration)).To(BeTrue(), "%v", cm.Status.Conditions)

		images := map[string]string{
			"registration-controller": "example.com/e2e/registration:fields", "registration-webhook": "example.com/e2e/registration:fields",
			"work-webhook": "example.com/e2e/work:fields", "work-controller": "example.com/e2e/work:fields",
			"placement-controller": "example.com/e2e/placement:fields", "addon-manager": "example.com/e2e/addon-manager:fields",
		}
		gates := map[string]string{
			"registration-controller": "ManagedClusterAutoApproval=true", "registration-webhook": "ManagedClusterAutoApproval=true",
			"work-webhook": "ManifestWorkReplicaSet=true", "work-controller": "ManifestWorkReplicaSet=true",
			"addon-manager": "AddonManagement=true",
		}
		binds := map[string][3]int32{"registration-webhook": {9501, 9502, 9503}, "work-webhook": {9511, 9512, 9513}, "addon-manager": {9521, 9522, 9523}}
		after := hubGenerations(c)
		for comp, name := range deployments {
			d := &appsv1.Deployment{}
			Expect(c.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: name}, d)).To(Succeed())
			Expect(after[name]).To(Equal(before[name]+1), "Deployment %s: one new generation", name)
			pod := d.Spec.Template.Spec
			ctr := pod.Containers[0]
			Expect(ctr.Image).To(Equal(images[comp]), "Deployment %s: image", name)
			Expect(pod.NodeSelector).To(Equal(map[string]string{"e2e.flotilla.dev/pool": "hub"}), "Deployment %s: nodeSelector", name)
			Expect(pod.Tolerations).To(Equal([]corev1.Toleration{{Key: "e2e.flotilla.dev/pool", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}), "Deployment %s: tolerations", name)
			Expect(ctr.Resources).To(Equal(corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7m"), corev1.ResourceMemory: resource.MustParse("17Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("77Mi")},
			}), "Deployment %s: resources", name)
			if g := gates[comp]; g != "" {
				Expect(flagValue(ctr.Args, "--feature-gates")).To(ContainSubstring(g), "Deployment %s: feature gates", name)
			}
			if comp == "placement-controller" {
				Expect(flagValue(ctr.Args, "--feature-gates")).NotTo(ContainSubstring("PlacementDebugServer"), "Deployment %s: a gate it does not implement", name)
			}
			if comp == "registration-controller" {
				Expect(strings.Split(flagValue(ctr.Args, "--autoapprove-users"), ",")).To(ConsistOf("e2e-approver", "e2e-csr-identity"), "Deployment %s: autoApproveUsers and the csr driver's identities", name)
				Expect(flagValue(ctr.Args, "--autoapprove-cluster-patterns")).To(Equal("*"))
			}
			if b, ok := binds[comp]; ok {
				Expect(flagValue(ctr.Args, "--webhook-bind-address")).To(Equal(fmt.Sprintf(":%d", b[0])), "Deployment %s: webhook port", name)
				Expect(flagValue(ctr.Args, "--health-probe-bind-address")).To(Equal(fmt.Sprintf(":%d", b[1])), "Deployment %s: health probe port", name)
				Expect(flagValue(ctr.Args, "--metrics-bind-address")).To(Equal(fmt.Sprintf(":%d", b[2])), "Deployment %s: metrics port", name)
				Expect(ctr.Ports).To(ContainElement(And(HaveField("Name", "webhook"), HaveField("ContainerPort", b[0]))), "Deployment %s: container port", name)
				Expect(pod.HostNetwork).To(BeTrue(), "Deployment %s: hostNetwork", name)
				Expect(pod.DNSPolicy).To(Equal(corev1.DNSClusterFirstWithHostNet), "Deployment %s: dnsPolicy", name)
				svc := &corev1.Service{}
				Expect(c.Get(ctx, client.ObjectKey{Namespace: hubNS, Name: flagValue(ctr.Args, "--webhook-configuration-name")}, svc)).To(Succeed())
				Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("webhook")), "Service %s reaches the webhook port by name", svc.Name)
			} else {
				Expect(pod.HostNetwork).To(BeFalse(), "Deployment %s: hostNetwork", name)
			}
			// Progressing False says every replica is ready at the new generation: the
			// process was restarted with the new pod template.
			Expect(log.count("restarting "+hubNS+"/"+name)).To(BeNumerically(">", restarts[name]), "the process of %s restarted", name)
		}
		gens = after
	}, SpecTimeout(5*time.Minute))

	It("one ClusterManager patch of every refused field names each in ValidConfiguration and changes no Deployment", func(ctx SpecContext) {
		Expect(patchLeaves(refusedPatch)).To(ContainElements(hubFields(false)), "the patch sets every field the operator refuses (hub/operator's table)")
		Expect(gens).NotTo(BeEmpty(), "the previous spec ran")
		gen := patchClusterManager(c, refusedPatch)
		var vc *metav1.Condition
		Eventually(func(g Gomega) {
			cm := &operatorv1.ClusterManager{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
			g.Expect(cm.Status.ObservedGeneration).To(Equal(gen), "observedGeneration")
			vc = meta.FindStatusCondition(cm.Status.Conditions, operatorv1.ConditionValidConfiguration)
			g.Expect(vc).NotTo(BeNil())
			g.Expect(vc.ObservedGeneration).To(Equal(gen))
			g.Expect(meta.IsStatusConditionTrue(cm.Status.Conditions, operatorv1.ConditionClusterManagerApplied)).To(BeTrue(), "Applied: the rest of the spec is applied: %v", cm.Status.Conditions)
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "ClusterManager cluster-manager observes generation %d", gen)
		Expect([]string{string(vc.Status), vc.Reason}).To(Equal([]string{"False", operatorv1.ReasonUnsupportedFields}), vc.Message)
		_, list, _ := strings.Cut(vc.Message, ": ")
		Expect(strings.Split(list, ", ")).To(ConsistOf(refusedPaths), "ValidConfiguration names each refused path")
		Expect(hubGenerations(c)).To(Equal(gens), "no Deployment changed")

		// A field that changes where the hub runs blocks: nothing new is applied.
		gen = patchClusterManager(c, `{"spec":{"deployOption":{"mode":"Hosted"}}}`)
		Eventually(func(g Gomega) {
			cm := &operatorv1.ClusterManager{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
			g.Expect(cm.Status.ObservedGeneration).To(Equal(gen), "observedGeneration")
			a := meta.FindStatusCondition(cm.Status.Conditions, operatorv1.ConditionClusterManagerApplied)
			g.Expect(a).NotTo(BeNil())
			g.Expect([]any{a.Status, a.Reason, a.ObservedGeneration}).To(Equal([]any{metav1.ConditionFalse, operatorv1.ReasonUnsupportedConfiguration, gen}), a.Message)
			g.Expect(a.Message).To(Equal("spec.deployOption.mode: Hosted ClusterManager is not supported"))
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "Applied False UnsupportedConfiguration at generation %d", gen)
		Expect(hubGenerations(c)).To(Equal(gens), "no Deployment changed")
	}, SpecTimeout(5*time.Minute))
})

// patchClusterManager merge-patches ClusterManager cluster-manager with a YAML or JSON
// document and returns its new generation.
func patchClusterManager(c client.Client, doc string) int64 {
	GinkgoHelper()
	b, err := yaml.YAMLToJSON([]byte(doc))
	Expect(err).NotTo(HaveOccurred())
	var raw map[string]any
	Expect(json.Unmarshal(b, &raw)).To(Succeed())
	cm := &operatorv1.ClusterManager{ObjectMeta: metav1.ObjectMeta{Name: "cluster-manager"}}
	Expect(c.Patch(suiteCtx, cm, client.RawPatch(types.MergePatchType, b))).To(Succeed())
	return cm.Generation
}

// rolledOutAt waits until ClusterManager cluster-manager is Applied and not Progressing at
// generation gen or later.
func rolledOutAt(c client.Client, gen int64) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cm := &operatorv1.ClusterManager{}
		g.Expect(c.Get(suiteCtx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
		g.Expect(cm.Status.ObservedGeneration).To(BeNumerically(">=", gen), "observedGeneration")
		g.Expect(cm.Status.ObservedGeneration).To(Equal(cm.Generation), "observedGeneration")
		for _, t := range []string{operatorv1.ConditionClusterManagerApplied, operatorv1.ConditionProgressing} {
			cond := meta.FindStatusCondition(cm.Status.Conditions, t)
			g.Expect(cond).NotTo(BeNil(), t)
			g.Expect(cond.ObservedGeneration).To(Equal(cm.Generation), "%s observes the generation", t)
		}
		g.Expect(meta.IsStatusConditionTrue(cm.Status.Conditions, operatorv1.ConditionClusterManagerApplied)).To(BeTrue(), "Applied: %v", cm.Status.Conditions)
		g.Expect(meta.IsStatusConditionFalse(cm.Status.Conditions, operatorv1.ConditionProgressing)).To(BeTrue(), "Progressing: %v", cm.Status.Conditions)
	}).WithTimeout(3*time.Minute).Should(Succeed(), "ClusterManager cluster-manager applied and rolled out at generation %d", gen)
}

// flagValue is the value of the last --name=value in args ("" when absent).
func flagValue(args []string, name string) string {
	out := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			out = v
		}
	}
	return out
}
