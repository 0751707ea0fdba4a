package install

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/satoken"
)

// KlusterletAgentServiceAccount is the ServiceAccount the klusterlet chart runs the agent of
// Klusterlet name as (registration, add-ons, leader election, status, plugins).
func KlusterletAgentServiceAccount(name string) string { return name + "-agent" }

// KlusterletWorkServiceAccount is the ServiceAccount the work agent of Klusterlet name acts as
// (OCM's <klusterlet>-work-sa; flotilla klusterlet --work-service-account).
func KlusterletWorkServiceAccount(name string) string { return name + "-work-sa" }

// identityKinds are the kinds of the klusterlet chart that make its agents' identities.
var identityKinds = map[string]bool{
	"Namespace": true, "ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

// KlusterletIdentities returns the klusterlet chart's Namespace, ServiceAccounts and RBAC for
// Klusterlet name in agent namespace namespace: what a klusterlet run outside the chart's
// Deployment (the end-to-end suites' in-process klusterlets) needs to act with
// the identities the chart gives it. The chart insists on an open-cluster-management-
// namespace (OCM's Klusterlet API); its ServiceAccounts and RBAC do not, so another namespace
// is taken as given.
func KlusterletIdentities(name, namespace string) ([]*unstructured.Unstructured, error) {
	objs, err := Render(KlusterletChart, name, AgentNamespace, map[string]any{
		"render": "components", "clusterName": "identities", "klusterlet": map[string]any{"name": name}})
	if err != nil {
		return nil, err
	}
	out := []*unstructured.Unstructured{objs[0]} // the release Namespace
	objs[0].SetName(namespace)
	for _, o := range objs[1:] {
		if !identityKinds[o.GetKind()] {
			continue
		}
		// Objects of the release namespace move to the agent namespace; those of another
		// namespace (the built-in managed-serviceaccount agent's) stay there.
		if o.GetNamespace() == AgentNamespace {
			o.SetNamespace(namespace)
		}
		if subjects, ok, _ := unstructured.NestedSlice(o.Object, "subjects"); ok {
			for _, s := range subjects {
				if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" {
					m["namespace"] = namespace
				}
			}
			if err := unstructured.SetNestedSlice(o.Object, subjects, "subjects"); err != nil {
				return nil, fmt.Errorf("%s: %w", describe(o), err)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// KlusterletIdentity applies KlusterletIdentities with admin and returns a config for the
// same API server that acts as the agent's ServiceAccount (tokens renewed until ctx ends) and
// the name of the work agent's ServiceAccount: a klusterlet run with them (as
// Registration.ManagedConfig and Work.ServiceAccount) has what the chart's Deployment has.
func KlusterletIdentity(ctx context.Context, admin *rest.Config, name, namespace string) (agent *rest.Config, workServiceAccount string, err error) {
	objs, err := KlusterletIdentities(name, namespace)
	if err != nil {
		return nil, "", fmt.Errorf("klusterlet %s identities: %w", name, err)
	}
	if err := Apply(ctx, admin, objs); err != nil {
		return nil, "", fmt.Errorf("klusterlet %s identities: %w", name, err)
	}
	agent, err = satoken.Config(ctx, admin, namespace, KlusterletAgentServiceAccount(name), satoken.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("klusterlet %s identities: %w", name, err)
	}
	return agent, KlusterletWorkServiceAccount(name), nil
}
