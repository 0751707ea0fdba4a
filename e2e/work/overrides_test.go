package work

import (
	"context"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

// replicasClaim is the ClusterClaim the sizing rule reads the replicas from.
const replicasClaim = "replicas.e2e.flotilla.dev"

var (
	sidecarBuild sync.Once
	sidecarBytes []byte
)

// sidecarWasm is plugins/examples/transform-sidecar, built once.
func sidecarWasm() []byte {
	GinkgoHelper()
	sidecarBuild.Do(func() {
		_, file, _, _ := goruntime.Caller(0)
		sidecarBytes = wasmrun.Build(GinkgoT(), filepath.Join(filepath.Dir(file), "..", "..", "plugins", "examples", "transform-sidecar"))
	})
	Expect(sidecarBytes).NotTo(BeEmpty(), "the transform-sidecar plugin failed to build earlier")
	return sidecarBytes
}

// hubTransformer installs a ManifestTransformer WasmPlugin on the hub serving module from a
// ConfigMap, as an admin would, waits until it is Ready, and removes both after the node.
func hubTransformer(ctx context.Context, name string, module []byte) {
	GinkgoHelper()
	zst, err := wasm.Compress(module)
	Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: "plugin-" + name},
		BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: zst}}
	Expect(hubClient.Create(ctx, cm)).To(Succeed(), "creating ConfigMap %s/%s", cm.Namespace, cm.Name)
	wp := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flotillav1alpha1.WasmPluginSpec{
		Type: flotillav1alpha1.PluginTypeManifestTransformer, SHA256: wasm.Digest(module),
		Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{
			Namespace: cm.Namespace, Name: cm.Name, Key: flotillav1alpha1.SourceKeyWasmZstd}},
	}}
	Expect(hubClient.Create(ctx, wp)).To(Succeed(), "creating WasmPlugin %s", name)
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, wp))).To(Succeed())
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, cm))).To(Succeed())
	}, NodeTimeout(2*time.Minute))
	Eventually(func(g Gomega) {
		got := &flotillav1alpha1.WasmPlugin{}
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, flotillav1alpha1.ConditionReady)).To(BeTrue(), "conditions %+v", got.Status.Conditions)
	}).WithTimeout(2*time.Minute).Should(Succeed(), "WasmPlugin %s Ready on the hub", name)
}

// createYAML creates the object doc describes (typed, through the hub's scheme).
func createYAML(ctx context.Context, obj client.Object, doc string) {
	GinkgoHelper()
	Expect(yaml.UnmarshalStrict([]byte(doc), obj)).To(Succeed(), doc)
	Expect(hubClient.Create(ctx, obj)).To(Succeed(), "creating %T %s/%s", obj, obj.GetNamespace(), obj.GetName())
}

// labelClusters sets labels (value null removes) on the hub's ManagedClusters and removes
// them after the node.
func labelClusters(ctx context.Context, labels map[string]map[string]string) {
	GinkgoHelper()
	for cl, ls := range labels {
		set := func(ctx context.Context, remove bool) {
			m := map[string]any{}
			for k, v := range ls {
				if remove {
					m[k] = nil
				} else {
					m[k] = v
				}
			}
			b, err := yaml.Marshal(map[string]any{"metadata": map[string]any{"labels": m}})
			Expect(err).NotTo(HaveOccurred())
			b, err = yaml.YAMLToJSON(b)
			Expect(err).NotTo(HaveOccurred())
			Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cl}}, client.RawPatch(types.MergePatchType, b))).
				To(Succeed(), "labelling ManagedCluster %s", cl)
		}
		set(ctx, false)
		DeferCleanup(func(ctx SpecContext) { set(ctx, true) }, NodeTimeout(2*time.Minute))
	}
}

