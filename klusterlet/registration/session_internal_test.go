package registration

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestHubErrorEndsSessionAfterRepeatedUnauthorized(t *testing.T) {
	s := &session{id: Identity{ClusterName: "c1", AgentName: "a1"}, end: make(chan endReason, 1)}
	unauthorized := apierrors.NewUnauthorized("certificate expired")
	for i := 1; i < unauthorizedLimit; i++ {
		err := s.hubError("reading ManagedCluster c1 on the hub", unauthorized)
		if !strings.Contains(err.Error(), "ManagedCluster c1") || !strings.Contains(err.Error(), s.id.CommonName()) {
			t.Fatalf("error %q does not name the object and identity", err)
		}
		select {
		case r := <-s.end:
			t.Fatalf("session ended after %d 401s: %v", i, r)
		default:
		}
	}
	// A success in between resets the count.
	s.hubOK()
	for range unauthorizedLimit - 1 {
		_ = s.hubError("x", unauthorized)
	}
	select {
	case r := <-s.end:
		t.Fatalf("count not reset by success: %v", r)
	default:
	}
	_ = s.hubError("x", unauthorized)
	select {
	case r := <-s.end:
		if !r.forceBootstrap || !strings.Contains(r.reason, "401") {
			t.Fatalf("end reason %+v", r)
		}
	default:
		t.Fatal("session not ended after repeated 401s")
	}

	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "managed-cluster-lease", errors.New("no RBAC"))
	err := s.hubError("renewing Lease c1/managed-cluster-lease on the hub", forbidden)
	if !strings.Contains(err.Error(), "hubAcceptsClient") || !apierrors.IsForbidden(errors.Unwrap(err)) && !apierrors.IsForbidden(err) {
		t.Fatalf("forbidden error %q", err)
	}
}
