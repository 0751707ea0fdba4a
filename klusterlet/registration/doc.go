// Package registration is the managed-cluster side of Flotilla's (and OCM's)
// double opt-in cluster registration.
//
// The agent starts from a bootstrap kubeconfig, creates its ManagedCluster and a
// CertificateSigningRequest on the hub, waits for the hub admin to approve the
// request and accept the cluster, and then keeps the ManagedCluster status, its
// heartbeat Lease and its client certificate fresh. The private key is generated
// here and only ever stored on the cluster the agent runs on: the managed cluster,
// or in hosted mode (Config.ManagementConfig) the management cluster, which holds
// the agent's namespace and Secrets while the managed cluster is reached through
// Config.ManagedConfig or the kubeconfig Secret Config.ManagedKubeconfigSecret
// (managedsecret).
//
// Files hold one concern each: identity (names and subjects), csr (requests and
// their status), certs (validity and rotation math), kubeconfig (bootstrap and
// hub kubeconfigs), transport (a hub connection whose client certificate can be
// swapped without a gap), secret (the hub kubeconfig secret), claims and status
// (what is reported on the ManagedCluster), lease (heartbeat), and agent (the
// loop tying them together).
package registration
