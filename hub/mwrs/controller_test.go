package mwrs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/hash"
	"github.com/flotilla-dev/flotilla/core/rollout"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
)

func TestOwnerKey(t *testing.T) {
	if k, ok := ownerKey("ns1.my.set"); !ok || k.Namespace != "ns1" || k.Name != "my.set" {
		t.Fatalf("ownerKey(ns1.my.set) = %v, %v", k, ok)
	}
	for _, bad := range []string{"", "ns1", ".name", "ns1."} {
		if _, ok := ownerKey(bad); ok {
			t.Fatalf("ownerKey(%q) accepted", bad)
		}
	}
}

func TestTemplateHashFollowsTheTemplate(t *testing.T) {
	a := &workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{}}}}
	b := a.DeepCopy()
	ha, _ := templateHash(a)
	hb, _ := templateHash(b)
	if ha != hb || len(ha) != 16 {
		t.Fatalf("equal templates hash %q and %q", ha, hb)
	}
	b.ManifestConfigs = []workv1.ManifestConfigOption{{ConditionRules: []workv1.ConditionRule{{Condition: "Complete", Type: workv1.WellKnownConditionsType}}}}
	if hb, _ = templateHash(b); hb == ha {
		t.Fatal("a changed template keeps its hash")
	}
}

func TestSpecEdited(t *testing.T) {
	entry := func(manager, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Subresource: sub, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	w := &workv1.ManifestWork{}
	w.ManagedFields = []metav1.ManagedFieldsEntry{entry(FieldManager, "", `{"f:spec":{}}`), entry("work-agent", "status", `{"f:status":{}}`),
		entry("kubectl-label", "", `{"f:metadata":{"f:labels":{}}}`)}
	if specEdited(w) {
		t.Fatal("the controller's own spec, the agent's status and someone's label count as an edited spec")
	}
	w.ManagedFields = append(w.ManagedFields, entry("kubectl-edit", "", `{"f:spec":{"f:workload":{}}}`))
	if !specEdited(w) {
		t.Fatal("a spec field owned by kubectl-edit is not an edit")
	}
	if got := clusterState(&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TemplateHashAnnotation: "h"},
		ManagedFields: w.ManagedFields}}, "h", &workv1.ManifestWorkSpec{}, time.Now()); got.Status != rollout.ToApply {
		t.Fatalf("an edited work's state = %v, want ToApply", got.Status)
	}
}

