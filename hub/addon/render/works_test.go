package render

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

func raw(s string) workv1.Manifest {
	var m workv1.Manifest
	m.Raw = []byte(s)
	return m
}

func configMap(name string, padding int) workv1.Manifest {
	return raw(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"agents"},"data":{"x":%q}}`, name, strings.Repeat("x", padding)))
}

func names(w workv1.ManifestWork) []string {
	var out []string
	for _, m := range w.Spec.Workload.Manifests {
		o, _ := decodeObject(m.Raw)
		out = append(out, o.name())
	}
	return out
}

func TestWorksSplitsBySize(t *testing.T) {
	var r Rendered
	for i := range 7 {
		r.Manifests = append(r.Manifests, configMap(fmt.Sprintf("cm-%d", i), 100))
	}
	size := len(r.Manifests[0].Raw)
	works, err := Works("obs", "cluster1", r, 3*size)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"cm-0", "cm-1", "cm-2"}, {"cm-3", "cm-4", "cm-5"}, {"cm-6"}}
	if len(works) != len(want) {
		t.Fatalf("%d works", len(works))
	}
	for i, w := range works {
		if w.Name != fmt.Sprintf("addon-obs-deploy-%d", i) || w.Namespace != "cluster1" || w.Labels["open-cluster-management.io/addon-name"] != "obs" {
			t.Errorf("work %d: %s/%s %v", i, w.Namespace, w.Name, w.Labels)
		}
		if got := names(w); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("work %d holds %v, want %v", i, got, want[i])
		}
		total := 0
		for _, m := range w.Spec.Workload.Manifests {
			total += len(m.Raw)
		}
		if total > 3*size {
			t.Errorf("work %d holds %d bytes", i, total)
		}
	}
	// One byte less: two per work.
	works, _ = Works("obs", "cluster1", r, 3*size-1)
	if len(works) != 4 || len(works[0].Spec.Workload.Manifests) != 2 {
		t.Errorf("%d works", len(works))
	}
	again, _ := Works("obs", "cluster1", r, 3*size-1)
	if !reflect.DeepEqual(works, again) {
		t.Error("not deterministic")
	}
	// The default budget holds them all.
	works, _ = Works("obs", "cluster1", r, 0)
	if len(works) != 1 || len(works[0].Spec.Workload.Manifests) != 7 {
		t.Errorf("default budget: %d works", len(works))
	}

	r.Manifests = append(r.Manifests, configMap("huge", 4*size))
	_, err = Works("obs", "cluster1", r, 3*size)
	if err == nil || !strings.Contains(err.Error(), "manifest 7 (ConfigMap agents/huge) is") || !strings.Contains(err.Error(), fmt.Sprintf("more than the %d bytes", 3*size)) {
		t.Errorf("oversized manifest: %v", err)
	}
	if _, err := Works("obs", "c", Rendered{Manifests: []workv1.Manifest{raw(`{"apiVersion":"v1","metadata":{"name":"a"}}`)}}, 0); err == nil ||
		!strings.Contains(err.Error(), "manifest 0: kind: must be set") {
		t.Errorf("no kind: %v", err)
	}
	if works, err := Works("obs", "c", Rendered{}, 0); err != nil || len(works) != 0 {
		t.Errorf("nothing: %v %v", works, err)
	}
}

const (
	deploymentA = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"agents"}}`
	deploymentB = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"b","namespace":"agents","annotations":{"addon.open-cluster-management.io/deletion-orphan":""}}}`
	daemonSet   = `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds","namespace":"agents"}}`
	hookJob     = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"cleanup","namespace":"agents","labels":{"open-cluster-management.io/addon-pre-delete":""}}}`
	hookPod     = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bye","namespace":"agents","annotations":{"addon.open-cluster-management.io/addon-pre-delete":""}}}`
	notHook     = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"agents","labels":{"open-cluster-management.io/addon-pre-delete":""}}}`
)

func id(group, resource, ns, name string) workv1.ResourceIdentifier {
	return workv1.ResourceIdentifier{Group: group, Resource: resource, Namespace: ns, Name: name}
}

func TestWorksHooksConfigsAndOptions(t *testing.T) {
	ttl := int64(30)
	r := Rendered{
		Manifests: []workv1.Manifest{raw(deploymentA), raw(hookJob), raw(daemonSet), raw(notHook), raw(deploymentB), raw(hookPod)},
		ManifestConfigs: []workv1.ManifestConfigOption{
			{ResourceIdentifier: id("apps", "deployments", "agents", "b"),
				FeedbackRules:  []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}, {Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "gen", Path: ".status.observedGeneration"}}}},
				UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}},
			{ResourceIdentifier: id("", "configmaps", "agents", "*"), FeedbackScrapeType: workv1.FeedbackWatchType},
			{ResourceIdentifier: id("", "secrets", "agents", "absent")},
		},
		DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground, TTLSecondsAfterFinished: &ttl},
		Executor:     &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount}},
	}
	// Budget: deploymentA, daemonSet and notHook fit together; deploymentB needs a second work.
	budget := len(deploymentA) + len(daemonSet) + len(notHook)
	works, err := Works("obs", "cluster1", r, budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(works) != 3 || works[2].Name != "addon-obs-pre-delete" {
		t.Fatalf("works %v", works)
	}
	w0, w1, hook := works[0], works[1], works[2]
	if got := names(w0); !reflect.DeepEqual(got, []string{"a", "ds", "c"}) {
		t.Errorf("deploy-0 holds %v", got)
	}
	if got := names(w1); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("deploy-1 holds %v", got)
	}
	if got := names(hook); !reflect.DeepEqual(got, []string{"cleanup", "bye"}) || hook.Namespace != "cluster1" ||
		hook.Labels["open-cluster-management.io/addon-name"] != "obs" {
		t.Errorf("hook work %v %s %v", got, hook.Namespace, hook.Labels)
	}

	wk := []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}
	want0 := []workv1.ManifestConfigOption{
		{ResourceIdentifier: id("apps", "deployments", "agents", "a"), FeedbackRules: wk},
		{ResourceIdentifier: id("apps", "daemonsets", "agents", "ds"), FeedbackRules: wk},
		{ResourceIdentifier: id("", "configmaps", "agents", "*"), FeedbackScrapeType: workv1.FeedbackWatchType},
		{ResourceIdentifier: id("", "secrets", "agents", "absent")},
	}
	if !reflect.DeepEqual(w0.Spec.ManifestConfigs, want0) {
		t.Errorf("deploy-0 configs:\n%s\nwant\n%s", mustJSON(t, w0.Spec.ManifestConfigs), mustJSON(t, want0))
	}
	want1 := []workv1.ManifestConfigOption{{ResourceIdentifier: id("apps", "deployments", "agents", "b"),
		FeedbackRules:  []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}, {Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "gen", Path: ".status.observedGeneration"}}}},
		UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}}}
	if !reflect.DeepEqual(w1.Spec.ManifestConfigs, want1) {
		t.Errorf("deploy-1 configs %s", mustJSON(t, w1.Spec.ManifestConfigs))
	}
	wantHook := []workv1.ManifestConfigOption{
		{ResourceIdentifier: id("batch", "jobs", "agents", "cleanup"), FeedbackRules: wk},
		{ResourceIdentifier: id("", "pods", "agents", "bye"), FeedbackRules: wk},
	}
	if !reflect.DeepEqual(hook.Spec.ManifestConfigs, wantHook) {
		t.Errorf("hook configs %s", mustJSON(t, hook.Spec.ManifestConfigs))
	}

	// deleteOption: the template's in every deploy work; the orphan annotation turns
	// the work holding b selective.
	if d := w0.Spec.DeleteOption; d == nil || d.PropagationPolicy != workv1.DeletePropagationPolicyTypeForeground || *d.TTLSecondsAfterFinished != 30 {
		t.Errorf("deploy-0 deleteOption %+v", d)
	}
	if d := w1.Spec.DeleteOption; d == nil || d.PropagationPolicy != workv1.DeletePropagationPolicyTypeSelectivelyOrphan ||
		!reflect.DeepEqual(d.SelectivelyOrphan.OrphaningRules, []workv1.OrphaningRule{workv1.OrphaningRule(id("apps", "deployments", "agents", "b"))}) ||
		*d.TTLSecondsAfterFinished != 30 {
		t.Errorf("deploy-1 deleteOption %s", mustJSON(t, d))
	}
	if hook.Spec.DeleteOption != nil {
		t.Errorf("hook deleteOption %+v", hook.Spec.DeleteOption)
	}
	for _, w := range works {
		if w.Spec.Executor == nil || w.Spec.Executor.Subject.Type != workv1.ExecutorSubjectTypeServiceAccount {
			t.Errorf("%s executor %+v", w.Name, w.Spec.Executor)
		}
	}
	if works[0].Spec.Executor == r.Executor {
		t.Error("executor shared with the input")
	}

	// The input is untouched, and the same input gives the same works.
	again, _ := Works("obs", "cluster1", r, budget)
	if !reflect.DeepEqual(works, again) || len(r.ManifestConfigs[0].FeedbackRules) != 2 || r.DeleteOption.SelectivelyOrphan != nil {
		t.Error("not deterministic, or the input changed")
	}

	// Orphan already keeps everything; no deleteOption gains a selective one.
	r.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
	works, _ = Works("obs", "cluster1", r, budget)
	if d := works[1].Spec.DeleteOption; d.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan || d.SelectivelyOrphan != nil {
		t.Errorf("orphan %+v", d)
	}
	r.DeleteOption = nil
	works, _ = Works("obs", "cluster1", r, budget)
	if works[0].Spec.DeleteOption != nil || works[1].Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeSelectivelyOrphan {
		t.Errorf("no base: %+v %+v", works[0].Spec.DeleteOption, works[1].Spec.DeleteOption)
	}

	// Hooks must fit in one work.
	if _, err := Works("obs", "cluster1", r, len(hookJob)+len(hookPod)-1); err == nil || !strings.Contains(err.Error(), "pre-delete hooks of add-on obs exceed") {
		t.Errorf("hooks too big: %v", err)
	}
	if !IsPreDeleteHook(raw(hookJob)) || !IsPreDeleteHook(raw(hookPod)) || IsPreDeleteHook(raw(notHook)) || IsPreDeleteHook(raw("[")) {
		t.Error("IsPreDeleteHook")
	}
}

func TestMergeFeedbackRules(t *testing.T) {
	base := []workv1.ManifestConfigOption{{ResourceIdentifier: id("apps", "deployments", "n", "a"),
		FeedbackRules:  []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}, {Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "x", Path: ".a"}}}},
		ConditionRules: []workv1.ConditionRule{{Condition: "Ready", Type: workv1.CelConditionExpressionsType}}}}
	got := mergeManifestConfig(base, workv1.ManifestConfigOption{ResourceIdentifier: id("apps", "deployments", "n", "a"),
		FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType},
			{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "x", Path: ".other"}, {Name: "y", Path: ".b"}}}},
		ConditionRules: []workv1.ConditionRule{{Condition: "Ready", Type: workv1.WellKnownConditionsType}, {Condition: "Complete", Type: workv1.WellKnownConditionsType}}})
	want := `[{"resourceIdentifier":{"group":"apps","resource":"deployments","name":"a","namespace":"n"},` +
		`"feedbackRules":[{"type":"WellKnownStatus"},{"type":"JSONPaths","jsonPaths":[{"name":"x","path":".a"}]},{"type":"JSONPaths","jsonPaths":[{"name":"y","path":".b"}]}],` +
		`"conditionRules":[{"condition":"Ready","type":"CEL","celExpressions":null,"message":"","messageExpression":""},` +
		`{"condition":"Complete","type":"WellKnownConditions","celExpressions":null,"message":"","messageExpression":""}]}]`
	if s := mustJSON(t, got); s != want {
		t.Errorf("merged\n%s\nwant\n%s", s, want)
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		s, p string
		want bool
	}{
		{"abc", "abc", true}, {"abc", "*", true}, {"abc", "a*", true}, {"abc", "*c", true}, {"abc", "a*c", true},
		{"abc", "a*d", false}, {"abc", "ab", false}, {"", "*", true}, {"", "a*", false}, {"aXbXc", "a*b*c", true}, {"ab", "a**b", true},
	} {
		if got := wildcardMatch(tc.s, tc.p); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q) = %v", tc.s, tc.p, got)
		}
	}
}

func TestSplitHostedAndHostingWorks(t *testing.T) {
	loc := func(kind, name, how, value string) workv1.Manifest {
		api, meta := "v1", ""
		if kind == "Deployment" || kind == "Job" {
			api = "apps/v1"
			if kind == "Job" {
				api = "batch/v1"
			}
		}
		switch how {
		case "annotation":
			meta = fmt.Sprintf(`,"annotations":{"addon.open-cluster-management.io/hosted-manifest-location":%q}`, value)
		case "label":
			meta = fmt.Sprintf(`,"labels":{"addon.open-cluster-management.io/hosted-manifest-location":%q}`, value)
		}
		return raw(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"namespace":"agents"%s}}`, api, kind, name, meta))
	}
	hook := raw(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"cleanup","namespace":"agents","annotations":{` +
		`"addon.open-cluster-management.io/addon-pre-delete":"","addon.open-cluster-management.io/hosted-manifest-location":"hosting"}}}`)
	r := Rendered{Manifests: []workv1.Manifest{
		loc("Deployment", "agent", "annotation", "hosting"),
		loc("ConfigMap", "conf", "", ""),
		loc("ConfigMap", "explicit", "annotation", "managed"),
		loc("ConfigMap", "legacy", "label", "hosting"),
		loc("ConfigMap", "nowhere", "annotation", "none"),
		hook,
	}, ManifestConfigs: []workv1.ManifestConfigOption{
		{ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "agents", Name: "agent"}},
		{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "agents", Name: "conf"}},
		{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "secrets", Namespace: "agents", Name: "unmatched"}},
	}}
	managed, hosting, err := SplitHosted(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(managed.Manifests); got != 2 {
		t.Errorf("managed holds %d manifests", got)
	}
	if got := len(hosting.Manifests); got != 3 {
		t.Errorf("hosting holds %d manifests", got)
	}
	if len(managed.ManifestConfigs) != 2 || managed.ManifestConfigs[0].ResourceIdentifier.Name != "conf" || managed.ManifestConfigs[1].ResourceIdentifier.Name != "unmatched" {
		t.Errorf("managed manifestConfigs %+v", managed.ManifestConfigs)
	}
	if len(hosting.ManifestConfigs) != 1 || hosting.ManifestConfigs[0].ResourceIdentifier.Name != "agent" {
		t.Errorf("hosting manifestConfigs %+v", hosting.ManifestConfigs)
	}

	ws, err := HostingWorks("obs", "cluster1", "hosting1", hosting, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 {
		t.Fatalf("%d hosting works", len(ws))
	}
	wantLabels := map[string]string{"open-cluster-management.io/addon-name": "obs", "open-cluster-management.io/addon-namespace": "cluster1"}
	for i, want := range []string{"addon-obs-deploy-hosting-cluster1-0", "addon-obs-pre-delete-hosting-cluster1"} {
		if ws[i].Name != want || ws[i].Namespace != "hosting1" || !reflect.DeepEqual(ws[i].Labels, wantLabels) {
			t.Errorf("work %d: %s/%s %v, want %s in hosting1", i, ws[i].Namespace, ws[i].Name, ws[i].Labels, want)
		}
	}
	if got := names(ws[0]); !reflect.DeepEqual(got, []string{"agent", "legacy"}) {
		t.Errorf("hosting deploy work holds %v", got)
	}

	r.Manifests = append(r.Manifests, loc("Deployment", "odd", "annotation", "elsewhere"))
	_, _, err = SplitHosted(r)
	if err == nil || !strings.Contains(err.Error(), "manifest 6 (Deployment agents/odd)") || !strings.Contains(err.Error(), "not supported manifest location: elsewhere") {
		t.Errorf("an unknown location: %v", err)
	}
}
