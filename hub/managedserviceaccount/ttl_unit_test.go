package managedserviceaccount

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

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
)

// TestTTLDeadline: the controller waits for exactly the time left, deletes once it ran out,
// and with the gate off (the default, as upstream's) deletes nothing.
func TestTTLDeadline(t *testing.T) {
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	on, err := featuregates.NewGate(featuregates.DefaultHubRegistrationFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	off := on.DeepCopy()
	if off.Enabled(featuregates.EphemeralIdentity) {
		t.Fatal("EphemeralIdentity is on by default; upstream has it off")
	}
	if err := on.SetFromMap(map[string]bool{string(featuregates.EphemeralIdentity): true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		ttl         *int32
		gateOn      bool
		age         time.Duration
		wantDeleted bool
		wantRequeue time.Duration
	}{
		{name: "no TTL is kept", gateOn: true, age: time.Hour},
		{name: "TTL running requeues for exactly the time left", ttl: ptr.To[int32](30), gateOn: true, age: 10 * time.Second, wantRequeue: 20 * time.Second},
		{name: "TTL reached is deleted", ttl: ptr.To[int32](30), gateOn: true, age: 30 * time.Second, wantDeleted: true},
		{name: "gate off keeps it past its TTL", ttl: ptr.To[int32](30), age: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &authv1beta1.ManagedServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "m", UID: "uid-1",
				CreationTimestamp: metav1.NewTime(created)}, Spec: authv1beta1.ManagedServiceAccountSpec{TTLSecondsAfterCreation: tc.ttl}}
			scheme := runtime.NewScheme()
			if err := apischeme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(m).Build()
			r := &TTLReconciler{Client: c, Gates: off, Now: func() time.Time { return created.Add(tc.age) }}
			if tc.gateOn {
				r.Gates = on
			}
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
			err = c.Get(context.Background(), client.ObjectKeyFromObject(m), &authv1beta1.ManagedServiceAccount{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDeleted {
				t.Errorf("deleted = %t (get: %v), want %t", deleted, err, tc.wantDeleted)
			}
		})
	}
}
