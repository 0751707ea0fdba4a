package flotilla.admission.no_cluster_admin_executor_test

import data.flotilla.admission.no_cluster_admin_executor as policy

admin_sa := {"kind": "ServiceAccount", "namespace": "kube-system", "name": "admin", "username": "system:serviceaccount:kube-system:admin"}

app_sa := {"kind": "ServiceAccount", "namespace": "team-a", "name": "deployer", "username": "system:serviceaccount:team-a:deployer"}

work(kind, executor) := {
	"operation": "CREATE",
	"user": {"username": "alice", "uid": "u1", "groups": ["system:authenticated"], "extra": {}},
	"kind": {"group": "work.open-cluster-management.io", "version": "v1", "kind": kind},
	"name": "web",
	"namespace": "cluster1",
	"object": {"metadata": {"name": "web", "namespace": "cluster1"}, "spec": {}},
	"oldObject": null,
	"featureGates": {},
	"executor": executor,
	"oldExecutor": null,
	"manifests": [],
}

# The hub's answer: only kube-system/admin is cluster-admin, and it is asked about as that
# service account with the groups every service account has, for exactly what cluster-admin grants.
only_admin_sa_is_cluster_admin(user, attrs) if {
	user.username == "system:serviceaccount:kube-system:admin"
	user.groups == ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]
	attrs == {"verb": "*", "group": "*", "resource": "*"}
} else := false

# Undefined: any question asked fails the test, for requests with nothing to check.
never_asked(_, _) := false if false

test_cluster_admin_executor_denied if {
	policy.deny == {concat("", [
		"the ManifestWork web may not use executor kube-system/admin (spec.executor.subject.serviceAccount): ",
		"system:serviceaccount:kube-system:admin has cluster-admin rights on the hub (verb * on all resources)",
	])} with input as work("ManifestWork", admin_sa)
		with flotilla.authorized as only_admin_sa_is_cluster_admin
}

test_cluster_admin_executor_denied_in_replica_set if {
	msgs := policy.deny with input as work("ManifestWorkReplicaSet", admin_sa)
		with flotilla.authorized as only_admin_sa_is_cluster_admin
	count(msgs) == 1
	some msg in msgs
	contains(msg, "(spec.manifestWorkTemplate.executor.subject.serviceAccount)")
}

test_other_executor_allowed if {
	count(policy.deny) == 0 with input as work("ManifestWork", app_sa)
		with flotilla.authorized as only_admin_sa_is_cluster_admin
}

test_no_executor_not_checked if {
	count(policy.deny) == 0 with input as work("ManifestWork", null)
		with flotilla.authorized as never_asked
}
