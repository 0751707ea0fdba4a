// Command csr-renewal is the default CSRApproval plugin: it approves the
// certificate renewals of accepted managed clusters' agents, so a cluster that was
// accepted once keeps working without an admin approving every rotation.
//
// It approves when the request is a renewal (the requester is the cluster's own
// agent identity), the cluster is accepted, and the requester, the subject common
// name and the subject organizations all name that cluster:
//
//	username == subject.commonName == system:open-cluster-management:<cluster>:<agent>
//	subject.organizations contains   system:open-cluster-management:<cluster>
//
// It denies an agent of one cluster asking for an identity of another, and
// abstains on everything else (first-time registrations are for the admin or for
// csr-autoapprove). It takes no pluginConfig.
package main

import (
	"slices"
	"strings"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/csrapproval"
)

// identityPrefix starts every managed-cluster agent identity.
const identityPrefix = "system:open-cluster-management:"

type renewal struct{}

func init() { csrapproval.Register(renewal{}) }

func main() {}

// agentIdentity splits system:open-cluster-management:<cluster>:<agent>.
func agentIdentity(name string) (cluster, agent string, ok bool) {
	rest, ok := strings.CutPrefix(name, identityPrefix)
	if !ok {
		return "", "", false
	}
	cluster, agent, ok = strings.Cut(rest, ":")
	if !ok || cluster == "" || agent == "" || strings.Contains(agent, ":") {
		return "", "", false
	}
	return cluster, agent, true
}

func abstain(msg string) (abi.CSRDecision, error) {
	return abi.CSRDecision{Decision: abi.CSRAbstain, Message: msg}, nil
}

func (renewal) ReviewCSR(_ sdk.Host, r *abi.CSRReview) (abi.CSRDecision, error) {
	cnCluster, _, cnOK := agentIdentity(r.Subject.CommonName)
	fromCluster, _, fromOK := agentIdentity(r.Username)
	if cnOK && fromOK && cnCluster != fromCluster {
		return abi.CSRDecision{Decision: abi.CSRDeny,
			Message: "requester " + r.Username + " is an agent of cluster " + fromCluster + " and may not obtain an identity of cluster " + cnCluster}, nil
	}
	switch {
	case !r.Renewal:
		return abstain("not a renewal")
	case !r.ClusterAccepted:
		return abstain("cluster " + r.ClusterName + " is not accepted by the hub")
	case !cnOK || cnCluster != r.ClusterName:
		return abstain("subject common name " + r.Subject.CommonName + " is not an agent identity of cluster " + r.ClusterName)
	case r.Username != r.Subject.CommonName:
		return abstain("requester " + r.Username + " is not the subject " + r.Subject.CommonName)
	case !slices.Contains(r.Subject.Organizations, identityPrefix+r.ClusterName):
		return abstain("subject organizations do not include " + identityPrefix + r.ClusterName)
	}
	return abi.CSRDecision{Decision: abi.CSRApprove, Message: "renewal of " + r.Subject.CommonName}, nil
}
