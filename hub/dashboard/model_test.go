package dashboard

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/policy"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func TestClusterOf(t *testing.T) {
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"env": "prod"}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, Taints: []clusterv1.Taint{
			{Key: "gpu", Value: "none", Effect: clusterv1.TaintEffectNoSelect},
		}},
		Status: clusterv1.ManagedClusterStatus{
			Conditions: []metav1.Condition{
				{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue},
				{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionFalse, Reason: "Stopped", Message: "lease", LastTransitionTime: metav1.NewTime(t0)},
			},
			Capacity: clusterv1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("16Gi")},
			Version:  clusterv1.ManagedClusterVersion{Kubernetes: "v1.36.0"},
		},
	}
	renew := metav1.NewMicroTime(t0.Add(time.Minute))
	c := ClusterOf(mc, &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &renew}}, []string{"prod"})
	want := Cluster{
		Key: "c1", Name: "c1", Labels: map[string]string{"env": "prod"}, Accepted: true, Joined: "True", Available: "False",
		Reason: "Stopped", Message: "lease", Since: "2026-03-04T05:06:07Z", Taints: []Taint{{Key: "gpu", Value: "none", Effect: "NoSelect"}},
		Sets: []string{"prod"}, Version: "v1.36.0", CPU: "8", Memory: "16Gi", Lease: "2026-03-04T05:07:07Z",
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("ClusterOf:\n got %+v\nwant %+v", c, want)
	}
	// A new cluster: no status, no lease. Lists are [] and maps {} on the wire, never null.
	b, _ := json.Marshal(ClusterOf(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, nil, nil))
	if want := `{"key":"new","name":"new","labels":{},"accepted":false,"joined":"","available":"","reason":"","message":"","since":"","taints":[],"sets":[],"version":"","cpu":"","memory":"","lease":""}`; string(b) != want {
		t.Fatalf("a new cluster encodes as\n%s\nwant\n%s", b, want)
	}
}

func TestSetsOf(t *testing.T) {
	sel := func(s *clusterv1beta2.ManagedClusterSet) setSelector {
		return selectorOf(s)
	}
	sels := []setSelector{
		sel(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "a"}}),
		sel(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}},
		}}),
		sel(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector},
		}}),
	}
	if got := setsOf(sels, map[string]string{clusterv1beta2.ClusterSetLabel: "a"}); !reflect.DeepEqual(got, []string{"a", "global"}) {
		t.Fatalf("sets of a member of a: %v, want [a global] (an invalid selector matches nothing)", got)
	}
	if got := setsOf(sels, nil); !reflect.DeepEqual(got, []string{"global"}) {
		t.Fatalf("sets of an unlabelled cluster: %v, want [global]", got)
	}
}