// selectBoth binds the default set to ns and creates Placement ns/p selecting the two
// clusters by label key=true, and waits until it does.
func selectBoth(ctx context.Context, ns, key string) {
	GinkgoHelper()
	Expect(hubClient.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "default"}})).To(Succeed())
	Expect(hubClient.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{key: "true"}}}}}}})).To(Succeed())
	Eventually(func(g Gomega) {
		p := &clusterv1beta1.Placement{}
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p"}, p)).To(Succeed())
		g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(2))
	}).Should(Succeed(), "Placement %s/p selecting cluster1 and cluster2", ns)
}

// hubNamespace creates namespace ns on the hub and deletes it after the node.
func hubNamespace(ctx context.Context, ns string) {
	GinkgoHelper()
	Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	}, NodeTimeout(2*time.Minute))
}

// deleteReplicaSet deletes the replica set after the node and waits until its works are gone
// from both clusters (so a later spec's work of the same cluster starts clean).
func deleteReplicaSet(ns, name string) {
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))).To(Succeed())
		for _, cl := range []string{cluster1, cluster2} {
			Eventually(func() bool {
				return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Namespace: cl, Name: name}, &workv1.ManifestWork{}))
			}).Should(BeTrue(), "the work %s/%s of replica set %s/%s deleted", cl, name, ns, name)
		}
	}, NodeTimeout(3*time.Minute))
}

// replicaSetWork is cluster's work of replica set name, nil when it has none.
func replicaSetWork(ctx context.Context, cluster, name string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{}
	if err := hubClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, w); err != nil {
		return nil
	}
	return w
}

// rolledOut is a matcher of a replica set whose rollout is Complete on both clusters.
func rolledOut(g Gomega, rs *workv1alpha1.ManifestWorkReplicaSet) {
	c := meta.FindStatusCondition(rs.Status.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
	g.Expect(c).NotTo(BeNil(), "PlacementRolledOut of %s/%s", rs.Namespace, rs.Name)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "PlacementRolledOut of %s/%s: %s", rs.Namespace, rs.Name, c.Message)
	g.Expect(c.Reason).To(Equal(workv1alpha1.ReasonComplete))
	g.Expect(rs.Status.Summary.Updated).To(Equal(2))
}

func getReplicaSet(g Gomega, ctx context.Context, ns, name string) *workv1alpha1.ManifestWorkReplicaSet {
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rs)).To(Succeed())
	return rs
}

func overridesApplied(g Gomega, ctx context.Context, ns, name string) metav1.Condition {
	c := meta.FindStatusCondition(getReplicaSet(g, ctx, ns, name).Status.Conditions, mwrs.ConditionOverridesApplied)
	g.Expect(c).NotTo(BeNil(), "OverridesApplied of %s/%s", ns, name)
	return *c
}

