package admin

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/hub/addon"
)

var adcGR = addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}

func TestParseConfigRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want addonv1alpha1.AddOnConfig
	}{
		{"addon.open-cluster-management.io/addondeploymentconfigs/open-cluster-management/deploy-config",
			addonv1alpha1.AddOnConfig{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "open-cluster-management", Name: "deploy-config"}}},
		{"addon.open-cluster-management.io/addontemplates/hello-1.0",
			addonv1alpha1.AddOnConfig{ConfigGroupResource: addon.AddOnTemplateResource, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "hello-1.0"}}},
		{"/configmaps/ns/cm",
			addonv1alpha1.AddOnConfig{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Resource: "configmaps"}, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "cm"}}},
	} {
		got, err := ParseConfigRef(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseConfigRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "deploy-config", "g/r", "g/r/ns/n/x", "g//n", "g/r/", "g/r//n"} {
		if _, err := ParseConfigRef(bad); err == nil || !strings.Contains(err.Error(), "GROUP/RESOURCE/[NAMESPACE/]NAME") {
			t.Errorf("ParseConfigRef(%q): error %v", bad, err)
		}
	}
}

func TestParseKeyValues(t *testing.T) {
	got, err := ParseKeyValues("--annotate", []string{"a=1", "example.com/b=x=y", "a=2", "empty="}, false)
	if want := map[string]string{"a": "2", "example.com/b": "x=y", "empty": ""}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseKeyValues = %v, %v; want %v", got, err, want)
	}
	for _, tc := range []struct {
		pairs  []string
		labels bool
		want   string
	}{
		{[]string{"novalue"}, false, `--x "novalue": want KEY=VALUE`},
		{[]string{"=v"}, false, `--x "=v": want KEY=VALUE`},
		{[]string{"bad key=v"}, false, `--x "bad key=v": invalid key`},
		{[]string{"k=not a label value"}, true, `--x "k=not a label value": invalid value`},
	} {
		if _, err := ParseKeyValues("--x", tc.pairs, tc.labels); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseKeyValues(%v): error %v, want %q", tc.pairs, err, tc.want)
		}
	}
	if got, err := ParseKeyValues("--x", []string{"k=not a label value"}, false); err != nil || got["k"] != "not a label value" {
		t.Errorf("annotation values are free: %v, %v", got, err)
	}
}

