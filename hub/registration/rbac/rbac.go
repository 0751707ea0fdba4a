// Package rbac builds the hub-side RBAC objects that registration grants to managed-cluster
// agents and to the bootstrap identity. Names, groups and rules follow OCM so OCM agents work
// against a Flotilla hub unchanged.
package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ClusterNameLabel marks every per-cluster object so it can be found and garbage collected.
	ClusterNameLabel = "open-cluster-management.io/cluster-name"

	// RegistrationClusterRoleName is bound in each cluster namespace for the registration agent.
	RegistrationClusterRoleName = "open-cluster-management:managedcluster:registration"
	// WorkClusterRoleName is bound in each cluster namespace for the work agent.
	WorkClusterRoleName = "open-cluster-management:managedcluster:work"

	// BootstrapClusterRoleName is the role of the shared bootstrap identity.
	BootstrapClusterRoleName = "system:open-cluster-management:bootstrap"
	// BootstrapNamespace holds the bootstrap ServiceAccount.
	BootstrapNamespace = "open-cluster-management"
	// BootstrapServiceAccount is the identity in the bootstrap kubeconfig, named as on current
	// OCM hubs.
	BootstrapServiceAccount = "agent-registration-bootstrap"
	// LegacyBootstrapServiceAccount is the bootstrap ServiceAccount of earlier Flotilla (and
	// OCM) hubs. It is kept, bound to the same role, so clusters still holding its tokens join.
	LegacyBootstrapServiceAccount = "cluster-bootstrap"
	// BootstrapGroup is the group OCM binds the bootstrap role to: the extra group of the
	// Kubernetes bootstrap tokens issued for joining (auth-extra-groups).
	BootstrapGroup = "system:bootstrappers:managedcluster"
	// BootstrapTokenUserPrefix starts the user name of a Kubernetes bootstrap token
	// (system:bootstrap:<token-id>).
	BootstrapTokenUserPrefix = "system:bootstrap:"

	// BootstrapSABindingName binds the bootstrap role to BootstrapServiceAccount, and
	// BootstrapGroupBindingName to BootstrapGroup: OCM's binding names. The legacy
	// ServiceAccount keeps Flotilla's earlier binding, BootstrapClusterRoleName.
	BootstrapSABindingName    = "open-cluster-management:bootstrap:agent-registration"
	BootstrapGroupBindingName = "open-cluster-management:bootstrap:managedcluster"

	identityPrefix = "system:open-cluster-management:"
	rolePrefix     = "open-cluster-management:managedcluster:"

	clusterGroup = "cluster.open-cluster-management.io"
)

// The permission a cluster's agents need for the hub to approve their certificate renewals:
// verb renew on managedclusters/clientcertificates in register.open-cluster-management.io, as
// OCM checks it with a SubjectAccessReview (hub/registration/csr). It is granted by the
// per-cluster ClusterRole; removing that rule alone stops rotation (OCM's soft revoke).
const (
	RenewGroup       = "register.open-cluster-management.io"
	RenewResource    = "managedclusters"
	RenewSubresource = "clientcertificates"
	RenewVerb        = "renew"
)

// RenewRule is the per-cluster ClusterRole's rule granting RenewVerb.
func RenewRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{
		APIGroups: []string{RenewGroup},
		Resources: []string{RenewResource + "/" + RenewSubresource},
		Verbs:     []string{RenewVerb},
	}
}

// GrantsRenew reports whether rule grants RenewVerb (wildcards included).
func GrantsRenew(rule rbacv1.PolicyRule) bool {
	has := func(list []string, v string) bool {
		return slices.Contains(list, v) || slices.Contains(list, rbacv1.ResourceAll)
	}
	return has(rule.APIGroups, RenewGroup) && has(rule.Resources, RenewResource+"/"+RenewSubresource) &&
		has(rule.Verbs, RenewVerb) && len(rule.ResourceNames) == 0
}

// ClusterRoleName is the per-cluster ClusterRole (and ClusterRoleBinding) name.
func ClusterRoleName(cluster string) string { return rolePrefix + cluster }

// RegistrationRoleBindingName is the RoleBinding granting the registration role in the cluster namespace.
func RegistrationRoleBindingName(cluster string) string {
	return rolePrefix + cluster + ":registration"
}

// WorkRoleBindingName is the RoleBinding granting the work role in the cluster namespace.
func WorkRoleBindingName(cluster string) string { return rolePrefix + cluster + ":work" }

// ClusterGroup is the group (certificate organization) of every agent of a cluster.
func ClusterGroup(cluster string) string { return identityPrefix + cluster }

// AgentUser is the user name (certificate common name) of one agent of a cluster.
func AgentUser(cluster, agent string) string { return identityPrefix + cluster + ":" + agent }

