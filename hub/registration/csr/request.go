// Package csr approves or denies the CertificateSigningRequests of managed-cluster agents.
// The hub itself only rejects requests whose identity is wrong (subject not matching the
// cluster label, or an agent asking for another cluster's identity); every approval comes
// from CSRApproval Wasm plugins, or from the hub admin. Under the ManagedClusterAutoApproval
// gate a plugin's approval of a first-time CSR also accepts the cluster, as OCM's
// auto-approval does.
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
	// AddonNameLabel marks add-on CSRs, which later issues approve; registration skips them.
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
// which knows the ManagedCluster.
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
	return r, nil
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
