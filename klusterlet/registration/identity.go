package registration

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"strings"

	"github.com/google/uuid"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

const agentNameLength = 8

// Identity is who the agent is on the hub: the cluster it registers and the
// agent instance name that is part of its certificate common name.
type Identity struct {
	ClusterName string
	AgentName   string
}

// ClusterGroup is the group name the hub binds the cluster's RBAC to.
func ClusterGroup(clusterName string) string { return clusterv1.SubjectPrefix + clusterName }

// CommonName is the user name the agent authenticates as on the hub.
func (id Identity) CommonName() string {
	return fmt.Sprintf("%s%s:%s", clusterv1.SubjectPrefix, id.ClusterName, id.AgentName)
}

// Subject is the certificate subject the agent requests: the common name above,
// the per-cluster group and the group shared by all managed clusters (OCM adds
// the latter so the hub can grant every agent common permissions).
func (id Identity) Subject() pkix.Name {
	return pkix.Name{
		CommonName:   id.CommonName(),
		Organization: []string{ClusterGroup(id.ClusterName), clusterv1.ManagedClustersGroup},
	}
}

// Validate checks that both names can appear in object names and subjects.
func (id Identity) Validate() error {
	if errs := validation.IsDNS1123Label(id.ClusterName); len(errs) > 0 {
		return fmt.Errorf("cluster name %q is not a DNS-1123 label: %s", id.ClusterName, strings.Join(errs, "; "))
	}
	if id.AgentName == "" {
		return fmt.Errorf("agent name of cluster %q is empty", id.ClusterName)
	}
	if errs := validation.IsDNS1123Label(id.AgentName); len(errs) > 0 {
		return fmt.Errorf("agent name %q is not a DNS-1123 label: %s", id.AgentName, strings.Join(errs, "; "))
	}
	return nil
}

// MatchesCertificate reports whether cert was issued for this identity: the
// same common name and the per-cluster group among its organizations.
func (id Identity) MatchesCertificate(cert *x509.Certificate) bool {
	if cert.Subject.CommonName != id.CommonName() {
		return false
	}
	for _, o := range cert.Subject.Organization {
		if o == ClusterGroup(id.ClusterName) {
			return true
		}
	}
	return false
}

// IdentityFromCommonName parses "system:open-cluster-management:<cluster>:<agent>".
func IdentityFromCommonName(cn string) (Identity, bool) {
	rest, ok := strings.CutPrefix(cn, clusterv1.SubjectPrefix)
	if !ok {
		return Identity{}, false
	}
	cluster, agent, ok := strings.Cut(rest, ":")
	if !ok || cluster == "" || agent == "" || strings.Contains(agent, ":") {
		return Identity{}, false
	}
	return Identity{ClusterName: cluster, AgentName: agent}, true
}

// GenerateAgentName returns a fresh random agent name (lower-case letters and
// digits, a valid DNS label).
func GenerateAgentName() string { return utilrand.String(agentNameLength) }

// GenerateClusterName returns a fresh random cluster name; it is a UUID, as OCM
// uses when no name is configured.
func GenerateClusterName() string { return uuid.NewString() }