// The Done-when of issue 25 on the real fleet: overrides render per cluster on the hub, the
// klusterlets apply the renders to the managed API servers.
var _ = Describe("Overrides on the real fleet", Ordered, func() {
	const (
		ns, rsName, plugin = "e2e-ovr", "ovr-web", "e2e-ovr-sidecar"
		selectKey          = "e2e-ovr"
	)
	registry := map[string]string{"eu": "eu.registry.example", "us": "us.registry.example"}
	replicas := map[string]int32{cluster1: 2, cluster2: 3}
	container := func(d *appsv1.Deployment, name string) *corev1.Container {
		for i := range d.Spec.Template.Spec.Containers {
			if d.Spec.Template.Spec.Containers[i].Name == name {
				return &d.Spec.Template.Spec.Containers[i]
			}
		}
		return nil
	}
	// shaped: the cluster's Deployment on its managed API server is the render for region.
	shaped := func(cl, region string) func(g Gomega) {
		return func(g Gomega) {
			d := live(cl, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})(g)
			g.Expect(d).NotTo(BeNil(), "Deployment %s/web on %s", ns, cl)
			web := container(d, "web")
			g.Expect(web).NotTo(BeNil(), "container web of the Deployment on %s", cl)
			g.Expect(web.Image).To(Equal(registry[region]+"/web:1.0"), "the image on %s", cl)
			g.Expect(d.Spec.Replicas).To(HaveValue(Equal(replicas[cl])), "the replicas on %s", cl)
			side := container(d, "log-shipper")
			g.Expect(side).NotTo(BeNil(), "the sidecar container log-shipper on %s", cl)
			g.Expect(side.Env).To(ContainElement(corev1.EnvVar{Name: "CLUSTER", Value: cl}), "the sidecar's env on %s", cl)
		}
	}
	traces := func(cl string) func(g Gomega) []string {
		return func(g Gomega) []string {
			w := replicaSetWork(suiteCtx, cl, rsName)
			g.Expect(w).NotTo(BeNil(), "the work of %s", cl)
			return strings.Split(w.Annotations[mwrs.OverridesAnnotation], ",")
		}
	}

	BeforeAll(func(ctx SpecContext) {
		module := sidecarWasm()
		hubNamespace(ctx, ns)
		labelClusters(ctx, map[string]map[string]string{
			cluster1: {selectKey: "true", "region": "eu"},
			cluster2: {selectKey: "true", "region": "us"},
		})
		for cl, n := range replicas {
			claim := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: replicasClaim},
				Spec: clusterv1alpha1.ClusterClaimSpec{Value: fmt.Sprint(n)}}
			Expect(managed[cl].client.Create(ctx, claim)).To(Succeed(), "creating ClusterClaim %s on %s", replicasClaim, cl)
			DeferCleanup(func(ctx SpecContext) {
				Expect(client.IgnoreNotFound(managed[cl].client.Delete(ctx, claim))).To(Succeed())
			}, NodeTimeout(time.Minute))
			Eventually(func(g Gomega) []clusterv1.ManagedClusterClaim {
				mc := &clusterv1.ManagedCluster{}
				g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: cl}, mc)).To(Succeed())
				return mc.Status.ClusterClaims
			}).WithTimeout(2*time.Minute).Should(ContainElement(clusterv1.ManagedClusterClaim{Name: replicasClaim, Value: fmt.Sprint(n)}),
				"ManagedCluster %s reporting claim %s=%d", cl, replicasClaim, n)
		}
		hubTransformer(ctx, plugin, module)
		selectBoth(ctx, ns, selectKey)
		deleteReplicaSet(ns, rsName)
		createYAML(ctx, &workv1alpha1.ManifestWorkReplicaSet{}, fmt.Sprintf(`
metadata: {name: %s, namespace: %s}
spec:
  placementRefs: [{name: p, rolloutStrategy: {type: All}}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: Namespace, metadata: {name: %[2]s}}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: %[2]s}
        spec:
          replicas: 1
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: "registry.example/web:1.0"}]}
    manifestConfigs:
    - resourceIdentifier: {group: apps, resource: deployments, namespace: %[2]s, name: web}
      feedbackRules: [{type: WellKnownStatus}]
`, rsName, ns))
		for _, o := range []struct{ name, rules string }{
			{"web-region", `
- {name: eu, clusters: {labelSelector: {matchLabels: {region: eu}}}, manifests: [{group: apps, kind: Deployment}], image: {containers: [web], registry: ` + registry["eu"] + `}}
- {name: us, clusters: {labelSelector: {matchLabels: {region: us}}}, manifests: [{group: apps, kind: Deployment}], image: {containers: [web], registry: ` + registry["us"] + `}}`},
			{"sizing", `
- {name: by-claim, manifests: [{group: apps, kind: Deployment}], replicas: {template: '{{ index .cluster.claims "` + replicasClaim + `" }}'}}`},
			{"extras", `
- {name: sidecar, manifests: [{group: apps, kind: Deployment}], transform: {plugin: ` + plugin + `}}`},
		} {
			createYAML(ctx, &flotillav1alpha1.ManifestWorkReplicaSetOverride{}, fmt.Sprintf(`
metadata: {name: %s, namespace: %s}
spec:
  replicaSets: [{name: %s}]
  rules: %s
`, o.name, ns, rsName, strings.ReplaceAll(o.rules, "\n", "\n  ")))
		}
	}, NodeTimeout(8*time.Minute))

	It("renders each cluster's Deployment with its region's registry, its claim's replicas and the Wasm sidecar", func(ctx SpecContext) {
		Eventually(shaped(cluster1, "eu")).WithTimeout(3*time.Minute).Should(Succeed(), "cluster1's Deployment rendered for eu")
		Eventually(shaped(cluster2, "us")).WithTimeout(3*time.Minute).Should(Succeed(), "cluster2's Deployment rendered for us")
		Eventually(traces(cluster1)).Should(ConsistOf("extras/sidecar", "sizing/by-claim", "web-region/eu"), "cluster1's work naming the rules that shaped it")
		Eventually(traces(cluster2)).Should(ConsistOf("extras/sidecar", "sizing/by-claim", "web-region/us"), "cluster2's work naming the rules that shaped it")
		Eventually(func(g Gomega) {
			c := overridesApplied(g, ctx, ns, rsName)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
			g.Expect(c.Reason).To(Equal(mwrs.ReasonRendered))
			g.Expect(c.Message).To(Equal("overrides extras, sizing, web-region shape 2 of 2 clusters"))
			rolledOut(g, getReplicaSet(g, ctx, ns, rsName))
		}).Should(Succeed(), "replica set %s/%s OverridesApplied True and rolled out", ns, rsName)
		for _, o := range []string{"web-region", "sizing", "extras"} {
			Eventually(func(g Gomega) []flotillav1alpha1.ReplicaSetOverrideStatus {
				got := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
				g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: o}, got)).To(Succeed())
				return got.Status.ReplicaSets
			}).Should(ConsistOf(And(HaveField("Name", rsName), HaveField("ClustersMatched", int32(2)), HaveField("ClustersChanged", int32(2)),
				HaveField("ClustersFailed", int32(0)))), "override %s/%s counting 2 clusters matched and changed", ns, o)
		}
	}, SpecTimeout(5*time.Minute))

	It("moves a relabelled cluster to the other rule's registry, and leaves the other cluster's work alone", func(ctx SpecContext) {
		before := replicaSetWork(ctx, cluster1, rsName)
		Expect(before).NotTo(BeNil())
		Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster2}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"region":"eu"}}}`)))).To(Succeed())
		Eventually(shaped(cluster2, "eu")).WithTimeout(2*time.Minute).Should(Succeed(), "cluster2's Deployment moved to the eu registry")
		Eventually(traces(cluster2)).Should(ContainElement("web-region/eu"), "cluster2's work naming web-region/eu")
		Consistently(func(g Gomega) {
			w := replicaSetWork(ctx, cluster1, rsName)
			g.Expect(w).NotTo(BeNil())
			g.Expect(w.Generation).To(Equal(before.Generation), "cluster1's work generation")
			g.Expect(w.Annotations[mwrs.TemplateHashAnnotation]).To(Equal(before.Annotations[mwrs.TemplateHashAnnotation]))
		}).WithTimeout(5*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "cluster1's work unchanged by cluster2's relabel")
		Eventually(func(g Gomega) { rolledOut(g, getReplicaSet(g, ctx, ns, rsName)) }).Should(Succeed(), "replica set %s/%s rolled out", ns, rsName)
	}, SpecTimeout(4*time.Minute))

	It("reports a patch of a path that does not exist without touching the cluster's work, and recovers when it is deleted", func(ctx SpecContext) {
		// What cluster2 runs, settled: its work and its Deployment (Pods Ready, status written).
		var before *workv1.ManifestWork
		var dep *appsv1.Deployment
		Eventually(func(g Gomega) {
			before = replicaSetWork(ctx, cluster2, rsName)
			g.Expect(before).NotTo(BeNil())
			dep = live(cluster2, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})(g)
			g.Expect(dep).NotTo(BeNil())
			g.Expect(dep.Status.ObservedGeneration).To(Equal(dep.Generation))
			g.Expect(dep.Status.ReadyReplicas).To(Equal(replicas[cluster2]))
			g.Expect(dep.Status.UpdatedReplicas).To(Equal(replicas[cluster2]))
			g.Expect(dep.Status.Replicas).To(Equal(replicas[cluster2]))
		}).WithTimeout(2*time.Minute).Should(Succeed(), "cluster2's Deployment settled with %d ready replicas", replicas[cluster2])

		broken := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
		createYAML(ctx, broken, fmt.Sprintf(`
