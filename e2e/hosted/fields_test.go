package hosted

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	kop "github.com/flotilla-dev/flotilla/klusterlet/operator"
)

// The Klusterlet the fields spec creates: what it is created with acts too (namespace,
// clusterName, deployOption.mode).
const fieldsCreated = `
spec:
  namespace: open-cluster-management-fields
  clusterName: fields
  deployOption: {mode: Default}
`

// Patches of every other acting Klusterlet field, by the agents they concern.
const (
	registrationFieldsPatch = `
spec:
  registrationImagePullSpec: example.com/e2e/registration:fields
  externalServerURLs: [{url: "https://hub-a.example:6443"}]
  deployOption: {reportHostingCluster: Enable, hosted: {managementClusterName: fields-host}}
  registrationConfiguration:
    clientCertExpirationSeconds: 3600
    featureGates: [{feature: AddonManagement, mode: Disable}]
    clusterAnnotations: {agent.open-cluster-management.io/zone: a}
    clusterLabels: {env: e2e}
    kubeAPIQPS: 21
    kubeAPIBurst: 41
    clusterClaimConfiguration: {maxCustomClusterClaims: 7, reservedClusterClaimSuffixes: [e2e.example]}
`
	workFieldsPatch = `
spec:
  workImagePullSpec: example.com/e2e/work:fields
  workConfiguration:
    featureGates: [{feature: RawFeedbackJsonString, mode: Enable}]
    kubeAPIQPS: 61
    kubeAPIBurst: 121
    hubKubeAPIQPS: 31
    hubKubeAPIBurst: 71
    appliedManifestWorkEvictionGracePeriod: 2h
    statusSyncInterval: 45s
`
	// imagePullSpec is the Singleton agent's image: set, it changes neither agent here.
	bothFieldsPatch = `
spec:
  imagePullSpec: example.com/e2e/agent:fields
  nodePlacement:
    nodeSelector: {e2e.flotilla.dev/pool: agents}
    tolerations: [{key: e2e.flotilla.dev/pool, operator: Exists, effect: NoSchedule}]
  resourceRequirement:
    type: ResourceRequirement
    resourceRequirements: {requests: {cpu: 9m, memory: 19Mi}}
  priorityClassName: system-cluster-critical
  hubApiServerHostAlias: {ip: 10.0.0.9, hostname: hub.fields.example}
`
	// Every field refused without blocking (registrationDriver stays csr).
	refusedFieldsPatch = `
spec:
  externalServerURLs: [{url: "https://hub-a.example:6443", caBundle: Y2E=}]
  registrationConfiguration:
    bootstrapKubeConfigs:
      type: LocalSecrets
      localSecretsConfig: {kubeConfigSecrets: [{name: hub1-bootstrap}, {name: hub2-bootstrap}], hubConnectionTimeoutSeconds: 600}
    registrationDriver:
      authType: csr
      awsIrsa: {hubClusterArn: "arn:aws:eks:us-west-2:123456789012:cluster/hub", managedClusterArn: "arn:aws:eks:us-west-2:123456789012:cluster/fields"}
    addOnKubeClientRegistrationDriver: {authType: token, token: {expirationSeconds: 3600}}
`
)

