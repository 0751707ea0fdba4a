package flotilla.lib_test

import data.flotilla.lib

alice := {"username": "alice", "uid": "u1", "groups": ["dev"], "extra": {}}

# Answers true only for alice, to show allowed passes the requesting user through.
alice_may_all(user, _) := user.username == "alice"

# True only for exactly alice and these attributes, to show allowed passes both through unchanged.
exactly(user, attrs) if {
	user == alice
	attrs == {"verb": "update", "group": "g", "resource": "r", "subresource": "s", "name": "n", "namespace": "ns"}
} else := false

test_allowed_asks_about_the_requesting_user if {
	lib.allowed({"verb": "get"}) with input as {"user": alice}
		with flotilla.authorized as alice_may_all
	not lib.allowed({"verb": "get"}) with input as {"user": {"username": "bob", "groups": []}}
		with flotilla.authorized as alice_may_all
}

test_allowed_passes_attributes_unchanged if {
	attrs := {"verb": "update", "group": "g", "resource": "r", "subresource": "s", "name": "n", "namespace": "ns"}
	lib.allowed(attrs) with input as {"user": alice}
		with flotilla.authorized as exactly
	not lib.allowed(object.union(attrs, {"name": "other"})) with input as {"user": alice}
		with flotilla.authorized as exactly
}

test_executor_username if {
	lib.executor_username({"kind": "ServiceAccount", "namespace": "ns1", "name": "sa1"}) == "system:serviceaccount:ns1:sa1"
	lib.executor_username({"namespace": "", "name": "klusterlet-work-sa"}) == "system:serviceaccount::klusterlet-work-sa"
}

test_executor_user if {
	lib.executor_user({"namespace": "ns1", "name": "sa1"}) == {
		"username": "system:serviceaccount:ns1:sa1",
		"uid": "",
		"groups": ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"],
		"extra": {},
	}
}

test_executor_and_manifests_fields if {
	lib.executor_field == "spec.executor" with input as {"kind": {"kind": "ManifestWork"}}
	lib.executor_field == "spec.manifestWorkTemplate.executor" with input as {"kind": {"kind": "ManifestWorkReplicaSet"}}
	lib.manifests_field == "spec.workload.manifests" with input as {"kind": {"kind": "ManifestWork"}}
	lib.manifests_field == "spec.manifestWorkTemplate.workload.manifests" with input as {"kind": {"kind": "ManifestWorkReplicaSet"}}
}

test_label if {
	obj := {"metadata": {"labels": {"team": "a", "empty": ""}}}
	lib.label(obj, "team") == "a"
	lib.label(obj, "empty") == ""
	lib.label(obj, "absent") == ""
	lib.label({"metadata": {}}, "team") == ""
	lib.label(null, "team") == ""
}

test_clusterset_label if {
	lib.clusterset_label == "cluster.open-cluster-management.io/clusterset"
}

test_object_desc if {
	lib.object_desc == "ManifestWork web" with input as {"kind": {"kind": "ManifestWork"}, "name": "web"}
	lib.object_desc == "Placement" with input as {"kind": {"kind": "Placement"}, "name": ""}
}
