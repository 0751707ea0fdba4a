package registration

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
)

// AddonTemplateLabelKey marks the hub objects OCM's template add-on manager creates for an
// add-on (with an empty value); the RoleBindings of hub permissions carry it.
const AddonTemplateLabelKey = "open-cluster-management.io/addon-template-name"

// BindingName is the name of the RoleBinding granting the roleKind (Role or ClusterRole) of a
// hub permission of addon: OCM's open-cluster-management:<addon>:<kind, lower case>:agent for
// a CurrentCluster permission (in the cluster namespace). A SingleNamespace permission's
// namespace is shared by every cluster, so its RoleBinding also names the cluster
// (open-cluster-management:<addon>:<cluster>:<kind>:agent) where OCM would have the clusters
// overwrite each other's subject. A second permission of the same kind in the same namespace
// adds its role's name before ":agent".
func BindingName(addon, cluster string, singleNamespace bool, roleKind, roleName string, nth int) string {
	parts := []string{"open-cluster-management", addon}
	if singleNamespace {
		parts = append(parts, cluster)
	}
	parts = append(parts, strings.ToLower(roleKind))
	if nth > 0 {
		parts = append(parts, roleName)
	}
	return strings.Join(append(parts, "agent"), ":")
}

// bindingLabels select the RoleBindings Reconciler keeps for one ManagedClusterAddOn.
func bindingLabels(mca *addonv1alpha1.ManagedClusterAddOn) map[string]string {
	return map[string]string{
		addonv1alpha1.AddonLabelKey:          mca.Name,
		addonv1alpha1.AddonNamespaceLabelKey: mca.Namespace,
		AddonTemplateLabelKey:                "",
	}
}

// DesiredBindings returns the RoleBindings that grant perms to the agents of mca: each binds
// its role to the group ClusterAddonGroup(cluster, addon). The cluster is mca's namespace.
// Those in mca's namespace are owned by mca (garbage collected with it).
func DesiredBindings(mca *addonv1alpha1.ManagedClusterAddOn, perms []addonv1alpha1.HubPermissionConfig) ([]*rbacv1.RoleBinding, error) {
	cluster, addon := mca.Namespace, mca.Name
	var out []*rbacv1.RoleBinding
	seen := map[string]int{} // namespace/kind -> bindings so far
	names := map[string]bool{}
	for i, pc := range perms {
		var (
			ns     string
			ref    rbacv1.RoleRef
			single bool
		)
		switch pc.Type {
		case addonv1alpha1.HubPermissionsBindingCurrentCluster:
			if pc.CurrentCluster == nil || pc.CurrentCluster.ClusterRoleName == "" {
				return nil, fmt.Errorf("hubPermissions[%d]: current cluster is required when the HubPermission type is CurrentCluster", i)
			}
			ns = cluster
			ref = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: pc.CurrentCluster.ClusterRoleName}
		case addonv1alpha1.HubPermissionsBindingSingleNamespace:
			if pc.SingleNamespace == nil || pc.SingleNamespace.Namespace == "" {
				return nil, fmt.Errorf("hubPermissions[%d]: single namespace is required when the HubPermission type is SingleNamespace", i)
			}
			ns, ref, single = pc.SingleNamespace.Namespace, pc.SingleNamespace.RoleRef, true
			if ref.APIGroup == "" {
				ref.APIGroup = rbacv1.GroupName
			}
			if ref.APIGroup != rbacv1.GroupName || (ref.Kind != "Role" && ref.Kind != "ClusterRole") || ref.Name == "" {
				return nil, fmt.Errorf("hubPermissions[%d]: roleRef %s/%s %q must be a Role or ClusterRole of %s", i, ref.APIGroup, ref.Kind, ref.Name, rbacv1.GroupName)
			}
		default:
			return nil, fmt.Errorf("hubPermissions[%d]: unknown type %q (CurrentCluster or SingleNamespace)", i, pc.Type)
		}
		key := ns + "/" + ref.Kind
		name := BindingName(addon, cluster, single, ref.Kind, ref.Name, seen[key])
		seen[key]++
		if names[ns+"/"+name] {
			continue // the same role twice
		}
		names[ns+"/"+name] = true
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: bindingLabels(mca)},
			RoleRef:    ref,
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: ClusterAddonGroup(cluster, addon)}},
		}
		if ns == mca.Namespace {
			rb.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "ManagedClusterAddOn", Name: mca.Name, UID: mca.UID,
			}}
		}
		out = append(out, rb)
	}
	return out, nil
}
