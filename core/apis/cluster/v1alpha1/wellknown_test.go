package v1alpha1

import "testing"

func TestReservedClusterClaimNames(t *testing.T) {
	names := ReservedClusterClaimNames()
	want := []string{"id.k8s.io", "kubeversion.open-cluster-management.io", "platform.open-cluster-management.io", "product.open-cluster-management.io"}
	if len(names) != len(want) {
		t.Fatalf("got %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("name %d = %q, want %q", i, names[i], want[i])
		}
		if !IsReservedClusterClaimName(want[i]) {
			t.Errorf("%q should be reserved", want[i])
		}
	}
	names[0] = "changed"
	if ReservedClusterClaimNames()[0] != "id.k8s.io" {
		t.Error("changing the returned slice changed the reserved names")
	}
	for _, n := range []string{"", "id.open-cluster-management.io", "region.open-cluster-management.io", "ID.K8S.IO"} {
		if IsReservedClusterClaimName(n) {
			t.Errorf("%q should not be reserved", n)
		}
	}
}
