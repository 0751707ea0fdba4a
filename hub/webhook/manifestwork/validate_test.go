package manifestwork

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
)

const (
	configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"},"data":{"a":"b"}}`
	namespace = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1"}}`
)

func manifests(raw ...string) []workv1.Manifest {
	out := make([]workv1.Manifest, len(raw))
	for i, r := range raw {
		out[i] = workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(r)}}
	}
	return out
}

func work(raw ...string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{}
	w.Name, w.Namespace = "w", "cluster1"
	w.Spec.Workload.Manifests = manifests(raw...)
	return w
}

func ptr64(v int64) *int64 { return &v }

// errorStrings renders errs as the API server shows them.
func errorStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestValidate(t *testing.T) {
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"` + strings.Repeat("x", 600) + `"}}`
	cases := []struct {
		name    string
		work    *workv1.ManifestWork
		maxSize int
		want    []string // exact errors, in order
	}{
		{name: "valid", work: work(configMap, namespace)},
		{name: "cluster-scoped and namespaced manifests with empty namespace", work: work(
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"open-cluster-management:klusterlet-work:my-role","namespace":""}}`)},
		{name: "no manifests", work: work(), want: []string{"spec.workload.manifests: Required value: manifests should not be empty"}},
		{name: "missing name names index and field", work: work(configMap, namespace, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default"}}`),
			want: []string{"spec.workload.manifests[2].metadata.name: Required value"}},
		{name: "missing metadata", work: work(`{"apiVersion":"v1","kind":"ConfigMap"}`),
			want: []string{"spec.workload.manifests[0].metadata.name: Required value"}},
		{name: "missing apiVersion and kind", work: work(configMap, `{"metadata":{"name":"x"}}`),
			want: []string{"spec.workload.manifests[1].apiVersion: Required value", "spec.workload.manifests[1].kind: Required value"}},
		{name: "empty apiVersion and kind", work: work(`{"apiVersion":"","kind":"","metadata":{"name":"x"}}`),
			want: []string{"spec.workload.manifests[0].apiVersion: Required value", "spec.workload.manifests[0].kind: Required value"}},
		{name: "malformed apiVersion", work: work(`{"apiVersion":"a/b/c","kind":"K","metadata":{"name":"x"}}`),
			want: []string{`spec.workload.manifests[0].apiVersion: Invalid value: "a/b/c": must be group/version or version`}},
		{name: "non-string kind", work: work(`{"apiVersion":"v1","kind":3,"metadata":{"name":"x"}}`),
			want: []string{"spec.workload.manifests[0].kind: Invalid value: 3: must be a string"}},
		{name: "generateName", work: work(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","generateName":"x-"}}`),
			want: []string{"spec.workload.manifests[0].metadata.generateName: Forbidden: generateName must not be set in manifest"}},
		{name: "generateName only", work: work(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"x-"}}`),
			want: []string{"spec.workload.manifests[0].metadata.name: Required value",
				"spec.workload.manifests[0].metadata.generateName: Forbidden: generateName must not be set in manifest"}},
		{name: "name not a path segment", work: work(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a/b"}}`),
			want: []string{`spec.workload.manifests[0].metadata.name: Invalid value: "a/b": may not contain '/'`}},
		{name: "bad namespace", work: work(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"Not_A_Label"}}`),
			want: []string{`spec.workload.manifests[0].metadata.namespace: Invalid value: "Not_A_Label": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}},
		{name: "not an object", work: work(`[1,2]`),
			want: []string{"spec.workload.manifests[0]: Invalid value: \"<value omitted>\": must be a JSON object: json: cannot unmarshal array into Go value of type map[string]interface {}"}},
		{name: "metadata not an object", work: work(`{"apiVersion":"v1","kind":"ConfigMap","metadata":"x"}`),
			want: []string{`spec.workload.manifests[0].metadata: Invalid value: "<value omitted>": must be an object`}},
		{name: "size over the limit", work: work(big, big), maxSize: 1000,
			want: []string{"spec.workload.manifests: Too long: the size of manifests is 1360 bytes which exceeds the 1000 limit"}},
		{name: "size at the limit", work: work(big, big), maxSize: 1360},
		{name: "size over the limit and an invalid manifest", work: work(big, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`), maxSize: 100,
			want: []string{"spec.workload.manifests: Too long: the size of manifests is 732 bytes which exceeds the 100 limit",
				"spec.workload.manifests[1].metadata.name: Required value"}},
		{name: "delete option enum", work: func() *workv1.ManifestWork {
			w := work(configMap)
			w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: "Background"}
			return w
		}(), want: []string{`spec.deleteOption.propagationPolicy: Unsupported value: "Background": supported values: "Foreground", "Orphan", "SelectivelyOrphan"`}},
		{name: "selectively orphan rules", work: func() *workv1.ManifestWork {
			w := work(configMap)
			w.Spec.DeleteOption = &workv1.DeleteOption{
				PropagationPolicy:       workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
				TTLSecondsAfterFinished: ptr64(-1),
				SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{
					{Resource: "configmaps", Name: "cm", Namespace: "default"},
					{Group: "apps", Namespace: "Bad"},
				}},
			}
			return w
		}(), want: []string{
			"spec.deleteOption.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
			"spec.deleteOption.selectivelyOrphans.orphaningRules[1].resource: Required value",
			"spec.deleteOption.selectivelyOrphans.orphaningRules[1].name: Required value",
			`spec.deleteOption.selectivelyOrphans.orphaningRules[1].namespace: Invalid value: "Bad": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{name: "manifest configs", work: func() *workv1.ManifestWork {
			w := work(configMap)
			w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
				{
					ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: "cm", Namespace: "default"},
					FeedbackRules: []workv1.FeedbackRule{
						{Type: workv1.WellKnownStatusType},
						{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "a", Path: ".data.a"}}},
					},
					UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply, ServerSideApply: &workv1.ServerSideApplyConfig{FieldManager: "work-agent-x"}},
					ConditionRules:     []workv1.ConditionRule{{Condition: "Complete", Type: workv1.WellKnownConditionsType}},
					FeedbackScrapeType: workv1.FeedbackWatchType,
				},
				{
					ResourceIdentifier: workv1.ResourceIdentifier{Resource: "deployments", Group: "apps"},
					FeedbackRules: []workv1.FeedbackRule{
						{Type: "Everything"},
						{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Path: ".status.{"}, {Name: "n"}}},
					},
					UpdateStrategy: &workv1.UpdateStrategy{Type: "Replace", ServerSideApply: &workv1.ServerSideApplyConfig{
						FieldManager: "kubectl", IgnoreFields: []workv1.IgnoreField{{Condition: "Always", JSONPaths: []string{".spec"}}},
					}},
					ConditionRules:     []workv1.ConditionRule{{Condition: "Done", Type: "Regex"}},
					FeedbackScrapeType: "Push",
				},
			}
			return w
		}(), want: []string{
			"spec.manifestConfigs[1].resourceIdentifier.name: Required value",
			`spec.manifestConfigs[1].feedbackRules[0].type: Unsupported value: "Everything": supported values: "WellKnownStatus", "JSONPaths"`,
			"spec.manifestConfigs[1].feedbackRules[1].jsonPaths[0].name: Required value",
			`spec.manifestConfigs[1].feedbackRules[1].jsonPaths[0].path: Invalid value: ".status.{": must be a JSONPath: unrecognized character in action: U+007B '{'`,
			"spec.manifestConfigs[1].feedbackRules[1].jsonPaths[1].path: Required value",
			`spec.manifestConfigs[1].updateStrategy.type: Unsupported value: "Replace": supported values: "Update", "CreateOnly", "ServerSideApply", "ReadOnly"`,
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.fieldManager: Invalid value: "kubectl": must start with work-agent`,
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.ignoreFields[0].condition: Unsupported value: "Always": supported values: "OnSpokePresent", "OnSpokeChange"`,
			`spec.manifestConfigs[1].conditionRules[0].type: Unsupported value: "Regex": supported values: "WellKnownConditions", "CEL"`,
			`spec.manifestConfigs[1].feedbackScrapeType: Unsupported value: "Push": supported values: "Poll", "Watch"`,
		}},
		{name: "ignoreFields jq path expressions", work: func() *workv1.ManifestWork {
			w := work(configMap)
			ssa := func(exprs ...string) *workv1.UpdateStrategy {
				return &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply, ServerSideApply: &workv1.ServerSideApplyConfig{
					IgnoreFields: []workv1.IgnoreField{
						{Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JSONPaths: []string{".data"}},
						{Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JQPathExpressions: exprs},
					}}}
			}
			w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
				{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: "cm", Namespace: "default"},
					UpdateStrategy: ssa(`.data.a`, `.. | select(type == "string" and startswith("b"))`)},
				{ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Name: "d", Namespace: "default"},
					UpdateStrategy: ssa(`path(repeat(.))`, `.spec.template.spec.containers[] | select(.name == "app") | .image`,
						`repeat(.)`, `.spec | | .`, `.spec.replicas | tostring`, `recurse(.)`, `$ENV.HOME`, strings.Repeat(".a", 513))},
			}
			return w
		}(), want: []string{
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.ignoreFields[1].jqPathExpressions[0]: Invalid value: "path(repeat(.))": function path/1 is not allowed (allowed: ` + "empty, select, recurse, first, last, limit, arrays, objects, iterables, booleans, numbers, strings, nulls, values, scalars, not, length, utf8bytelength, type, keys, keys_unsorted, has, in, contains, inside, startswith, endswith, ltrimstr, rtrimstr, ascii_downcase, ascii_upcase, test, tostring, tonumber, any, all, isempty, IN)",
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.ignoreFields[1].jqPathExpressions[2]: Invalid value: "repeat(.)": repeat(.) is not allowed: it can generate values without end`,
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.ignoreFields[1].jqPathExpressions[3]: Invalid value: ".spec | | .": does not parse: unexpected token "|"`,
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.ignoreFields[1].jqPathExpressions[4]: Invalid value: ".spec.replicas | tostring": tostring does not select fields of the object: a jq path expression selects fields, e.g. .spec.replicas or .items[] | select(...)`,
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.ignoreFields[1].jqPathExpressions[5]: Invalid value: "recurse(.)": recurse(.) is not allowed: recurse(f) ends only if f steps into the object on every branch, e.g. recurse(.[]?) or recurse(.spec.items[]?); .. visits every field`,
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.ignoreFields[1].jqPathExpressions[6]: Invalid value: "$ENV.HOME": variable $ENV is not defined (only variables bound with ` + "`as`" + ` are)`,
			`spec.manifestConfigs[1].updateStrategy.serverSideApply.ignoreFields[1].jqPathExpressions[7]: Too long: may not be more than 1024 bytes`,
		}},
		{name: "executor service account", work: func() *workv1.ManifestWork {
			w := work(configMap)
			w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount,
				ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: "ns1", Name: "executor1"}}}
			return w
		}()},
		{name: "executor without service account", work: func() *workv1.ManifestWork {
			w := work(configMap)
			w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount}}
			return w
		}(), want: []string{"spec.executor.subject.serviceAccount: Required value: executor service account can not be nil"}},
		{name: "executor unknown type", work: func() *workv1.ManifestWork {
			w := work(configMap)
			w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: "User"}}
			return w
		}(), want: []string{`spec.executor.subject.type: Unsupported value: "User": supported values: "ServiceAccount"`}},
		{name: "executor empty names", work: func() *workv1.ManifestWork {
			w := work(configMap)
			w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount,
				ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{}}}
			return w
		}(), want: []string{"spec.executor.subject.serviceAccount.namespace: Required value", "spec.executor.subject.serviceAccount.name: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := errorStrings(Validate(c.work, c.maxSize))
			if !slices.Equal(got, c.want) {
				t.Errorf("errors:\n got  %q\n want %q", got, c.want)
			}
		})
	}
}