func TestClusterState(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Minute)
	tmpl := &workv1.ManifestWorkSpec{}
	withRule := &workv1.ManifestWorkSpec{ManifestConfigs: []workv1.ManifestConfigOption{{ConditionRules: []workv1.ConditionRule{{Condition: "Complete", Type: workv1.WellKnownConditionsType}}}}}
	withDegradedRule := &workv1.ManifestWorkSpec{ManifestConfigs: []workv1.ManifestConfigOption{{ConditionRules: []workv1.ConditionRule{
		{Condition: workv1.WorkDegraded, Type: workv1.CelConditionExpressionsType, CelExpressions: []string{"false"}}}}}}
	cond := func(typ string, s metav1.ConditionStatus, at time.Time, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, LastTransitionTime: metav1.NewTime(at), ObservedGeneration: gen, Reason: "R"}
	}
	work := func(hash string, conds ...metav1.Condition) *workv1.ManifestWork {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: 2, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			Annotations: map[string]string{TemplateHashAnnotation: hash, UpdatedAtAnnotation: t0.Format(time.RFC3339)}},
			Status: workv1.ManifestWorkStatus{Conditions: conds}}
	}
	cases := []struct {
		name string
		w    *workv1.ManifestWork
		tmpl *workv1.ManifestWorkSpec
		want rollout.ClusterState
	}{
		{"an older template is to apply", work("old", cond(workv1.WorkApplied, "True", t0, 2)), tmpl, rollout.ClusterState{Status: rollout.ToApply}},
		{"written, not reported: progressing since written", work("h"), tmpl, rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: t0}},
		{"applied but not available", work("h", cond(workv1.WorkApplied, "True", t0.Add(time.Minute), 2)), tmpl,
			rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: t0}},
		{"applied and available: succeeded when the later turned true", work("h", cond(workv1.WorkApplied, "True", t0.Add(time.Minute), 2),
			cond(workv1.WorkAvailable, "True", t0.Add(2*time.Minute), 2)), tmpl, rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: t0.Add(2 * time.Minute)}},
		{"conditions of an older generation do not count", work("h", cond(workv1.WorkApplied, "True", t0, 1), cond(workv1.WorkAvailable, "True", t0, 1)), tmpl,
			rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: t0}},
		{"true since before the template was written: succeeded from the write", work("h", cond(workv1.WorkApplied, "True", t0.Add(-time.Hour), 2),
			cond(workv1.WorkAvailable, "True", t0.Add(-time.Hour), 2)), tmpl, rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: t0}},
		{"degraded fails", work("h", cond(workv1.WorkApplied, "True", t0, 2), cond(workv1.WorkDegraded, "True", t0.Add(3*time.Minute), 2)), tmpl,
			rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: t0.Add(3 * time.Minute)}},
		{"not applied (yet) is progressing: the agent retries; progressDeadline catches what lasts",
			work("h", cond(workv1.WorkApplied, "False", t0.Add(time.Minute), 2)), tmpl,
			rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: t0}},
		{"a declared condition rule must be true", work("h", cond(workv1.WorkApplied, "True", t0, 2), cond(workv1.WorkAvailable, "True", t0, 2),
			cond("Complete", "False", t0, 2)), withRule, rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: t0}},
		{"and then it succeeds", work("h", cond(workv1.WorkApplied, "True", t0, 2), cond(workv1.WorkAvailable, "True", t0, 2),
			cond("Complete", "True", t0.Add(5*time.Minute), 2)), withRule, rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: t0.Add(5 * time.Minute)}},
		{"a Degraded condition rule says what failure is: False succeeds", work("h", cond(workv1.WorkApplied, "True", t0, 2),
			cond(workv1.WorkAvailable, "True", t0, 2), cond(workv1.WorkDegraded, "False", t0, 2)), withDegradedRule,
			rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: t0}},
		{"and True fails", work("h", cond(workv1.WorkApplied, "True", t0, 2), cond(workv1.WorkAvailable, "True", t0, 2),
			cond(workv1.WorkDegraded, "True", t0.Add(time.Minute), 2)), withDegradedRule,
			rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: t0.Add(time.Minute)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := clusterState(c.w, "h", c.tmpl, now); got != c.want {
				t.Fatalf("clusterState = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestTemplateHashGolden: the template hash is the render's hash (override.Hash) and is the
// formula works carried before overrides existed, so an upgrade rolls nothing out.
func TestTemplateHashGolden(t *testing.T) {
	tmpl := &workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
		Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"default"},"data":{"version":"v1"}}`)}}}}}
	got, err := templateHash(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	h, err := hash.JSON(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if want := hash.Short(h); got != want {
		t.Fatalf("templateHash = %s, the hash.Short(hash.JSON(template)) works carry is %s", got, want)
	}
	if oh, _ := override.Hash(tmpl); oh != got {
		t.Fatalf("override.Hash = %s, templateHash = %s", oh, got)
	}
	if golden := "56d0485b7301b872"; got != golden {
		t.Fatalf("templateHash of the fixed template = %s, was %s before overrides", got, golden)
	}
}

// TestRevisionWithoutOverrides: without overrides the revision is the template hash and its
// data the bare template, as before overrides; with one it is neither, and both forms read back.
func TestRevisionWithoutOverrides(t *testing.T) {
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	rs.Spec.ManifestWorkTemplate.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{
		Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app","namespace":"default"}}`)}}}
	d, err := newDesired(rs, nil)
	if err != nil {
		t.Fatal(err)
	}
	th, _ := templateHash(&rs.Spec.ManifestWorkTemplate)
	raw, _ := json.Marshal(rs.Spec.ManifestWorkTemplate)
	if got, _ := d.revisionBytes(); d.rev != th || string(got) != string(raw) || d.annotations("c1") != nil {
		t.Fatalf("without overrides: revision %s (template %s), data %s (want %s), annotations %v", d.rev, th, got, raw, d.annotations("c1"))
	}
	o := flotillav1alpha1.ManifestWorkReplicaSetOverride{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o"},
		Spec: flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "app"}},
			Rules: []flotillav1alpha1.OverrideRule{{Name: "r", Labels: &flotillav1alpha1.MetadataOverride{Set: map[string]string{"a": "b"}}}}}}
	d2, err := newDesired(rs, []flotillav1alpha1.ManifestWorkReplicaSetOverride{o})
	if err != nil {
		t.Fatal(err)
	}
	if d2.rev == th || d2.fatal != "" {
		t.Fatalf("with an override: revision %s (template %s), fatal %q", d2.rev, th, d2.fatal)
	}
	for _, dd := range []*desired{d, d2} {
		data, _ := dd.revisionBytes()
		tmpl, ovs, err := readRevision(data)
		if err != nil || !equality.Semantic.DeepEqual(*tmpl, rs.Spec.ManifestWorkTemplate) || len(ovs) != len(dd.overrides) {
			t.Fatalf("readRevision(%s) = %v, %d overrides, %v", data, tmpl, len(ovs), err)
		}
	}
}

// TestValidCondition: the Valid condition is the compiler's verdict, naming the field.
func TestValidCondition(t *testing.T) {
	o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o", Generation: 3},
		Spec: flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "app"}},
			Rules: []flotillav1alpha1.OverrideRule{{Name: "r", Labels: &flotillav1alpha1.MetadataOverride{Set: map[string]string{"a": "b"}}}}}}
	if c := validCondition(o); c.Status != metav1.ConditionTrue || c.Reason != flotillav1alpha1.ReasonCompiled || c.ObservedGeneration != 3 {
		t.Fatalf("a valid override: %+v", c)
	}
	o.Spec.Rules[0].Labels.Set["a"] = "{{ range .cluster.labels }}x{{ end }}"
	c := validCondition(o)
	if c.Status != metav1.ConditionFalse || c.Reason != flotillav1alpha1.ReasonInvalidSpec || !strings.Contains(c.Message, "spec.rules[0].labels") {
		t.Fatalf("a template with range: %+v", c)
	}
}
