package flotilla.admission.placement_label_test

import data.flotilla.admission.placement_label as policy

request(op, labels) := {
	"operation": op,
	"user": {"username": "alice", "uid": "u1", "groups": ["system:authenticated"], "extra": {}},
	"kind": {"group": "cluster.open-cluster-management.io", "version": "v1beta1", "kind": "Placement"},
	"name": "all",
	"namespace": "team-a",
	"object": {"metadata": {"name": "all", "namespace": "team-a", "labels": labels}, "spec": {}},
	"oldObject": null,
}

test_labelled_placement_allowed if {
	count(policy.deny) == 0 with input as request("CREATE", {"team": "a"})
	count(policy.deny) == 0 with input as request("UPDATE", {"team": "a", "env": "prod"})
}

test_placement_without_label_denied if {
	policy.deny == {"the Placement all in namespace team-a must have the label team with a non-empty value (metadata.labels)"} with input as request("CREATE", {"env": "prod"})
	count(policy.deny) == 1 with input as request("UPDATE", {})
}

test_empty_label_denied if {
	count(policy.deny) == 1 with input as request("CREATE", {"team": ""})
}

test_placement_without_labels_denied if {
	count(policy.deny) == 1 with input as object.union(request("CREATE", {}), {"object": {"metadata": {"labels": null}}})
}
