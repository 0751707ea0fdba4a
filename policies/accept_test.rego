package flotilla.admission.accept_test

import data.flotilla.admission.accept

alice := {"username": "alice", "uid": "u1", "groups": ["system:authenticated"], "extra": {}}

cluster(accepts) := {"metadata": {"name": "cluster1"}, "spec": {"hubAcceptsClient": accepts}}

request(op, new, old) := {
	"operation": op,
	"user": alice,
	"resource": {"group": "cluster.open-cluster-management.io", "version": "v1", "resource": "managedclusters", "subresource": ""},
	"kind": {"group": "cluster.open-cluster-management.io", "version": "v1", "kind": "ManagedCluster"},
	"name": "cluster1",
	"namespace": "",
	"object": new,
	"oldObject": old,
	"dryRun": false,
	"clusterNamespace": "cluster1",
	"featureGates": {},
}

# Grants alice exactly the accept permission on cluster1.
may_accept_cluster1(user, attrs) if {
	user.username == "alice"
	attrs == {
		"verb": "update",
		"group": "register.open-cluster-management.io",
		"resource": "managedclusters",
		"subresource": "accept",
		"name": "cluster1",
	}
} else := false

nothing(_, _) := false

# Undefined: any question asked denies, so tests of requests needing no check use it.
never_asked(_, _) := false if false

test_create_accepted_allowed if {
	count(accept.deny) == 0 with input as request("CREATE", cluster(true), null)
		with flotilla.authorized as may_accept_cluster1
}

test_create_accepted_denied if {
	accept.deny == {concat("", [
		"user alice cannot accept the ManagedCluster cluster1 (spec.hubAcceptsClient: true): ",
		"needs \"update\" on managedclusters/accept.register.open-cluster-management.io named cluster1",
	])} with input as request("CREATE", cluster(true), null)
		with flotilla.authorized as nothing
}

test_create_not_accepted_not_checked if {
	count(accept.deny) == 0 with input as request("CREATE", cluster(false), null)
		with flotilla.authorized as never_asked
	count(accept.deny) == 0 with input as request("CREATE", {"metadata": {"name": "cluster1"}, "spec": {}}, null)
		with flotilla.authorized as never_asked
}

test_update_accepting_allowed if {
	count(accept.deny) == 0 with input as request("UPDATE", cluster(true), cluster(false))
		with flotilla.authorized as may_accept_cluster1
}

test_update_accepting_denied if {
	count(accept.deny) == 1 with input as request("UPDATE", cluster(true), cluster(false))
		with flotilla.authorized as nothing
	count(accept.deny) == 1 with input as request("UPDATE", cluster(true), {"metadata": {"name": "cluster1"}, "spec": {}})
		with flotilla.authorized as nothing
}

test_update_already_accepted_not_checked if {
	count(accept.deny) == 0 with input as request("UPDATE", cluster(true), cluster(true))
		with flotilla.authorized as never_asked
}

test_update_unaccepting_not_checked if {
	count(accept.deny) == 0 with input as request("UPDATE", cluster(false), cluster(true))
		with flotilla.authorized as never_asked
}