func TestRolloutStrategy(t *testing.T) {
	got, err := RolloutStrategy(RolloutOptions{Type: "Progressive", MaxConcurrency: "25%", MaxFailures: "2", ProgressDeadline: "10m",
		MinSuccessTime: 5 * time.Minute, MandatoryGroups: []string{"canary-west", "canary-east"}})
	want := clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
		RolloutConfig: clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(2), ProgressDeadline: "10m", MinSuccessTime: metav1.Duration{Duration: 5 * time.Minute}},
		MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: []clusterv1alpha1.MandatoryDecisionGroup{
			{GroupName: "canary-west"}, {GroupName: "canary-east"}}},
		MaxConcurrency: intstr.FromString("25%"),
	}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Progressive: %+v, %v\nwant %+v", got, err, want)
	}
	if got, err := RolloutStrategy(RolloutOptions{Type: "All"}); err != nil || !reflect.DeepEqual(got, clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}) {
		t.Errorf("All: %+v, %v", got, err)
	}
	if got, err := RolloutStrategy(RolloutOptions{Type: "All", ProgressDeadline: "1h30m", MaxFailures: "10%"}); err != nil || got.All == nil ||
		got.All.ProgressDeadline != "1h30m" || got.All.MaxFailures != intstr.FromString("10%") {
		t.Errorf("All with settings: %+v, %v", got, err)
	}
	if got, err := RolloutStrategy(RolloutOptions{Type: "ProgressivePerGroup", MandatoryGroups: []string{"a"}}); err != nil || got.ProgressivePerGroup == nil ||
		len(got.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups) != 1 {
		t.Errorf("ProgressivePerGroup: %+v, %v", got, err)
	}
	for _, tc := range []struct {
		o    RolloutOptions
		want string
	}{
		{RolloutOptions{Type: "Canary"}, `rollout type "Canary": want All, Progressive or ProgressivePerGroup`},
		{RolloutOptions{Type: "All", MaxConcurrency: "2"}, "max concurrency is a setting of the Progressive rollout, not All"},
		{RolloutOptions{Type: "ProgressivePerGroup", MaxConcurrency: "2"}, "not ProgressivePerGroup"},
		{RolloutOptions{Type: "All", MandatoryGroups: []string{"a"}}, "mandatory decision groups"},
		{RolloutOptions{Type: "All", MinSuccessTime: time.Minute}, "min success time"},
		{RolloutOptions{Type: "Progressive", MaxConcurrency: "150%"}, `max concurrency "150%"`},
		{RolloutOptions{Type: "Progressive", MaxFailures: "two"}, `max failures "two"`},
		{RolloutOptions{Type: "Progressive", ProgressDeadline: "10"}, `progress deadline "10"`},
	} {
		if _, err := RolloutStrategy(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RolloutStrategy(%+v): error %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestAddonTable(t *testing.T) {
	hash := func(c byte) string { return strings.Repeat(string(c), 64) }
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "hello"}}
	mca.Status.Conditions = []metav1.Condition{
		{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue},
		{Type: addonv1alpha1.ManagedClusterAddOnConditionProgressing, Status: metav1.ConditionFalse},
		{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: metav1.ConditionTrue},
	}
	mca.Status.ConfigReferences = []addonv1alpha1.ConfigReference{
		{ConfigGroupResource: adcGR, DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "cfg"}, SpecHash: hash('a')},
			LastAppliedConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "cfg"}, SpecHash: hash('0')}},
		{ConfigGroupResource: addon.AddOnTemplateResource, DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "hello-2"}, SpecHash: hash('b')}},
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Resource: "configmaps"}}, // not desired: no hash
	}
	r := AddonRowOf(mca)
	want := AddonRow{Cluster: "cluster1", Name: "hello", Available: "True", Progressing: "False", Configs: []string{"aaaaaaaa", "bbbbbbbb"}, Version: "hello-2"}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("row %+v, want %+v", r, want)
	}
	wasm := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster2", Name: "w"}}
	wasm.Status.ConfigReferences = []addonv1alpha1.ConfigReference{{ConfigGroupResource: addon.WasmPluginResource,
		DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "w-plugin"}, SpecHash: "abc"}}}
	if r := AddonRowOf(wasm); r.Version != "w-plugin" || !reflect.DeepEqual(r.Configs, []string{"abc"}) {
		t.Errorf("wasm row %+v", r)
	}
	var buf bytes.Buffer
	if err := WriteAddons(&buf, []AddonRow{r, AddonRowOf(&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c2", Name: "new"}})}); err != nil {
		t.Fatal(err)
	}
	got := fields(buf.String())
	wantRows := [][]string{
		{"CLUSTER", "NAME", "AVAILABLE", "DEGRADED", "PROGRESSING", "CONFIG", "VERSION"},
		{"cluster1", "hello", "True", "-", "False", "aaaaaaaa,bbbbbbbb", "hello-2"},
		{"c2", "new", "-", "-", "-", "-", "-"},
	}
	if !reflect.DeepEqual(got, wantRows) {
		t.Errorf("table:\n%s\nwant %v", buf.String(), wantRows)
	}
}

// fakeHub is a fake client holding two accepted clusters (cluster1, cluster2), a pending one
// (pending: no namespace), the add-on hello (a template add-on supporting
// AddOnDeploymentConfigs) and the self-managed add-on self, and the Placement default/all.
func fakeHub(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apischeme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(addonv1alpha1.GroupVersion.WithKind("AddOnDeploymentConfig"), meta.RESTScopeNamespace)
	mapper.Add(addonv1alpha1.GroupVersion.WithKind("AddOnTemplate"), meta.RESTScopeRoot)
	base := []client.Object{
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster2"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "pending"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster2"}},
		&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addon.AddOnTemplateResource, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: "hello-1"}},
				{ConfigGroupResource: adcGR}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}}},
		&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "self"}},
		&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "all"}},
		&addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}},
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(append(base, objs...)...).
		WithIndex(&addonv1alpha1.ManagedClusterAddOn{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		Build()
}

func TestEnableAddons(t *testing.T) {
	ctx := t.Context()
	c := fakeHub(t)
	cfg := addonv1alpha1.AddOnConfig{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "cfg"}}
	for _, tc := range []struct {
		name string
		req  AddonEnable
		want string
	}{
		{"unknown add-ons", AddonEnable{Names: []string{"nope", "hello", "nada"}, Clusters: []string{"cluster1"}},
			"unknown add-ons nope, nada: no ClusterManagementAddOn of that name on the hub"},
		{"unknown clusters", AddonEnable{Names: []string{"hello"}, Clusters: []string{"cluster1", "ghost", "gone"}},
			"unknown clusters ghost, gone: no ManagedCluster of that name on the hub; no ManagedClusterAddOn was written"},
		{"pending cluster", AddonEnable{Names: []string{"hello"}, Clusters: []string{"pending"}},
			"cluster pending is not accepted yet"},
		{"bad install namespace", AddonEnable{Names: []string{"hello"}, Clusters: []string{"cluster1"}, InstallNamespace: "Bad_NS"},
			`install namespace "Bad_NS"`},
		{"unsupported config", AddonEnable{Names: []string{"self"}, Clusters: []string{"cluster1"}, Configs: []addonv1alpha1.AddOnConfig{cfg}},
			"add-on self does not support configurations of addondeploymentconfigs.addon.open-cluster-management.io (its supportedConfigs: none)"},
		{"no clusters", AddonEnable{Names: []string{"hello"}}, "no clusters given"},
		{"no add-ons", AddonEnable{Clusters: []string{"cluster1"}}, "no add-on given"},
	} {
		if _, err := EnableAddons(ctx, c, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	list := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := c.List(ctx, list); err != nil || len(list.Items) != 0 {
		t.Fatalf("failed enables wrote %d ManagedClusterAddOns (%v)", len(list.Items), err)
	}

	actions := func(rs []AddonResult) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Addon+"@"+r.Cluster+"="+r.Action)
		}
		return out
	}
	rs, err := EnableAddons(ctx, c, AddonEnable{Names: []string{"hello", "self"}, Clusters: []string{"cluster1", "cluster2", "cluster1"},
		Annotations: map[string]string{"a": "1"}})
	if want := []string{"hello@cluster1=created", "hello@cluster2=created", "self@cluster1=created", "self@cluster2=created"}; err != nil || !reflect.DeepEqual(actions(rs), want) {
		t.Fatalf("enable: %v, %v; want %v", actions(rs), err, want)
	}
	rs, err = EnableAddons(ctx, c, AddonEnable{Names: []string{"hello"}, Clusters: []string{"cluster1"}, Annotations: map[string]string{"a": "1"}})
	if want := []string{"hello@cluster1=unchanged"}; err != nil || !reflect.DeepEqual(actions(rs), want) {
		t.Errorf("enable again: %v, %v; want %v", actions(rs), err, want)
	}
	rs, err = EnableAddons(ctx, c, AddonEnable{Names: []string{"hello"}, Clusters: []string{"cluster1"}, InstallNamespace: "hello",
		Labels: map[string]string{"l": "v"}, Configs: []addonv1alpha1.AddOnConfig{cfg}})
	if want := []string{"hello@cluster1=updated"}; err != nil || !reflect.DeepEqual(actions(rs), want) {
		t.Errorf("enable with more: %v, %v; want %v", actions(rs), err, want)
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "hello"}, mca); err != nil {
		t.Fatal(err)
	}
	if mca.Annotations["a"] != "1" || mca.Labels["l"] != "v" || mca.Spec.InstallNamespace != "hello" || !reflect.DeepEqual(mca.Spec.Configs, []addonv1alpha1.AddOnConfig{cfg}) {
		t.Errorf("updated ManagedClusterAddOn %+v %+v", mca.ObjectMeta, mca.Spec)
	}
}