metadata: {name: broken, namespace: %s}
spec:
  replicaSets: [{name: %s}]
  order: 10
  rules:
  - name: missing
    clusters: {celSelector: {celExpressions: ['managedCluster.metadata.name == "%s"']}}
    manifests: [{group: apps, kind: Deployment}]
    jsonPatch: [{op: replace, path: /spec/template/spec/doesNotExist, value: x}]
`, ns, rsName, cluster2))
		Eventually(func(g Gomega) []flotillav1alpha1.ReplicaSetOverrideStatus {
			got := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(broken), got)).To(Succeed())
			return got.Status.ReplicaSets
		}).Should(ConsistOf(And(HaveField("Name", rsName), HaveField("ClustersFailed", int32(1)),
			HaveField("Failures", ConsistOf(And(HaveField("Rule", "missing"), HaveField("Cluster", cluster2),
				HaveField("Manifest", "apps/Deployment "+ns+"/web"), HaveField("Message", ContainSubstring("/spec/template/spec/doesNotExist"))))))),
			"override %s/broken's status naming rule missing, cluster2 and the Deployment", ns)
		Eventually(func(g Gomega) {
			c := overridesApplied(g, ctx, ns, rsName)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
			g.Expect(c.Reason).To(Equal(mwrs.ReasonRenderFailed))
			g.Expect(c.Message).To(ContainSubstring("override broken rule missing on cluster " + cluster2))
		}).Should(Succeed(), "replica set %s/%s OverridesApplied False RenderFailed", ns, rsName)
		Consistently(func(g Gomega) {
			w := replicaSetWork(ctx, cluster2, rsName)
			g.Expect(w).NotTo(BeNil())
			g.Expect(w.Generation).To(Equal(before.Generation), "cluster2's work generation")
			g.Expect(w.Annotations[mwrs.TemplateHashAnnotation]).To(Equal(before.Annotations[mwrs.TemplateHashAnnotation]), "cluster2's work template-hash")
			d := live(cluster2, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})(g)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.ResourceVersion).To(Equal(dep.ResourceVersion), "the resourceVersion of cluster2's Deployment")
		}).WithTimeout(5*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "cluster2's work and Deployment untouched by the failed render")

		Expect(hubClient.Delete(ctx, broken)).To(Succeed())
		Eventually(func(g Gomega) {
			c := overridesApplied(g, ctx, ns, rsName)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
			g.Expect(c.Reason).To(Equal(mwrs.ReasonRendered))
			rolledOut(g, getReplicaSet(g, ctx, ns, rsName))
		}).Should(Succeed(), "replica set %s/%s OverridesApplied True again once broken is deleted", ns, rsName)
		Expect(replicaSetWork(ctx, cluster2, rsName).Annotations[mwrs.TemplateHashAnnotation]).To(Equal(before.Annotations[mwrs.TemplateHashAnnotation]))
	}, SpecTimeout(4*time.Minute))
})

var _ = Describe("An override change on the real fleet", func() {
	It("rolls out progressively: the first cluster fails, the rollout stops, and the second cluster never gets it", func(ctx SpecContext) {
		const ns, rsName, selectKey = "e2e-ovp", "ovp-web", "e2e-ovp"
		hubNamespace(ctx, ns)
		labelClusters(ctx, map[string]map[string]string{cluster1: {selectKey: "true"}, cluster2: {selectKey: "true"}})
		selectBoth(ctx, ns, selectKey)
		deleteReplicaSet(ns, rsName)
		// Degraded is what failure is: a Deployment labelled e2e-fail=true.
		createYAML(ctx, &workv1alpha1.ManifestWorkReplicaSet{}, fmt.Sprintf(`