func TestPlacementOf(t *testing.T) {
	n := int32(3)
	p := &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec:       clusterv1beta1.PlacementSpec{NumberOfClusters: &n},
		Status: clusterv1beta1.PlacementStatus{
			NumberOfSelectedClusters: 2,
			Conditions:               []metav1.Condition{{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionFalse, Reason: "NotAllDecisionsScheduled", Message: "2 of 3"}},
			DecisionGroups: []clusterv1beta1.DecisionGroupStatus{
				{DecisionGroupIndex: 0, DecisionGroupName: "canary", Decisions: []string{"web-decision-1"}},
				{DecisionGroupIndex: 1, Decisions: []string{"web-decision-2"}},
			},
		},
	}
	decision := func(name string, clusters ...string) clusterv1beta1.PlacementDecision {
		d := clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{clusterv1beta1.PlacementLabel: "web"}}}
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: "score"})
		}
		return d
	}
	var evs []corev1.Event
	for i := range 12 {
		evs = append(evs, corev1.Event{Reason: fmt.Sprint("R", i), LastTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second))})
	}
	got := PlacementOf(p, []clusterv1beta1.PlacementDecision{decision("web-decision-2", "c2"), decision("web-decision-1", "c1")}, evs)
	if got.Key != "apps/web" || *got.Requested != 3 || got.Selected != 2 || got.Satisfied != "False" || got.Reason != "NotAllDecisionsScheduled" || got.Message != "2 of 3" {
		t.Fatalf("PlacementOf header: %+v", got)
	}
	if want := []Decision{{"c1", "score"}, {"c2", "score"}}; !reflect.DeepEqual(got.Decisions, want) {
		t.Fatalf("decisions %v, want %v in decision order", got.Decisions, want)
	}
	if want := []Group{{0, "canary", []string{"c1"}}, {1, "", []string{"c2"}}}; !reflect.DeepEqual(got.Groups, want) {
		t.Fatalf("groups %v, want %v", got.Groups, want)
	}
	if len(got.Events) != maxEvents || got.Events[0].Reason != "R11" || got.Events[9].Reason != "R2" || got.Events[0].Count != 1 {
		t.Fatalf("events %v: want the newest %d, newest first, count 1", got.Events, maxEvents)
	}
	b, _ := json.Marshal(PlacementOf(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}}, nil, nil))
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["requested"] != nil || m["satisfied"] != "" || m["groups"] == nil || m["decisions"] == nil || m["events"] == nil {
		t.Fatalf("a new placement encodes as %s: want requested null, satisfied \"\", groups/decisions/events []", b)
	}
}

func TestAddonHealth(t *testing.T) {
	cond := func(t, s string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), Reason: t + s, Message: "m"}
	}
	const av, dg, pr = addonv1alpha1.ManagedClusterAddOnConditionAvailable, addonv1alpha1.ManagedClusterAddOnConditionDegraded, addonv1alpha1.ManagedClusterAddOnConditionProgressing
	for _, tc := range []struct {
		conds          []metav1.Condition
		health, reason string
	}{
		{nil, HealthUnknown, "NoStatus"},
		{[]metav1.Condition{cond(av, "Unknown")}, HealthUnknown, av + "Unknown"},
		{[]metav1.Condition{cond(av, "True")}, HealthHealthy, av + "True"},
		{[]metav1.Condition{cond(av, "True"), cond(pr, "True")}, HealthProgressing, pr + "True"},
		{[]metav1.Condition{cond(av, "False")}, HealthUnhealthy, av + "False"},
		{[]metav1.Condition{cond(av, "True"), cond(dg, "True")}, HealthUnhealthy, dg + "True"},
	} {
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "obs"}, Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: tc.conds}}
		a := AddonOf(mca)
		if a.Health != tc.health || a.Reason != tc.reason || a.Key != "c1/obs" || a.Cluster != "c1" {
			t.Errorf("conditions %v: health %s (%s), key %s; want %s (%s)", tc.conds, a.Health, a.Reason, a.Key, tc.health, tc.reason)
		}
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "obs"},
		Spec:       addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: "agents"},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{ConfigReferences: []addonv1alpha1.ConfigReference{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
			DesiredConfig:       &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "cfg"}, SpecHash: "new"},
			LastAppliedConfig:   &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "cfg"}, SpecHash: "old"},
		}}},
	}
	a := AddonOf(mca)
	if want := []AddonConfig{{"addon.open-cluster-management.io", "addondeploymentconfigs", "ns", "cfg", "new", "old"}}; !reflect.DeepEqual(a.Configs, want) || a.InstallNamespace != "agents" {
		t.Fatalf("configs %+v (install namespace %q), want %+v in agents", a.Configs, a.InstallNamespace, want)
	}
}

func TestAddonDefOf(t *testing.T) {
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "obs"}, Spec: addonv1alpha1.ClusterManagementAddOnSpec{
		AddOnMeta: addonv1alpha1.AddOnMeta{DisplayName: "Observability"},
		SupportedConfigs: []addonv1alpha1.ConfigMeta{
			{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "g", Resource: "r"}, DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: "n", Name: "d"}},
			{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "g", Resource: "nodefault"}},
		},
	}}
	want := AddonDef{Key: "obs", Name: "obs", DisplayName: "Observability", InstallStrategy: "Manual", DefaultConfigs: []DefaultConfig{{"g", "r", "n", "d"}}}
	if got := AddonDefOf(cma); !reflect.DeepEqual(got, want) {
		t.Fatalf("AddonDefOf: %+v, want %+v", got, want)
	}
}