func TestAddonPlacement(t *testing.T) {
	ctx := t.Context()
	c := fakeHub(t, &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "two",
		Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}}, Spec: addonv1alpha1.ClusterManagementAddOnSpec{
		InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{
			{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "apps", Name: "first"}}}}}})
	getCMA := func(name string) *addonv1alpha1.ClusterManagementAddOn {
		t.Helper()
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cma); err != nil {
			t.Fatal(err)
		}
		return cma
	}
	cfg := addonv1alpha1.AddOnConfig{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "cfg"}}
	missing := addonv1alpha1.AddOnConfig{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "other", Name: "cfg"}}

	if _, err := EnableAddonPlacement(ctx, c, AddonPlacement{Names: []string{"ghost"}, Namespace: "default", Name: "all"}); err == nil ||
		!strings.Contains(err.Error(), "unknown add-on ghost") {
		t.Errorf("unknown add-on: %v", err)
	}
	if _, err := EnableAddonPlacement(ctx, c, AddonPlacement{Names: []string{"two"}, Namespace: "default", Name: "all", Configs: []addonv1alpha1.AddOnConfig{cfg}}); err == nil ||
		!strings.Contains(err.Error(), "add-on two does not support configurations of addondeploymentconfigs") {
		t.Errorf("unsupported config: %v", err)
	}

	rs, err := EnableAddonPlacement(ctx, c, AddonPlacement{Names: []string{"hello"}, Namespace: "default", Name: "all", Configs: []addonv1alpha1.AddOnConfig{cfg, missing}})
	if err != nil || len(rs) != 1 || rs[0].Action != ActionAdded {
		t.Fatalf("enable hello by placement: %+v, %v", rs, err)
	}
	if w := strings.Join(rs[0].Warnings, "\n"); !strings.Contains(w, "config addondeploymentconfigs.addon.open-cluster-management.io other/cfg does not exist yet") ||
		strings.Contains(w, "default/cfg") || strings.Contains(w, "placement") {
		t.Errorf("warnings: %q", w)
	}
	is := getCMA("hello").Spec.InstallStrategy
	if is.Type != addonv1alpha1.AddonInstallStrategyPlacements || len(is.Placements) != 1 || is.Placements[0].Name != "all" ||
		!reflect.DeepEqual(is.Placements[0].Configs, []addonv1alpha1.AddOnConfig{cfg, missing}) {
		t.Errorf("install strategy %+v", is)
	}
	// Again with nothing new: unchanged; with a rollout: updated, configs kept.
	if rs, err = EnableAddonPlacement(ctx, c, AddonPlacement{Names: []string{"hello"}, Namespace: "default", Name: "all"}); err != nil || rs[0].Action != ActionUnchanged {
		t.Errorf("enable again: %+v, %v", rs, err)
	}
	progressive := clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive}
	if rs, err = EnableAddonPlacement(ctx, c, AddonPlacement{Names: []string{"hello"}, Namespace: "default", Name: "all", Rollout: &progressive}); err != nil || rs[0].Action != ActionUpdated {
		t.Errorf("enable with a rollout: %+v, %v", rs, err)
	}
	if is := getCMA("hello").Spec.InstallStrategy; len(is.Placements) != 1 || is.Placements[0].RolloutStrategy.Type != clusterv1alpha1.Progressive || len(is.Placements[0].Configs) != 2 {
		t.Errorf("install strategy after the rollout change %+v", is)
	}

	// A second placement keeps the first; a missing one and a self-managed add-on are warnings.
	rs, err = EnableAddonPlacement(ctx, c, AddonPlacement{Names: []string{"two", "self"}, Namespace: "default", Name: "later"})
	if err != nil || len(rs) != 2 || rs[0].Action != ActionAdded || rs[1].Action != ActionAdded {
		t.Fatalf("enable two, self: %+v, %v", rs, err)
	}
	if w := strings.Join(rs[0].Warnings, "\n"); !strings.Contains(w, "placement default/later does not exist yet") || strings.Contains(w, "not annotated") {
		t.Errorf("warnings of two: %q", w)
	}
	if w := strings.Join(rs[1].Warnings, "\n"); !strings.Contains(w, "ClusterManagementAddOn self is not annotated addon.open-cluster-management.io/lifecycle: addon-manager") {
		t.Errorf("warnings of self: %q", w)
	}
	if ps := getCMA("two").Spec.InstallStrategy.Placements; len(ps) != 2 || ps[0].Name != "first" || ps[1].Name != "later" {
		t.Errorf("placements of two: %+v", ps)
	}

	// Disabling removes only that placement, and says when it is not there.
	rs, err = DisableAddonPlacement(ctx, c, []string{"two", "hello"}, "apps", "first")
	if err != nil || len(rs) != 2 || rs[0].Action != ActionRemoved || rs[1].Action != ActionAbsent {
		t.Errorf("disable first: %+v, %v", rs, err)
	}
	if ps := getCMA("two").Spec.InstallStrategy.Placements; len(ps) != 1 || ps[0].Name != "later" {
		t.Errorf("placements of two after disable: %+v", ps)
	}
	if _, err := DisableAddonPlacement(ctx, c, []string{"ghost"}, "apps", "first"); err == nil || !strings.Contains(err.Error(), "unknown add-on ghost") {
		t.Errorf("disable an unknown add-on: %v", err)
	}
}

