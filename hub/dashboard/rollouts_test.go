package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	"github.com/flotilla-dev/flotilla/core/rollout"
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
		&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "done", Name: "addon-hello-deploy-0", Labels: map[string]string{addonv1alpha1.AddonLabelKey: "hello"}}},
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
		"absent": {"ToApply", "ManagedClusterAddOn not created yet", ""},
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

// A new add-on: the placement selects clusters, the add-on manager has not created their
// ManagedClusterAddOns yet. Nothing is installed, so the rollout is not Complete; a cluster two
// placements select is rolled out by the last one and Skip in the other.
func TestAddonRolloutBeforeManagedClusterAddOns(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}
	cma.Spec.InstallStrategy.Type = addonv1alpha1.AddonInstallStrategyPlacements
	for _, name := range []string{"first", "second"} {
		ps := addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: name}}
		ps.RolloutStrategy.Type = "All"
		cma.Spec.InstallStrategy.Placements = append(cma.Spec.InstallStrategy.Placements, ps)
		cma.Status.InstallProgressions = append(cma.Status.InstallProgressions, addonv1alpha1.InstallProgression{PlacementRef: ps.PlacementRef})
	}
	c := fake.NewClientBuilder().WithScheme(rolloutScheme(t)).WithObjects(
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "first"}},
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "second"}},
		rolloutDecision("default", "first", "0", "", "c1", "shared"),
		rolloutDecision("default", "second", "0", "", "shared"),
	).Build()

	r := AddonRollout(ctx, c, cma, now)
	if r.Phase == string(rollout.PhaseComplete) {
		t.Errorf("phase Complete (%q) with no ManagedClusterAddOn created: want the rollout still to do", r.Message)
	}
	for _, tc := range []struct{ placement, cluster, state, why string }{
		{"default/first", "c1", "ToApply", "ManagedClusterAddOn not created yet"},
		{"default/first", "shared", "Skip", "rolled out by another placement"},
		{"default/second", "shared", "ToApply", "ManagedClusterAddOn not created yet"},
	} {
		g, got := rolloutFind(t, r, tc.placement, tc.cluster)
		if got.State != tc.state || got.Why != tc.why || got.Since != "" {
			t.Errorf("%s in %s: %+v, want state %s why %q and no since", tc.cluster, tc.placement, got, tc.state, tc.why)
		}
		if g.State != "ToApply" {
			t.Errorf("%s's group in %s: state %s, want ToApply (nothing installed)", tc.cluster, tc.placement, g.State)
		}
	}
	if r.Summary != (RolloutSummary{}) {
		t.Errorf("summary %+v, want zero: no ManagedClusterAddOn", r.Summary)
	}
}

// countingReader counts a reader's calls by list type (and Gets by object type).
type countingReader struct {
	client.Reader
	calls map[string]int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.calls[fmt.Sprintf("get %T", obj)]++
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.calls[fmt.Sprintf("list %T", list)]++
	return r.Reader.List(ctx, list, opts...)
}

// A pass over every add-on lists the ManagedClusterAddOns and the deploy works once, not once
// per add-on or cluster; where works are not watched it asks the API server for none.
func TestAddonRolloutsReadOnce(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	objs := []client.Object{&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "all"}},
		rolloutDecision("default", "all", "0", "", "c1", "c2", "c3")}
	var cmas []*addonv1alpha1.ClusterManagementAddOn
	for _, name := range []string{"a", "b"} {
		cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name}}
		cma.Spec.InstallStrategy.Type = addonv1alpha1.AddonInstallStrategyPlacements
		cma.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"}}}
		cmas = append(cmas, cma)
		for _, cl := range []string{"c1", "c2", "c3"} {
			objs = append(objs, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cl, Name: name}})
		}
	}
	// a's deploy work on c1 and c2; b's on c3; a work of a that is not its deploy work 0.
	work := func(ns, name, addonName string) *workv1.ManifestWork {
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{addonv1alpha1.AddonLabelKey: addonName}}}
	}
	objs = append(objs, work("c1", "addon-a-deploy-0", "a"), work("c2", "addon-a-deploy-0", "a"), work("c3", "addon-b-deploy-0", "b"), work("c3", "addon-a-deploy-1", "a"))
	scheme := rolloutScheme(t)
	cached := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), calls: map[string]int{}}

	rs := AddonRollouts(ctx, cached, cmas, now)
	if len(rs) != 2 || rs[0].Name != "a" || rs[1].Name != "b" {
		t.Fatalf("rollouts %+v, want a and b in order", rs)
	}
	for _, k := range []string{"list *v1alpha1.ManagedClusterAddOnList", "list *v1.ManifestWorkList"} {
		if cached.calls[k] != 1 {
			t.Errorf("%s: %d calls for 2 add-ons on 3 clusters, want 1 (calls %v)", k, cached.calls[k], cached.calls)
		}
	}
	if n := cached.calls["get *v1.ManifestWork"]; n != 0 {
		t.Errorf("%d ManifestWork GETs, want none (one list)", n)
	}
	wantWork := map[string]string{"a/c1": "c1/addon-a-deploy-0", "a/c2": "c2/addon-a-deploy-0", "a/c3": "", "b/c1": "", "b/c2": "", "b/c3": "c3/addon-b-deploy-0"}
	for _, r := range rs {
		if r.Summary.Total != 3 {
			t.Errorf("%s: summary %+v, want 3 add-ons (its own only)", r.Name, r.Summary)
		}
		for _, cl := range []string{"c1", "c2", "c3"} {
			if _, got := rolloutFind(t, r, "default/all", cl); got.Work != wantWork[r.Name+"/"+cl] {
				t.Errorf("%s on %s: work %q, want %q", r.Name, cl, got.Work, wantWork[r.Name+"/"+cl])
			}
		}
	}

	t.Run("works not watched", func(t *testing.T) {
		direct := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), calls: map[string]int{}}
		r := ExplainReader(worksNotCachedReader{cached}, direct)
		rs := AddonRollouts(ctx, r, cmas, now)
		for k, n := range direct.calls {
			if strings.Contains(k, "ManifestWork") {
				t.Errorf("%s: %d calls to the API server, want none when works are not watched", k, n)
			}
		}
		for _, r := range rs {
			for _, cl := range []string{"c1", "c2", "c3"} {
				if _, got := rolloutFind(t, r, "default/all", cl); got.Work != "" || got.State == "" {
					t.Errorf("%s on %s: %+v, want a state and no work", r.Name, cl, got)
				}
			}
		}
	})
}

// worksNotCachedReader answers like a cache that does not watch ManifestWorks.
type worksNotCachedReader struct{ client.Reader }

func (r worksNotCachedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*workv1.ManifestWork); ok {
		return &cache.ErrResourceNotCached{}
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r worksNotCachedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*workv1.ManifestWorkList); ok {
		return &cache.ErrResourceNotCached{}
	}
	return r.Reader.List(ctx, list, opts...)
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
