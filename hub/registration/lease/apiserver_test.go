package lease

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
)

// laggingCache serves Leases as they were when the test froze them: the hub's cache when
// it falls behind thousands of renewals.
type laggingCache struct {
	client.Client
	leases map[client.ObjectKey]*coordinationv1.Lease
}

func (c laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if l, ok := obj.(*coordinationv1.Lease); ok && c.leases[key] != nil {
		c.leases[key].DeepCopyInto(l)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestLaggingCacheDoesNotMarkALiveClusterUnknown: the lease the cache holds expired, but the
// agent renewed it on the API server since: the cluster stays Available. When the API server
// agrees that it expired, the cluster goes Unknown.
func TestLaggingCacheDoesNotMarkALiveClusterUnknown(t *testing.T) {
	fleet := fleettest.StartT(t, environment.Options{})
	ctx := t.Context()
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: apischeme.New()})
	if err != nil {
		t.Fatal(err)
	}
	const name = "lagging1"
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{LeaseDurationSeconds: 60}}
	if err := c.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	mc.Status.Conditions = []metav1.Condition{
		{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue, Reason: "HubClusterAdminAccepted", LastTransitionTime: metav1.Now()},
		{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", LastTransitionTime: metav1.Now()},
	}
	if err := c.Status().Update(ctx, mc); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	renewed := metav1.NewMicroTime(now)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: Name}, Spec: coordinationv1.LeaseSpec{RenewTime: &renewed}}
	if err := c.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	stale := l.DeepCopy()
	old := metav1.NewMicroTime(now.Add(-10 * time.Minute))
	stale.Spec.RenewTime = &old
	r := &Reconciler{Client: laggingCache{Client: c, leases: map[client.ObjectKey]*coordinationv1.Lease{client.ObjectKeyFromObject(l): stale}},
		APIReader: c, Now: func() time.Time { return now.Add(time.Second) }}
	available := func() metav1.ConditionStatus {
		t.Helper()
		got := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(got.Status.Conditions, clusterv1.ManagedClusterConditionAvailable).Status
	}
	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		t.Fatal(err)
	}
	if s := available(); s != metav1.ConditionTrue {
		t.Fatalf("a cluster whose lease the API server shows renewed 1 s ago was marked Available=%s from a lagging cache", s)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > GracePeriod(mc) {
		t.Fatalf("requeue after %s, want the fresh lease's expiry (within %s)", res.RequeueAfter, GracePeriod(mc))
	}
	// Past the fresh lease's grace too: now it is stale on the API server as well.
	r.Now = func() time.Time { return now.Add(GracePeriod(mc) + time.Second) }
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
		t.Fatal(err)
	}
	if s := available(); s != metav1.ConditionUnknown {
		t.Fatalf("a lease stale on the API server too left the cluster Available=%s, want Unknown", s)
	}
}
