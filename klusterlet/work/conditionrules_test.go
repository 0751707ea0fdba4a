package work

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

func liveObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const (
	configMapDoc = `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: default}
data: {phase: done, count: "3"}
`
	jobCompleteDoc = `
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: default}
status:
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True"}
  - {type: Complete, status: "True"}
`
	jobFailedDoc = `
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: default}
status:
  conditions:
  - {type: Failed, status: "True"}
`
	jobRunningDoc = `
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: default}
status: {active: 1}
`
	jobNoStatusDoc = `
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: default}
`
	podSucceededDoc = `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
status: {phase: Succeeded}
`
	podPendingDoc = `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
status: {phase: Pending}
`
)

// nested is an expression of ten million comprehension steps: far past the cost limit.
const nested = `[0,1,2,3,4,5,6,7,8,9].all(a, [0,1,2,3,4,5,6,7,8,9].all(b, [0,1,2,3,4,5,6,7,8,9].all(c,
	[0,1,2,3,4,5,6,7,8,9].all(d, [0,1,2,3,4,5,6,7,8,9].all(e, [0,1,2,3,4,5,6,7,8,9].all(f,
	[0,1,2,3,4,5,6,7,8,9].all(g, a + b + c + d + e + f + g >= 0)))))))`

func celRule(condition string, exprs ...string) workv1.ConditionRule {
	return workv1.ConditionRule{Condition: condition, Type: workv1.CelConditionExpressionsType, CelExpressions: exprs}
}

func wellKnownRule(condition string) workv1.ConditionRule {
	return workv1.ConditionRule{Condition: condition, Type: workv1.WellKnownConditionsType}
}

