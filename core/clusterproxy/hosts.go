// Package clusterproxy holds what the hub and the klusterlet agree on about OCM's
// cluster-proxy add-on: the host names through which the hub reaches a managed cluster.
package clusterproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AddonName is the add-on's name (ClusterManagementAddOn, ManagedClusterAddOn, Lease).
const AddonName = "cluster-proxy"

// DefaultInstallNamespace is the agent's namespace on the managed cluster unless configured.
const DefaultInstallNamespace = "open-cluster-management-cluster-proxy"

// KubeAPIPort is the port at which the hub asks for a cluster's API server.
const KubeAPIPort = "443"

// KubeAPIHosts are the hosts at which the hub reaches cluster's API server through the tunnel
// (as OCM's agent registers them): <cluster> and <cluster>.<installNamespace>.
func KubeAPIHosts(cluster, installNamespace string) []string {
	return []string{cluster, cluster + "." + installNamespace}
}

// ServiceProxyHost is the host of cluster's service proxy, as OCM's cluster-proxy names it.
func ServiceProxyHost(cluster string) string {
	sum := sha256.Sum256([]byte(cluster))
	return ("cluster-" + hex.EncodeToString(sum[:]))[:56] + ".open-cluster-management.proxy"
}

// ServiceHost is the host at which a Service resolved by a ManagedProxyServiceResolver is
// reached through cluster's tunnel (OCM's GenerateServiceURL).
func ServiceHost(cluster, namespace, service string) string {
	sum := sha256.Sum256([]byte(cluster + " " + namespace + " " + service))
	return ("cluster-proxy-" + hex.EncodeToString(sum[:]))[:63]
}

// IsKubeAPIHost reports whether host is one of cluster's KubeAPIHosts, for any install
// namespace (<cluster>.<a DNS label>).
func IsKubeAPIHost(cluster, host string) bool {
	if host == cluster {
		return true
	}
	ns, ok := strings.CutPrefix(host, cluster+".")
	return ok && len(validation.IsDNS1123Label(ns)) == 0
}

// The hub's tunnel API: an aggregated API through which agents open their tunnels with an HTTP
// Upgrade (tunnel.UpgradeProtocol) to the hub API server.
const (
	TunnelAPIGroup   = "proxy.flotilla.dev"
	TunnelAPIVersion = "v1alpha1"
	// TunnelResource and TunnelName: the agent of cluster C upgrades
	// namespaces/C/tunnels/cluster-proxy/proxy.
	TunnelResource = "tunnels"
	TunnelName     = AddonName
)

// TunnelPath is the API server path at which cluster's agent opens its tunnel.
func TunnelPath(cluster string) string {
	return "/apis/" + TunnelAPIGroup + "/" + TunnelAPIVersion + "/namespaces/" + cluster + "/" + TunnelResource + "/" + TunnelName + "/proxy"
}

// AgentGroup is the hub group of cluster's cluster-proxy agent (its add-on registration's
// default subject); only its members may open cluster's tunnel.
func AgentGroup(cluster string) string {
	return "system:open-cluster-management:cluster:" + cluster + ":addon:" + AddonName
}
