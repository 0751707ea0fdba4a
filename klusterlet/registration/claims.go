package registration

import (
	"sort"
	"strings"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

// ClaimSet is what the agent reports in status.clusterClaims.
type ClaimSet struct {
	// Claims are the reserved claims (sorted by name) followed by at most the
	// configured number of custom claims (sorted by name).
	Claims []clusterv1.ManagedClusterClaim
	// CustomFound is how many custom claims were eligible; when it exceeds the
	// limit, CustomFound-limit of them were dropped.
	CustomFound int
	// Dropped is how many custom claims were left out because of the limit.
	Dropped int
}

// CollectClaims builds the reported claims from the ClusterClaims on the managed
// cluster. defaults supplies reserved claims the agent derives itself (id.k8s.io,
// kubeversion...); a ClusterClaim object of the same name wins over a default.
// Claims labelled open-cluster-management.io/spoke-only are never reported.
// maxCustom < 0 reports no custom claims. A claim whose name ends with one of
// reservedSuffixes is reserved too (OCM's --reserved-cluster-claim-suffixes).
func CollectClaims(objects []clusterv1alpha1.ClusterClaim, defaults map[string]string, maxCustom int, reservedSuffixes ...string) ClaimSet {
	reserved := map[string]string{}
	for name, value := range defaults {
		if value != "" {
			reserved[name] = value
		}
	}
	var custom []clusterv1.ManagedClusterClaim
	for i := range objects {
		c := &objects[i]
		if _, spokeOnly := c.Labels[clusterv1alpha1.ClusterClaimSpokeOnlyLabel]; spokeOnly {
			continue
		}
		if c.DeletionTimestamp != nil || c.Spec.Value == "" {
			continue
		}
		if clusterv1alpha1.IsReservedClusterClaimName(c.Name) || hasAnySuffix(c.Name, reservedSuffixes) {
			reserved[c.Name] = c.Spec.Value
			continue
		}
		custom = append(custom, clusterv1.ManagedClusterClaim{Name: c.Name, Value: c.Spec.Value})
	}

	out := ClaimSet{CustomFound: len(custom)}
	for _, name := range sortedKeys(reserved) {
		out.Claims = append(out.Claims, clusterv1.ManagedClusterClaim{Name: name, Value: reserved[name]})
	}
	sort.Slice(custom, func(i, j int) bool { return custom[i].Name < custom[j].Name })
	limit := max(maxCustom, 0)
	if len(custom) > limit {
		out.Dropped = len(custom) - limit
		custom = custom[:limit]
	}
	out.Claims = append(out.Claims, custom...)
	return out
}

func hasAnySuffix(name string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
