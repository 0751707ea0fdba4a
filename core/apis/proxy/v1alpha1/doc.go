// Package v1alpha1 holds the proxy.open-cluster-management.io/v1alpha1 API of OCM's
// cluster-proxy add-on: ManagedProxyConfiguration (how the hub's proxy server and the
// agents are set up; the add-on's default config is named DefaultName) and
// ManagedProxyServiceResolver (a Service on a set of managed clusters exposed to the hub
// through the tunnel).
//
// Field names, JSON names, enums, defaults and validation follow cluster-proxy, so that its
// users' YAML applies unchanged: ManagedProxyConfiguration as of v0.11.0,
// ManagedProxyServiceResolver as of v0.10.0 (cluster-proxy v0.11.0 removed it; it is served
// here deprecated, with upstream's warning). Where upstream's schema has a default for a
// scalar field, the Go field is omitempty (upstream's is not), so that objects built in Go
// get the default as YAML does, instead of a zero value.
//
// +kubebuilder:object:generate=true
// +groupName=proxy.open-cluster-management.io
package v1alpha1
