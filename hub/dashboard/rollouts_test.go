package dashboard

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
)

// The reader in these tests is controller-runtime's fake client: the views only read, and the
// rollout logic they show is hub/mwrs.Inspect's and core/rollout's, called for real.

func rolloutScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := apischeme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func rolloutDecision(ns, placement, group, groupName string, clusters ...string) *clusterv1beta1.PlacementDecision {
	d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: placement + "-" + group,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: placement, clusterv1beta1.DecisionGroupIndexLabel: group, clusterv1beta1.DecisionGroupNameLabel: groupName}}}
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	return d
}

func rolloutFind(t *testing.T, r Rollout, placement string, cluster string) (RolloutGroup, RolloutCluster) {
	t.Helper()
	for _, pl := range r.Placements {
		if pl.Name != placement {
			continue
		}
		for _, g := range pl.Groups {
			for _, c := range g.Clusters {
				if c.Cluster == cluster {
					return g, c
				}
			}
		}
	}
	t.Fatalf("no cluster %s in placement %s of rollout %s: %+v", cluster, placement, r.Key, r.Placements)
	return RolloutGroup{}, RolloutCluster{}
}

func TestMWRSRollout(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: web, namespace: app}
spec:
  placementRefs: [{name: canary}, {name: all, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1}}}, {name: gone}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: app}, data: {registry: quay.io}}
status:
  summary: {total: 1, applied: 1, available: 1, degraded: 0, progressing: 0, desiredTotal: 3}
`), rs); err != nil {
		t.Fatal(err)
	}
	// A transform rule for c3 whose plugin does not exist: c3's render fails, nothing else.
	ov := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: us, namespace: app}
spec:
  replicaSets: [{name: web}]
  rules:
  - {name: us, clusters: {labelSelector: {matchLabels: {region: us}}}, transform: {plugin: no-such-plugin}}
`), ov); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{rs, ov,
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "canary"}},
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "all"}},
		rolloutDecision("app", "canary", "1", "late", "c1"), rolloutDecision("app", "all", "0", "", "c1", "c2", "c3"),
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c2"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c3", Labels: map[string]string{"region": "us"}}},
	}
	c := fake.NewClientBuilder().WithScheme(rolloutScheme(t)).WithObjects(objs...).Build()

	// c1's work as the controller renders it, Applied and Available: Succeeded.
	p, err := mwrs.PreviewCluster(ctx, c, rs, "c1", mwrs.PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := p.Work.DeepCopy()
	applied := now.Add(-time.Hour)
	w.Status.Conditions = []metav1.Condition{
		{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: metav1.NewTime(applied)},
		{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "Available", LastTransitionTime: metav1.NewTime(applied)},
	}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}

	r := MWRSRollout(ctx, c, rs, now)

	if r.Key != "app/web" || r.Kind != RolloutKindMWRS || r.Namespace != "app" || r.Name != "web" {
		t.Errorf("identity %q %q %q %q, want app/web ManifestWorkReplicaSet app web", r.Key, r.Kind, r.Namespace, r.Name)
	}
	if r.Summary != (RolloutSummary{Total: 1, Applied: 1, Available: 1}) {
		t.Errorf("summary %+v, want the replica set's status.summary", r.Summary)
	}
	// c3's failed render counts against maxFailures 0: all's rollout stops, and so the whole.
	if r.Phase != "Stopped" || r.RolledBack || !strings.HasPrefix(r.Message, "all: stopped") || !strings.Contains(r.Message, "(c3)") {
		t.Errorf("phase %q rolledBack %v message %q, want Stopped, not rolled back, all's message naming c3", r.Phase, r.RolledBack, r.Message)
	}
	var names []string
	for _, pl := range r.Placements {
		names = append(names, pl.Name)
	}
	if strings.Join(names, ",") != "canary,all,gone" {
		t.Fatalf("placements %v, want canary,all,gone", names)
	}
	canary, all, gone := r.Placements[0], r.Placements[1], r.Placements[2]
	if canary.Strategy != "All" || canary.Phase != "Complete" || canary.Error != "" {
		t.Errorf("canary: strategy %q phase %q error %q, want All Complete", canary.Strategy, canary.Phase, canary.Error)
	}
	if len(canary.Groups) != 1 || canary.Groups[0].Index != 1 || canary.Groups[0].Name != "late" || canary.Groups[0].State != "Succeeded" {
		t.Errorf("canary groups %+v, want group 1 late Succeeded", canary.Groups)
	}
	if g, cl := rolloutFind(t, r, "canary", "c1"); cl.State != "Succeeded" || cl.Work != "c1/web" || cl.Since != applied.Format(time.RFC3339) || cl.Why != "Applied and Available" || g.Index != 1 {
		t.Errorf("canary c1: %+v in group %d, want Succeeded since %s, work c1/web, why Applied and Available", cl, g.Index, applied.Format(time.RFC3339))
	}
	if all.Strategy != "Progressive" || all.Phase != "Stopped" {
		t.Errorf("all: strategy %q phase %q, want Progressive Stopped", all.Strategy, all.Phase)
	}
	if _, cl := rolloutFind(t, r, "all", "c2"); cl.State != "ToApply" || cl.Work != "" || cl.Since != "" || cl.Why != "no ManifestWork yet" {
		t.Errorf("all c2: %+v, want ToApply, no work, no since, why no ManifestWork yet", cl)
	}
	if _, cl := rolloutFind(t, r, "all", "c3"); cl.State != "Failed" || !strings.Contains(cl.Why, "render failed") || !strings.Contains(cl.Why, "no-such-plugin") {
		t.Errorf("all c3: %+v, want Failed with why its render failed naming no-such-plugin", cl)
	}
	if all.Groups[0].State != "Failed" {
		t.Errorf("all group 0 state %q, want Failed (c3 failed)", all.Groups[0].State)
	}
	if gone.Error != "Placement app/gone not found" || len(gone.Groups) != 0 {
		t.Errorf("gone: error %q groups %+v, want not found and no groups", gone.Error, gone.Groups)
	}

	t.Run("JSON keys are design-26's", func(t *testing.T) {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		assertKeys(t, "rollout", m, "key", "kind", "namespace", "name", "phase", "message", "conditions", "rolledBack", "summary", "placements")
		assertKeys(t, "summary", m["summary"].(map[string]any), "total", "applied", "available", "degraded", "progressing")
		pl := m["placements"].([]any)[0].(map[string]any)
		assertKeys(t, "placement", pl, "name", "strategy", "phase", "message", "error", "groups")
		g := pl["groups"].([]any)[0].(map[string]any)
		assertKeys(t, "group", g, "index", "name", "state", "clusters")
		assertKeys(t, "cluster", g["clusters"].([]any)[0].(map[string]any), "cluster", "state", "since", "why", "work")
		if _, ok := m["placements"].([]any)[2].(map[string]any)["groups"].([]any); !ok {
			t.Errorf("a placement without groups encodes groups as %v, want []", m["placements"].([]any)[2].(map[string]any)["groups"])
		}
	})

	t.Run("rolled back", func(t *testing.T) {
		rb := rs.DeepCopy()
		rb.Generation = 3
		rb.Status.Conditions = []metav1.Condition{{Type: mwrs.ConditionRolledBack, Status: metav1.ConditionTrue,
			Reason: "RolledBack", Message: "template abc rolled back to def", ObservedGeneration: 3}}
		r := MWRSRollout(ctx, c, rb, now)
		if !r.RolledBack || r.Phase != RolloutPhaseRolledBack || r.Placements[0].Phase != RolloutPhaseRolledBack {
			t.Errorf("rolledBack %v phase %q placement phase %q, want true RolledBack RolledBack", r.RolledBack, r.Phase, r.Placements[0].Phase)
		}
		if r.Message != "template abc rolled back to def" || len(r.Conditions) != 1 || r.Conditions[0].Type != mwrs.ConditionRolledBack || r.Conditions[0].Status != "True" {
			t.Errorf("message %q conditions %+v, want the RolledBack condition and its message", r.Message, r.Conditions)
		}
	})
}

func assertKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s keys %v, want %v", what, got, want)
	}
}

func TestAddonRollout(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cfgGR := addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}
	hash := func(h string) *addonv1alpha1.ConfigSpecHash {
		return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "default", Name: "cfg"}, SpecHash: h}
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
	cma.Spec.InstallStrategy.Type = addonv1alpha1.AddonInstallStrategyPlacements
	ref := addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"}
	ps := addonv1alpha1.PlacementStrategy{PlacementRef: ref}
	ps.RolloutStrategy.Type = "Progressive"
	cma.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{ps}
	cma.Status.InstallProgressions = []addonv1alpha1.InstallProgression{{PlacementRef: ref,
		ConfigReferences: []addonv1alpha1.InstallConfigReference{{ConfigGroupResource: cfgGR, DesiredConfig: hash("new")}},
		Conditions:       []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading", Message: "1/3 upgrading"}}}}

	t0 := metav1.NewTime(now.Add(-10 * time.Minute))
	mca := func(cluster, desired, applied string, conds ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
		m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "hello"}}
		r := addonv1alpha1.ConfigReference{ConfigGroupResource: cfgGR, ConfigReferent: hash(desired).ConfigReferent, DesiredConfig: hash(desired)}
		if applied != "" {
			r.LastAppliedConfig = hash(applied)
		}
		m.Status.ConfigReferences = []addonv1alpha1.ConfigReference{r}
		m.Status.Conditions = append([]metav1.Condition{{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: metav1.ConditionTrue, Reason: "Configured", LastTransitionTime: t0}}, conds...)
		return m
	}
	objs := []client.Object{
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "all"}},
		rolloutDecision("default", "all", "0", "", "done", "old", "busy", "absent"),
		// done: the new configuration applied, Available.
		mca("done", "new", "new", metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: t0}),
		// old: still given the old configuration: not admitted yet.
		mca("old", "old", "old", metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: t0}),
		// busy: given the new one, upgrading.
		mca("busy", "new", "old", metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionProgressing, Status: metav1.ConditionTrue, Reason: addonv1alpha1.ProgressingReasonUpgrading, Message: "upgrading", LastTransitionTime: t0}),
		&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "done", Name: "addon-hello-deploy-0"}},
	}
	c := fake.NewClientBuilder().WithScheme(rolloutScheme(t)).WithObjects(objs...).Build()

	r := AddonRollout(ctx, c, cma, now)
	if r.Key != AddonRolloutKey("hello") || r.Kind != RolloutKindAddOn || r.Name != "hello" || r.Namespace != "" {
		t.Errorf("identity %q %q %q %q, want addon/hello ClusterManagementAddOn hello", r.Key, r.Kind, r.Name, r.Namespace)
	}
	if r.Summary != (RolloutSummary{Total: 3, Applied: 2, Available: 2, Progressing: 1}) {
		t.Errorf("summary %+v, want 3 add-ons, 2 applied, 2 available, 1 progressing", r.Summary)
	}
	if len(r.Placements) != 1 || r.Placements[0].Name != "default/all" || r.Placements[0].Strategy != "Progressive" {
		t.Fatalf("placements %+v, want default/all Progressive", r.Placements)
	}
	if r.Phase != "Progressing" || r.Placements[0].Phase != "Progressing" {
		t.Errorf("phase %q placement phase %q, want Progressing", r.Phase, r.Placements[0].Phase)
	}
	if len(r.Conditions) != 1 || r.Conditions[0].Type != "default/all: Progressing" || r.Conditions[0].Message != "1/3 upgrading" {
		t.Errorf("conditions %+v, want the progression's Progressing condition", r.Conditions)
	}
	want := map[string]struct{ state, why, work string }{
		"done":   {"Succeeded", "configurations applied; Available=True", "done/addon-hello-deploy-0"},
		"old":    {"ToApply", "the configurations of placement default/all are not rolled out to it yet", ""},
		"busy":   {"Progressing", "Progressing: Upgrading: upgrading", ""},
		"absent": {"Skip", "no ManagedClusterAddOn yet", ""},
	}
	for cl, w := range want {
		_, got := rolloutFind(t, r, "default/all", cl)
		if got.State != w.state || got.Why != w.why || got.Work != w.work {
			t.Errorf("%s: %+v, want state %s why %q work %q", cl, got, w.state, w.why, w.work)
		}
		if hasSince := got.State == "Succeeded" || got.State == "Progressing"; hasSince != (got.Since != "") {
			t.Errorf("%s: since %q with state %s: want a time for Succeeded and Progressing only", cl, got.Since, got.State)
		}
	}
	if g := r.Placements[0].Groups; len(g) != 1 || g[0].State != "Progressing" {
		t.Errorf("groups %+v, want one Progressing group", g)
	}

	t.Run("no progression reported yet", func(t *testing.T) {
		m := cma.DeepCopy()
		m.Status.InstallProgressions = nil
		r := AddonRollout(ctx, c, m, now)
		if len(r.Placements) != 1 || !strings.Contains(r.Placements[0].Message, "no install progression") {
			t.Errorf("placements %+v, want default/all's message to say no progression is reported", r.Placements)
		}
		if _, got := rolloutFind(t, r, "default/all", "done"); got.State != "ToApply" {
			t.Errorf("done without the controller's configurations: %+v, want ToApply", got)
		}
	})

	t.Run("a missing placement and a manual add-on", func(t *testing.T) {
		m := cma.DeepCopy()
		m.Spec.InstallStrategy.Placements[0].Name = "nope"
		r := AddonRollout(ctx, c, m, now)
		if len(r.Placements) != 1 || r.Placements[0].Error != "Placement default/nope not found" || r.Phase != RolloutPhaseUnknown {
			t.Errorf("placements %+v phase %q, want default/nope not found, phase Unknown", r.Placements, r.Phase)
		}
		m.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}
		if r := AddonRollout(ctx, c, m, now); len(r.Placements) != 0 || r.Phase != "Complete" || !strings.Contains(r.Message, "Manual") {
			t.Errorf("manual: placements %+v phase %q message %q, want none, Complete, naming Manual", r.Placements, r.Phase, r.Message)
		}
	})
}

func TestRolloutGroupState(t *testing.T) {
	cs := func(states ...string) []RolloutCluster {
		var out []RolloutCluster
		for _, s := range states {
			out = append(out, RolloutCluster{State: s})
		}
		return out
	}
	for _, tc := range []struct {
		states []string
		want   string
	}{
		{[]string{"Succeeded", "Skip"}, "Succeeded"},
		{nil, "Succeeded"},
		{[]string{"Succeeded", "TimeOut", "Progressing"}, "Failed"},
		{[]string{"Failed", "ToApply"}, "Failed"},
		{[]string{"Progressing", "ToApply", "Succeeded"}, "Progressing"},
		{[]string{"ToApply", "Succeeded"}, "ToApply"},
	} {
		if got := rolloutGroupState(cs(tc.states...)); got != tc.want {
			t.Errorf("group of %v: %s, want %s", tc.states, got, tc.want)
		}
	}
}
