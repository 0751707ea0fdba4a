package rbac

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
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
	if BootstrapUser() != "system:serviceaccount:open-cluster-management:agent-registration-bootstrap" ||
		LegacyBootstrapUser() != "system:serviceaccount:open-cluster-management:cluster-bootstrap" {
		t.Errorf("bootstrap users %q, %q", BootstrapUser(), LegacyBootstrapUser())
	}
	for _, r := range BootstrapClusterRole().Rules {
		if slices.Contains(r.Resources, "certificatesigningrequests/approval") || slices.Contains(r.Verbs, "update") {
			t.Errorf("the bootstrap identity must not approve CSRs or update clusters: %+v", r)
		}
	}
}

func TestIsBootstrapIdentity(t *testing.T) {
	tokenGroups := []string{"system:bootstrappers", "system:bootstrappers:managedcluster", "system:authenticated"}
	for _, tc := range []struct {
		user   string
		groups []string
		want   bool
	}{
		{"system:serviceaccount:open-cluster-management:agent-registration-bootstrap", nil, true},
		{"system:serviceaccount:open-cluster-management:cluster-bootstrap", nil, true},
		{"system:bootstrap:abc123", tokenGroups, true},
		{"system:bootstrap:abc123", []string{"system:bootstrappers", "system:authenticated"}, false},
		{"someone", tokenGroups, false},
		{"system:serviceaccount:default:agent-registration-bootstrap", nil, false},
		{"system:open-cluster-management:c1:a", []string{"system:open-cluster-management:c1"}, false},
	} {
		if got := IsBootstrapIdentity(tc.user, tc.groups); got != tc.want {
			t.Errorf("IsBootstrapIdentity(%q, %v) = %v, want %v", tc.user, tc.groups, got, tc.want)
		}
	}
}

// TestBootstrapClusterRoleBindings checks OCM's binding names and subjects, and the legacy
// ServiceAccount's binding.
func TestBootstrapClusterRoleBindings(t *testing.T) {
	got := map[string]rbacv1.Subject{}
	for _, b := range BootstrapClusterRoleBindings() {
		if b.RoleRef.Name != BootstrapClusterRoleName || b.RoleRef.Kind != "ClusterRole" || len(b.Subjects) != 1 {
			t.Errorf("binding %s: %+v %+v", b.Name, b.RoleRef, b.Subjects)
			continue
		}
		got[b.Name] = b.Subjects[0]
	}
	want := map[string]rbacv1.Subject{
		"open-cluster-management:bootstrap:agent-registration": {Kind: "ServiceAccount", Name: "agent-registration-bootstrap", Namespace: "open-cluster-management"},
		"open-cluster-management:bootstrap:managedcluster":     {APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:bootstrappers:managedcluster"},
		"system:open-cluster-management:bootstrap":             {Kind: "ServiceAccount", Name: "cluster-bootstrap", Namespace: "open-cluster-management"},
	}
	if len(got) != len(want) {
		t.Errorf("bindings %v, want %v", got, want)
	}
	for name, s := range want {
		if got[name] != s {
			t.Errorf("binding %s: subject %+v, want %+v", name, got[name], s)
		}
	}
}

// grants lists the group/resource/verb triples rules allow (rules without resourceNames only).
func grants(t *testing.T, rules []rbacv1.PolicyRule) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Fatalf("unexpected rule %+v", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out[g+"/"+res+":"+v] = true
				}
			}
		}
	}
	return out
}

// ocmBootstrapRules is OCM's system:open-cluster-management:bootstrap ClusterRole, as its
// cluster-manager chart installs it (open-cluster-management-io/ocm,
// deploy/cluster-manager/chart/cluster-manager/templates/bootstrap_cluster_role.yaml).
var ocmBootstrapRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
	{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
	{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "create", "list", "watch"}},
	{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclustersets/join"}, Verbs: []string{"create"}},
}

