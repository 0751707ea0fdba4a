package work

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

func TestCompletedReconciler(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	completeAt := func(at time.Time, status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: workv1.WorkComplete, Status: status, Reason: "ConditionRulesAggregated", LastTransitionTime: metav1.NewTime(at)}}
	}
	for _, tc := range []struct {
		name        string
		ttl         *int64
		conditions  []metav1.Condition
		deleting    bool
		wantDeleted bool
		wantRequeue time.Duration
	}{
		{name: "no TTL is kept", conditions: completeAt(now.Add(-time.Hour), metav1.ConditionTrue)},
		{name: "not complete is kept", ttl: ptr.To[int64](0)},
		{name: "Complete=False is kept", ttl: ptr.To[int64](0), conditions: completeAt(now.Add(-time.Hour), metav1.ConditionFalse)},
		{name: "TTL 0 is deleted at once", ttl: ptr.To[int64](0), conditions: completeAt(now, metav1.ConditionTrue), wantDeleted: true},
		{name: "TTL passed is deleted", ttl: ptr.To[int64](30), conditions: completeAt(now.Add(-31*time.Second), metav1.ConditionTrue), wantDeleted: true},
		{name: "TTL running requeues for exactly the time left", ttl: ptr.To[int64](30),
			conditions: completeAt(now.Add(-10*time.Second), metav1.ConditionTrue), wantRequeue: 20 * time.Second},
		{name: "already being deleted is left alone", ttl: ptr.To[int64](0), conditions: completeAt(now.Add(-time.Hour), metav1.ConditionTrue), deleting: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &workv1.ManifestWork{
				ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "w", UID: "uid-1"},
				Status:     workv1.ManifestWorkStatus{Conditions: tc.conditions},
			}
			if tc.ttl != nil {
				w.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground, TTLSecondsAfterFinished: tc.ttl}
			}
			if tc.deleting {
				w.Finalizers = []string{workv1.ManifestWorkFinalizer}
				w.DeletionTimestamp = &metav1.Time{Time: now}
			}
			scheme := runtime.NewScheme()
			if err := apischeme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w).WithStatusSubresource(w).Build()
			r := &CompletedReconciler{Client: c, Now: func() time.Time { return now }}
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)})
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
			err = c.Get(context.Background(), client.ObjectKeyFromObject(w), &workv1.ManifestWork{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDeleted {
				t.Errorf("deleted = %t (get: %v), want %t", deleted, err, tc.wantDeleted)
			}
		})
	}
}

func TestCompletedReconcilerRunsOnlyBehindItsGate(t *testing.T) {
	gate, err := featuregates.NewGate(featuregates.DefaultHubRegistrationFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	if gate.Enabled(featuregates.CleanUpCompletedManifestWork) {
		t.Fatal("CleanUpCompletedManifestWork is on by default; OCM has it off")
	}
	// Off, SetupWithManager returns before touching the (here missing) manager.
	for _, r := range []*CompletedReconciler{{}, {Gates: gate}} {
		if err := r.SetupWithManager(nil); err != nil {
			t.Fatal(err)
		}
	}
}
