package registration

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

func claim(name, value string, labels map[string]string) clusterv1alpha1.ClusterClaim {
	return clusterv1alpha1.ClusterClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       clusterv1alpha1.ClusterClaimSpec{Value: value},
	}
}

func names(cs []clusterv1.ManagedClusterClaim) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name + "=" + c.Value
	}
	return out
}

func TestCollectClaims(t *testing.T) {
	defaults := map[string]string{
		clusterv1alpha1.ClusterClaimID:          "uid-1",
		clusterv1alpha1.ClusterClaimKubeVersion: "v1.36.3",
	}
	objects := []clusterv1alpha1.ClusterClaim{
		claim("zone", "eu", nil),
		claim("a.example.com", "1", nil),
		claim("secret.example.com", "s", map[string]string{clusterv1alpha1.ClusterClaimSpokeOnlyLabel: ""}),
		claim(clusterv1alpha1.ClusterClaimID, "my-cluster", nil),
		claim(clusterv1alpha1.ClusterClaimPlatform, "AWS", nil),
		claim("empty", "", nil),
	}
	got := CollectClaims(objects, defaults, 20)
	want := []string{
		"id.k8s.io=my-cluster", // the object overrides the derived id
		"kubeversion.open-cluster-management.io=v1.36.3",
		"platform.open-cluster-management.io=AWS",
		"a.example.com=1",
		"zone=eu",
	}
	if !slices.Equal(names(got.Claims), want) {
		t.Fatalf("claims = %v, want %v", names(got.Claims), want)
	}
	if got.Dropped != 0 || got.CustomFound != 2 {
		t.Fatalf("dropped %d found %d", got.Dropped, got.CustomFound)
	}

	// A spoke-only reserved claim does not override the derived value.
	got = CollectClaims([]clusterv1alpha1.ClusterClaim{
		claim(clusterv1alpha1.ClusterClaimID, "hidden", map[string]string{clusterv1alpha1.ClusterClaimSpokeOnlyLabel: "true"}),
	}, defaults, 20)
	if got.Claims[0].Value != "uid-1" {
		t.Fatalf("spoke-only id claim leaked: %v", names(got.Claims))
	}
}

func TestCollectClaimsLimit(t *testing.T) {
	var objects []clusterv1alpha1.ClusterClaim
	for i := 24; i >= 0; i-- { // reverse order: the result must still be sorted
		objects = append(objects, claim(fmt.Sprintf("c%02d", i), "v", nil))
	}
	objects = append(objects, claim(clusterv1alpha1.ClusterClaimProduct, "Flotilla", nil))

	got := CollectClaims(objects, nil, 20)
	if len(got.Claims) != 21 || got.Claims[0].Name != clusterv1alpha1.ClusterClaimProduct {
		t.Fatalf("claims = %v", names(got.Claims))
	}
	if got.Claims[1].Name != "c00" || got.Claims[20].Name != "c19" {
		t.Fatalf("custom claims not the first 20 by name: %v", names(got.Claims))
	}
	if got.CustomFound != 25 || got.Dropped != 5 {
		t.Fatalf("found %d dropped %d", got.CustomFound, got.Dropped)
	}

	got = CollectClaims(objects, nil, -1)
	if len(got.Claims) != 1 || got.Dropped != 25 {
		t.Fatalf("limit -1: %v dropped %d", names(got.Claims), got.Dropped)
	}
	got = CollectClaims(objects, nil, 3)
	if !slices.Equal(names(got.Claims), []string{"product.open-cluster-management.io=Flotilla", "c00=v", "c01=v", "c02=v"}) {
		t.Fatalf("limit 3: %v", names(got.Claims))
	}
}

// TestCollectClaimsReservedSuffixes checks OCM's --reserved-cluster-claim-suffixes: a claim
// ending with a suffix is reported among the reserved ones, regardless of the custom cap.
func TestCollectClaimsReservedSuffixes(t *testing.T) {
	objects := []clusterv1alpha1.ClusterClaim{
		claim("a.custom.io", "1", nil),
		claim("region.infra.example.com", "eu", nil),
		claim("b.custom.io", "2", nil),
	}
	got := CollectClaims(objects, nil, 1, ".infra.example.com")
	if want := []string{"region.infra.example.com=eu", "a.custom.io=1"}; !slices.Equal(names(got.Claims), want) {
		t.Fatalf("claims = %v, want %v", names(got.Claims), want)
	}
	if got.CustomFound != 2 || got.Dropped != 1 {
		t.Fatalf("found %d dropped %d, want 2 and 1", got.CustomFound, got.Dropped)
	}
}