func TestValidateDefaultLimit(t *testing.T) {
	raw := func(n int) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"` + strings.Repeat("x", n) + `"}}`
	}
	overhead := len(raw(0))
	if errs := Validate(work(raw(DefaultMaxSize-overhead)), 0); len(errs) != 0 {
		t.Errorf("a workload of exactly %d bytes: %v", DefaultMaxSize, errs)
	}
	errs := Validate(work(raw(DefaultMaxSize-overhead+1)), 0)
	want := "spec.workload.manifests: Too long: the size of manifests is 512001 bytes which exceeds the 512000 limit"
	if got := errorStrings(errs); !slices.Equal(got, []string{want}) {
		t.Errorf("one byte over the default: got %q, want %q", got, want)
	}
}

func TestValidateCapsReportedManifests(t *testing.T) {
	bad := make([]string, 30)
	for i := range bad {
		bad[i] = `{"apiVersion":"v1","kind":"ConfigMap"}`
	}
	got := errorStrings(Validate(work(bad...), 0))
	if len(got) != maxManifestErrors+1 {
		t.Fatalf("got %d errors, want %d: %q", len(got), maxManifestErrors+1, got)
	}
	if want := "spec.workload.manifests: Forbidden: more manifests are invalid; only the first 20 are reported"; got[maxManifestErrors] != want {
		t.Errorf("last error %q, want %q", got[maxManifestErrors], want)
	}
}

func TestValidateObjectManifests(t *testing.T) {
	// Go callers may set Object instead of Raw.
	w := &workv1.ManifestWork{}
	w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: &workv1.ManifestWork{}}}}
	got := errorStrings(Validate(w, 0))
	want := []string{"spec.workload.manifests[0].apiVersion: Required value", "spec.workload.manifests[0].kind: Required value",
		"spec.workload.manifests[0].metadata.name: Required value"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWarnings(t *testing.T) {
	w := work(configMap)
	w.Spec.DeleteOption = &workv1.DeleteOption{
		PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{{Resource: "configmaps", Name: "cm"}}},
	}
	id := workv1.ResourceIdentifier{Resource: "configmaps", Name: "cm", Namespace: "default"}
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
		{ResourceIdentifier: id, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType}}},
		{ResourceIdentifier: id},
	}
	errs, warnings := ValidateSpec(&w.Spec, field.NewPath("spec"), 0)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := []string{
		"spec.deleteOption.selectivelyOrphans: ignored unless spec.deleteOption.propagationPolicy is SelectivelyOrphan",
		"spec.manifestConfigs[1].resourceIdentifier: selects the same resource as spec.manifestConfigs[0].resourceIdentifier, which takes precedence",
		"spec.manifestConfigs[0].feedbackRules[0]: type JSONPaths without jsonPaths reports nothing",
	}
	slices.Sort(want)
	slices.Sort(warnings)
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n got  %q\n want %q", warnings, want)
	}
}

// TestSeeds: the ManifestWorks of OCM's documentation (e2e/testdata/seeds) pass, except the
// fragments whose workload the documentation elides, which OCM's webhook rejects as well.
func TestSeeds(t *testing.T) {
	root, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "e2e", "testdata", "seeds", "work-*-manifestwork.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("seed ManifestWorks: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			w := &workv1.ManifestWork{}
			if err := yaml.Unmarshal(data, w); err != nil {
				t.Fatal(err)
			}
			got := errorStrings(Validate(w, 0))
			if len(w.Spec.Workload.Manifests) == 0 {
				if want := []string{"spec.workload.manifests: Required value: manifests should not be empty"}; !slices.Equal(got, want) {
					t.Errorf("got %q, want %q", got, want)
				}
				return
			}
			if len(got) > 0 {
				t.Errorf("a documented ManifestWork is rejected: %q", got)
			}
		})
	}
}