metadata: {name: %s, namespace: %s}
spec:
  placementRefs: [{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1, maxFailures: 0}}}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: Namespace, metadata: {name: %[2]s}}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: %[2]s}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: "registry.example/web:1.0"}]}
    manifestConfigs:
    - resourceIdentifier: {group: apps, resource: deployments, namespace: %[2]s, name: web}
      conditionRules:
      - condition: Degraded
        type: CEL
        celExpressions: ["has(object.metadata.labels) && 'e2e-fail' in object.metadata.labels && object.metadata.labels['e2e-fail'] == 'true'"]
`, rsName, ns))
		Eventually(func(g Gomega) { rolledOut(g, getReplicaSet(g, ctx, ns, rsName)) }).WithTimeout(3*time.Minute).
			Should(Succeed(), "replica set %s/%s rolled out to both clusters before the override", ns, rsName)
		base := replicaSetWork(ctx, cluster2, rsName).Annotations[mwrs.TemplateHashAnnotation]
		Expect(base).NotTo(BeEmpty())

		// Every version of cluster2's work from now on: none may carry another hash.
		wc, err := client.NewWithWatch(fleet.Hub.Config, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		watchCtx, stopWatch := context.WithCancel(ctx)
		DeferCleanup(stopWatch)
		watch, err := wc.Watch(watchCtx, &workv1.ManifestWorkList{}, client.InNamespace(cluster2), client.MatchingFields{"metadata.name": rsName})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(watch.Stop)
		var mu sync.Mutex
		var seen []string // the hash of each version the watch delivered; "error: …" for an error event
		go func() {
			defer GinkgoRecover()
			for ev := range watch.ResultChan() {
				h := fmt.Sprintf("error: %v", ev.Object)
				if w, ok := ev.Object.(*workv1.ManifestWork); ok {
					h = w.Annotations[mwrs.TemplateHashAnnotation]
				}
				mu.Lock()
				seen = append(seen, h)
				mu.Unlock()
			}
		}()
		otherHashes := func() []string {
			mu.Lock()
			defer mu.Unlock()
			var out []string
			for _, h := range seen {
				if h != base {
					out = append(out, h)
				}
			}
			return out
		}
		// The watch delivers the current work first: it is watching.
		Eventually(func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(seen)
		}).WithTimeout(30*time.Second).Should(ContainElement(base), "the watch of cluster2's work delivering its current version")

		createYAML(ctx, &flotillav1alpha1.ManifestWorkReplicaSetOverride{}, fmt.Sprintf(`
