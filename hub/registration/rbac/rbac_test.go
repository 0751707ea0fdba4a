package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"slices"
	"testing"
)

func TestClusterRole(t *testing.T) {
	accepted := ClusterRole("c1", true)
	denied := ClusterRole("c1", false)
	if accepted.Name != "open-cluster-management:managedcluster:c1" || accepted.Labels[ClusterNameLabel] != "c1" {
		t.Errorf("name/labels: %+v", accepted.ObjectMeta)
	}
	for _, r := range append(accepted.Rules, denied.Rules...) {
		if slices.Contains(r.Resources, "managedclusters") || slices.Contains(r.Resources, "managedclusters/status") {
			if !slices.Equal(r.ResourceNames, []string{"c1"}) {
				t.Errorf("a ManagedCluster rule must be limited to the cluster itself: %+v", r)
			}
		}
	}
	if len(denied.Rules) != 1 || slices.Contains(denied.Rules[0].Verbs, "update") {
		t.Errorf("a denied cluster keeps read access to its ManagedCluster only: %+v", denied.Rules)
	}
	if !slices.ContainsFunc(accepted.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "managedclusters/clientcertificates")
	}) {
		t.Error("an accepted cluster may renew its certificate")
	}
}

func TestBindingsAndNames(t *testing.T) {
	if got := RegistrationRoleBinding("c1"); got.Namespace != "c1" || got.Name != "open-cluster-management:managedcluster:c1:registration" ||
		got.RoleRef.Name != RegistrationClusterRoleName || got.Subjects[0].Name != "system:open-cluster-management:c1" {
		t.Errorf("registration binding: %+v", got)
	}
	if got := WorkRoleBinding("c1"); got.Name != "open-cluster-management:managedcluster:c1:work" || got.RoleRef.Name != WorkClusterRoleName {
		t.Errorf("work binding: %+v", got)
	}
	if got := AgentUser("c1", "a"); got != "system:open-cluster-management:c1:a" {
		t.Errorf("agent user %q", got)
	}
	if BootstrapUser() != "system:serviceaccount:open-cluster-management:cluster-bootstrap" {
		t.Errorf("bootstrap user %q", BootstrapUser())
	}
	for _, r := range BootstrapClusterRole().Rules {
		if slices.Contains(r.Resources, "certificatesigningrequests/approval") || slices.Contains(r.Verbs, "update") {
			t.Errorf("the bootstrap identity must not approve CSRs or update clusters: %+v", r)
		}
	}
}
