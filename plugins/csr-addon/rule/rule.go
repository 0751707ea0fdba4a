// Package rule is the decision of the csr-addon CSRApproval plugin, kept apart from the
// plugin's main package so that the host's tests can run it natively. See the plugin's
// documentation (plugins/csr-addon) for what it approves.
package rule

import (
	"slices"
	"strings"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

const (
	identityPrefix = "system:open-cluster-management:"
	// KubeAPIServerClientSigner signs client certificates the hub API server trusts.
	KubeAPIServerClientSigner = "kubernetes.io/kube-apiserver-client"
	// AuthenticatedGroup is in OCM's default add-on groups.
	AuthenticatedGroup = "system:authenticated"
)

// ClusterAddonGroup is the group of an add-on's agents on one cluster (OCM's first default
// group, the one hub permissions are bound to).
func ClusterAddonGroup(cluster, addon string) string {
	return identityPrefix + "cluster:" + cluster + ":addon:" + addon
}

// AddonGroup is the group of an add-on's agents on every cluster.
func AddonGroup(addon string) string { return identityPrefix + "addon:" + addon }

// Approver is the plugin's logic; it takes no pluginConfig.
type Approver struct{}

func abstain(msg string) abi.CSRDecision {
	return abi.CSRDecision{Decision: abi.CSRAbstain, Message: msg}
}

// ReviewCSR implements csrapproval.Approver.
func (Approver) ReviewCSR(_ sdk.Host, r *abi.CSRReview) (abi.CSRDecision, error) {
	return Review(r), nil
}

// Review decides one CSR.
func Review(r *abi.CSRReview) abi.CSRDecision {
	if r.Addon == nil {
		return abstain("not an add-on CSR")
	}
	cluster, addon := r.ClusterName, r.Addon.Name
	if !isAgentOf(r.Username, r.Groups, cluster) {
		return abstain("requester " + r.Username + " is not an agent of cluster " + cluster)
	}
	if !r.ClusterAccepted {
		return abstain("cluster " + cluster + " is not accepted by the hub")
	}
	if !r.Addon.Enabled {
		return abstain("add-on " + addon + " is not enabled on cluster " + cluster + " (no ManagedClusterAddOn " + cluster + "/" + addon + ")")
	}
	i := slices.IndexFunc(r.Addon.Registrations, func(reg abi.CSRAddonRegistration) bool { return reg.SignerName == r.SignerName })
	if i < 0 {
		return abstain("ManagedClusterAddOn " + cluster + "/" + addon + " has no registration for signer " + r.SignerName)
	}
	switch {
	case r.SignerName == KubeAPIServerClientSigner:
		// The hub RBAC of the certificate is that of its subject, so only the add-on's own
		// default identity is approved, whatever status.registrations says.
		if !isDefaultIdentity(r.Subject, cluster, addon) {
			return abstain("subject " + describe(r.Subject) + " is not the default identity of add-on " + addon + " on cluster " + cluster)
		}
	case strings.HasPrefix(r.SignerName, "kubernetes.io/"):
		// Other Kubernetes signers issue certificates Kubernetes gives a meaning of its own
		// (kubelet client and serving certificates, ...).
		return abstain("signer " + r.SignerName + " is a Kubernetes signer other than " + KubeAPIServerClientSigner)
	default:
		reg := r.Addon.Registrations[i]
		if reg.User == "" {
			if !isDefaultIdentity(r.Subject, cluster, addon) {
				return abstain("subject " + describe(r.Subject) + " is not the default identity of add-on " + addon + " on cluster " + cluster)
			}
		} else if r.Subject.CommonName != reg.User || !sameSet(r.Subject.Organizations, reg.Groups) {
			return abstain("subject " + describe(r.Subject) + " is not the one registered for signer " + r.SignerName)
		}
	}
	return abi.CSRDecision{Decision: abi.CSRApprove,
		Message: "add-on " + addon + " is enabled on accepted cluster " + cluster + " and requests " + describe(r.Subject) + " from " + r.SignerName}
}

// isAgentOf reports whether username/groups is an agent identity of cluster:
// system:open-cluster-management:<cluster>:<agent> in group system:open-cluster-management:<cluster>.
func isAgentOf(username string, groups []string, cluster string) bool {
	agent, ok := strings.CutPrefix(username, identityPrefix+cluster+":")
	return ok && agent != "" && !strings.Contains(agent, ":") && slices.Contains(groups, identityPrefix+cluster)
}

// isDefaultIdentity reports whether s is OCM's default add-on agent identity on cluster:
// common name system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent>
// and organizations among the default groups, the per-cluster one included.
func isDefaultIdentity(s abi.CSRSubject, cluster, addon string) bool {
	group := ClusterAddonGroup(cluster, addon)
	agent, ok := strings.CutPrefix(s.CommonName, group+":agent:")
	if !ok || agent == "" || strings.Contains(agent, ":") || !slices.Contains(s.Organizations, group) {
		return false
	}
	for _, o := range s.Organizations {
		if o != group && o != AddonGroup(addon) && o != AuthenticatedGroup {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

func describe(s abi.CSRSubject) string {
	return "CN=" + s.CommonName + " O=[" + strings.Join(s.Organizations, ",") + "]"
}
