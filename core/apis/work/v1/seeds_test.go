package v1_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// seedDir holds the documented example objects, relative to this package.
const seedDir = "../../../../e2e/testdata/seeds"

// TestSeedsDecodeStrictly decodes every work.open-cluster-management.io/v1 seed into
// the typed objects, rejecting unknown fields, and checks nothing was lost on the way.
func TestSeedsDecodeStrictly(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(seedDir, "work-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decoded := 0
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			t.Errorf("%s: reading apiVersion/kind: %v", path, err)
			continue
		}
		if tm.GroupVersionKind().Group != workv1.GroupVersion.Group {
			t.Errorf("%s: apiVersion %q is not in group %s", path, tm.APIVersion, workv1.GroupVersion.Group)
			continue
		}
		if tm.APIVersion != workv1.GroupVersion.String() {
			continue // other versions of the group are decoded by their own package's test
		}
		var obj runtime.Object
		switch tm.Kind {
		case "ManifestWork":
			obj = &workv1.ManifestWork{}
		case "AppliedManifestWork":
			obj = &workv1.AppliedManifestWork{}
		default:
			t.Errorf("%s: kind %q is not a %s kind", path, tm.Kind, workv1.GroupVersion)
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			if err := yaml.UnmarshalStrict(data, obj); err != nil {
				t.Fatalf("strict decoding: %v", err)
			}
			if lost := lostFields(t, data, obj); len(lost) > 0 {
				t.Errorf("fields not preserved by the typed object: %s", strings.Join(lost, ", "))
			}
		})
		decoded++
	}
	if decoded == 0 {
		t.Fatalf("no %s seed found in %s", workv1.GroupVersion, seedDir)
	}
}

// TestSeedManifestWorkShapes pins a few decoded values so that a field landing in
// the wrong struct (inline members, renamed tags) is noticed.
func TestSeedManifestWorkShapes(t *testing.T) {
	feedback := decodeWork(t, "work-concepts-2-manifestwork.yaml")
	if n := len(feedback.Spec.Workload.Manifests); n != 1 {
		t.Fatalf("spec.workload.manifests: got %d manifests, want 1", n)
	}
	var deploy struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(feedback.Spec.Workload.Manifests[0].Raw, &deploy); err != nil {
		t.Fatalf("manifest 0 is not a JSON object: %v", err)
	}
	if deploy.Kind != "Deployment" || deploy.Metadata.Name != "hello" {
		t.Errorf("manifest 0: got %s %q, want Deployment \"hello\"", deploy.Kind, deploy.Metadata.Name)
	}
	rules := feedback.Spec.ManifestConfigs[0].FeedbackRules
	if len(rules) != 2 || rules[0].Type != workv1.WellKnownStatusType || rules[1].Type != workv1.JSONPathsType {
		t.Fatalf("feedbackRules: got %+v", rules)
	}
	if got := rules[1].JsonPaths[0]; got.Name != "isAvailable" || got.Path != `.status.conditions[?(@.type=="Available")].status` {
		t.Errorf("jsonPaths[0]: got %+v", got)
	}

	orphan := decodeWork(t, "work-concepts-4-manifestwork.yaml")
	opt := orphan.Spec.DeleteOption
	if opt == nil || opt.PropagationPolicy != workv1.DeletePropagationPolicyTypeSelectivelyOrphan ||
		opt.SelectivelyOrphan == nil || len(opt.SelectivelyOrphan.OrphaningRules) != 1 {
		t.Fatalf("deleteOption: got %+v", opt)
	}
	if rule := opt.SelectivelyOrphan.OrphaningRules[0]; rule.Resource != "services" || rule.Name != "helloworld" || rule.Namespace != "default" {
		t.Errorf("orphaningRules[0]: got %+v", rule)
	}

	ssa := decodeWork(t, "work-concepts-6-manifestwork.yaml")
	us := ssa.Spec.ManifestConfigs[0].UpdateStrategy
	if us == nil || us.Type != workv1.UpdateStrategyTypeServerSideApply || us.ServerSideApply == nil ||
		!us.ServerSideApply.Force || us.ServerSideApply.FieldManager != "work-agent-another" {
		t.Errorf("updateStrategy: got %+v", us)
	}

	exec := decodeWork(t, "work-concepts-12-manifestwork.yaml")
	if e := exec.Spec.Executor; e == nil || e.Subject.Type != workv1.ExecutorSubjectTypeServiceAccount ||
		e.Subject.ServiceAccount == nil || e.Subject.ServiceAccount.Name != "executor1" {
		t.Errorf("executor: got %+v", exec.Spec.Executor)
	}
}

