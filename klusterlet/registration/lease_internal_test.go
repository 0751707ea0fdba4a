package registration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// leaseSession is a session whose hub is a fake clientset, for renewLease alone.
func leaseSession(t *testing.T) (*session, *kubefake.Clientset, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	hub := kubefake.NewClientset()
	s := &session{
		a:       &Agent{cfg: Config{Clock: clk}, log: logr.Discard()},
		id:      Identity{ClusterName: "c1", AgentName: "a1"},
		hubKube: hub,
		end:     make(chan endReason, 1),
	}
	s.leaseSeconds.Store(60)
	return s, hub, clk
}

// hubLease is the Lease as the hub's lease controller creates it: no duration, an old renew time.
func hubLease() *coordinationv1.Lease {
	old := metav1.NewMicroTime(time.Date(2030, 1, 1, 11, 0, 0, 0, time.UTC))
	holder := LeaseName
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: "c1", Labels: map[string]string{clusterv1.ClusterNameLabelKey: "c1"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &old},
	}
}

func renewTime(t *testing.T, hub *kubefake.Clientset) time.Time {
	t.Helper()
	l, err := hub.CoordinationV1().Leases("c1").Get(context.Background(), LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.RenewTime == nil {
		t.Fatal("lease has no renew time")
	}
	return l.Spec.RenewTime.Time
}

// conflictUpdates makes the next *n updates of the Lease fail with a Conflict.
func conflictUpdates(hub *kubefake.Clientset, n *int) {
	hub.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if *n == 0 {
			return false, nil, nil
		}
		*n--
		return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), LeaseName, nil)
	})
}

func countVerbs(hub *kubefake.Clientset) map[string]int {
	n := map[string]int{}
	for _, a := range hub.Actions() {
		if a.GetResource().Resource == "leases" {
			n[a.GetVerb()]++
		}
	}
	return n
}

func TestRenewLeaseCreatesAMissingLease(t *testing.T) {
	s, hub, clk := leaseSession(t)
	if err := s.renewLease(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := hub.CoordinationV1().Leases("c1").Get(context.Background(), LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Spec.RenewTime.Time.Equal(clk.Now()) || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 60 ||
		l.Labels[clusterv1.ClusterNameLabelKey] != "c1" {
		t.Fatalf("created lease %+v", l)
	}
}

// The hub's lease controller creates the Lease between the agent's read (not found) and its
// create: the create fails with AlreadyExists, and the agent renews the hub's Lease instead of
// reporting an error.
func TestRenewLeaseRenewsALeaseCreatedConcurrently(t *testing.T) {
	s, hub, clk := leaseSession(t)
	raced := false
	hub.PrependReactor("create", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		if err := hub.Tracker().Add(hubLease()); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(coordinationv1.Resource("leases"), LeaseName)
	})
	if err := s.renewLease(context.Background()); err != nil {
		t.Fatalf("a lease created by someone else between get and create: %v", err)
	}
	if !raced {
		t.Fatal("the agent did not try to create the lease")
	}
	if n := countVerbs(hub); n["create"] != 1 || n["update"] != 1 || n["get"] != 2 {
		t.Fatalf("lease calls %v, want one create, then a get and an update", n)
	}
	if got := renewTime(t, hub); !got.Equal(clk.Now()) {
		t.Fatalf("renew time %v, want %v: the lease the hub created was not renewed", got, clk.Now())
	}
}

// An update that conflicts (the Lease changed since it was read) is retried with a fresh read.
func TestRenewLeaseRetriesAConflict(t *testing.T) {
	s, hub, clk := leaseSession(t)
	if err := hub.Tracker().Add(hubLease()); err != nil {
		t.Fatal(err)
	}
	conflicts := 1
	conflictUpdates(hub, &conflicts)
	if err := s.renewLease(context.Background()); err != nil {
		t.Fatalf("one conflicting update: %v", err)
	}
	if n := countVerbs(hub); n["update"] != 2 || n["get"] != 2 {
		t.Fatalf("lease calls %v, want two reads and two updates", n)
	}
	if got := renewTime(t, hub); !got.Equal(clk.Now()) {
		t.Fatalf("renew time %v, want %v", got, clk.Now())
	}

	// A lease that keeps conflicting is reported, after a bounded number of tries.
	conflicts = 1000
	hub.ClearActions()
	err := s.renewLease(context.Background())
	if err == nil || !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "renewing Lease c1/"+LeaseName) {
		t.Fatalf("lasting conflict: %v", err)
	}
	if n := countVerbs(hub); n["update"] > 10 {
		t.Fatalf("%d updates for a lasting conflict", n["update"])
	}
}

// The heartbeat loop records no error when it loses the create race to the hub.
func TestLeaseLoopRecordsNoErrorForARacingCreate(t *testing.T) {
	s, hub, clk := leaseSession(t)
	s.leaseWake = newNotifier()
	s.accepted.Store(true)
	hub.PrependReactor("create", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if err := hub.Tracker().Add(hubLease()); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Error(err)
		}
		return true, nil, apierrors.NewAlreadyExists(coordinationv1.Resource("leases"), LeaseName)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.leaseLoop(ctx)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for countVerbs(hub)["update"] == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if st := s.a.State(); st.LastError != "" {
		t.Fatalf("LastError %q after the hub created the lease first", st.LastError)
	}
	if got := renewTime(t, hub); !got.Equal(clk.Now()) {
		t.Fatalf("renew time %v, want %v", got, clk.Now())
	}
}

// A renewal after the first writes the Lease as the session last wrote it, without reading it
// (one request per heartbeat); when that update conflicts, the Lease is read again.
func TestRenewLeaseUpdatesItsLastCopy(t *testing.T) {
	s, hub, clk := leaseSession(t)
	if err := hub.Tracker().Add(hubLease()); err != nil {
		t.Fatal(err)
	}
	if err := s.renewLease(context.Background()); err != nil {
		t.Fatal(err)
	}
	hub.ClearActions()
	clk.Step(time.Minute)
	if err := s.renewLease(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countVerbs(hub); n["update"] != 1 || n["get"] != 0 {
		t.Fatalf("lease calls %v for a renewal, want one update and no read", n)
	}
	if got := renewTime(t, hub); !got.Equal(clk.Now()) {
		t.Fatalf("renew time %v, want %v", got, clk.Now())
	}

	conflicts := 1
	conflictUpdates(hub, &conflicts)
	hub.ClearActions()
	clk.Step(time.Minute)
	if err := s.renewLease(context.Background()); err != nil {
		t.Fatalf("a renewal whose copy is stale: %v", err)
	}
	if n := countVerbs(hub); n["update"] != 2 || n["get"] != 1 {
		t.Fatalf("lease calls %v, want the update from the copy, a read and an update", n)
	}
	if got := renewTime(t, hub); !got.Equal(clk.Now()) {
		t.Fatalf("renew time %v, want %v", got, clk.Now())
	}
}
