package flotilla.admission.no_clusterrolebindings_test

import data.flotilla.admission.no_clusterrolebindings as policy

crb(name) := {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRoleBinding", "namespace": "", "name": name}

deployment := {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "default", "name": "web"}

role_binding := {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "RoleBinding", "namespace": "default", "name": "web"}

# Not RBAC's: only rbac.authorization.k8s.io ClusterRoleBindings are forbidden.
other_crb := {"group": "example.com", "version": "v1", "kind": "ClusterRoleBinding", "namespace": "", "name": "x"}

request(kind, groups, manifests) := {
	"operation": "CREATE",
	"user": {"username": "alice", "uid": "u1", "groups": groups, "extra": {}},
	"kind": {"group": "work.open-cluster-management.io", "version": "v1", "kind": kind},
	"name": "web",
	"namespace": "cluster1",
	"object": {"metadata": {"name": "web", "namespace": "cluster1"}, "spec": {}},
	"oldObject": null,
	"featureGates": {},
	"executor": null,
	"oldExecutor": null,
	"manifests": manifests,
}

test_cluster_role_binding_denied if {
	policy.deny == {concat("", [
		"user alice cannot put the ClusterRoleBinding admins in the ManifestWork web ",
		"(spec.workload.manifests): only members of group platform-admins may",
	])} with input as request("ManifestWork", ["dev"], [deployment, crb("admins")])
}

test_one_message_per_binding if {
	count(policy.deny) == 2 with input as request("ManifestWork", ["dev"], [crb("a"), crb("b")])
}

test_replica_set_names_template_field if {
	msgs := policy.deny with input as request("ManifestWorkReplicaSet", ["dev"], [crb("admins")])
	count(msgs) == 1
	some msg in msgs
	contains(msg, "(spec.manifestWorkTemplate.workload.manifests)")
}

test_user_without_groups_denied if {
	count(policy.deny) == 1 with input as object.union(request("ManifestWork", [], [crb("admins")]), {"user": {"username": "alice"}})
}

test_platform_admin_allowed if {
	count(policy.deny) == 0 with input as request("ManifestWork", ["dev", "platform-admins"], [crb("admins")])
}

test_other_manifests_allowed if {
	count(policy.deny) == 0 with input as request("ManifestWork", ["dev"], [deployment, role_binding, other_crb])
	count(policy.deny) == 0 with input as request("ManifestWork", ["dev"], [])
}
