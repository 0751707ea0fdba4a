# Example: forbid ManifestWork and ManifestWorkReplicaSet executors that are cluster-admin on the hub.
#
# The input carries no RBAC bindings, so the policy asks the hub what the executor's service
# account may do instead. cluster-admin's rule is verbs ["*"] on apiGroups ["*"] and resources
# ["*"]; RBAC matches a requested "*" only against a rule's "*", so an account that may do verb "*"
# on resource "*" in group "*" cluster-wide (namespace "") is bound, by a ClusterRoleBinding, to
# cluster-admin or to a role granting the same. A RoleBinding to cluster-admin in one namespace
# does not count: it grants nothing cluster-wide.
package flotilla.admission.no_cluster_admin_executor

import data.flotilla.lib

match := [{
	"group": "work.open-cluster-management.io",
	"resources": ["manifestworks", "manifestworkreplicasets"],
	"operations": ["CREATE", "UPDATE"],
}]

# Checked on every CREATE and UPDATE, not only when the executor changes, so that a work created
# before this policy must drop such an executor before it can be changed again.
deny contains msg if {
	executor := input.executor
	executor != null
	flotilla.authorized(lib.executor_user(executor), {"verb": "*", "group": "*", "resource": "*"})
	msg := sprintf(
		"the %s may not use executor %s/%s (%s.subject.serviceAccount): %s has cluster-admin rights on the hub (verb * on all resources)",
		[lib.object_desc, executor.namespace, executor.name, lib.executor_field, lib.executor_username(executor)],
	)
}
