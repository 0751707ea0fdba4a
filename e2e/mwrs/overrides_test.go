package mwrs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
)

// deploymentSet creates a replica set whose template is one Deployment running image, rolled
// out Progressive one cluster at a time (maxFailures 0) over placement p.
func deploymentSet(ctx context.Context, ns, name, image, more string) {
	GinkgoHelper()
	doc := fmt.Sprintf(`
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: %s, namespace: %s%s}
spec:
  placementRefs: [{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1}}}]
  manifestWorkTemplate:
    workload:
      manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: default}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: %q}]}
`, name, ns, more, image)
	apply(ctx, doc)
}

// overrideObj creates a ManifestWorkReplicaSetOverride of ns naming replica set rs with rules
// (a YAML list).
func overrideObj(ctx context.Context, ns, name, rs, rules string) {
	GinkgoHelper()
	apply(ctx, fmt.Sprintf(`
apiVersion: flotilla.dev/v1alpha1
kind: ManifestWorkReplicaSetOverride
metadata: {name: %s, namespace: %s}
spec:
  replicaSets: [{name: %s}]
  rules: %s
`, name, ns, rs, rules))
}

// completeOn waits until the replica set's rollout is Complete on n clusters, all updated.
func completeOn(ctx context.Context, ns, rs string, n int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		r := getRS(ctx, ns, rs)
		g.Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)).To(
			conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete))
		g.Expect(r.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: n, Applied: n, Available: n, DesiredTotal: n, Updated: n}))
	}).Should(Succeed())
}

// image is the image in a work's Deployment.
func image(ctx context.Context, ns, rs, cluster string) string {
	GinkgoHelper()
	w := works(ctx, ns, rs)[cluster]
	Expect(w).NotTo(BeNil(), "the work of cluster %s", cluster)
	raw := string(w.Spec.Workload.Manifests[0].Raw)
	i := strings.Index(raw, `"image":"`)
	Expect(i).To(BeNumerically(">=", 0), raw)
	rest := raw[i+len(`"image":"`):]
	return rest[:strings.Index(rest, `"`)]
}

