package apply_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
)

// TestApply runs against a real hub API server: every apply is made from a copy read before
// another writer changed the object, as a controller's cache may serve it.
func TestApply(t *testing.T) {
	c := hubAdmin(t, environment.Options{})
	ctx := t.Context()

	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"},
		Spec: clusterv1.ManagedClusterSpec{Taints: []clusterv1.Taint{{Key: "theirs", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.Now()}}}}
	if err := c.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	stale := mc.DeepCopy()
	// Another writer (the agent, an admin) changes the cluster after the copy was read.
	other := get(t, c, "cluster1")
	other.Finalizers = append(other.Finalizers, "example.com/theirs")
	other.Labels = map[string]string{"theirs": "yes"}
	if err := c.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&other.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionJoined,
		Status: metav1.ConditionTrue, Reason: "Joined", Message: "by the agent"})
	if err := c.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}

	const a, b = "flotilla-test-a", "flotilla-test-b"
	if err := apply.Finalizer(ctx, c, stale, a, "example.com/ours"); err != nil {
		t.Fatalf("Finalizer from a stale copy: %v", err)
	}
	// A manager's apply states all it owns of the object, so the label needs a manager of its own.
	if err := apply.Label(ctx, c, stale, b, "ours", "yes"); err != nil {
		t.Fatalf("Label from a stale copy: %v", err)
	}
	accepted := metav1.Condition{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: "Accepted", Message: "ok"}
	if wrote, err := apply.Condition(ctx, c, stale, stale.Status.Conditions, a, accepted); err != nil || !wrote {
		t.Fatalf("Condition from a stale copy: wrote %v, %v", wrote, err)
	}
	unknown := metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown, Reason: "Stale", Message: "lease"}
	if _, err := apply.Condition(ctx, c, stale, stale.Status.Conditions, b, unknown); err != nil {
		t.Fatalf("Condition by a second manager: %v", err)
	}

	got := get(t, c, "cluster1")
	if !slices.Contains(got.Finalizers, "example.com/theirs") || !slices.Contains(got.Finalizers, "example.com/ours") {
		t.Errorf("finalizers %v, want both writers'", got.Finalizers)
	}
	if got.Labels["theirs"] != "yes" || got.Labels["ours"] != "yes" {
		t.Errorf("labels %v, want both writers'", got.Labels)
	}
	for _, typ := range []string{clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionHubAccepted, clusterv1.ManagedClusterConditionAvailable} {
		if meta.FindStatusCondition(got.Status.Conditions, typ) == nil {
			t.Errorf("condition %s missing from %+v", typ, got.Status.Conditions)
		}
	}

	// Same status: nothing is written. New message, same status: lastTransitionTime stays.
	before := meta.FindStatusCondition(got.Status.Conditions, accepted.Type).LastTransitionTime
	if wrote, err := apply.Condition(ctx, c, got, got.Status.Conditions, a, accepted); err != nil || wrote {
		t.Errorf("unchanged Condition: wrote %v, %v; want no write", wrote, err)
	}
	time.Sleep(1100 * time.Millisecond) // lastTransitionTime has second precision
	accepted.Message = "still ok"
	if _, err := apply.Condition(ctx, c, got, got.Status.Conditions, a, accepted); err != nil {
		t.Fatal(err)
	}
	got = get(t, c, "cluster1")
	if cond := meta.FindStatusCondition(got.Status.Conditions, accepted.Type); cond.Message != "still ok" || !cond.LastTransitionTime.Equal(&before) {
		t.Errorf("HubAccepted %+v, want the new message and lastTransitionTime %s", cond, before)
	}
	if meta.FindStatusCondition(got.Status.Conditions, unknown.Type) == nil {
		t.Errorf("manager a's apply removed manager b's condition: %+v", got.Status.Conditions)
	}

	// An atomic list applied from a stale copy conflicts instead of dropping their taint ...
	taints := map[string]any{"spec": map[string]any{"taints": []clusterv1.Taint{{Key: "ours", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.Now()}}}}
	conflict := apply.Guarded(ctx, c, stale, a, false, taints)
	if !apierrors.IsConflict(conflict) {
		t.Fatalf("Guarded from a stale copy: got %v, want a Conflict", conflict)
	}
	// ... which the controller wrapper turns into a quiet retry; other errors pass.
	returning := func(err error) reconcile.Reconciler {
		return apply.Quiet(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, err
		}))
	}
	if res, err := returning(conflict).Reconcile(ctx, reconcile.Request{}); err != nil || res.RequeueAfter <= 0 {
		t.Errorf("Quiet: got %+v, %v; want a requeue and no error", res, err)
	}
	boom := errors.New("boom")
	if _, err := returning(boom).Reconcile(ctx, reconcile.Request{}); !errors.Is(err, boom) {
		t.Errorf("Quiet passed %v, want the other error", err)
	}
	stopped, stop := context.WithCancel(ctx)
	stop()
	if _, err := returning(context.Canceled).Reconcile(stopped, reconcile.Request{}); err != nil {
		t.Errorf("Quiet passed %v from a reconcile cut short by shutdown, want none", err)
	}

	// From the current copy it applies.
	got = get(t, c, "cluster1")
	if err := apply.Guarded(ctx, c, got, a, false, taints); err != nil {
		t.Fatalf("Guarded from the current copy: %v", err)
	}
	if got = get(t, c, "cluster1"); len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Key != "ours" {
		t.Errorf("taints %+v, want the applied list", got.Spec.Taints)
	}

	// Status subresource, atomic conditions (a ManagedClusterSet).
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "set1"}}
	if err := c.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	conds := []metav1.Condition{{Type: "Empty", Status: metav1.ConditionTrue, Reason: "None", Message: "none", LastTransitionTime: metav1.Now()}}
	if err := apply.Guarded(ctx, c, set, a, true, map[string]any{"status": map[string]any{"conditions": conds}}); err != nil {
		t.Fatalf("Guarded status: %v", err)
	}
	if err := apply.Guarded(ctx, c, set, a, true, map[string]any{"status": map[string]any{"conditions": conds}}); !apierrors.IsConflict(err) {
		t.Errorf("Guarded status from the pre-write copy: got %v, want a Conflict", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "set1"}, set); err != nil || len(set.Status.Conditions) != 1 {
		t.Errorf("set status %+v (%v), want the applied condition", set.Status, err)
	}

	// An object deleted since it was read conflicts and is not created again (a server-side
	// apply creates what is missing, whatever resourceVersion it carries).
	gone := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}
	if err := c.Create(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := apply.Guarded(ctx, c, gone, a, false, taints); !apierrors.IsConflict(err) {
		t.Errorf("Guarded on a deleted object: got %v, want a Conflict", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "gone"}, &clusterv1.ManagedCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a guarded apply to the deleted ManagedCluster gone, reading it: %v, want NotFound (the apply created it again)", err)
	}
}

func get(t *testing.T, c client.Client, name string) *clusterv1.ManagedCluster {
	t.Helper()
	mc := &clusterv1.ManagedCluster{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

// hubAdmin starts a fleet for t and returns an admin client of its hub on the project's scheme.
func hubAdmin(t *testing.T, opts environment.Options) client.Client {
	t.Helper()
	fleet := fleettest.StartT(t, opts)
	scheme := runtime.NewScheme()
	if err := apischeme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
