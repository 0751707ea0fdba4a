package mwrs

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

const previewRS = `
metadata: {name: web, namespace: app}
spec:
  placementRefs: [{name: canary}, {name: all}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: app}, data: {registry: quay.io}}
`

func previewOverride(t *testing.T, name, registry string) flotillav1alpha1.ManifestWorkReplicaSetOverride {
	t.Helper()
	o := flotillav1alpha1.ManifestWorkReplicaSetOverride{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: `+name+`, namespace: app}
spec:
  replicaSets: [{name: web}]
  rules:
  - {name: eu, clusters: {labelSelector: {matchLabels: {region: eu}}}, mergePatch: {data: {registry: `+registry+`}}}
`), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// previewClient holds replica set app/web, placements canary (c1 in group 1 "late") and
// all (c1 and c2), clusters c1 (eu) and c2, and the given overrides. Reads only: no behaviour
// of the API server's is involved.
func previewClient(t *testing.T, objs ...client.Object) (client.Client, *workv1alpha1.ManifestWorkReplicaSet) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apischeme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	if err := yaml.UnmarshalStrict([]byte(previewRS), rs); err != nil {
		t.Fatal(err)
	}
	decision := func(placement, group string, clusters ...string) *clusterv1beta1.PlacementDecision {
		d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: placement + "-" + group,
			Labels: map[string]string{clusterv1beta1.PlacementLabel: placement, clusterv1beta1.DecisionGroupIndexLabel: group, clusterv1beta1.DecisionGroupNameLabel: "late"}}}
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
		}
		return d
	}
	objs = append(objs, rs,
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "canary"}},
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "all"}},
		decision("canary", "1", "c1"), decision("all", "0", "c1", "c2"),
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"region": "eu"}}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c2"}})
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), rs
}

func TestPreviewCluster(t *testing.T) {
	ctx := t.Context()
	hubOverride := previewOverride(t, "region", "eu.example")
	c, rs := previewClient(t, &hubOverride)

	t.Run("first placement, the override's rule, the controller's annotations", func(t *testing.T) {
		p, err := PreviewCluster(ctx, c, rs, "c1", PreviewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Placement != "canary" || p.Group.Index != 1 || p.Group.Name != "late" {
			t.Errorf("rendered for placement %s group %v, want canary's group 1 late (the first placementRef selecting c1)", p.Placement, p.Group)
		}
		if len(p.Trace) != 1 || p.Trace[0].Override != "region" || p.Trace[0].Overrider != "mergePatch" || strings.Join(p.Trace[0].Changed, ",") != "ConfigMap app/cfg" {
			t.Errorf("trace %+v, want region/eu mergePatch on ConfigMap app/cfg", p.Trace)
		}
		ann := p.Work.Annotations
		if ann[TemplateHashAnnotation] != p.TemplateHash || ann[RevisionAnnotation] != p.Revision || ann[OverridesAnnotation] != "region/eu" {
			t.Errorf("annotations %v, want template-hash %s, revision %s, overrides region/eu", ann, p.TemplateHash, p.Revision)
		}
		if p.Work.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey] != "canary" || p.Work.Namespace != "c1" || p.Work.Name != "web" {
			t.Errorf("work %s/%s labels %v, want c1/web of placement canary", p.Work.Namespace, p.Work.Name, p.Work.Labels)
		}
		if raw := string(p.Work.Spec.Workload.Manifests[0].Raw); !strings.Contains(raw, "eu.example") {
			t.Errorf("the ConfigMap was not overridden: %s", raw)
		}
	})

	t.Run("an unmatched cluster gets the template and its hash", func(t *testing.T) {
		p, err := PreviewCluster(ctx, c, rs, "c2", PreviewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		th, _ := templateHash(&rs.Spec.ManifestWorkTemplate)
		if p.TemplateHash != th || len(p.Trace) != 0 || p.Work.Annotations[OverridesAnnotation] != "" {
			t.Errorf("c2: hash %s trace %v annotations %v, want the template's hash %s and no overrides", p.TemplateHash, p.Trace, p.Work.Annotations, th)
		}
	})

	t.Run("files replace by name and add", func(t *testing.T) {
		extra := previewOverride(t, "zz-later", "later.example")
		p, err := PreviewCluster(ctx, c, rs, "c1", PreviewOptions{Overrides: []flotillav1alpha1.ManifestWorkReplicaSetOverride{previewOverride(t, "region", "file.example"), extra}})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Work.Annotations[OverridesAnnotation]; got != "region/eu,zz-later/eu" {
			t.Errorf("overrides annotation %q, want region/eu,zz-later/eu", got)
		}
		if raw := string(p.Work.Spec.Workload.Manifests[0].Raw); !strings.Contains(raw, "later.example") {
			t.Errorf("the later override did not win: %s", raw)
		}
		extra.Namespace = "other"
		if _, err := PreviewCluster(ctx, c, rs, "c1", PreviewOptions{Overrides: []flotillav1alpha1.ManifestWorkReplicaSetOverride{extra}}); err == nil ||
			!strings.Contains(err.Error(), "ManifestWorkReplicaSetOverride other/zz-later: not in the namespace of ManifestWorkReplicaSet app/web") {
			t.Errorf("an override of another namespace: %v", err)
		}
	})

	t.Run("a cluster no placement selects", func(t *testing.T) {
		_, err := PreviewCluster(ctx, c, rs, "c3", PreviewOptions{})
		var ns *NotSelectedError
		if !errors.As(err, &ns) || err.Error() != "cluster c3 is not selected by the placements of ManifestWorkReplicaSet app/web (canary, all)" {
			t.Errorf("c3: %v", err)
		}
	})

	t.Run("a failing rule", func(t *testing.T) {
		bad := previewOverride(t, "region", "x")
		bad.Spec.Rules[0].MergePatch = nil
		if err := yaml.UnmarshalStrict([]byte(`[{op: replace, path: /data/nope, value: x}]`), &bad.Spec.Rules[0].JSONPatch); err != nil {
			t.Fatal(err)
		}
		p, err := PreviewCluster(ctx, c, rs, "c1", PreviewOptions{Overrides: []flotillav1alpha1.ManifestWorkReplicaSetOverride{bad}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Failure == nil || p.Work != nil || p.Failure.Override != "region" || p.Failure.Rule != "eu" || p.Failure.Cluster != "c1" || p.Failure.Manifest != "ConfigMap app/cfg" {
			t.Errorf("a jsonPatch replacing a missing path: failure %+v, work %v; want region/eu failing on c1's ConfigMap app/cfg and no work", p.Failure, p.Work)
		}
	})
}
