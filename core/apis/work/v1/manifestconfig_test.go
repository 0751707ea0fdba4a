package v1_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// workHead starts a ManifestWork document; manifestConfigs follow under spec.
const workHead = "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {name: w, namespace: cluster1}\n"

// configuredWork is a ManifestWork using the manifestConfigs fields of OCM's current
// API: condition rules of both types with CEL expressions as plain strings, watch
// feedback, and ignore fields selected by JSON path, JSON pointer and jq expression.
const configuredWork = workHead + `spec:
  deleteOption:
    propagationPolicy: Orphan
    ttlSecondsAfterFinished: 300
  workload:
    manifests:
    - apiVersion: batch/v1
      kind: Job
      metadata: {name: pi, namespace: default}
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: hello, namespace: default}
  manifestConfigs:
  - resourceIdentifier: {group: batch, resource: jobs, namespace: default, name: pi}
    conditionRules:
    - type: WellKnownConditions
      condition: Complete
    - type: CEL
      condition: Succeeded
      celExpressions:
      - has(object.status.succeeded)
      - object.status.succeeded > 0
      message: job succeeded
      messageExpression: 'result ? "done" : "running"'
  - resourceIdentifier: {group: apps, resource: deployments, namespace: default, name: hello}
    feedbackScrapeType: Watch
    feedbackRules:
    - type: WellKnownStatus
    updateStrategy:
      type: ServerSideApply
      serverSideApply:
        ignoreFields:
        - condition: OnSpokeChange
          jsonPointers:
          - /spec/replicas
          - /metadata/annotations/prometheus.io~1scrape
          jqPathExpressions:
          - '.spec.template.spec.containers[] | select(.name == "sidecar") | .image'
        - condition: OnSpokePresent
          jsonPaths: [.data]
`

// TestManifestConfigsOfCurrentOCMApply checks that a ManifestWork using the
// current manifestConfigs fields is accepted, keeps every value through the Go
// types (also once the CRD defaults are applied) and decodes into the right
// fields.
func TestManifestConfigsOfCurrentOCMApply(t *testing.T) {
	v := newValidator(t)
	v.CompareDefaulted = true
	obj, err := v.Check([]byte(configuredWork))
	if err != nil {
		t.Fatal(err)
	}
	w := obj.(*workv1.ManifestWork)
	job, deploy := w.Spec.ManifestConfigs[0], w.Spec.ManifestConfigs[1]

	rules := job.ConditionRules
	if len(rules) != 2 || rules[0].Type != workv1.WellKnownConditionsType || rules[0].Condition != workv1.ManifestComplete {
		t.Fatalf("conditionRules: got %+v", rules)
	}
	cel := rules[1]
	if cel.Type != workv1.CelConditionExpressionsType || cel.Condition != "Succeeded" ||
		!slices.Equal(cel.CelExpressions, []string{"has(object.status.succeeded)", "object.status.succeeded > 0"}) ||
		cel.Message != "job succeeded" || cel.MessageExpression != `result ? "done" : "running"` {
		t.Errorf("CEL rule: got %+v", cel)
	}
	if job.FeedbackScrapeType != "" {
		t.Errorf("feedbackScrapeType of the job: got %q, want unset in the Go object (the API server defaults it)", job.FeedbackScrapeType)
	}
	if deploy.FeedbackScrapeType != workv1.FeedbackWatchType {
		t.Errorf("feedbackScrapeType: got %q, want Watch", deploy.FeedbackScrapeType)
	}
	ignore := deploy.UpdateStrategy.ServerSideApply.IgnoreFields
	if len(ignore) != 2 {
		t.Fatalf("ignoreFields: got %+v", ignore)
	}
	if f := ignore[0]; f.Condition != workv1.IgnoreFieldsConditionOnSpokeChange || len(f.JSONPaths) != 0 ||
		!slices.Equal(f.JSONPointers, []string{"/spec/replicas", "/metadata/annotations/prometheus.io~1scrape"}) ||
		len(f.JQPathExpressions) != 1 || !strings.HasPrefix(f.JQPathExpressions[0], ".spec.template.spec.containers[]") {
		t.Errorf("ignoreFields[0]: got %+v", f)
	}
	if f := ignore[1]; !slices.Equal(f.JSONPaths, []string{".data"}) || f.JSONPointers != nil || f.JQPathExpressions != nil {
		t.Errorf("ignoreFields[1]: got %+v", f)
	}
	if ttl := w.Spec.DeleteOption.TTLSecondsAfterFinished; ttl == nil || *ttl != 300 {
		t.Errorf("deleteOption.ttlSecondsAfterFinished: got %v", ttl)
	}
}

