package registration

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
)

// HostingClusterClaimName is the reserved claim Config.HostingClusterClaim reports. It is the
// name Flotilla's Klusterlet API documents for deployOption.reportHostingCluster (OCM's
// KEP-188); the OCM sources Flotilla follows do not define it yet.
const HostingClusterClaimName = "hosting-cluster.open-cluster-management.io"

// ExternalServer is one entry of the ManagedCluster's spec.managedClusterClientConfigs: how
// the hub reaches this cluster's API server.
type ExternalServer struct {
	URL string
	// CABundle trusts URL's serving certificate; empty: Config.ManagedClusterCABundle.
	CABundle []byte
}

// klusterletFieldDefaults validates the fields that carry the Klusterlet's settings.
func (c *Config) klusterletFieldDefaults() error {
	for i, s := range c.ExternalServers {
		u, err := url.Parse(s.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("registration agent: ExternalServers[%d].URL %q is not an https URL", i, s.URL)
		}
	}
	if errs := metav1validation.ValidateLabels(c.ClusterLabels, field.NewPath("ClusterLabels")); len(errs) > 0 {
		return fmt.Errorf("registration agent: %w", errs.ToAggregate())
	}
	for i, s := range c.ReservedClusterClaimSuffixes {
		if s == "" {
			return fmt.Errorf("registration agent: ReservedClusterClaimSuffixes[%d] is empty (it would reserve every claim)", i)
		}
	}
	return nil
}

// clusterAnnotations are the ClusterAnnotations the agent sets, those with OCM's agent prefix,
// and the keys it drops.
func (c *Config) clusterAnnotations() (keep map[string]string, dropped []string) {
	for k, v := range c.ClusterAnnotations {
		if !strings.HasPrefix(k, operatorv1.ClusterAnnotationsKeyPrefix+"/") {
			dropped = append(dropped, k)
			continue
		}
		if keep == nil {
			keep = map[string]string{}
		}
		keep[k] = v
	}
	slices.Sort(dropped)
	return keep, dropped
}

// clusterLabels are the ClusterLabels the agent sets (a copy).
func (c *Config) clusterLabels() map[string]string { return maps.Clone(c.ClusterLabels) }

// externalClientConfigs are ExternalServers as client configs, an entry without a CA bundle
// taking defaultCA (the managed cluster's); nil without any.
func (c *Config) externalClientConfigs(defaultCA []byte) []clusterv1.ClientConfig {
	var out []clusterv1.ClientConfig
	for _, s := range c.ExternalServers {
		ca := s.CABundle
		if len(ca) == 0 {
			ca = defaultCA
		}
		out = append(out, clusterv1.ClientConfig{URL: s.URL, CABundle: ca})
	}
	return out
}