// TestStrictDecodingRejectsMisnamedFields shows the seed test would catch a typo.
func TestStrictDecodingRejectsMisnamedFields(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(seedDir, "work-concepts-5-manifestwork.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, to string }{
		{"updateStrategy:", "updateStrategies:"},
		{"resourceIdentifier:", "resourceIdentifiers:"},
		{"manifests:", "manifest:"},
	} {
		bad := strings.Replace(string(data), tc.from, tc.to, 1)
		err := yaml.UnmarshalStrict([]byte(bad), &workv1.ManifestWork{})
		if err == nil || !strings.Contains(err.Error(), strings.TrimSuffix(tc.to, ":")) {
			t.Errorf("renaming %q to %q: got error %v, want an unknown-field error naming it", tc.from, tc.to, err)
		}
	}
}

func decodeWork(t *testing.T, name string) *workv1.ManifestWork {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(seedDir, name))
	if err != nil {
		t.Fatal(err)
	}
	mw := &workv1.ManifestWork{}
	if err := yaml.UnmarshalStrict(data, mw); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return mw
}

// lostFields lists the paths of non-empty values in the YAML document that are
// missing or different once obj is encoded again.
func lostFields(t *testing.T, doc []byte, obj any) []string {
	t.Helper()
	var want any
	if err := yaml.Unmarshal(doc, &want); err != nil {
		t.Fatalf("generic decoding: %v", err)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encoding typed object: %v", err)
	}
	var got any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var lost []string
	compareSubset(want, got, "", &lost)
	return lost
}

func compareSubset(want, got any, path string, lost *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		for k, wv := range w {
			if isEmpty(wv) {
				continue
			}
			gv, ok := g[k]
			if !ok {
				*lost = append(*lost, path+"."+k)
				continue
			}
			compareSubset(wv, gv, path+"."+k, lost)
		}
	case []any:
		g, _ := got.([]any)
		if len(g) != len(w) {
			*lost = append(*lost, fmt.Sprintf("%s (%d items, got %d)", path, len(w), len(g)))
			return
		}
		for i := range w {
			compareSubset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i), lost)
		}
	default:
		if reflect.DeepEqual(want, got) || sameDuration(want, got) {
			return
		}
		*lost = append(*lost, fmt.Sprintf("%s (%v, got %v)", path, want, got))
	}
}

// sameDuration accepts "5m" coming back as "5m0s" from metav1.Duration.
func sameDuration(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 {
		return false
	}
	ad, err1 := time.ParseDuration(as)
	bd, err2 := time.ParseDuration(bs)
	return err1 == nil && err2 == nil && ad == bd
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// TestLostFieldsReportsDroppedValues keeps the preservation check honest: a value
// the typed object does not carry must be reported.
func TestLostFieldsReportsDroppedValues(t *testing.T) {
	doc := []byte("metadata:\n  name: a\nspec:\n  deleteOption:\n    propagationPolicy: Orphan\n    ttlSecondsAfterFinished: 5\n")
	mw := &workv1.ManifestWork{}
	if err := yaml.UnmarshalStrict(doc, mw); err != nil {
		t.Fatal(err)
	}
	if lost := lostFields(t, doc, mw); len(lost) != 0 {
		t.Fatalf("faithful decode reported lost fields: %v", lost)
	}
	mw.Spec.DeleteOption.TTLSecondsAfterFinished = nil
	mw.Spec.DeleteOption.PropagationPolicy = workv1.DeletePropagationPolicyTypeForeground
	lost := lostFields(t, doc, mw)
	want := []string{".spec.deleteOption.propagationPolicy (Orphan, got Foreground)", ".spec.deleteOption.ttlSecondsAfterFinished"}
	for _, w := range want {
		if !strings.Contains(strings.Join(lost, "\n"), w) {
			t.Errorf("lost fields %q do not mention %q", lost, w)
		}
	}
}
