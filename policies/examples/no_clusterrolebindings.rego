# Example: only platform admins may ship ClusterRoleBindings to managed clusters in a
# ManifestWork or ManifestWorkReplicaSet, since one can grant anything cluster-wide there.
package flotilla.admission.no_clusterrolebindings

import data.flotilla.lib

# Members of this group may ship ClusterRoleBindings.
admin_group := "platform-admins"

match := [{
	"group": "work.open-cluster-management.io",
	"resources": ["manifestworks", "manifestworkreplicasets"],
	"operations": ["CREATE", "UPDATE"],
}]

deny contains msg if {
	# Also true when the user has no groups at all.
	not admin_group in input.user.groups
	some manifest in input.manifests
	manifest.group == "rbac.authorization.k8s.io"
	manifest.kind == "ClusterRoleBinding"
	msg := sprintf(
		"user %s cannot put the ClusterRoleBinding %s in the %s (%s): only members of group %s may",
		[input.user.username, manifest.name, lib.object_desc, lib.manifests_field, admin_group],
	)
}
