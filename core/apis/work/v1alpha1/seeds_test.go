package v1alpha1_test

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

// seedDir holds the documented example objects, relative to this package.
const seedDir = "../../../../e2e/testdata/seeds"

func newValidator(t *testing.T) *seedcheck.Validator {
	t.Helper()
	return seedcheck.ForTest(t, "../../../crds/bases/work.open-cluster-management.io_manifestworkreplicasets.yaml", workv1alpha1.AddToScheme)
}

// TestSeedsDecodeStrictly decodes every work.open-cluster-management.io/v1alpha1
// seed strictly into the Go types and validates it against the generated CRD.
func TestSeedsDecodeStrictly(t *testing.T) {
	v := newValidator(t)
	kinds := seedcheck.CheckSeeds(t, v, filepath.Join(seedDir, "work-*.yaml"), workv1alpha1.GroupVersion)
	if len(kinds) == 0 {
		t.Fatalf("no %s seed found in %s", workv1alpha1.GroupVersion, seedDir)
	}
}

// TestSeedReplicaSetShape pins the decoded rollout strategies of the documented
// ManifestWorkReplicaSet, whose inline members are easy to get wrong.
func TestSeedReplicaSetShape(t *testing.T) {
	rs := seedcheck.DecodeSeed(t, seedDir, "work-concepts-13-manifestworkreplicaset.yaml", &workv1alpha1.ManifestWorkReplicaSet{})
	refs := rs.Spec.PlacementRefs
	if len(refs) != 3 {
		t.Fatalf("placementRefs: got %d, want 3", len(refs))
	}
	// The seed spells the type rolloutType (read when type is All or unset).
	if refs[0].RolloutStrategy.RolloutType != clusterv1alpha1.All {
		t.Errorf("placementRefs[0] rollout type: got %q", refs[0].RolloutStrategy.RolloutType)
	}
	p := refs[1].RolloutStrategy.Progressive
	if refs[1].RolloutStrategy.RolloutType != clusterv1alpha1.Progressive || p == nil {
		t.Fatalf("placementRefs[1] rollout: got %+v", refs[1].RolloutStrategy)
	}
	if p.MinSuccessTime.Duration.Minutes() != 5 || p.ProgressDeadline != "10m" || p.MaxFailures != intstr.FromString("5%") {
		t.Errorf("placementRefs[1] rollout config: got %+v", p.RolloutConfig)
	}
	if len(p.MandatoryDecisionGroups.MandatoryDecisionGroups) != 2 || p.MandatoryDecisionGroups.MandatoryDecisionGroups[1].GroupName != "prod-canary-east" {
		t.Errorf("placementRefs[1] mandatory decision groups: got %+v", p.MandatoryDecisionGroups)
	}
	g := refs[2].RolloutStrategy.ProgressivePerGroup
	if refs[2].RolloutStrategy.RolloutType != clusterv1alpha1.ProgressivePerGroup || g == nil || g.MaxFailures != intstr.FromInt32(2) {
		t.Errorf("placementRefs[2] rollout: got %+v", refs[2].RolloutStrategy)
	}
	tmpl := rs.Spec.ManifestWorkTemplate
	if tmpl.DeleteOption == nil || tmpl.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeSelectivelyOrphan ||
		len(tmpl.Workload.Manifests) != 2 || len(tmpl.ManifestConfigs[0].FeedbackRules[0].JsonPaths) != 2 {
		t.Errorf("manifestWorkTemplate: got %+v", tmpl)
	}
}

// TestValidatorRejects: broken replica sets must be refused for the stated reason.
func TestValidatorRejects(t *testing.T) {
	v := newValidator(t)
	const head = "apiVersion: work.open-cluster-management.io/v1alpha1\nkind: ManifestWorkReplicaSet\nmetadata: {name: r, namespace: ocm-ns}\n"
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{Name: "rolloutType outside the enum", Doc: head + "spec:\n  manifestWorkTemplate: {}\n  placementRefs: [{name: p, rolloutStrategy: {rolloutType: Canary}}]", Want: "spec.placementRefs[0].rolloutStrategy.rolloutType"},
		{Name: "no placementRefs", Doc: head + "spec: {manifestWorkTemplate: {}, placementRefs: []}", Want: "spec.placementRefs"},
		{Name: "rollout type outside the enum", Doc: head + "spec:\n  manifestWorkTemplate: {}\n  placementRefs: [{name: p, rolloutStrategy: {type: Canary}}]", Want: "spec.placementRefs[0].rolloutStrategy.type"},
		{Name: "maxFailures above 100%", Doc: head + "spec:\n  manifestWorkTemplate: {}\n  placementRefs: [{name: p, rolloutStrategy: {type: Progressive, progressive: {maxFailures: 150%}}}]", Want: "maxFailures"},
		{Name: "progressDeadline without unit", Doc: head + "spec:\n  manifestWorkTemplate: {}\n  placementRefs: [{name: p, rolloutStrategy: {type: All, all: {progressDeadline: ten}}}]", Want: "progressDeadline"},
		{Name: "cascade deletion policy outside the enum", Doc: head + "spec: {manifestWorkTemplate: {}, placementRefs: [{name: p}], cascadeDeletionPolicy: Orphan}", Want: "spec.cascadeDeletionPolicy"},
		{Name: "empty placement name", Doc: head + "spec: {manifestWorkTemplate: {}, placementRefs: [{name: ''}]}", Want: "spec.placementRefs[0].name"},
	})
}