var _ = Describe("Overrides", func() {
	It("change only the clusters their rules select, through the rollout strategy, and follow a relabelled cluster", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-ovr", "mwrs-ovr", "web"
		eu, us := names("ovr-eu", 2), names("ovr-us", 2)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, append(sims(eu, "app", "ovr", "region", "eu"), sims(us, "app", "ovr", "region", "us")...)...)
		placement(ctx, ns, "p", set, []string{"app", "ovr"}, "")
		all := sorted(eu, us)
		decided(ctx, ns, "p", all)
		a := startAgent(ns, rs, succeed, nil)
		deploymentSet(ctx, ns, rs, "registry.example/web:1.0", "")
		completeOn(ctx, ns, rs, 4)
		base := hashes(ctx, ns, rs)
		Expect(base).To(HaveLen(1))
		// No override: no override annotations, no OverridesApplied condition.
		for c, w := range works(ctx, ns, rs) {
			Expect(w.Annotations).NotTo(HaveKey(mwrs.RevisionAnnotation), c)
			Expect(w.Annotations).NotTo(HaveKey(mwrs.OverridesAnnotation), c)
		}
		Expect(getRS(ctx, ns, rs).Status.Conditions).NotTo(ContainElement(HaveField("Type", mwrs.ConditionOverridesApplied)))
		before := works(ctx, ns, rs)

		overrideObj(ctx, ns, "regions", rs, `
  - {name: eu, clusters: {labelSelector: {matchLabels: {region: eu}}}, image: {tag: "1.0-eu"}}`)
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(condition(r, mwrs.ConditionOverridesApplied)).To(And(conditionOf(mwrs.ConditionOverridesApplied, "True", mwrs.ReasonRendered),
				HaveField("Message", "overrides regions shape 2 of 4 clusters")))
		}).Should(Succeed())
		completeOn(ctx, ns, rs, 4)
		now := works(ctx, ns, rs)
		var euHash string
		for _, c := range eu {
			Expect(image(ctx, ns, rs, c)).To(Equal("registry.example/web:1.0-eu"), c)
			Expect(now[c].Annotations).To(HaveKeyWithValue(mwrs.OverridesAnnotation, "regions/eu"), c)
			euHash = now[c].Annotations[mwrs.TemplateHashAnnotation]
		}
		Expect(euHash).NotTo(Equal(base[0]))
		for _, c := range us {
			Expect(image(ctx, ns, rs, c)).To(Equal("registry.example/web:1.0"), c)
			Expect(now[c].Annotations[mwrs.TemplateHashAnnotation]).To(Equal(base[0]), c)
			// Not rewritten: a cluster the override does not change keeps its work.
			Expect(now[c].Generation).To(Equal(before[c].Generation), c)
			Expect(now[c].Annotations[mwrs.UpdatedAtAnnotation]).To(Equal(before[c].Annotations[mwrs.UpdatedAtAnnotation]), c)
		}
		// The override's status counts what it did to the replica set, and says it compiles.
		Eventually(func(g Gomega) {
			o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "regions"}, o)).To(Succeed())
			g.Expect(o.Status.ObservedGeneration).To(Equal(o.Generation))
			g.Expect(o.Status.Conditions).To(ContainElement(And(HaveField("Type", flotillav1alpha1.ConditionValid), HaveField("Status", metav1.ConditionTrue),
				HaveField("Reason", flotillav1alpha1.ReasonCompiled), HaveField("ObservedGeneration", o.Generation))))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(overrideStatus(ctx, ns, "regions")).To(ConsistOf(And(HaveField("Name", rs), HaveField("ClustersMatched", int32(2)),
				HaveField("ClustersChanged", int32(2)), HaveField("ClustersFailed", int32(0)), HaveField("Failures", BeEmpty()))))
		}).Should(Succeed())
		// Progressive, one at a time, eu clusters only.
		Expect(a.appeared(euHash)).To(Equal(eu))
		Expect(a.maxInFlight(euHash)).To(Equal(1), "more than maxConcurrency eu works in flight")

		// A relabelled cluster moves to the other rule's values, as a rollout.
		patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: us[0]}}, `{"metadata": {"labels": {"region": "eu"}}}`)
		Eventually(func() string { return image(ctx, ns, rs, us[0]) }).Should(Equal("registry.example/web:1.0-eu"))
		completeOn(ctx, ns, rs, 4)
		Expect(a.appeared(euHash)).To(Equal(append(append([]string{}, eu...), us[0])))
		Expect(image(ctx, ns, rs, us[1])).To(Equal("registry.example/web:1.0"))
	}, SpecTimeout(5*time.Minute))

	It("fail a cluster whose render fails: its work is kept, the rollout stops, and the fixed override goes on", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-ovf", "mwrs-ovf", "web"
		cs := names("ovf", 3)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, append(sims(cs[:1], "app", "ovf", "broken", "yes"), sims(cs[1:], "app", "ovf")...)...)
		placement(ctx, ns, "p", set, []string{"app", "ovf"}, "")
		decided(ctx, ns, "p", cs)
		startAgent(ns, rs, succeed, nil)
		deploymentSet(ctx, ns, rs, "registry.example/web:1.0", "")
		completeOn(ctx, ns, rs, 3)
		before := works(ctx, ns, rs)

		// Every cluster gets a new tag; the cluster labelled broken also a patch whose path is missing.
		overrideObj(ctx, ns, "tags", rs, `
  - {name: all, image: {tag: "2.0"}}
  - {name: bad, clusters: {labelSelector: {matchLabels: {broken: "yes"}}}, jsonPatch: [{op: replace, path: /spec/missing/x, value: 1}]}`)
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(condition(r, mwrs.ConditionOverridesApplied)).To(And(conditionOf(mwrs.ConditionOverridesApplied, "False", mwrs.ReasonRenderFailed),
				HaveField("Message", And(HavePrefix("1 of 3 clusters failed to render: override tags rule bad on cluster "+cs[0]+" manifest "),
					ContainSubstring("apps/Deployment")))))
			g.Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)).To(HaveField("Message",
				"p: stopped: 1 of 3 clusters failed or timed out ("+cs[0]+"), more than maxFailures 0; no further clusters are updated"))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(overrideStatus(ctx, ns, "tags")).To(ConsistOf(And(HaveField("Name", rs), HaveField("ClustersMatched", int32(2)),
				HaveField("ClustersChanged", int32(2)), HaveField("ClustersFailed", int32(1)),
				HaveField("Failures", ConsistOf(And(HaveField("Rule", "bad"), HaveField("Cluster", cs[0]), HaveField("Manifest", "apps/Deployment default/web"),
					HaveField("Message", ContainSubstring("/spec/missing/x"))))))))
		}).Should(Succeed())
		// The failed cluster's work is untouched, and with maxFailures 0 no other cluster is updated.
		Consistently(func(g Gomega) {
			now := works(ctx, ns, rs)
			for _, c := range cs {
				g.Expect(now[c].ResourceVersion).To(Equal(before[c].ResourceVersion), c)
			}
		}).Should(Succeed())

		// rollout status names the failed render and what the cluster keeps, and each cluster's desired render.
		r, prs, err := admin.RolloutStatus(ctx, hubClient, ns, rs, time.Now())
		Expect(err).NotTo(HaveOccurred())
		var out strings.Builder
		Expect(admin.WriteRolloutStatus(&out, r, prs, time.Now())).To(Succeed())
		Expect(out.String()).To(And(ContainSubstring("DESIRED"), ContainSubstring("OVERRIDES"),
			MatchRegexp(cs[0]+`\s+Failed\s+.*render failed: override tags rule bad on cluster `+cs[0]+` manifest apps/Deployment default/web: jsonPatch\[0\] replace /spec/missing/x: .*; keeps template `+before[cs[0]].Annotations[mwrs.TemplateHashAnnotation]),
			MatchRegexp(cs[1]+`\s+ToApply\s+-\s+[0-9a-f]{16}\s+tags/all\s`)), out.String())

		// Fixed (the bad rule gone): the rollout goes on everywhere.
		o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
		Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tags"}, o)).To(Succeed())
		patch(ctx, o, `{"spec": {"rules": [{"name": "all", "image": {"tag": "2.0"}}]}}`)
		completeOn(ctx, ns, rs, 3)
		Eventually(func() metav1.Condition { return condition(getRS(ctx, ns, rs), mwrs.ConditionOverridesApplied) }).Should(
			conditionOf(mwrs.ConditionOverridesApplied, "True", mwrs.ReasonRendered))
		for _, c := range cs {
			Expect(image(ctx, ns, rs, c)).To(Equal("registry.example/web:2.0"), c)
		}
	}, SpecTimeout(5*time.Minute))

	It("roll back an override change that stops the rollout to the previous renders, and roll out the next change", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-ovb", "mwrs-ovb", "web"
		cs := names("ovb", 3)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "ovb")...)
		placement(ctx, ns, "p", set, []string{"app", "ovb"}, "")
		decided(ctx, ns, "p", cs)
		a := startAgent(ns, rs, succeed, nil)
		// An image tagged bad degrades wherever it lands.
		a.setDecide(func(w *workv1.ManifestWork) outcome {
			if strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), ":bad") {
				return degrade
			}
			return succeed
		})
		deploymentSet(ctx, ns, rs, "registry.example/web:1.0", `, annotations: {"`+mwrs.RollbackAnnotation+`": "true"}`)
		completeOn(ctx, ns, rs, 3)
		overrideObj(ctx, ns, "tags", rs, `
  - {name: all, image: {tag: "2.0"}}`)
		Eventually(func() []string { return hashes(ctx, ns, rs) }).Should(HaveLen(1))
		Eventually(func(g Gomega) {
			for _, c := range cs {
				g.Expect(image(ctx, ns, rs, c)).To(Equal("registry.example/web:2.0"), c)
			}
		}).Should(Succeed())
		completeOn(ctx, ns, rs, 3)
		good := hashes(ctx, ns, rs)
		Expect(good).To(HaveLen(1))

		By("the override's next change degrades the first cluster: it goes back to the previous render")
		o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
		Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tags"}, o)).To(Succeed())
		patch(ctx, o, `{"spec": {"rules": [{"name": "all", "image": {"tag": "bad"}}]}}`)
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(condition(r, mwrs.ConditionRolledBack)).To(And(conditionOf(mwrs.ConditionRolledBack, "True", mwrs.ReasonMaxFailuresBreached),
				HaveField("Message", ContainSubstring("on 1 clusters ("+cs[0]+")"))))
			g.Expect(hashes(ctx, ns, rs)).To(Equal(good))
			g.Expect(works(ctx, ns, rs)[cs[0]].Annotations).To(HaveKey(mwrs.RolledBackFromAnnotation))
		}).Should(Succeed())
		for _, c := range cs {
			Expect(image(ctx, ns, rs, c)).To(Equal("registry.example/web:2.0"), c)
		}
		// Held: the bad render is not rolled out again.
		Consistently(func() []string { return hashes(ctx, ns, rs) }).Should(Equal(good))

		By("the override's fix is a new revision of the same generation: it rolls out")
		Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tags"}, o)).To(Succeed())
		patch(ctx, o, `{"spec": {"rules": [{"name": "all", "image": {"tag": "3.0"}}]}}`)
		Eventually(func(g Gomega) {
			for _, c := range cs {
				g.Expect(image(ctx, ns, rs, c)).To(Equal("registry.example/web:3.0"), c)
			}
		}).Should(Succeed())
		completeOn(ctx, ns, rs, 3)
		Eventually(func() metav1.Condition { return condition(getRS(ctx, ns, rs), mwrs.ConditionRolledBack) }).Should(
			conditionOf(mwrs.ConditionRolledBack, "False", mwrs.ReasonNotRolledBack))
	}, SpecTimeout(5*time.Minute))

	It("refuse an override that does not compile at admission, naming the field, and leave the works as they are", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-ovi", "mwrs-ovi", "web"
		cs := names("ovi", 2)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "ovi")...)
		placement(ctx, ns, "p", set, []string{"app", "ovi"}, "")
		decided(ctx, ns, "p", cs)
		startAgent(ns, rs, succeed, nil)
		deploymentSet(ctx, ns, rs, "registry.example/web:1.0", "")
		completeOn(ctx, ns, rs, 2)
		before := works(ctx, ns, rs)

		// The hub's override webhook compiles the spec, so an invalid override never reaches
		// the controller (which would fail every cluster of its replica sets rather than apply
		// the other overrides without it).
		invalid := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(fmt.Sprintf(`
apiVersion: flotilla.dev/v1alpha1
kind: ManifestWorkReplicaSetOverride
metadata: {name: loops, namespace: %s}
spec:
  replicaSets: [{name: %s}]
  rules:
  - {name: l, labels: {set: {a: "{{ range .cluster.labels }}x{{ end }}"}}}
`, ns, rs)), &invalid.Object)).To(Succeed())
		err := hubClient.Create(ctx, invalid)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "creating the invalid override loops: %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.rules[0].labels.set[a]"))
		Consistently(func(g Gomega) {
			now := works(ctx, ns, rs)
			for _, c := range cs {
				g.Expect(now[c].ResourceVersion).To(Equal(before[c].ResourceVersion), c)
			}
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("transform the selected clusters' manifests with a ManifestTransformer WasmPlugin, and fail them without touching their works when the plugin does not exist", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-ovt", "mwrs-ovt", "web"
		const plugin, missing = "mwrs-ovt-cluster-label", "mwrs-ovt-missing"
		const labelKey = "example.flotilla.dev/cluster"
		sel, other := names("ovt-tx", 2), names("ovt-plain", 1)
		module := clusterLabelModule()
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, append(sims(sel, "app", "ovt", "tx", "yes"), sims(other, "app", "ovt")...)...)
		placement(ctx, ns, "p", set, []string{"app", "ovt"}, "")
		all := sorted(sel, other)
		decided(ctx, ns, "p", all)
		startAgent(ns, rs, succeed, nil)
		deploymentSet(ctx, ns, rs, "registry.example/web:1.0", "")
		completeOn(ctx, ns, rs, 3)
		base := hashes(ctx, ns, rs)
		Expect(base).To(HaveLen(1))
		installTransformer(ctx, plugin, module)

		By("a transform rule naming the plugin labels the selected clusters' manifests with their names")
		overrideObj(ctx, ns, "tx", rs, `
  - {name: label, clusters: {labelSelector: {matchLabels: {tx: "yes"}}}, transform: {plugin: `+plugin+`}}`)
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(condition(r, mwrs.ConditionOverridesApplied)).To(And(conditionOf(mwrs.ConditionOverridesApplied, "True", mwrs.ReasonRendered),
				HaveField("Message", "overrides tx shape 2 of 3 clusters")))
		}).WithTimeout(time.Minute).Should(Succeed(), "OverridesApplied of %s/%s True, Rendered, for 2 of 3 clusters", ns, rs)
		Eventually(func(g Gomega) {
			for _, c := range sel {
				g.Expect(manifestLabels(g, works(ctx, ns, rs)[c])).To(HaveKeyWithValue(labelKey, c), "the manifest of cluster %s", c)
			}
		}).WithTimeout(time.Minute).Should(Succeed(), "the works of %v labelled %s by WasmPlugin %s", sel, labelKey, plugin)
		completeOn(ctx, ns, rs, 3)
		now := works(ctx, ns, rs)
		for _, c := range sel {
			Expect(now[c].Annotations).To(HaveKeyWithValue(mwrs.OverridesAnnotation, "tx/label"), c)
			Expect(now[c].Annotations[mwrs.TemplateHashAnnotation]).NotTo(Equal(base[0]), c)
		}
		// The cluster the rule does not select keeps the template's render.
		Expect(manifestLabels(Default, now[other[0]])).NotTo(HaveKey(labelKey), other[0])
		Expect(now[other[0]].Annotations[mwrs.TemplateHashAnnotation]).To(Equal(base[0]), other[0])

		By("the rule now names a WasmPlugin that does not exist: the selected clusters' renders fail, their works are kept")
		before := works(ctx, ns, rs)
		o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
		Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tx"}, o)).To(Succeed())
		patch(ctx, o, `{"spec": {"rules": [{"name": "label", "clusters": {"labelSelector": {"matchLabels": {"tx": "yes"}}}, "transform": {"plugin": "`+missing+`"}}]}}`)
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(condition(r, mwrs.ConditionOverridesApplied)).To(And(conditionOf(mwrs.ConditionOverridesApplied, "False", mwrs.ReasonRenderFailed),
				HaveField("Message", And(HavePrefix("2 of 3 clusters failed to render: override tx rule label on cluster "), ContainSubstring("WasmPlugin "+missing)))))
		}).WithTimeout(time.Minute).Should(Succeed(), "OverridesApplied of %s/%s False, RenderFailed, naming WasmPlugin %s", ns, rs, missing)
		Eventually(func(g Gomega) {
			g.Expect(overrideStatus(ctx, ns, "tx")).To(ConsistOf(And(HaveField("Name", rs), HaveField("ClustersFailed", int32(2)),
				HaveField("Failures", ConsistOf(
					And(HaveField("Rule", "label"), HaveField("Cluster", sel[0]), HaveField("Message", ContainSubstring("WasmPlugin "+missing))),
					And(HaveField("Rule", "label"), HaveField("Cluster", sel[1]), HaveField("Message", ContainSubstring("WasmPlugin "+missing))))))))
		}).WithTimeout(time.Minute).Should(Succeed(), "override %s/tx's status listing the failed renders of %v", ns, sel)
		Consistently(func(g Gomega) {
			now := works(ctx, ns, rs)
			for _, c := range all {
				g.Expect(now[c].ResourceVersion).To(Equal(before[c].ResourceVersion), "the work of cluster %s was rewritten", c)
			}
		}).WithTimeout(2*time.Second).Should(Succeed(), "the works of %v untouched after the failed renders", all)
		for _, c := range sel {
			Expect(manifestLabels(Default, works(ctx, ns, rs)[c])).To(HaveKeyWithValue(labelKey, c), c)
		}
	}, SpecTimeout(5*time.Minute))
})