func TestDisableAddons(t *testing.T) {
	ctx := t.Context()
	strategy := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "placed"}, Spec: addonv1alpha1.ClusterManagementAddOnSpec{
		InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{
			{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "default", Name: "all"}}}}}}
	mca := func(cluster, name string, labels map[string]string) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name, Labels: labels}}
	}
	c := fakeHub(t, strategy, mca("cluster1", "hello", nil), mca("cluster2", "hello", nil), mca("cluster1", "orphan", nil),
		mca("cluster1", "placed", map[string]string{addon.InstallStrategyLabel: "placements"}))
	actions := func(res DisableResult) []string {
		var out []string
		for _, r := range res.Results {
			out = append(out, r.Addon+"@"+r.Cluster+"="+r.Action)
		}
		return out
	}
	if _, err := DisableAddons(ctx, c, []string{"hello"}, []string{"cluster1", "ghost"}, false); err == nil ||
		!strings.Contains(err.Error(), "unknown cluster ghost: no ManagedCluster of that name on the hub; no ManagedClusterAddOn was deleted") {
		t.Errorf("unknown cluster: %v", err)
	}
	if _, err := DisableAddons(ctx, c, []string{"hello", "ghost"}, nil, true); err == nil ||
		!strings.Contains(err.Error(), "unknown add-on ghost: no ClusterManagementAddOn nor ManagedClusterAddOn") {
		t.Errorf("unknown add-on: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: "hello"}, &addonv1alpha1.ManagedClusterAddOn{}); err != nil {
		t.Fatalf("a failed disable deleted: %v", err)
	}
	res, err := DisableAddons(ctx, c, []string{"hello", "orphan"}, []string{"cluster2", "pending"}, false)
	if want := []string{"hello@cluster2=deleted", "hello@pending=absent", "orphan@cluster2=absent", "orphan@pending=absent"}; err != nil || !reflect.DeepEqual(actions(res), want) {
		t.Errorf("disable in cluster2, pending: %v, %v; want %v", actions(res), err, want)
	}
	// orphan has no ClusterManagementAddOn, but a leftover ManagedClusterAddOn to delete.
	res, err = DisableAddons(ctx, c, []string{"hello", "orphan", "placed"}, nil, true)
	if want := []string{"hello@cluster1=deleted", "orphan@cluster1=deleted", "placed@cluster1=deleted"}; err != nil || !reflect.DeepEqual(actions(res), want) {
		t.Errorf("disable in all clusters: %v, %v; want %v", actions(res), err, want)
	}
	if w := strings.Join(res.Warnings, "\n"); len(res.Warnings) != 1 || !strings.Contains(w, "add-on placed was installed in cluster1 by its install strategy (placements default/all)") ||
		!strings.Contains(w, "flotilla addon disable placed --placement NAMESPACE/NAME") {
		t.Errorf("warnings %q", w)
	}
	if res, err = DisableAddons(ctx, c, []string{"hello"}, nil, true); err != nil || len(res.Results) != 0 {
		t.Errorf("disable again: %v, %v", actions(res), err)
	}
}

