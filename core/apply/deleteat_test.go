package apply_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/environment"
)

// TestDeleteAt runs against a real hub API server, which decides the UID precondition.
func TestDeleteAt(t *testing.T) {
	c := hubAdmin(t, environment.Options{Bare: true})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	create := func() *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ttl"}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatalf("creating ConfigMap default/ttl: %v", err)
		}
		return cm
	}
	exists := func() bool {
		t.Helper()
		err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "ttl"}, &corev1.ConfigMap{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("getting ConfigMap default/ttl: %v", err)
		}
		return err == nil
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	old := create()
	if left, err := apply.DeleteAt(ctx, c, old, now.Add(20*time.Second), now, "a test"); err != nil || left != 20*time.Second {
		t.Fatalf("before the deadline: left %s, err %v; want 20s, nil", left, err)
	}
	if !exists() {
		t.Fatal("deleted before its deadline")
	}

	// Recreated under the same name: the old copy's deadline spares the new object.
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	recreated := create()
	if left, err := apply.DeleteAt(ctx, c, old, now, now, "a test"); err == nil || !apierrors.IsConflict(err) || left != 0 {
		t.Fatalf("deadline of a copy with another UID: left %s, err %v; want 0 and the precondition's conflict", left, err)
	}
	if !exists() {
		t.Fatal("the recreated ConfigMap was deleted by the old one's deadline")
	}

	if left, err := apply.DeleteAt(ctx, c, recreated, now, now, "a test"); err != nil || left != 0 {
		t.Fatalf("at the deadline: left %s, err %v; want 0, nil", left, err)
	}
	if exists() {
		t.Fatal("still there after its deadline")
	}
	if _, err := apply.DeleteAt(ctx, c, recreated, now, now, "a test"); err != nil {
		t.Fatalf("deleting one already gone: %v", err)
	}
}