// BootstrapUser is the user name the API server gives the bootstrap ServiceAccount.
func BootstrapUser() string {
	return "system:serviceaccount:" + BootstrapNamespace + ":" + BootstrapServiceAccount
}

// LegacyBootstrapUser is the user name of the legacy bootstrap ServiceAccount.
func LegacyBootstrapUser() string {
	return "system:serviceaccount:" + BootstrapNamespace + ":" + LegacyBootstrapServiceAccount
}

// BootstrapUsers are the user names of both bootstrap ServiceAccounts, the current one first.
func BootstrapUsers() []string { return []string{BootstrapUser(), LegacyBootstrapUser()} }

// IsBootstrapIdentity reports whether username and groups (as on a CSR's spec) are a bootstrap
// identity: either bootstrap ServiceAccount, or a Kubernetes bootstrap token
// (system:bootstrap:<token-id>) in BootstrapGroup. These are the requesters `clusteradm accept`
// approves registrations of.
func IsBootstrapIdentity(username string, groups []string) bool {
	if slices.Contains(BootstrapUsers(), username) {
		return true
	}
	return strings.HasPrefix(username, BootstrapTokenUserPrefix) && slices.Contains(groups, BootstrapGroup)
}

func labels(cluster string) map[string]string { return map[string]string{ClusterNameLabel: cluster} }

// ClusterRole is the per-cluster ClusterRole. An accepted cluster may read and update its own
// ManagedCluster and status, and rotate its client certificate. A cluster that is not (or no
// longer) accepted keeps read access to its own ManagedCluster only, so its agent can notice
// when the hub admin accepts it again; everything else is revoked.
func ClusterRole(cluster string, accepted bool) *rbacv1.ClusterRole {
	rules := []rbacv1.PolicyRule{{
		APIGroups:     []string{clusterGroup},
		Resources:     []string{"managedclusters"},
		ResourceNames: []string{cluster},
		Verbs:         []string{"get", "list", "watch"},
	}}
	if accepted {
		rules = []rbacv1.PolicyRule{
			{
				// Certificate rotation: the agent requests a new certificate under its own
				// identity; it also files its add-ons' CSRs (klusterlet/addon).
				APIGroups: []string{"certificates.k8s.io"},
				Resources: []string{"certificatesigningrequests"},
				Verbs:     []string{"create", "get", "list", "watch"},
			},
			// Removing this rule alone stops rotation (OCM's documented soft revoke): the hub
			// approves a renewal only when a SubjectAccessReview grants it, and keeps the rule
			// out when it applies this role again (SoftRevoked).
			RenewRule(),
			{
				APIGroups:     []string{clusterGroup},
				Resources:     []string{"managedclusters"},
				ResourceNames: []string{cluster},
				Verbs:         []string{"get", "list", "update", "watch"},
			},
			{
				APIGroups:     []string{clusterGroup},
				Resources:     []string{"managedclusters/status"},
				ResourceNames: []string{cluster},
				Verbs:         []string{"patch", "update"},
			},
		}
	}
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName(cluster), Labels: labels(cluster)},
		Rules:      rules,
	}
}

// SoftRevoked reports whether existing, the per-cluster ClusterRole as found on the hub, is
// an accepted cluster's role from which the renew rule was removed (OCM's soft revoke): it
// still lets the agent write its cluster's status, yet no rule grants renew. The hub then
// applies the accepted role without RenewRule, so the revocation lasts until the rule is put
// back or the cluster is accepted again after hubAcceptsClient was false (which shrinks the
// role first).
func SoftRevoked(existing *rbacv1.ClusterRole) bool {
	if existing == nil {
		return false
	}
	status := slices.ContainsFunc(existing.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, clusterGroup) && slices.Contains(r.Resources, "managedclusters/status")
	})
	return status && !slices.ContainsFunc(existing.Rules, GrantsRenew)
}

// WithoutRenew returns a copy of role without the rules that grant renew.
func WithoutRenew(role *rbacv1.ClusterRole) *rbacv1.ClusterRole {
	out := role.DeepCopy()
	out.Rules = slices.DeleteFunc(out.Rules, GrantsRenew)
	return out
}

// ClusterRoleBinding binds the per-cluster ClusterRole to the cluster's agent group.
func ClusterRoleBinding(cluster string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName(cluster), Labels: labels(cluster)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName(cluster)},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: ClusterGroup(cluster)}},
	}
}

// RegistrationRoleBinding grants the registration role to the cluster's agents in its namespace.
func RegistrationRoleBinding(cluster string) *rbacv1.RoleBinding {
	return namespacedBinding(cluster, RegistrationRoleBindingName(cluster), RegistrationClusterRoleName)
}

// WorkRoleBinding grants the work role to the cluster's agents in its namespace.
func WorkRoleBinding(cluster string) *rbacv1.RoleBinding {
	return namespacedBinding(cluster, WorkRoleBindingName(cluster), WorkClusterRoleName)
}