func TestConditionRules(t *testing.T) {
	withMessage := func(r workv1.ConditionRule, msg, expr string) workv1.ConditionRule {
		r.Message, r.MessageExpression = msg, expr
		return r
	}
	for _, tc := range []struct {
		name   string
		object string
		rule   workv1.ConditionRule
		// want is nil when the rule makes no condition.
		want *metav1.Condition
		// message, when set, is a substring the message must contain instead of equal want's.
		message string
	}{
		{name: "true", object: configMapDoc, rule: celRule("Done", "object.data.phase == 'done'"),
			want: &metav1.Condition{Type: "Done", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "Manifest is Done"}},
		{name: "false", object: configMapDoc, rule: celRule("Done", "object.data.phase == 'running'"),
			want: &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleEvaluated, Message: "Manifest is not Done"}},
		{name: "all expressions must hold", object: configMapDoc, rule: celRule("Done", "true", "int(object.data.count) > 5"),
			want: &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleEvaluated, Message: "Manifest is not Done"}},
		{name: "no expressions hold vacuously (OCM)", object: configMapDoc, rule: celRule("Done"),
			want: &metav1.Condition{Type: "Done", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "Manifest is Done"}},
		{name: "non-boolean result", object: configMapDoc, rule: celRule("Done", "object.data.phase"),
			want:    &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleExpressionError},
			message: "expected a bool result, got string"},
		{name: "a non-boolean result stops at the first expression", object: configMapDoc, rule: celRule("Done", "1 + 1", "true"),
			want:    &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleExpressionError},
			message: "got int"},
		{name: "compile error", object: configMapDoc, rule: celRule("Done", "object.data.phase =="),
			want:    &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleExpressionError},
			message: "Syntax error"},
		{name: "undeclared reference", object: configMapDoc, rule: celRule("Done", "self.data.phase == 'done'"),
			want:    &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleExpressionError},
			message: "undeclared reference to 'self'"},
		{name: "missing field", object: configMapDoc, rule: celRule("Done", "object.data.missing == 'x'"),
			want:    &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleExpressionError},
			message: "no such key: missing"},
		{name: "missing field guarded by has", object: configMapDoc, rule: celRule("Done", "has(object.data.missing) && object.data.missing == 'x'"),
			want: &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleEvaluated, Message: "Manifest is not Done"}},
		{name: "cost limit", object: configMapDoc, rule: celRule("Done", nested),
			want:    &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleExpressionError},
			message: "exceeded its cost limit"},
		{name: "message", object: configMapDoc, rule: withMessage(celRule("Done", "false"), "still waiting", ""),
			want: &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleEvaluated, Message: "still waiting"}},
		{name: "messageExpression overrides message", object: configMapDoc,
			rule: withMessage(celRule("Done", "object.data.phase == 'done'"), "unused", `result ? "phase is " + object.data.phase : "not yet"`),
			want: &metav1.Condition{Type: "Done", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "phase is done"}},
		{name: "messageExpression sees the result", object: configMapDoc,
			rule: withMessage(celRule("Done", "false"), "", `result ? "yes" : "no"`),
			want: &metav1.Condition{Type: "Done", Status: "False", Reason: workv1.ConditionRuleEvaluated, Message: "no"}},
		{name: "empty messageExpression result falls back to message", object: configMapDoc,
			rule: withMessage(celRule("Done", "true"), "fallback", `""`),
			want: &metav1.Condition{Type: "Done", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "fallback"}},
		{name: "non-string messageExpression", object: configMapDoc, rule: withMessage(celRule("Done", "true"), "", "42"),
			want:    &metav1.Condition{Type: "Done", Status: "True", Reason: workv1.ConditionRuleEvaluated},
			message: "expected a string result, got int"},
		{name: "failing messageExpression", object: configMapDoc, rule: withMessage(celRule("Done", "true"), "", "object.data.nope"),
			want:    &metav1.Condition{Type: "Done", Status: "True", Reason: workv1.ConditionRuleEvaluated},
			message: "messageExpression: no such key: nope"},
		{name: "OCM's hasConditions", object: jobCompleteDoc,
			rule: celRule("Finished", "hasConditions(object.status) && object.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')", "!hasConditions(object.metadata)"),
			want: &metav1.Condition{Type: "Finished", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "Manifest is Finished"}},
		{name: "Kubernetes CEL libraries", object: configMapDoc,
			rule: celRule("Sized", "quantity('1Gi').isGreaterThan(quantity('1Mi'))", "[1, 2, 3].isSorted()", "object.data.phase.matches('^d')"),
			want: &metav1.Condition{Type: "Sized", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "Manifest is Sized"}},

		{name: "well-known Job complete", object: jobCompleteDoc, rule: wellKnownRule(workv1.ManifestComplete),
			want: &metav1.Condition{Type: "Complete", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "Job is finished"}},
		{name: "well-known Job failed is finished too (OCM)", object: jobFailedDoc, rule: wellKnownRule(workv1.ManifestComplete),
			want: &metav1.Condition{Type: "Complete", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "Job is finished"}},
		{name: "well-known Job running", object: jobRunningDoc, rule: wellKnownRule(workv1.ManifestComplete),
			want: &metav1.Condition{Type: "Complete", Status: "False", Reason: workv1.ConditionRuleEvaluated, Message: "Job is not finished"}},
		{name: "well-known Job without status", object: jobNoStatusDoc, rule: wellKnownRule(workv1.ManifestComplete),
			want: &metav1.Condition{Type: "Complete", Status: "False", Reason: workv1.ConditionRuleEvaluated, Message: "Job is not finished"}},
		{name: "well-known Job with a message", object: jobCompleteDoc, rule: withMessage(wellKnownRule(workv1.ManifestComplete), "pi computed", ""),
			// The built-in messageExpression wins over a message, as in OCM.
			want: &metav1.Condition{Type: "Complete", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "Job is finished"}},
		{name: "well-known Job with a messageExpression", object: jobCompleteDoc,
			rule: withMessage(wellKnownRule(workv1.ManifestComplete), "", `"succeeded: " + string(object.status.succeeded)`),
			want: &metav1.Condition{Type: "Complete", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "succeeded: 1"}},
		{name: "well-known Pod succeeded", object: podSucceededDoc, rule: wellKnownRule(workv1.ManifestComplete),
			want: &metav1.Condition{Type: "Complete", Status: "True", Reason: workv1.ConditionRuleEvaluated, Message: "Pod is in phase Succeeded"}},
		{name: "well-known Pod pending", object: podPendingDoc, rule: wellKnownRule(workv1.ManifestComplete),
			want: &metav1.Condition{Type: "Complete", Status: "False", Reason: workv1.ConditionRuleEvaluated, Message: "Pod is in phase Pending"}},
		{name: "well-known kind without rules makes no condition", object: configMapDoc, rule: wellKnownRule(workv1.ManifestComplete)},
		{name: "well-known condition without a rule makes no condition", object: jobCompleteDoc, rule: wellKnownRule("Ready")},

		{name: "unknown rule type", object: configMapDoc, rule: workv1.ConditionRule{Condition: "Done", Type: "Rego"},
			want:    &metav1.Condition{Type: "Done", Status: "Unknown", Reason: workv1.ConditionRuleInvalid},
			message: `unrecognized condition rule type "Rego"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newRuleEvaluator(celPerCallLimit, celManifestBudget)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got := e.evaluate(context.Background(), liveObject(t, tc.object), []workv1.ConditionRule{tc.rule})
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("evaluation took %s", d)
			}
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("got %+v, want no condition", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("got %d conditions %+v, want one", len(got), got)
			}
			c := got[0]
			if c.Type != tc.want.Type || c.Status != tc.want.Status || c.Reason != tc.want.Reason {
				t.Errorf("got %s=%s (%s): %q, want %s=%s (%s)", c.Type, c.Status, c.Reason, c.Message, tc.want.Type, tc.want.Status, tc.want.Reason)
			}
			switch {
			case tc.message != "" && !strings.Contains(c.Message, tc.message):
				t.Errorf("message %q lacks %q", c.Message, tc.message)
			case tc.message == "" && c.Message != tc.want.Message:
				t.Errorf("message %q, want %q", c.Message, tc.want.Message)
			}
			if strings.Contains(c.Message, "\n") {
				t.Errorf("message %q spans lines", c.Message)
			}
		})
	}
}

// TestConditionRulesBudget: the rules of one manifest share a cost budget; past it, the
// remaining expressions fail instead of running.
func TestConditionRulesBudget(t *testing.T) {
	e, err := newRuleEvaluator(celPerCallLimit, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := e.evaluate(context.Background(), liveObject(t, configMapDoc), []workv1.ConditionRule{
		celRule("First", "object.data.phase == 'done'"), celRule("Second", "true")})
	if len(got) != 2 {
		t.Fatalf("got %+v", got)
	}
	for i, want := range []string{"budget of the manifest's rules (1) exceeded", "budget of the manifest's rules (1) exhausted"} {
		if got[i].Status != metav1.ConditionFalse || got[i].Reason != workv1.ConditionRuleExpressionError || !strings.Contains(got[i].Message, want) {
			t.Errorf("condition %d = %+v, want False ExpressionError containing %q", i, got[i], want)
		}
	}
}

// TestConditionRulesBoundMessages: a message quoting a long expression stays within bounds.
func TestConditionRulesBoundMessages(t *testing.T) {
	e, err := newRuleEvaluator(celPerCallLimit, celManifestBudget)
	if err != nil {
		t.Fatal(err)
	}
	long := `"` + strings.Repeat("é", 3000) + `"`
	got := e.evaluate(context.Background(), liveObject(t, configMapDoc), []workv1.ConditionRule{celRule("Long", long)})
	if len(got) != 1 || got[0].Reason != workv1.ConditionRuleExpressionError || len(got[0].Message) > maxRuleMessage+3 ||
		!utf8.ValidString(got[0].Message) {
		t.Errorf("got %d conditions, the first %s with a message of %d bytes", len(got), got[0].Reason, len(got[0].Message))
	}
}

// TestConditionRulesCacheProgramsByText: an expression is compiled once, also a broken one.
func TestConditionRulesCacheProgramsByText(t *testing.T) {
	e, err := newRuleEvaluator(celPerCallLimit, celManifestBudget)
	if err != nil {
		t.Fatal(err)
	}
	rules := []workv1.ConditionRule{celRule("A", "object.data.phase == 'done'"), celRule("B", "object.data.phase == 'done'", "oops ==")}
	for range 3 {
		e.evaluate(context.Background(), liveObject(t, configMapDoc), rules)
	}
	if n := e.programs.Len(); n != 2 {
		t.Errorf("%d programs cached, want 2", n)
	}
	p1, _ := e.program("object.data.phase == 'done'", false)
	p2, _ := e.program("object.data.phase == 'done'", false)
	if p1 != p2 {
		t.Error("the same expression was compiled twice")
	}
	// The message environment (with result) keeps its own programs.
	if _, err := e.program("result", true); err != nil {
		t.Errorf("result in a messageExpression: %v", err)
	}
	if _, err := e.program("result", false); err == nil {
		t.Error("result compiled outside a messageExpression")
	}
}

func TestSetRuleConditionsPrunesRemovedRules(t *testing.T) {
	obj := liveObject(t, configMapDoc)
	conds := []metav1.Condition{
		{Type: workv1.ManifestApplied, Status: "True", Reason: workv1.ManifestAppliedReasonComplete, ObservedGeneration: 1},
		{Type: "Old", Status: "True", Reason: workv1.ConditionRuleEvaluated, ObservedGeneration: 1},
		{Type: "Kept", Status: "False", Reason: workv1.ConditionRuleEvaluated, ObservedGeneration: 1,
			LastTransitionTime: metav1.NewTime(time.Unix(1000, 0))},
	}
	option := &workv1.ManifestConfigOption{ConditionRules: []workv1.ConditionRule{celRule("Kept", "true"), celRule("New", "false")}}
	setRuleConditions(context.Background(), &conds, obj, option, 2)
	types := map[string]metav1.Condition{}
	for _, c := range conds {
		types[c.Type] = c
	}
	if _, ok := types["Old"]; ok {
		t.Error("the condition of a removed rule was kept")
	}
	if _, ok := types[workv1.ManifestApplied]; !ok {
		t.Error("the agent's own condition was pruned")
	}
	if c := types["Kept"]; c.Status != "True" || c.ObservedGeneration != 2 || c.LastTransitionTime.Unix() == 1000 {
		t.Errorf("Kept = %+v, want True for generation 2 with a new transition time", c)
	}
	if c := types["New"]; c.Status != "False" || c.ObservedGeneration != 2 {
		t.Errorf("New = %+v", c)
	}
	// No rules left: every rule-made condition of an older generation goes.
	setRuleConditions(context.Background(), &conds, obj, nil, 3)
	if len(conds) != 1 || conds[0].Type != workv1.ManifestApplied {
		t.Errorf("after removing all rules: %+v", conds)
	}
}

func TestAggregateRuleConditions(t *testing.T) {
	manifest := func(conds ...metav1.Condition) workv1.ManifestCondition {
		return workv1.ManifestCondition{Conditions: conds}
	}
	rule := func(typ string, status metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: workv1.ConditionRuleEvaluated, Message: msg, ObservedGeneration: 4}
	}
	for _, tc := range []struct {
		name      string
		manifests []workv1.ManifestCondition
		want      map[string]metav1.ConditionStatus
		message   string
	}{
		{name: "every Complete manifest complete", manifests: []workv1.ManifestCondition{
			manifest(rule("Complete", "True", "a")), manifest(rule("Complete", "True", "b")),
			// A manifest without a Complete rule does not hold the work back.
			manifest(metav1.Condition{Type: "Available", Status: "True", Reason: "ResourceAvailable"})},
			want: map[string]metav1.ConditionStatus{"Complete": "True"}, message: "Aggregated from 2 manifest conditions"},
		{name: "one not complete", manifests: []workv1.ManifestCondition{
			manifest(rule("Complete", "True", "a")), manifest(rule("Complete", "False", "b"))},
			want: map[string]metav1.ConditionStatus{"Complete": "False"}},
		{name: "unknown wins over true", manifests: []workv1.ManifestCondition{
			manifest(rule("Complete", "True", "a")), manifest(rule("Complete", "Unknown", "b"))},
			want: map[string]metav1.ConditionStatus{"Complete": "Unknown"}},
		{name: "a single manifest's message", manifests: []workv1.ManifestCondition{manifest(rule("Complete", "True", "Job is finished"))},
			want: map[string]metav1.ConditionStatus{"Complete": "True"}, message: "Job is finished"},
		{name: "Progressing is True when any is", manifests: []workv1.ManifestCondition{
			manifest(rule("Progressing", "False", "")), manifest(rule("Progressing", "True", ""))},
			want: map[string]metav1.ConditionStatus{"Progressing": "True"}},
		{name: "the agent's own and rule-made Applied/Available are not aggregated", manifests: []workv1.ManifestCondition{
			manifest(rule("Available", "False", ""), metav1.Condition{Type: "Degraded", Status: "True", Reason: "Other"})},
			want: map[string]metav1.ConditionStatus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conds := []metav1.Condition{
				{Type: "Applied", Status: "True", Reason: workv1.WorkAppliedReasonComplete, ObservedGeneration: 3},
				// The aggregate of a rule removed in generation 4.
				{Type: "Gone", Status: "True", Reason: reasonRulesAggregated, ObservedGeneration: 3},
			}
			aggregateRuleConditions(&conds, tc.manifests, 4)
			got := map[string]metav1.ConditionStatus{}
			for _, c := range conds {
				if c.Type == "Applied" {
					continue
				}
				got[c.Type] = c.Status
				if c.Reason != reasonRulesAggregated || c.ObservedGeneration != 4 {
					t.Errorf("%+v: want reason %s for generation 4", c, reasonRulesAggregated)
				}
				if tc.message != "" && c.Message != tc.message {
					t.Errorf("%s message %q, want %q", c.Type, c.Message, tc.message)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
			if meta.FindStatusCondition(conds, "Applied") == nil {
				t.Error("the agent's Applied was dropped")
			}
		})
	}
}

func TestCompleteBeforeMatchesByResourceNotOrdinal(t *testing.T) {
	m := workv1.ManifestResourceMeta{Ordinal: 1, Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs", Namespace: "default", Name: "pi"}
	moved := m
	moved.Ordinal = 3
	other := m
	other.Name = "e"
	status := []workv1.ManifestCondition{
		{ResourceMeta: other, Conditions: []metav1.Condition{{Type: "Complete", Status: "False"}}},
		{ResourceMeta: moved, Conditions: []metav1.Condition{{Type: "Complete", Status: "True"}}},
	}
	if !completeBefore(m, status) {
		t.Error("a Complete manifest at another ordinal was not found")
	}
	if completeBefore(other, status) {
		t.Error("a manifest with Complete=False counted as complete")
	}
	third := m
	third.Namespace = "elsewhere"
	if completeBefore(third, status) {
		t.Error("a manifest absent from the status counted as complete")
	}
}