func TestPluginOf(t *testing.T) {
	p := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: "score"}, Spec: flotillav1alpha1.WasmPluginSpec{Type: flotillav1alpha1.PluginTypePrioritizer},
		Status: flotillav1alpha1.WasmPluginStatus{Digest: "sha256:ab", Conditions: []metav1.Condition{{Type: flotillav1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: flotillav1alpha1.ReasonDigestMismatch, Message: "m"}}}}
	got := PluginOf(p, nil)
	if got.Ready != "False" || got.Reason != flotillav1alpha1.ReasonDigestMismatch || got.Type != "Prioritizer" || got.Digest != "sha256:ab" || got.Events == nil {
		t.Fatalf("PluginOf: %+v", got)
	}
	if got := PluginOf(&flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, nil); got.Ready != "Unknown" {
		t.Fatalf("a plugin without status is Ready %q, want Unknown", got.Ready)
	}
}

func TestPolicyOf(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: "p", ResourceVersion: "12"}}
	ev := func(reason, rv string, at time.Time) corev1.Event {
		msg := "refused: bad"
		if reason == policy.EventReasonLoaded {
			msg = "loaded 1 file(s) at resourceVersion " + rv
		}
		return corev1.Event{Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(at),
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name            string
		evs             []corev1.Event
		state, lastGood string
	}{
		{"no verdict yet", nil, PolicyUnknown, ""},
		{"loaded", []corev1.Event{ev(policy.EventReasonLoaded, "12", t0)}, PolicyLoaded, "12"},
		{"rejected, an earlier version good", []corev1.Event{ev(policy.EventReasonLoaded, "10", t0), ev(policy.EventReasonRejected, "12", t0.Add(time.Second))}, PolicyRejected, "10"},
		{"verdict on an older version only", []corev1.Event{ev(policy.EventReasonLoaded, "10", t0)}, PolicyUnknown, "10"},
	} {
		got := PolicyOf(cm, tc.evs)
		if got.State != tc.state || got.LastGood != tc.lastGood || got.Key != policy.DefaultNamespace+"/p" {
			t.Errorf("%s: state %s lastGood %q, want %s %q", tc.name, got.State, got.LastGood, tc.state, tc.lastGood)
		}
	}
	// Without the involved object's resourceVersion, the hub's message names it.
	e := ev(policy.EventReasonLoaded, "12", t0)
	e.InvolvedObject.ResourceVersion = ""
	if got := PolicyOf(cm, []corev1.Event{e}); got.State != PolicyLoaded || got.LastGood != "12" {
		t.Fatalf("verdict from the message: %+v", got)
	}
}

func TestWorkDetailOf(t *testing.T) {
	i := int64(3)
	mw := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "app"},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			{RawExtension: rawJSON(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"web","name":"web"}}`)},
		}}},
		Status: workv1.ManifestWorkStatus{
			Conditions: []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed"}},
			ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{{
				ResourceMeta:    workv1.ManifestResourceMeta{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "web", Name: "web"},
				Conditions:      []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue}},
				StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{{Name: "ReadyReplicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: &i}}}},
			}}},
		},
	}
	got := WorkDetailOf(mw)
	want := WorkDetail{Namespace: "c1", Name: "app", Conditions: []Cond{{Type: workv1.WorkApplied, Status: "False", Reason: "AppliedManifestWorkFailed"}},
		Manifests: []ManifestDetail{{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "web", Name: "web",
			Conditions: []Cond{{Type: workv1.ManifestApplied, Status: "True"}}, Feedback: []Feedback{{Name: "ReadyReplicas", Type: "Integer", Value: "3"}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WorkDetailOf:\n got %+v\nwant %+v", got, want)
	}
}

func rawJSON(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