// klusterletPatchLeaves lists the field paths patches set, as kop.KlusterletFields names them:
// list entries as [], core/v1 subtrees and free-form maps whole.
func klusterletPatchLeaves(docs ...string) []string {
	GinkgoHelper()
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		if slices.Contains([]string{"nodeSelector", "tolerations", "resourceRequirements", "clusterAnnotations", "clusterLabels"}, path[strings.LastIndex(path, ".")+1:]) {
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
	for _, d := range docs {
		var m map[string]any
		Expect(yaml.Unmarshal([]byte(d), &m)).To(Succeed())
		walk(m["spec"], "spec")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func klusterletFields(acts bool) []string {
	var out []string
	for _, f := range kop.KlusterletFields() {
		if f.Acts == acts {
			out = append(out, f.Path)
		}
	}
	return out
}

func patchKlusterlet(ctx SpecContext, name, doc string) {
	GinkgoHelper()
	b, err := yaml.YAMLToJSON([]byte(doc))
	Expect(err).NotTo(HaveOccurred())
	Expect(mgmtClient.Patch(ctx, &operatorv1.Klusterlet{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, b))).To(Succeed())
}

var _ = Describe("klusterlet operator fields", func() {
	It("acts on every acting Klusterlet field, rolling only the agents a field concerns, and names every refused one without touching a Deployment", func(ctx SpecContext) {
		const name, ns = "klusterlet-fields", "open-cluster-management-fields"
		reg, work := name+"-registration-agent", name+"-work-agent"
		Expect(klusterletPatchLeaves(fieldsCreated, registrationFieldsPatch, workFieldsPatch, bothFieldsPatch)).To(Equal(klusterletFields(true)),
			"the spec sets every field the operator acts on (klusterlet/operator's tables)")
		Expect(klusterletPatchLeaves(refusedFieldsPatch)).To(ContainElements(klusterletFields(false)),
			"the spec sets every field the operator refuses (klusterlet/operator's tables)")

		k := newKlusterlet(name, operatorv1.InstallModeDefault, ns, "fields")
		Expect(mgmtClient.Create(ctx, k)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { deleteKlusterlet(ctx, name) }, NodeTimeout(specTimeout))
		waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		Expect(deploymentNames(ctx, mgmtClient, ns)).To(Equal([]string{reg, work}))

		step := func(doc string, regStep, workStep int64) {
			GinkgoHelper()
			before := generations(ctx, ns, reg, work)
			patchKlusterlet(ctx, name, doc)
			waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
			Expect(generations(ctx, ns, reg, work)).To(Equal(map[string]int64{reg: before[reg] + regStep, work: before[work] + workStep}),
				"new generations only for the agents the fields concern")
		}
		step(registrationFieldsPatch, 1, 0)
		step(workFieldsPatch, 0, 1)
		step(bothFieldsPatch, 1, 1)

		agent := func(n string) (corev1.PodSpec, corev1.Container) {
			GinkgoHelper()
			d := &appsv1.Deployment{}
			Expect(mgmtClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, d)).To(Succeed())
			return d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[0]
		}
		regPod, regCtr := agent(reg)
		workPod, workCtr := agent(work)
		Expect(regCtr.Image).To(Equal("example.com/e2e/registration:fields"), "spec.registrationImagePullSpec")
		Expect(workCtr.Image).To(Equal("example.com/e2e/work:fields"), "spec.workImagePullSpec")
		Expect(regCtr.Args).To(ContainElements(
			"--cluster-name=fields",
			"--external-server-urls=https://hub-a.example:6443",
			"--hosting-cluster-claim=fields-host",
			"--csr-expiration-seconds=3600",
			"--feature-gates=AddonManagement=false",
			"--cluster-annotations=agent.open-cluster-management.io/zone=a",
			"--cluster-labels=env=e2e",
			"--kube-api-qps=21", "--kube-api-burst=41",
			"--max-custom-cluster-claims=7", "--reserved-cluster-claim-suffixes=e2e.example",
			"--hub-host-alias=hub.fields.example=10.0.0.9",
		))
		Expect(workCtr.Args).To(ContainElements(
			"--cluster-name=fields",
			"--feature-gates=RawFeedbackJsonString=true",
			"--work-kube-api-qps=61", "--work-kube-api-burst=121", "--hub-kube-api-qps=31", "--hub-kube-api-burst=71",
			"--appliedmanifestwork-eviction-grace-period=2h0m0s", "--status-sync-interval=45s",
			"--hub-host-alias=hub.fields.example=10.0.0.9",
		))
		for _, a := range workCtr.Args {
			Expect(a).NotTo(HavePrefix("--external-server-urls"), "a registration field on the work agent")
		}
		Expect(regCtr.Args).NotTo(ContainElement("--status-sync-interval=45s"), "a work field on the registration agent")
		for _, p := range []struct {
			name string
			pod  corev1.PodSpec
			ctr  corev1.Container
		}{{reg, regPod, regCtr}, {work, workPod, workCtr}} {
			Expect(p.pod.NodeSelector).To(Equal(map[string]string{"e2e.flotilla.dev/pool": "agents"}), "Deployment %s: spec.nodePlacement.nodeSelector", p.name)
			Expect(p.pod.Tolerations).To(Equal([]corev1.Toleration{{Key: "e2e.flotilla.dev/pool", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}),
				"Deployment %s: spec.nodePlacement.tolerations", p.name)
			Expect(p.pod.PriorityClassName).To(Equal("system-cluster-critical"), "Deployment %s: spec.priorityClassName", p.name)
			Expect(p.ctr.Resources).To(Equal(corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("9m"), corev1.ResourceMemory: resource.MustParse("19Mi")}}), "Deployment %s: spec.resourceRequirement", p.name)
		}
		waitCondition(ctx, name, operatorv1.ConditionValidConfiguration, metav1.ConditionTrue, operatorv1.ReasonConfigurationValid)

		// Every refused field, in one patch: named, and no Deployment changes.
		before := generations(ctx, ns, reg, work)
		patchKlusterlet(ctx, name, refusedFieldsPatch)
		waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		vc := waitCondition(ctx, name, operatorv1.ConditionValidConfiguration, metav1.ConditionFalse, operatorv1.ReasonUnsupportedFields)
		_, list, _ := strings.Cut(vc.Message, ": ")
		const rc = "spec.registrationConfiguration."
		Expect(strings.Split(list, ", ")).To(ConsistOf(
			"spec.externalServerURLs[0].caBundle",
			rc+"bootstrapKubeConfigs.type",
			rc+"bootstrapKubeConfigs.localSecretsConfig.kubeConfigSecrets[0].name",
			rc+"bootstrapKubeConfigs.localSecretsConfig.kubeConfigSecrets[1].name",
			rc+"bootstrapKubeConfigs.localSecretsConfig.hubConnectionTimeoutSeconds",
			rc+"registrationDriver.awsIrsa.hubClusterArn",
			rc+"registrationDriver.awsIrsa.managedClusterArn",
			rc+"addOnKubeClientRegistrationDriver.authType",
			rc+"addOnKubeClientRegistrationDriver.token.expirationSeconds",
		), "ValidConfiguration names each refused path")
		Expect(generations(ctx, ns, reg, work)).To(Equal(before), "no Deployment changed")

		// A registration driver other than csr blocks: nothing new is applied.
		patchKlusterlet(ctx, name, `{"spec":{"registrationConfiguration":{"registrationDriver":{"authType":"awsirsa"}}}}`)
		a := waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionFalse, operatorv1.ReasonUnsupportedConfiguration)
		Expect(a.Message).To(ContainSubstring(rc + "registrationDriver.authType"))
		Expect(generations(ctx, ns, reg, work)).To(Equal(before), "no Deployment changed")

		// Deleting it, refused as its spec is now, removes what was applied before.
		deleteKlusterlet(ctx, name)
		left := slices.DeleteFunc(labelled(ctx, management.Config, name), func(o string) bool {
			// The operator's own APIs stay.
			return o == "customresourcedefinitions//klusterlets.operator.open-cluster-management.io" || o == "customresourcedefinitions//wasmplugins.flotilla.dev"
		})
		Expect(left).To(BeEmpty(), "what the operator applied for %s", name)
	}, SpecTimeout(specTimeout))

	It("deletes what a spec change stops rendering: moving spec.namespace prunes the agents, ServiceAccounts and Roles of the old namespace, and the namespace", func(ctx SpecContext) {
		const name, from, to = "klusterlet-move", "open-cluster-management-move-a", "open-cluster-management-move-b"
		k := newKlusterlet(name, operatorv1.InstallModeDefault, from, "move")
		Expect(mgmtClient.Create(ctx, k)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { deleteKlusterlet(ctx, name) }, NodeTimeout(specTimeout))
		waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		inNamespace := func(ns string) []string {
			var out []string
			for _, o := range labelled(ctx, management.Config, name) {
				if strings.Contains(o, "/"+ns+"/") {
					out = append(out, o)
				}
			}
			return out
		}
		Expect(inNamespace(from)).To(ContainElements("deployments/"+from+"/"+name+"-registration-agent", "serviceaccounts/"+from+"/"+name+"-work-sa"))

		patchKlusterlet(ctx, name, `{"spec":{"namespace":"`+to+`"}}`)
		waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		Expect(deploymentNames(ctx, mgmtClient, to)).To(Equal([]string{name + "-registration-agent", name + "-work-agent"}))
		Eventually(func() []string { return inNamespace(from) }).WithContext(ctx).WithTimeout(waitTimeout).Should(BeEmpty(),
			"the operator to delete what it rendered in %s", from)
		// The old namespace goes too, as OCM's operator deletes it.
		Eventually(func() error {
			return mgmtClient.Get(ctx, client.ObjectKey{Name: from}, &corev1.Namespace{})
		}).WithContext(ctx).WithTimeout(waitTimeout).Should(Satisfy(apierrors.IsNotFound), "namespace %s to be deleted", from)
	}, SpecTimeout(specTimeout))
})