func TestAddonRows(t *testing.T) {
	ctx := t.Context()
	mca := func(cluster, name string) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}
	}
	c := fakeHub(t, mca("cluster2", "hello"), mca("cluster1", "self"), mca("cluster1", "hello"))
	names := func(rows []AddonRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Cluster+"/"+r.Name)
		}
		return out
	}
	for _, tc := range []struct {
		cluster, name string
		want          []string
	}{
		{"", "", []string{"cluster1/hello", "cluster1/self", "cluster2/hello"}},
		{"cluster1", "", []string{"cluster1/hello", "cluster1/self"}},
		{"", "hello", []string{"cluster1/hello", "cluster2/hello"}},
		{"cluster2", "hello", []string{"cluster2/hello"}},
		{"cluster2", "self", nil},
		{"pending", "", nil},
	} {
		rows, err := AddonRows(ctx, c, tc.cluster, tc.name)
		if err != nil || !reflect.DeepEqual(names(rows), tc.want) {
			t.Errorf("AddonRows(%q, %q) = %v, %v; want %v", tc.cluster, tc.name, names(rows), err, tc.want)
		}
	}
	if _, err := AddonRows(ctx, c, "ghost", ""); err == nil || !strings.Contains(err.Error(), "unknown cluster ghost") {
		t.Errorf("unknown cluster: %v", err)
	}
	if _, err := AddonRows(ctx, c, "", "ghost"); err == nil || !strings.Contains(err.Error(), "unknown add-on ghost") {
		t.Errorf("unknown add-on: %v", err)
	}
}