metadata: {name: fail, namespace: %s}
spec:
  replicaSets: [{name: %s}]
  rules:
  - {name: label, manifests: [{group: apps, kind: Deployment}], labels: {set: {e2e-fail: "true"}}}
`, ns, rsName))
		Eventually(func(g Gomega) {
			d := live(cluster1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})(g)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Labels).To(HaveKeyWithValue("e2e-fail", "true"))
		}).WithTimeout(2*time.Minute).Should(Succeed(), "cluster1's Deployment labelled e2e-fail=true")
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getReplicaSet(g, ctx, ns, rsName).Status.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(And(ContainSubstring("stopped"), ContainSubstring("("+cluster1+")"), ContainSubstring("maxFailures 0")))
		}).WithTimeout(2*time.Minute).Should(Succeed(), "replica set %s/%s's rollout stopped on cluster1's failure", ns, rsName)
		Expect(otherHashes()).To(BeEmpty(), "cluster2's work got the override's render")
		Consistently(otherHashes).WithTimeout(5*time.Second).WithPolling(250*time.Millisecond).Should(BeEmpty(),
			"cluster2's work keeping hash %s after the rollout stopped", base)
		Expect(live(cluster2, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})(Default).Labels).NotTo(HaveKey("e2e-fail"))
	}, SpecTimeout(6*time.Minute))
})
