package flotilla.admission.bind_test

import data.flotilla.admission.bind

alice := {"username": "alice", "uid": "u1", "groups": ["system:authenticated"], "extra": {}}

binding(name, set) := {"metadata": {"name": name, "namespace": "team-a"}, "spec": {"clusterSet": set}}

request(op, new, old) := {
	"operation": op,
	"user": alice,
	"resource": {"group": "cluster.open-cluster-management.io", "version": "v1beta2", "resource": "managedclustersetbindings", "subresource": ""},
	"kind": {"group": "cluster.open-cluster-management.io", "version": "v1beta2", "kind": "ManagedClusterSetBinding"},
	"name": new.metadata.name,
	"namespace": "team-a",
	"object": new,
	"oldObject": old,
	"dryRun": false,
	"clusterNamespace": "",
	"featureGates": {},
}

bind_attrs(set) := {
	"verb": "create",
	"group": "cluster.open-cluster-management.io",
	"resource": "managedclustersets",
	"subresource": "bind",
	"name": set,
}

# Grants alice bind on the set "dev" only.
may_bind_dev(user, attrs) if {
	user.username == "alice"
	attrs == bind_attrs("dev")
} else := false

may_bind_anything(_, attrs) := attrs.subresource == "bind"

test_create_allowed if {
	count(bind.deny) == 0 with input as request("CREATE", binding("dev", "dev"), null)
		with flotilla.authorized as may_bind_dev
}

test_create_without_permission_denied if {
	bind.deny == {concat("", [
		"user alice cannot bind the ManagedClusterSet prod to namespace team-a (spec.clusterSet of the ",
		"ManagedClusterSetBinding prod): needs \"create\" on ",
		"managedclustersets/bind.cluster.open-cluster-management.io named prod",
	])} with input as request("CREATE", binding("prod", "prod"), null)
		with flotilla.authorized as may_bind_dev
}

test_name_mismatch_denied if {
	bind.deny == {concat("", [
		"the ManagedClusterSetBinding must have the same name as spec.clusterSet: ",
		"metadata.name is \"other\", spec.clusterSet is \"dev\"",
	])} with input as request("CREATE", binding("other", "dev"), null)
		with flotilla.authorized as may_bind_dev
}

test_missing_cluster_set_denied if {
	msgs := bind.deny with input as request("CREATE", {"metadata": {"name": "dev", "namespace": "team-a"}, "spec": {}}, null)
		with flotilla.authorized as may_bind_anything
	msgs == {"the ManagedClusterSetBinding must have the same name as spec.clusterSet: metadata.name is \"dev\", spec.clusterSet is \"\""}
}

test_name_mismatch_and_no_permission_both_reported if {
	count(bind.deny) == 2 with input as request("CREATE", binding("other", "prod"), null)
		with flotilla.authorized as may_bind_dev
}

test_update_checked if {
	count(bind.deny) == 0 with input as request("UPDATE", binding("dev", "dev"), binding("dev", "dev"))
		with flotilla.authorized as may_bind_dev
	count(bind.deny) == 1 with input as request("UPDATE", binding("prod", "prod"), binding("prod", "prod"))
		with flotilla.authorized as may_bind_dev
}
