package v1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// seedDir holds the documented example objects, relative to this package.
const seedDir = "../../../../e2e/testdata/seeds"

func newValidator(t *testing.T) *seedcheck.Validator {
	t.Helper()
	return seedcheck.ForTest(t, "../../../crds/bases/work.open-cluster-management.io_*.yaml", workv1.AddToScheme)
}

// TestSeedsDecodeStrictly decodes every work.open-cluster-management.io/v1 seed
// strictly into the Go types and validates it against the generated CRD as the
// API server would.
func TestSeedsDecodeStrictly(t *testing.T) {
	v := newValidator(t)
	kinds := seedcheck.CheckSeeds(t, v, filepath.Join(seedDir, "work-*.yaml"), workv1.GroupVersion)
	if kinds["ManifestWork"] == 0 {
		t.Fatalf("no ManifestWork seed found in %s", seedDir)
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

// TestValidatorRejects shows the seed check has teeth: each broken document must
// be refused for the stated reason, as the API server would refuse it.
func TestValidatorRejects(t *testing.T) {
	v := newValidator(t)
	const head = "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {name: w, namespace: cluster1}\n"
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{Name: "misnamed field", Doc: head + "spec:\n  workload: {manifest: []}", Want: "spec.workload.manifest"},
		{Name: "propagation policy outside the enum", Doc: head + "spec: {deleteOption: {propagationPolicy: Later}}", Want: "spec.deleteOption.propagationPolicy"},
		{Name: "update strategy outside the enum", Doc: head + "spec:\n  manifestConfigs: [{resourceIdentifier: {resource: jobs, name: pi}, updateStrategy: {type: Replace}}]", Want: "spec.manifestConfigs[0].updateStrategy.type"},
		{Name: "field manager without the work-agent prefix", Doc: head + "spec:\n  manifestConfigs: [{resourceIdentifier: {resource: jobs, name: pi}, updateStrategy: {type: ServerSideApply, serverSideApply: {fieldManager: me}}}]", Want: "fieldManager"},
		{Name: "resource identifier without name", Doc: head + "spec:\n  manifestConfigs: [{resourceIdentifier: {resource: jobs}}]", Want: "spec.manifestConfigs[0].resourceIdentifier.name"},
		{Name: "CEL condition rule without condition", Doc: head + "spec:\n  manifestConfigs: [{resourceIdentifier: {resource: jobs, name: pi}, conditionRules: [{type: CEL, celExpressions: ['true']}]}]", Want: "spec.manifestConfigs[0].conditionRules[0].condition"},
		{Name: "manifest without apiVersion", Doc: head + "spec:\n  workload: {manifests: [{kind: ConfigMap, metadata: {name: c}}]}", Want: "spec.workload.manifests[0].apiVersion"},
		{Name: "executor service account name not a DNS name", Doc: head + "spec: {executor: {subject: {type: ServiceAccount, serviceAccount: {namespace: default, name: Exec_1}}}}", Want: "spec.executor.subject.serviceAccount.name"},
		{Name: "ManifestWork without namespace", Doc: "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {name: w}\nspec: {}", Want: "metadata.namespace"},
		{Name: "AppliedManifestWork with namespace", Doc: "apiVersion: work.open-cluster-management.io/v1\nkind: AppliedManifestWork\nmetadata: {name: h-w, namespace: default}\nspec: {hubHash: h, agentID: a, manifestWorkName: w}", Want: "metadata.namespace"},
		{Name: "feedback value of unknown type", Doc: head + "spec: {}\nstatus:\n  resourceStatus:\n    manifests: [{resourceMeta: {ordinal: 0}, conditions: [], statusFeedback: {values: [{name: r, fieldValue: {type: Float}}]}}]", Want: "fieldValue.type"},
	})
}

// TestCRDDefaults checks the defaults OCM declares are filled in by the API server.
func TestCRDDefaults(t *testing.T) {
	v := newValidator(t)
	u, err := v.Defaulted([]byte(`apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: w, namespace: cluster1}
spec:
  deleteOption: {}
  manifestConfigs:
  - resourceIdentifier: {resource: deployments, name: hello}
    updateStrategy:
      serverSideApply:
        ignoreFields: [{jsonPaths: [.spec.replicas]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	spec := u["spec"].(map[string]any)
	if got := spec["deleteOption"].(map[string]any)["propagationPolicy"]; got != "Foreground" {
		t.Errorf("deleteOption.propagationPolicy defaults to %v, want Foreground", got)
	}
	us := spec["manifestConfigs"].([]any)[0].(map[string]any)["updateStrategy"].(map[string]any)
	ssa := us["serverSideApply"].(map[string]any)
	if us["type"] != "Update" || ssa["fieldManager"] != workv1.DefaultFieldManager ||
		ssa["ignoreFields"].([]any)[0].(map[string]any)["condition"] != string(workv1.IgnoreFieldsConditionOnSpokePresent) {
		t.Errorf("updateStrategy defaults: got %v", us)
	}
}

// TestStrictDecodingRejectsMisnamedFields: the Go types alone, decoded with
// sigs.k8s.io/yaml UnmarshalStrict, refuse a misnamed field of a seed.
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
		if want := `unknown field "` + strings.TrimSuffix(tc.to, ":") + `"`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("renaming %q to %q: got error %v, want %s", tc.from, tc.to, err, want)
		}
	}
}

func decodeWork(t *testing.T, name string) *workv1.ManifestWork {
	t.Helper()
	return seedcheck.DecodeSeed(t, seedDir, name, &workv1.ManifestWork{})
}