// clusterLabelModule is the C example transformer plugins/examples/c-cluster-label, built by
// `make plugins-examples` (which `make test` runs first): missing, the spec fails saying so.
func clusterLabelModule() []byte {
	GinkgoHelper()
	_, file, _, _ := goruntime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "plugins", "examples", "c-cluster-label", "build", "cluster-label.wasm")
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "reading the C example transformer: build it first with `make plugins-examples` (it installs clang, lld and wasi-libc if missing)")
	return b
}

// installTransformer installs a ManifestTransformer WasmPlugin serving module (uncompressed)
// from a ConfigMap, as an admin would, waits until it is Ready, and removes both after the spec.
func installTransformer(ctx context.Context, name string, module []byte) {
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
	}).WithTimeout(time.Minute).Should(Succeed(), "WasmPlugin %s Ready", name)
}

// manifestLabels is the metadata.labels of a work's first manifest.
func manifestLabels(g Gomega, w *workv1.ManifestWork) map[string]string {
	g.Expect(w).NotTo(BeNil(), "a work")
	var m struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	g.Expect(json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m)).To(Succeed(), "the manifest of work %s/%s", w.Namespace, w.Name)
	return m.Metadata.Labels
}

// overrideStatus is an override's status.replicaSets.
func overrideStatus(ctx context.Context, ns, name string) []flotillav1alpha1.ReplicaSetOverrideStatus {
	GinkgoHelper()
	o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
	Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o)).To(Succeed())
	return o.Status.ReplicaSets
}