// TestCRDDefaults checks OCM's defaults for placement references and deletion.
func TestCRDDefaults(t *testing.T) {
	v := newValidator(t)
	u, err := v.Defaulted([]byte("apiVersion: work.open-cluster-management.io/v1alpha1\nkind: ManifestWorkReplicaSet\n" +
		"metadata: {name: r, namespace: ocm-ns}\nspec:\n  manifestWorkTemplate: {}\n  placementRefs:\n  - name: p\n  - name: q\n    rolloutStrategy: {type: Progressive, progressive: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	spec := u["spec"].(map[string]any)
	if spec["cascadeDeletionPolicy"] != string(workv1alpha1.Background) {
		t.Errorf("cascadeDeletionPolicy defaults to %v, want Background", spec["cascadeDeletionPolicy"])
	}
	refs := spec["placementRefs"].([]any)
	rs0 := refs[0].(map[string]any)["rolloutStrategy"].(map[string]any)
	if rs0["type"] != "All" || rs0["all"].(map[string]any)["progressDeadline"] != "None" {
		t.Errorf("placementRefs[0].rolloutStrategy defaults to %v, want type All with progressDeadline None", rs0)
	}
	prog := refs[1].(map[string]any)["rolloutStrategy"].(map[string]any)["progressive"].(map[string]any)
	if prog["minSuccessTime"] != "0" || prog["progressDeadline"] != "None" || prog["maxFailures"] != "0" {
		t.Errorf("progressive rollout config defaults: got %v", prog)
	}
}

// TestTemplateCarriesCurrentManifestConfigs: the ManifestWork template of a
// replica set takes the current manifestConfigs fields (it is the same Go type as
// a ManifestWork's spec) and refuses the old ones under its own path.
func TestTemplateCarriesCurrentManifestConfigs(t *testing.T) {
	v := newValidator(t)
	const head = "apiVersion: work.open-cluster-management.io/v1alpha1\nkind: ManifestWorkReplicaSet\nmetadata: {name: r, namespace: ocm-ns}\n"
	const cfg = head + "spec:\n  placementRefs: [{name: p}]\n  manifestWorkTemplate:\n    manifestConfigs:\n    - resourceIdentifier: {group: batch, resource: jobs, namespace: default, name: pi}\n"
	obj, err := v.Check([]byte(cfg + `      feedbackScrapeType: Watch
      conditionRules:
      - {type: WellKnownConditions, condition: Complete}
      - {type: CEL, condition: Ready, celExpressions: ['object.status.ready == true']}
      updateStrategy:
        type: ServerSideApply
        serverSideApply:
          ignoreFields:
          - condition: OnSpokeChange
            jsonPointers: [/spec/parallelism]
            jqPathExpressions: [.metadata.labels]
`))
	if err != nil {
		t.Fatal(err)
	}
	mc := obj.(*workv1alpha1.ManifestWorkReplicaSet).Spec.ManifestWorkTemplate.ManifestConfigs[0]
	if mc.FeedbackScrapeType != workv1.FeedbackWatchType || len(mc.ConditionRules) != 2 ||
		mc.ConditionRules[0].Type != workv1.WellKnownConditionsType || mc.ConditionRules[1].CelExpressions[0] != "object.status.ready == true" ||
		mc.UpdateStrategy.ServerSideApply.IgnoreFields[0].JSONPointers[0] != "/spec/parallelism" ||
		mc.UpdateStrategy.ServerSideApply.IgnoreFields[0].JQPathExpressions[0] != ".metadata.labels" {
		t.Errorf("manifestWorkTemplate.manifestConfigs[0]: got %+v", mc)
	}

	u, err := v.Defaulted([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := u["spec"].(map[string]any)["manifestWorkTemplate"].(map[string]any)
	if got := tmpl["manifestConfigs"].([]any)[0].(map[string]any)["feedbackScrapeType"]; got != string(workv1.FeedbackPollType) {
		t.Errorf("manifestWorkTemplate.manifestConfigs[0].feedbackScrapeType defaults to %v, want Poll", got)
	}

	const path = "spec.manifestWorkTemplate.manifestConfigs[0]"
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{Name: "old rule type WellKnownCompletions", Doc: cfg + "      conditionRules: [{type: WellKnownCompletions, condition: Complete}]", Want: path + ".conditionRules[0].type"},
		{Name: "celExpressions in the old object form", Doc: cfg + "      conditionRules: [{type: CEL, condition: Complete, celExpressions: [{expression: 'true'}]}]", Want: path + ".conditionRules[0].celExpressions[0]"},
		{Name: "feedbackScrapeType outside the enum", Doc: cfg + "      feedbackScrapeType: POLL", Want: path + ".feedbackScrapeType"},
		{Name: "ignore field selecting nothing", Doc: cfg + "      updateStrategy: {type: ServerSideApply, serverSideApply: {ignoreFields: [{condition: OnSpokePresent}]}}", Want: "at least one of jsonPaths, jsonPointers or jqPathExpressions must be set"},
	})
}
