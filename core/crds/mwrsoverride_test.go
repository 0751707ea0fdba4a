package crds_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
)

// ManifestWorkReplicaSetOverride's CEL rules and defaults, as the hub's API server applies them.

var mwrsos = flotillav1alpha1.GroupVersion.WithResource("manifestworkreplicasetoverrides")

// override is an override document named name whose rules are the YAML list rules (indented
// by four spaces under spec).
func override(name, rules string) string {
	return fmt.Sprintf(`
apiVersion: flotilla.dev/v1alpha1
kind: ManifestWorkReplicaSetOverride
metadata: {name: %s}
spec:
  replicaSets: [{name: web}]
  rules:
%s`, name, rules)
}

var _ = Describe("ManifestWorkReplicaSetOverride", func() {
	It("accepts the design's examples and defaults order and operation", func(ctx SpecContext) {
		ns := namespace(ctx, "mwrso-accept")
		c := newClient()
		c.mustCreate(ctx, mwrsos, ns, `
apiVersion: flotilla.dev/v1alpha1
kind: ManifestWorkReplicaSetOverride
metadata: {name: web-region}
spec:
  replicaSets: [{name: web}, {name: api}]
  rules:
  - name: eu
    clusters:
      labelSelector: {matchLabels: {region: eu}}
      claimSelector:
        matchExpressions: [{key: platform.open-cluster-management.io, operator: In, values: [AWS]}]
      clusterSets: [eu-prod]
      decisionGroups: [{placement: all, groupName: canary}, {groupIndex: 1}]
    manifests: [{group: apps, kind: Deployment, namespace: web, name: web}]
    image: {registry: 'eu.registry.example.com', tag: '{{ index .cluster.labels "version" }}'}
  - name: size
    replicas: {template: '{{ index .cluster.claims "e2e.flotilla.dev/replicas" | default "1" }}'}
  - name: fixed
    replicas: {value: 3}
  - name: patch
    jsonPatch:
    - {op: replace, path: /spec/template/spec/containers/0/image, value: nginx:1.27}
    - {op: add, path: /metadata/labels/cluster, valueTemplate: '{{ .cluster.name }}'}
    - {op: add, path: /spec/replicas, valueTemplate: '{{ 2 }}', valueType: Integer}
    - {op: remove, path: /metadata/annotations/a~1b}
    - {op: copy, from: /metadata/labels, path: /spec/template/metadata/labels}
    - {op: test, path: /kind, value: Deployment}
  - name: merge
    mergePatch: {metadata: {labels: {region: '{{ index .cluster.labels "region" }}', drop: null}}}
  - name: cmd
    command: {containers: [web], values: [/bin/web, --serve]}
  - name: args
    args: {operation: Append, values: ['--cluster={{ .cluster.name }}']}
  - name: labels
    labels: {set: {cluster: '{{ .cluster.name }}'}, remove: [old]}
  - name: annotations
    annotations: {remove: [example.com/a]}
  - name: env
    env: {containers: [web], set: [{name: REGION, value: eu}], remove: [DEBUG]}
  - name: expand
    manifests: [{kind: ConfigMap}]
    expandTemplates: {}
  - name: sidecar
    transform: {plugin: transform-sidecar, params: {image: fluent-bit:3, nested: {a: [1, 2]}}}
`)
		got := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
		Expect(c.typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-region"}, got)).To(Succeed())
		Expect(got.Spec.Order).To(BeZero())
		Expect(got.Spec.Rules).To(HaveLen(12))
		Expect(got.Spec.Rules[0].Clusters.LabelSelector.MatchLabels).To(HaveKeyWithValue("region", "eu"))
		Expect(got.Spec.Rules[0].Clusters.DecisionGroups[1].GroupIndex).To(HaveValue(BeEquivalentTo(1)))
		Expect(got.Spec.Rules[5].Command.Operation).To(Equal(flotillav1alpha1.ListReplace), "operation defaults to Replace")
		Expect(got.Spec.Rules[6].Args.Operation).To(Equal(flotillav1alpha1.ListAppend))
		Expect(got.Spec.Rules[10].ExpandTemplates).NotTo(BeNil(), "an empty expandTemplates is kept")
		Expect(string(got.Spec.Rules[11].Transform.Params.Raw)).To(MatchJSON(`{"image":"fluent-bit:3","nested":{"a":[1,2]}}`))
		Expect(string(got.Spec.Rules[4].MergePatch.Raw)).To(ContainSubstring(`"drop":null`), "merge patch nulls are kept")
	}, SpecTimeout(2*time.Minute))

	// Each entry is a bad rules list and what the refusal must say.
	DescribeTable("refuses", func(ctx SpecContext, rules string, want ...string) {
		ns := namespace(ctx, "mwrso-refuse-"+strings.ToLower(strings.ReplaceAll(CurrentSpecReport().LeafNodeText, " ", "-")))
		_, err := newClient().create(ctx, mwrsos, ns, override("bad", rules))
		rejected(err, want...)
	},
		Entry("no overrider", `
  - name: none
    manifests: [{kind: Deployment}]
`, "a rule sets exactly one of jsonPatch, mergePatch"),
		Entry("two overriders", `
  - name: two
    replicas: {value: 1}
    labels: {set: {a: b}}
`, "a rule sets exactly one of jsonPatch, mergePatch"),
		Entry("duplicate rule names", `
  - {name: same, replicas: {value: 1}}
  - {name: same, replicas: {value: 2}}
`, "rule names must be unique"),
		Entry("a bad rule name", `
  - {name: Not_A_Name, replicas: {value: 1}}
`, "spec.rules[0].name", "should match"),
		Entry("remove with a valueTemplate", `
  - name: p
    jsonPatch: [{op: remove, path: /a, valueTemplate: '1'}]
`, "valueTemplate is for add, replace and test"),
		Entry("move without from", `
  - name: p
    jsonPatch: [{op: move, path: /a}]
`, "from is for move and copy"),
		Entry("add with from", `
  - name: p
    jsonPatch: [{op: add, path: /a, from: /b, value: 1}]
`, "from is for move and copy"),
		Entry("valueType without valueTemplate", `
  - name: p
    jsonPatch: [{op: add, path: /a, value: 1, valueType: Integer}]
`, "valueType goes with valueTemplate"),
		Entry("an unknown op", `
  - name: p
    jsonPatch: [{op: merge, path: /a, value: 1}]
`, "spec.rules[0].jsonPatch[0].op", "Unsupported value"),
		Entry("a bad JSON pointer", `
  - name: p
    jsonPatch: [{op: add, path: /a~2b, value: 1}]
`, "spec.rules[0].jsonPatch[0].path", "should match"),
		Entry("an empty image override", `
  - name: i
    image: {containers: [web]}
`, "set at least one of registry, repository, tag, digest"),
		Entry("image path and containers", `
  - name: i
    image: {containers: [web], path: /spec/image, tag: v1}
`, "path and containers are exclusive"),
		Entry("replicas value and template", `
  - name: r
    replicas: {value: 1, template: '2'}
`, "set value or template"),
		Entry("replicas neither", `
  - name: r
    replicas: {}
`, "set value or template"),
		Entry("negative replicas", `
  - name: r
    replicas: {value: -1}
`, "spec.rules[0].replicas.value"),
		Entry("a decision group by name and index", `
  - name: g
    clusters: {decisionGroups: [{groupName: canary, groupIndex: 0}]}
    replicas: {value: 1}
`, "set groupName or groupIndex"),
		Entry("a decision group by neither", `
  - name: g
    clusters: {decisionGroups: [{placement: all}]}
    replicas: {value: 1}
`, "set groupName or groupIndex"),
		Entry("an empty labels override", `
  - name: l
    labels: {}
`, "set or remove a key"),
		Entry("an empty env override", `
  - name: e
    env: {containers: [web]}
`, "set or remove a variable"),
		Entry("a command operation not known", `
  - name: c
    command: {operation: Insert, values: [a]}
`, "spec.rules[0].command.operation", "Unsupported value"),
		Entry("a transform without a plugin", `
  - name: t
    transform: {params: {a: 1}}
`, "spec.rules[0].transform.plugin", "Required value"),
		Entry("too many rules", func() string {
			var b strings.Builder
			for i := range 33 {
				fmt.Fprintf(&b, "  - {name: r%d, replicas: {value: 1}}\n", i)
			}
			return b.String()
		}(), "spec.rules", "must have at most 32 items"),
	)

	It("refuses an override naming no replica set, or one twice, and an order out of range", func(ctx SpecContext) {
		ns := namespace(ctx, "mwrso-targets")
		c := newClient()
		doc := func(replicaSets string, order int) string {
			return fmt.Sprintf(`
apiVersion: flotilla.dev/v1alpha1
kind: ManifestWorkReplicaSetOverride
metadata: {name: t}
spec:
  replicaSets: %s
  order: %d
  rules: [{name: r, replicas: {value: 1}}]
`, replicaSets, order)
		}
		_, err := c.create(ctx, mwrsos, ns, doc("[]", 0))
		rejected(err, "spec.replicaSets", "should have at least 1 items")
		_, err = c.create(ctx, mwrsos, ns, doc("[{name: web}, {name: web}]", 0))
		rejected(err, "spec.replicaSets[1]", "Duplicate value")
		_, err = c.create(ctx, mwrsos, ns, doc("[{name: web}]", 1001))
		rejected(err, "spec.order", "should be less than or equal to 1000")
		c.mustCreate(ctx, mwrsos, ns, doc("[{name: web}]", -1000))
	}, SpecTimeout(2*time.Minute))
})
