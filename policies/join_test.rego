package flotilla.admission.join_test

import data.flotilla.admission.join

alice := {"username": "alice", "uid": "u1", "groups": ["system:authenticated"], "extra": {}}

cluster(labels) := {"metadata": {"name": "cluster1", "labels": labels}, "spec": {"hubAcceptsClient": true}}

in_set(set) := cluster({"cluster.open-cluster-management.io/clusterset": set, "env": "prod"})

no_set := cluster({"env": "prod"})

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

join_attrs(set) := {
	"verb": "create",
	"group": "cluster.open-cluster-management.io",
	"resource": "managedclustersets",
	"subresource": "join",
	"name": set,
}

# Grants alice join on the set "dev" only.
may_join_dev(user, attrs) if {
	user.username == "alice"
	attrs == join_attrs("dev")
} else := false

may_join_dev_and_prod(user, attrs) if {
	user.username == "alice"
	attrs in {join_attrs("dev"), join_attrs("prod")}
} else := false

nothing(_, _) := false

# Undefined: any question asked denies, so tests of requests needing no check use it.
never_asked(_, _) := false if false

test_create_in_set_allowed if {
	count(join.deny) == 0 with input as request("CREATE", in_set("dev"), null)
		with flotilla.authorized as may_join_dev
}

test_create_in_set_denied if {
	join.deny == {concat("", [
		"user alice cannot add the ManagedCluster cluster1 to the ManagedClusterSet prod ",
		"(label cluster.open-cluster-management.io/clusterset): needs \"create\" on ",
		"managedclustersets/join.cluster.open-cluster-management.io named prod",
	])} with input as request("CREATE", in_set("prod"), null)
		with flotilla.authorized as may_join_dev
}

test_create_without_set_not_checked if {
	count(join.deny) == 0 with input as request("CREATE", no_set, null)
		with flotilla.authorized as never_asked
	count(join.deny) == 0 with input as request("CREATE", {"metadata": {"name": "cluster1"}}, null)
		with flotilla.authorized as never_asked
	count(join.deny) == 0 with input as request("CREATE", in_set(""), null)
		with flotilla.authorized as never_asked
}

test_update_adding_label if {
	count(join.deny) == 0 with input as request("UPDATE", in_set("dev"), no_set)
		with flotilla.authorized as may_join_dev
	count(join.deny) == 1 with input as request("UPDATE", in_set("prod"), no_set)
		with flotilla.authorized as may_join_dev
}

test_update_removing_label_allowed if {
	count(join.deny) == 0 with input as request("UPDATE", no_set, in_set("dev"))
		with flotilla.authorized as may_join_dev
}

test_update_removing_label_denied if {
	join.deny == {concat("", [
		"user alice cannot remove the ManagedCluster cluster1 from the ManagedClusterSet prod ",
		"(label cluster.open-cluster-management.io/clusterset): needs \"create\" on ",
		"managedclustersets/join.cluster.open-cluster-management.io named prod",
	])} with input as request("UPDATE", no_set, in_set("prod"))
		with flotilla.authorized as may_join_dev
}

test_update_moving_needs_both_sets if {
	count(join.deny) == 0 with input as request("UPDATE", in_set("prod"), in_set("dev"))
		with flotilla.authorized as may_join_dev_and_prod
	count(join.deny) == 1 with input as request("UPDATE", in_set("prod"), in_set("dev"))
		with flotilla.authorized as may_join_dev
	count(join.deny) == 1 with input as request("UPDATE", in_set("dev"), in_set("prod"))
		with flotilla.authorized as may_join_dev
	count(join.deny) == 2 with input as request("UPDATE", in_set("dev"), in_set("prod"))
		with flotilla.authorized as nothing
}

test_update_same_set_not_checked if {
	count(join.deny) == 0 with input as request("UPDATE", in_set("prod"), in_set("prod"))
		with flotilla.authorized as never_asked
	count(join.deny) == 0 with input as request("UPDATE", no_set, no_set)
		with flotilla.authorized as never_asked
}