// TestManifestConfigsRejected: the shapes and values OCM's API does not have are
// refused, naming the offending field.
func TestManifestConfigsRejected(t *testing.T) {
	v := newValidator(t)
	const cfg = workHead + "spec:\n  manifestConfigs:\n  - resourceIdentifier: {group: batch, resource: jobs, namespace: default, name: pi}\n"
	const rule = "spec.manifestConfigs[0].conditionRules[0]"
	const ssa = "    updateStrategy:\n      type: ServerSideApply\n      serverSideApply:\n        ignoreFields:\n"
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{Name: "celExpressions in the old object form", Want: rule + ".celExpressions[0]",
			Doc: cfg + "    conditionRules: [{type: CEL, condition: Complete, celExpressions: [{expression: 'true'}]}]"},
		{Name: "old rule type WellKnownCompletions", Want: rule + ".type",
			Doc: cfg + "    conditionRules: [{type: WellKnownCompletions, condition: Complete}]"},
		{Name: "rule type outside the enum", Want: rule + ".type",
			Doc: cfg + "    conditionRules: [{type: Rego, condition: Complete}]"},
		{Name: "rule without condition", Want: rule + ".condition",
			Doc: cfg + "    conditionRules: [{type: WellKnownConditions}]"},
		{Name: "CEL rule with an empty condition", Want: "Condition is required for CEL rules",
			Doc: cfg + "    conditionRules: [{type: CEL, condition: '', celExpressions: ['true']}]"},
		{Name: "two rules for one condition", Want: "spec.manifestConfigs[0].conditionRules[1]",
			Doc: cfg + "    conditionRules: [{type: WellKnownConditions, condition: Complete}, {type: CEL, condition: Complete, celExpressions: ['true']}]"},
		{Name: "feedbackScrapeType outside the enum", Want: "spec.manifestConfigs[0].feedbackScrapeType",
			Doc: cfg + "    feedbackScrapeType: Push"},
		{Name: "feedbackScrapeType spelled as in the enhancement draft", Want: "spec.manifestConfigs[0].feedbackScrapeType",
			Doc: cfg + "    feedbackScrapeType: WATCH"},
		{Name: "ignore field selecting nothing", Want: "at least one of jsonPaths, jsonPointers or jqPathExpressions must be set",
			Doc: cfg + ssa + "        - {condition: OnSpokePresent}"},
		{Name: "ignore field with only empty selectors", Want: "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0]",
			Doc: cfg + ssa + "        - {condition: OnSpokeChange, jsonPaths: [], jsonPointers: [], jqPathExpressions: []}"},
		{Name: "jsonPointers not a list of strings", Want: "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].jsonPointers",
			Doc: cfg + ssa + "        - {condition: OnSpokeChange, jsonPointers: /spec/replicas}"},
		{Name: "misspelled jqPathExpression", Want: "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].jqPathExpression",
			Doc: cfg + ssa + "        - {condition: OnSpokeChange, jsonPaths: [.data], jqPathExpression: [.data]}"},
	})
}

// TestFeedbackScrapeTypeDefaultsToPoll: a manifest config without
// feedbackScrapeType gets Poll from the API server.
func TestFeedbackScrapeTypeDefaultsToPoll(t *testing.T) {
	v := newValidator(t)
	u, err := v.Defaulted([]byte(workHead + "spec:\n  manifestConfigs:\n  - resourceIdentifier: {resource: configmaps, name: c}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := u["spec"].(map[string]any)["manifestConfigs"].([]any)[0].(map[string]any)
	if got := cfg["feedbackScrapeType"]; got != string(workv1.FeedbackPollType) {
		t.Errorf("feedbackScrapeType defaults to %v, want Poll", got)
	}
}

// TestOptionalAsInOCM: fields OCM's schema leaves optional are accepted when
// absent (the executor's subject, the deletion policy, an AppliedManifestWork's
// agent ID).
func TestOptionalAsInOCM(t *testing.T) {
	v := newValidator(t)
	for name, doc := range map[string]string{
		"executor without subject":         workHead + "spec: {executor: {}}",
		"deleteOption without policy":      workHead + "spec: {deleteOption: {ttlSecondsAfterFinished: 0}}",
		"AppliedManifestWork without ID":   "apiVersion: work.open-cluster-management.io/v1\nkind: AppliedManifestWork\nmetadata: {name: h-w}\nspec: {hubHash: h, manifestWorkName: w}",
		"ignore field with jsonPaths only": workHead + "spec:\n  manifestConfigs:\n  - resourceIdentifier: {resource: configmaps, name: c}\n    updateStrategy: {type: ServerSideApply, serverSideApply: {ignoreFields: [{jsonPaths: [.data]}]}}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Check([]byte(doc)); err != nil {
				t.Error(err)
			}
		})
	}
}