func TestBootstrapClusterRoleMatchesOCM(t *testing.T) {
	role := BootstrapClusterRole()
	if role.Name != "system:open-cluster-management:bootstrap" {
		t.Errorf("name %q", role.Name)
	}
	ours, ocm := grants(t, role.Rules), grants(t, ocmBootstrapRules)
	// Everything OCM grants but the ConfigMap read clusteradm join needs (see BootstrapClusterRole).
	delete(ocm, "/configmaps:get")
	for g := range ocm {
		if !ours[g] {
			t.Errorf("OCM's bootstrap role grants %s, ours does not: OCM's agent would be refused", g)
		}
	}
	for g := range ours {
		if !ocm[g] {
			t.Errorf("our bootstrap role grants %s beyond OCM's", g)
		}
	}
	// In particular OCM's agent lists and watches its ManagedCluster while waiting to be accepted.
	for _, v := range []string{"get", "list", "watch", "create"} {
		if !ours["cluster.open-cluster-management.io/managedclusters:"+v] {
			t.Errorf("the bootstrap identity may not %s managedclusters", v)
		}
	}
	// And it reads no ConfigMaps or Secrets and changes no existing cluster.
	for _, g := range []string{
		"/configmaps:get", "/configmaps:list", "/secrets:get", "/secrets:list",
		"cluster.open-cluster-management.io/managedclusters:update",
		"cluster.open-cluster-management.io/managedclusters:patch",
		"cluster.open-cluster-management.io/managedclusters:delete",
		"cluster.open-cluster-management.io/managedclusters/status:patch",
		"register.open-cluster-management.io/managedclusters/accept:update",
		"certificates.k8s.io/certificatesigningrequests/approval:update",
	} {
		if ours[g] {
			t.Errorf("the bootstrap identity must not have %s", g)
		}
	}
}

func TestSoftRevoked(t *testing.T) {
	accepted := ClusterRole("c1", true)
	revoked := WithoutRenew(accepted)
	if len(revoked.Rules) != len(accepted.Rules)-1 || slices.ContainsFunc(revoked.Rules, GrantsRenew) {
		t.Fatalf("WithoutRenew: %+v", revoked.Rules)
	}
	if !slices.ContainsFunc(accepted.Rules, GrantsRenew) {
		t.Fatalf("the accepted role must grant renew: %+v", accepted.Rules)
	}
	wildcard := revoked.DeepCopy()
	wildcard.Rules = append(wildcard.Rules, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	named := revoked.DeepCopy()
	r := RenewRule()
	r.ResourceNames = []string{"c1"} // matches only requests naming a resource; OCM's review names none
	named.Rules = append(named.Rules, r)
	for _, tc := range []struct {
		name string
		role *rbacv1.ClusterRole
		want bool
	}{
		{"absent", nil, false},
		{"accepted", accepted, false},
		{"renew rule removed", revoked, true},
		{"renew granted by a wildcard", wildcard, false},
		{"renew granted for a resource name only", named, true},
		{"not accepted (hubAcceptsClient false)", ClusterRole("c1", false), false},
	} {
		if got := SoftRevoked(tc.role); got != tc.want {
			t.Errorf("%s: SoftRevoked = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHolds(t *testing.T) {
	want := WorkRoleBinding("c1")
	have := want.DeepCopy()
	have.SetResourceVersion("7")
	have.Labels = map[string]string{"extra": "x"}
	for k, v := range want.Labels {
		have.Labels[k] = v
	}
	if ok, err := Holds(have, want); err != nil || !ok {
		t.Fatalf("a binding with the wanted content and an extra label: Holds = %v, %v; want true", ok, err)
	}
	changed := have.DeepCopy()
	changed.Subjects[0].Name = "someone-else"
	if ok, _ := Holds(changed, want); ok {
		t.Fatal("a binding whose subject was changed holds the wanted one: the drift would not be reverted")
	}
	if len(want.Labels) > 0 {
		unlabelled := have.DeepCopy()
		unlabelled.Labels = nil
		if ok, _ := Holds(unlabelled, want); ok {
			t.Fatal("a binding without the wanted labels holds the wanted one")
		}
	}
}
