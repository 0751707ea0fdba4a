// Command csr-addon is the default CSRApproval plugin for add-on agents: it approves the
// CSRs the klusterlet files for the registrations of an add-on (the ManagedClusterAddOn's
// status.registrations), as OCM's add-on manager approves those of template add-ons.
//
// It approves a CSR when all of these hold, and abstains otherwise (the CSR then waits
// for the admin, or for the cluster to be accepted or the add-on enabled):
//
//   - it is an add-on CSR (labelled open-cluster-management.io/addon-name);
//   - the requester is an agent of the cluster the CSR is labelled with
//     (system:open-cluster-management:<cluster>:<agent>, in group
//     system:open-cluster-management:<cluster>);
//   - the cluster is accepted and the add-on is enabled on it (a ManagedClusterAddOn of that
//     name, not being deleted, in the cluster's namespace);
//   - the ManagedClusterAddOn has a registration for the CSR's signer;
//   - for kubernetes.io/kube-apiserver-client, the subject is the add-on's default identity
//     on that cluster: common name
//     system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent> and
//     organizations among system:open-cluster-management:cluster:<cluster>:addon:<addon>
//     (required), system:open-cluster-management:addon:<addon> and system:authenticated;
//   - for a custom signer (not kubernetes.io/...), the subject is the one registered for
//     that signer (or the default identity when none is).
//
// Other kubernetes.io signers are never approved. It takes no pluginConfig.
package main

import (
	"github.com/flotilla-dev/flotilla/plugins/csr-addon/rule"
	"github.com/flotilla-dev/flotilla/sdk/csrapproval"
)

func init() { csrapproval.Register(rule.Approver{}) }

func main() {}
