package rule

import "github.com/flotilla-dev/flotilla/sdk/abi"

// Case is one review and the expected decision, shared by this package's tests and the
// plugin's test of the shipped module.
type Case struct {
	Name   string
	Modify func(*abi.CSRReview)
	Want   abi.CSRDecisionKind
	// Msg is contained in the decision's message.
	Msg string
}

const (
	caseAgent     = "system:open-cluster-management:cluster1:agent1"
	caseAddonUser = "system:open-cluster-management:cluster:cluster1:addon:helloworld:agent:helloworld-agent"
)

// Sample is a well-formed KubeClient CSR of add-on helloworld on cluster1, filed by the
// cluster's agent, which Review approves.
func Sample() abi.CSRReview {
	groups := []string{ClusterAddonGroup("cluster1", "helloworld"), AddonGroup("helloworld"), AuthenticatedGroup}
	return abi.CSRReview{
		Name:        "addon-cluster1-helloworld-abc",
		SignerName:  KubeAPIServerClientSigner,
		Username:    caseAgent,
		Groups:      []string{"system:open-cluster-management:cluster1", "system:open-cluster-management:managed-clusters", "system:authenticated"},
		Usages:      []string{"digital signature", "key encipherment", "client auth"},
		Subject:     abi.CSRSubject{CommonName: caseAddonUser, Organizations: groups},
		ClusterName: "cluster1", ClusterExists: true, ClusterAccepted: true,
		Addon: &abi.CSRAddon{Name: "helloworld", Enabled: true, Registrations: []abi.CSRAddonRegistration{
			{SignerName: KubeAPIServerClientSigner, User: caseAddonUser, Groups: groups},
			{SignerName: "example.com/custom", User: "custom-user", Groups: []string{"custom-group"}},
			{SignerName: "example.com/default"},
			{SignerName: "kubernetes.io/kubelet-serving", User: "system:node:n1", Groups: []string{"system:nodes"}},
		}},
	}
}

// Cases are the decisions Review must make.
func Cases() []Case {
	return []Case{
		{"default identity of an enabled add-on", func(*abi.CSRReview) {}, abi.CSRApprove, "add-on helloworld is enabled on accepted cluster cluster1"},
		{"one organization (the klusterlet's default)", func(r *abi.CSRReview) {
			r.Subject.Organizations = []string{ClusterAddonGroup("cluster1", "helloworld")}
		}, abi.CSRApprove, "enabled"},
		{"registration CSR", func(r *abi.CSRReview) { r.Addon = nil }, abi.CSRAbstain, "not an add-on CSR"},
		{"add-on not enabled", func(r *abi.CSRReview) { r.Addon.Enabled = false }, abi.CSRAbstain, "not enabled on cluster cluster1"},
		{"cluster not accepted", func(r *abi.CSRReview) { r.ClusterAccepted = false }, abi.CSRAbstain, "not accepted"},
		{"requester is not an agent", func(r *abi.CSRReview) {
			r.Username = "system:serviceaccount:open-cluster-management:cluster-bootstrap"
		}, abi.CSRAbstain, "is not an agent of cluster cluster1"},
		{"requester lacks the cluster group", func(r *abi.CSRReview) { r.Groups = []string{"system:authenticated"} }, abi.CSRAbstain, "is not an agent"},
		{"requester is an agent of another cluster", func(r *abi.CSRReview) {
			r.Username = "system:open-cluster-management:cluster2:agent1"
			r.Groups = []string{"system:open-cluster-management:cluster2"}
		}, abi.CSRAbstain, "is not an agent of cluster cluster1"},
		{"extra organization", func(r *abi.CSRReview) {
			r.Subject.Organizations = append(r.Subject.Organizations, "system:masters")
		}, abi.CSRAbstain, "not the default identity"},
		{"status registration claims another subject", func(r *abi.CSRReview) {
			r.Subject = abi.CSRSubject{CommonName: "admin", Organizations: []string{"system:masters"}}
			r.Addon.Registrations[0].User, r.Addon.Registrations[0].Groups = "admin", []string{"system:masters"}
		}, abi.CSRAbstain, "not the default identity"},
		{"identity of another add-on", func(r *abi.CSRReview) {
			r.Subject.CommonName = "system:open-cluster-management:cluster:cluster1:addon:other:agent:a"
			r.Subject.Organizations = []string{ClusterAddonGroup("cluster1", "other")}
		}, abi.CSRAbstain, "not the default identity"},
		{"identity on another cluster", func(r *abi.CSRReview) {
			r.Subject.CommonName = "system:open-cluster-management:cluster:cluster2:addon:helloworld:agent:a"
			r.Subject.Organizations = []string{ClusterAddonGroup("cluster2", "helloworld")}
		}, abi.CSRAbstain, "not the default identity"},
		{"agent part with a colon", func(r *abi.CSRReview) { r.Subject.CommonName += ":x" }, abi.CSRAbstain, "not the default identity"},
		{"no registration for the signer", func(r *abi.CSRReview) { r.Addon.Registrations = nil }, abi.CSRAbstain, "has no registration for signer " + KubeAPIServerClientSigner},
		{"custom signer with its registered subject", func(r *abi.CSRReview) {
			r.SignerName = "example.com/custom"
			r.Subject = abi.CSRSubject{CommonName: "custom-user", Organizations: []string{"custom-group"}}
		}, abi.CSRApprove, "example.com/custom"},
		{"custom signer with another subject", func(r *abi.CSRReview) {
			r.SignerName = "example.com/custom"
			r.Subject = abi.CSRSubject{CommonName: "custom-user", Organizations: []string{"other"}}
		}, abi.CSRAbstain, "not the one registered for signer example.com/custom"},
		{"custom signer without a registered subject takes the default identity", func(r *abi.CSRReview) {
			r.SignerName = "example.com/default"
		}, abi.CSRApprove, "example.com/default"},
		{"custom signer without a registered subject, other identity", func(r *abi.CSRReview) {
			r.SignerName = "example.com/default"
			r.Subject = abi.CSRSubject{CommonName: "x"}
		}, abi.CSRAbstain, "not the default identity"},
		{"another Kubernetes signer", func(r *abi.CSRReview) {
			r.SignerName = "kubernetes.io/kubelet-serving"
			r.Subject = abi.CSRSubject{CommonName: "system:node:n1", Organizations: []string{"system:nodes"}}
		}, abi.CSRAbstain, "is a Kubernetes signer"},
	}
}
