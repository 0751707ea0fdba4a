package flotilla.admission.team_executor_namespaces_test

import data.flotilla.admission.team_executor_namespaces as policy

sa(namespace) := {"kind": "ServiceAccount", "namespace": namespace, "name": "deployer", "username": sprintf("system:serviceaccount:%s:deployer", [namespace])}

request(groups, executor) := {
	"operation": "CREATE",
	"user": {"username": "alice", "uid": "u1", "groups": array.concat(groups, ["system:authenticated"]), "extra": {}},
	"kind": {"group": "work.open-cluster-management.io", "version": "v1", "kind": "ManifestWork"},
	"name": "web",
	"namespace": "cluster1",
	"object": {"metadata": {"name": "web", "namespace": "cluster1"}, "spec": {}},
	"oldObject": null,
	"featureGates": {},
	"executor": executor,
	"oldExecutor": null,
	"manifests": [],
}

test_team_executor_from_own_namespace_allowed if {
	count(policy.deny) == 0 with input as request(["team-a"], sa("team-a"))
	count(policy.deny) == 0 with input as request(["team-a"], sa("team-a-jobs"))
}

test_team_executor_from_other_namespace_denied if {
	policy.deny == {concat("", [
		"user alice (groups team-a) cannot use executor team-b/deployer (spec.executor.subject.serviceAccount) ",
		"in the ManifestWork web: executors must come from namespaces team-a, team-a-jobs",
	])} with input as request(["team-a"], sa("team-b"))
}

test_member_of_two_teams_may_use_both if {
	count(policy.deny) == 0 with input as request(["team-a", "team-b"], sa("team-b"))
	count(policy.deny) == 1 with input as request(["team-a", "team-b"], sa("kube-system"))
}

test_team_without_executor_denied if {
	policy.deny == {concat("", [
		"user alice (groups team-b) must set an executor (spec.executor) in the ManifestWork web, ",
		"from namespaces team-b",
	])} with input as request(["team-b"], null)
}

test_replica_set_names_template_field if {
	msgs := policy.deny with input as object.union(request(["team-a"], sa("team-b")), {"kind": {"kind": "ManifestWorkReplicaSet"}})
	count(msgs) == 1
	some msg in msgs
	contains(msg, "(spec.manifestWorkTemplate.executor.subject.serviceAccount) in the ManifestWorkReplicaSet web")
}

test_users_outside_teams_not_restricted if {
	count(policy.deny) == 0 with input as request(["platform"], sa("kube-system"))
	count(policy.deny) == 0 with input as request([], null)
}
