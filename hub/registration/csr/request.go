// Package csr approves or denies the CertificateSigningRequests of managed-cluster agents.
// The hub itself only rejects requests whose identity is wrong (subject not matching the
// cluster label, or an agent asking for another cluster's identity); every approval comes
// from CSRApproval Wasm plugins, or from the hub admin. A renewal (a CSR filed by the agent
// identity it asks for) reaches the plugins only when a SubjectAccessReview lets its
// requester renew (verb renew on managedclusters/clientcertificates, as OCM checks);
// otherwise it waits with a CSRRenewalNotAuthorized Event, whatever the plugins would say. Under the ManagedClusterAutoApproval
// gate a plugin's approval of a first-time CSR also accepts the cluster, as OCM's
// auto-approval does.
//
// CSRs of add-on agents (labelled open-cluster-management.io/addon-name, filed by the
// klusterlet for the registrations of a ManagedClusterAddOn) go through the same plugins with
// abi.CSRReview.Addon set: the built-in csr-addon plugin approves those of add-ons enabled on
// accepted clusters. The hub itself only denies add-on CSRs filed by another cluster's agent or
// asking for a cluster agent's (or system:masters') identity; an add-on CSR no plugin decides
// waits, with an Event, and never accepts a cluster.
package csr

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

const (
	// ClusterNameLabel marks the CSRs of a managed cluster's registration agent.
	ClusterNameLabel = rbac.ClusterNameLabel
	// AddonNameLabel marks the CSRs of add-on agents (filed by the klusterlet for the add-on's
	// registrations); they are reviewed as add-on CSRs (Request.Addon set).
	AddonNameLabel = "open-cluster-management.io/addon-name"

	identityPrefix = clusterv1.SubjectPrefix
)

// Subject is the parsed subject of the requested certificate.
type Subject = abi.CSRSubject

// Request is what a CSRApproval plugin is shown: the review_csr input of the Wasm ABI.
type Request = abi.CSRReview

// IsRegistrationCSR reports whether csr belongs to a registration agent: it carries the
// cluster-name label, is not an add-on CSR, and asks the kube-apiserver client signer.
func IsRegistrationCSR(csr *certificatesv1.CertificateSigningRequest) bool {
	if csr.Labels[ClusterNameLabel] == "" {
		return false
	}
	if _, addon := csr.Labels[AddonNameLabel]; addon {
		return false
	}
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientSignerName
}

// IsAddonCSR reports whether csr belongs to an add-on agent: it carries the cluster-name and
// addon-name labels. Any signer: add-on registrations may name custom signers.
func IsAddonCSR(csr *certificatesv1.CertificateSigningRequest) bool {
	return csr.Labels[ClusterNameLabel] != "" && csr.Labels[AddonNameLabel] != ""
}

// IsReviewedCSR reports whether the hub shows csr to the CSRApproval plugins: a registration
// or an add-on CSR.
func IsReviewedCSR(csr *certificatesv1.CertificateSigningRequest) bool {
	return IsRegistrationCSR(csr) || IsAddonCSR(csr)
}

// IsPending reports whether csr has neither been decided nor failed.
func IsPending(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		}
	}
	return len(csr.Status.Certificate) == 0
}

// Parse decodes csr into a Request. ClusterExists and ClusterAccepted are left for the caller,
// which knows the ManagedCluster; for an add-on CSR so are Addon.Enabled and
// Addon.Registrations, which come from its ManagedClusterAddOn.
func Parse(csr *certificatesv1.CertificateSigningRequest) (Request, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return Request{}, fmt.Errorf("CertificateSigningRequest %s: spec.request is not a PEM CERTIFICATE REQUEST", csr.Name)
	}
	x, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return Request{}, fmt.Errorf("CertificateSigningRequest %s: spec.request: %w", csr.Name, err)
	}
	usages := make([]string, 0, len(csr.Spec.Usages))
	for _, u := range csr.Spec.Usages {
		usages = append(usages, string(u))
	}
	r := Request{
		Name:        csr.Name,
		SignerName:  csr.Spec.SignerName,
		Username:    csr.Spec.Username,
		UID:         csr.Spec.UID,
		Groups:      slices.Clone(csr.Spec.Groups),
		Usages:      usages,
		Subject:     Subject{CommonName: x.Subject.CommonName, Organizations: slices.Clone(x.Subject.Organization)},
		ClusterName: csr.Labels[ClusterNameLabel],
	}
	if r.Groups == nil {
		r.Groups = []string{}
	}
	if r.Subject.Organizations == nil {
		r.Subject.Organizations = []string{}
	}
	// A renewal is requested by the very identity the certificate is for: the agent's current
	// certificate authenticates as CN=user, O=group.
	r.Renewal = r.Username == r.Subject.CommonName && slices.Contains(r.Groups, identityPrefix+r.ClusterName)
	if IsAddonCSR(csr) {
		// The klusterlet files add-on CSRs with the cluster agent's identity: never a renewal of
		// a registration agent's certificate.
		r.Renewal = false
		r.Addon = &abi.CSRAddon{Name: csr.Labels[AddonNameLabel], Registrations: []abi.CSRAddonRegistration{}}
	}
	return r, nil
}

