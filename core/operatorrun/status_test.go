package operatorrun

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/operatorrun/operatorruntest"
)

func TestFeatureGatesPerComponent(t *testing.T) {
	var f FeatureGates
	if c := f.Condition(); c.Status != metav1.ConditionTrue || c.Reason != operatorv1.ReasonFeatureGatesAllValid {
		t.Errorf("without gates: %+v", c)
	}
	implemented := func(name string) bool { return name == "A" || name == "B" }
	f.Read("Registration", []operatorv1.FeatureGate{operatorruntest.Gate("A", true), operatorruntest.Gate("X", true),
		{Feature: "B"}}, implemented) // an empty mode is the CRD's default, Disable
	f.Read("Work", []operatorv1.FeatureGate{operatorruntest.Gate("Y", false)}, implemented)
	f.Read("Addon", nil, implemented)
	if len(f.Overrides) != 2 || !f.Overrides["A"] || f.Overrides["B"] {
		t.Errorf("overrides %v", f.Overrides)
	}
	if want := []string{"Registration: [X]", "Work: [Y]"}; !slices.Equal(f.Invalid, want) {
		t.Errorf("invalid %q, want %q", f.Invalid, want)
	}
	c := f.Condition()
	if c.Type != operatorv1.ConditionValidFeatureGates || c.Status != metav1.ConditionFalse || c.Reason != operatorv1.ReasonInvalidFeatureGatesExisting ||
		c.Message != "There are some invalid feature gates of Registration: [X] Work: [Y], will process them with default values" {
		t.Errorf("condition %+v", c)
	}
}

func TestApplyStatusLeavesAStatusThatSaysItAlready(t *testing.T) {
	cond := metav1.Condition{Type: "Applied", Status: metav1.ConditionTrue, Reason: "Applied", Message: "m"}
	written := cond
	written.ObservedGeneration, written.LastTransitionTime = 3, metav1.NewTime(time.Now().Add(-time.Hour))
	related := []operatorv1.RelatedResourceMeta{RelatedCRD("a.example.com")}
	have := Status{ObservedGeneration: 3, Conditions: []metav1.Condition{written}, RelatedResources: related}
	want := Status{ObservedGeneration: 3, Conditions: []metav1.Condition{cond}, RelatedResources: related}
	// No client: a write would panic.
	if err := ApplyStatus(context.Background(), nil, &operatorv1.ClusterManager{}, "m", have, want); err != nil {
		t.Fatal(err)
	}
	if want.Conditions[0].ObservedGeneration != 0 {
		t.Error("ApplyStatus changed the caller's conditions")
	}

	withGen := func(s Status) Status {
		s.Conditions = slices.Clone(s.Conditions)
		for i := range s.Conditions {
			s.Conditions[i].ObservedGeneration = s.ObservedGeneration
		}
		return s
	}
	for name, changed := range map[string]Status{
		"generation":       {ObservedGeneration: 4, Conditions: want.Conditions, RelatedResources: related},
		"message":          {ObservedGeneration: 3, Conditions: []metav1.Condition{{Type: "Applied", Status: metav1.ConditionTrue, Reason: "Applied", Message: "n"}}, RelatedResources: related},
		"new condition":    {ObservedGeneration: 3, Conditions: append(slices.Clone(want.Conditions), metav1.Condition{Type: "Progressing"}), RelatedResources: related},
		"related":          {ObservedGeneration: 3, Conditions: want.Conditions},
		"generations list": {ObservedGeneration: 3, Conditions: want.Conditions, RelatedResources: related, Generations: []operatorv1.GenerationStatus{{Name: "d"}}},
	} {
		if upToDate(have, withGen(changed)) {
			t.Errorf("%s: a changed status counts as up to date", name)
		}
	}
}

func TestDeploymentFromEnv(t *testing.T) {
	t.Setenv(PodNamespaceEnv, "ns")
	t.Setenv(DeploymentNameEnv, "")
	if d := DeploymentFromEnv(); d != (types.NamespacedName{}) {
		t.Errorf("without a name: %v", d)
	}
	t.Setenv(DeploymentNameEnv, "flotilla-hub")
	if d := DeploymentFromEnv(); d != (types.NamespacedName{Namespace: "ns", Name: "flotilla-hub"}) {
		t.Errorf("got %v", d)
	}
}

func TestKind(t *testing.T) {
	if k := Kind[*operatorv1.Klusterlet](); k != "Klusterlet" {
		t.Errorf("Kind %q", k)
	}
	if k := lowerFirst(Kind[*operatorv1.ClusterManager]()); k != "clusterManager" {
		t.Errorf("log key %q", k)
	}
}