func namespacedBinding(cluster, name, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster, Labels: labels(cluster)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: ClusterGroup(cluster)}},
	}
}

// RegistrationClusterRole is what the registration agent may do inside its cluster namespace.
func RegistrationClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: RegistrationClusterRoleName, Labels: labels("")},
		Rules: []rbacv1.PolicyRule{
			{
				// The hub creates managed-cluster-lease; create is also allowed so an agent that
				// races the hub's lease controller does not stall its first heartbeat.
				APIGroups: []string{"coordination.k8s.io"},
				Resources: []string{"leases"},
				Verbs:     []string{"get", "list", "watch", "create", "update"},
			},
			{
				// The klusterlet's add-on side (klusterlet/addon) serves the registrations of
				// the cluster's add-ons and reads add-on Leases renewed on the hub (above).
				APIGroups: []string{"addon.open-cluster-management.io"},
				Resources: []string{"managedclusteraddons"},
				Verbs:     []string{"get", "list", "watch"},
			},
			{
				// Lease health: the Available condition.
				APIGroups: []string{"addon.open-cluster-management.io"},
				Resources: []string{"managedclusteraddons/status"},
				Verbs:     []string{"patch", "update"},
			},
			{
				APIGroups: []string{"", "events.k8s.io"},
				Resources: []string{"events"},
				Verbs:     []string{"get", "list", "watch", "create", "patch", "update"},
			},
		},
	}
}

// WorkClusterRole is what the work agent may do inside its cluster namespace.
func WorkClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: WorkClusterRoleName, Labels: labels("")},
		Rules: []rbacv1.PolicyRule{
			{
				APIGroups: []string{"", "events.k8s.io"},
				Resources: []string{"events"},
				Verbs:     []string{"create", "patch", "update"},
			},
			{
				APIGroups: []string{"work.open-cluster-management.io"},
				Resources: []string{"manifestworks"},
				Verbs:     []string{"get", "list", "watch", "update", "patch", "delete"},
			},
			{
				APIGroups: []string{"work.open-cluster-management.io"},
				Resources: []string{"manifestworks/status"},
				Verbs:     []string{"patch", "update"},
			},
		},
	}
}

// BootstrapClusterRole lets a new agent create its ManagedCluster and request its first
// certificate. Its rules are those of OCM's system:open-cluster-management:bootstrap
// (open-cluster-management-io/ocm, deploy/cluster-manager/chart/cluster-manager/templates/
// bootstrap_cluster_role.yaml) but one: OCM also grants "get" on every ConfigMap, which only
// clusteradm join uses (to read the hub's CA with the bootstrap token), not the registration
// agent; on a Flotilla hub ConfigMaps carry the Wasm plugins and their settings, which a shared
// bootstrap token should not read. Nothing here lets it approve CSRs or update, patch or delete
// a ManagedCluster, and the admission policy stops it from creating one that is already
// accepted.
func BootstrapClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: BootstrapClusterRoleName},
		Rules: []rbacv1.PolicyRule{
			{
				APIGroups: []string{"certificates.k8s.io"},
				Resources: []string{"certificatesigningrequests"},
				Verbs:     []string{"create", "get", "list", "watch"},
			},
			{
				// OCM's agent lists and watches its own ManagedCluster (a field selector on its
				// name) while it waits to be accepted. The bootstrap identity is shared by every
				// cluster yet to join, so the rule cannot name one: as with OCM, a bootstrap
				// identity can read every ManagedCluster (it could already get any one by name).
				APIGroups: []string{clusterGroup},
				Resources: []string{"managedclusters"},
				Verbs:     []string{"get", "create", "list", "watch"},
			},
			{
				// The agent may place its new cluster into a set through the clusterset label.
				APIGroups: []string{clusterGroup},
				Resources: []string{"managedclustersets/join"},
				Verbs:     []string{"create"},
			},
		},
	}
}

// BootstrapClusterRoleBindings bind the bootstrap role to its identities: OCM's two bindings
// (the bootstrap ServiceAccount, and the group of bootstrap tokens) plus Flotilla's earlier
// binding, which now names only the legacy ServiceAccount.
func BootstrapClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	binding := func(name string, s rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: BootstrapClusterRoleName},
			Subjects:   []rbacv1.Subject{s},
		}
	}
	return []*rbacv1.ClusterRoleBinding{
		binding(BootstrapSABindingName, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: BootstrapServiceAccount, Namespace: BootstrapNamespace}),
		binding(BootstrapGroupBindingName, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: BootstrapGroup}),
		binding(BootstrapClusterRoleName, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: LegacyBootstrapServiceAccount, Namespace: BootstrapNamespace}),
	}
}