// CheckAddonIdentity is CheckIdentity for add-on CSRs: it returns a non-empty reason when the
// request must be denied whatever the plugins say. An add-on CSR filed by an agent of another
// cluster is denied, and so is a kube-apiserver-client certificate that would authenticate as
// a managed cluster's agent (its user or groups) or as system:masters: add-on agents may get
// any other identity their add-on manager approves, never the klusterlet's own.
func CheckAddonIdentity(r Request) string {
	cluster := r.ClusterName
	if from := RequesterCluster(r.Username, r.Groups); from != "" && from != cluster {
		return fmt.Sprintf("requester %q is an agent of cluster %q and may not request an add-on certificate of cluster %q", r.Username, from, cluster)
	}
	if r.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return ""
	}
	if isAgentUser(r.Subject.CommonName) {
		return fmt.Sprintf("subject common name %q is a managed cluster agent's identity, not an add-on's", r.Subject.CommonName)
	}
	for _, o := range r.Subject.Organizations {
		if o == "system:masters" || o == clusterv1.ManagedClustersGroup || isClusterGroup(o) {
			return fmt.Sprintf("subject organization %q is not allowed for an add-on agent", o)
		}
	}
	return ""
}

// isClusterGroup reports whether g is system:open-cluster-management:<cluster>, the group of a
// cluster's agents (add-on groups have further segments).
func isClusterGroup(g string) bool {
	rest, ok := strings.CutPrefix(g, identityPrefix)
	return ok && rest != "" && !strings.Contains(rest, ":")
}

// isAgentUser reports whether u is system:open-cluster-management:<cluster>:<agent>.
func isAgentUser(u string) bool {
	rest, ok := strings.CutPrefix(u, identityPrefix)
	if !ok {
		return false
	}
	cluster, agent, ok := strings.Cut(rest, ":")
	return ok && cluster != "" && agent != "" && !strings.Contains(agent, ":")
}

// CheckIdentity returns a non-empty reason when the request must be denied whatever the
// plugins say: its subject is not a valid agent identity of the labelled cluster, or it comes
// from an agent of a different cluster (an agent must never obtain another cluster's identity).
func CheckIdentity(r Request) string {
	cluster := r.ClusterName
	group := identityPrefix + cluster
	// The organizations are the cluster's group and, optionally, the group of all managed clusters.
	if !slices.Contains(r.Subject.Organizations, group) {
		return fmt.Sprintf("subject organizations %v must include %s for cluster %q", r.Subject.Organizations, group, cluster)
	}
	for _, o := range r.Subject.Organizations {
		if o != group && o != clusterv1.ManagedClustersGroup {
			return fmt.Sprintf("subject organization %q is not allowed for an agent of cluster %q", o, cluster)
		}
	}
	agent, ok := strings.CutPrefix(r.Subject.CommonName, group+":")
	if !ok || agent == "" || strings.Contains(agent, ":") {
		return fmt.Sprintf("subject common name %q must be %s:<agent name>", r.Subject.CommonName, group)
	}
	if from := RequesterCluster(r.Username, r.Groups); from != "" && from != cluster {
		return fmt.Sprintf("requester %q is an agent of cluster %q and may not request an identity of cluster %q", r.Username, from, cluster)
	}
	return ""
}

// RequesterCluster returns the cluster whose agent identity username/groups is, or "".
func RequesterCluster(username string, groups []string) string {
	rest, ok := strings.CutPrefix(username, identityPrefix)
	if !ok {
		return ""
	}
	i := strings.LastIndex(rest, ":")
	if i <= 0 {
		return ""
	}
	cluster := rest[:i]
	if !slices.Contains(groups, identityPrefix+cluster) {
		return ""
	}
	return cluster
}

// eventTarget is the object reference Events about a CSR are recorded against.
func eventTarget(csr *certificatesv1.CertificateSigningRequest) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: certificatesv1.SchemeGroupVersion.String(),
		Kind:       "CertificateSigningRequest",
		Name:       csr.Name,
		UID:        csr.UID,
	}
}
