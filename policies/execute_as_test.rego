package flotilla.admission.execute_as_test

import data.flotilla.admission.execute_as

sa1 := {"kind": "ServiceAccount", "namespace": "ns1", "name": "sa1", "username": "system:serviceaccount:ns1:sa1"}

sa2 := {"kind": "ServiceAccount", "namespace": "ns2", "name": "sa2", "username": "system:serviceaccount:ns2:sa2"}

alice := {"username": "alice", "uid": "u1", "groups": ["dev", "system:authenticated"], "extra": {}}

work(op, new, old) := {
	"operation": op,
	"user": alice,
	"resource": {"group": "work.open-cluster-management.io", "version": "v1", "resource": "manifestworks", "subresource": ""},
	"kind": {"group": "work.open-cluster-management.io", "version": "v1", "kind": "ManifestWork"},
	"name": "web",
	"namespace": "cluster1",
	"object": {"metadata": {"name": "web", "namespace": "cluster1"}, "spec": {}},
	"oldObject": old_object(op),
	"dryRun": false,
	"clusterNamespace": "cluster1",
	"featureGates": {"NilExecutorValidating": false},
	"executor": new,
	"oldExecutor": old,
	"manifests": [],
}

old_object("CREATE") := null

old_object("UPDATE") := {"metadata": {"name": "web", "namespace": "cluster1"}, "spec": {}}

replica_set(op, new, old) := object.union(work(op, new, old), {
	"resource": {"resource": "manifestworkreplicasets"},
	"kind": {"kind": "ManifestWorkReplicaSet", "version": "v1alpha1"},
	"namespace": "team-a",
	"clusterNamespace": "",
})

nil_gate(request) := object.union(request, {"featureGates": {"NilExecutorValidating": true}})

# Mocks of flotilla.authorized. Each grants exactly one permission to alice, so a test also
# fails when the policy asks about the wrong user, verb, resource, namespace or name.
may_execute_as_sa1(user, attrs) if {
	user.username == "alice"
	attrs == {
		"verb": "execute-as",
		"group": "work.open-cluster-management.io",
		"resource": "manifestworks",
		"namespace": "cluster1",
		"name": "system:serviceaccount:ns1:sa1",
	}
} else := false

may_execute_as_sa1_in_team_a(user, attrs) if {
	user.username == "alice"
	attrs == {
		"verb": "execute-as",
		"group": "work.open-cluster-management.io",
		"resource": "manifestworks",
		"namespace": "team-a",
		"name": "system:serviceaccount:ns1:sa1",
	}
} else := false

may_execute_as_agent(user, attrs) if {
	user.username == "alice"
	attrs == {
		"verb": "execute-as",
		"group": "work.open-cluster-management.io",
		"resource": "manifestworks",
		"namespace": "cluster1",
		"name": "system:serviceaccount::klusterlet-work-sa",
	}
} else := false

nothing(_, _) := false

# Fails the test if the policy asks at all: for requests that need no check.
never_asked(_, _) := false if false

test_create_with_permitted_executor_allowed if {
	count(execute_as.deny) == 0 with input as work("CREATE", sa1, null)
		with flotilla.authorized as may_execute_as_sa1
}

test_create_with_other_executor_denied if {
	execute_as.deny == {concat("", [
		"user alice cannot manipulate the ManifestWork web with executor ns2/sa2 ",
		"(spec.executor.subject.serviceAccount) in namespace cluster1: needs \"execute-as\" on ",
		"manifestworks.work.open-cluster-management.io named system:serviceaccount:ns2:sa2",
	])} with input as work("CREATE", sa2, null)
		with flotilla.authorized as may_execute_as_sa1
}

test_update_changing_executor_checks_the_new_one if {
	count(execute_as.deny) == 0 with input as work("UPDATE", sa1, sa2)
		with flotilla.authorized as may_execute_as_sa1
	count(execute_as.deny) == 1 with input as work("UPDATE", sa2, sa1)
		with flotilla.authorized as may_execute_as_sa1
}

test_update_adding_executor_denied_without_permission if {
	count(execute_as.deny) == 1 with input as work("UPDATE", sa2, null)
		with flotilla.authorized as nothing
}

test_update_keeping_executor_not_checked if {
	count(execute_as.deny) == 0 with input as work("UPDATE", sa2, sa2)
		with flotilla.authorized as never_asked
}

test_nil_executor_without_gate_not_checked if {
	count(execute_as.deny) == 0 with input as work("CREATE", null, null)
		with flotilla.authorized as never_asked
	count(execute_as.deny) == 0 with input as work("UPDATE", null, sa1)
		with flotilla.authorized as never_asked
}

test_nil_executor_with_gate_on_create_allowed if {
	count(execute_as.deny) == 0 with input as nil_gate(work("CREATE", null, null))
		with flotilla.authorized as may_execute_as_agent
}

test_nil_executor_with_gate_on_create_denied if {
	execute_as.deny == {concat("", [
		"user alice cannot manipulate the ManifestWork web without an executor (spec.executor unset, ",
		"so it runs as the work agent's klusterlet-work-sa) in namespace cluster1: needs \"execute-as\" on ",
		"manifestworks.work.open-cluster-management.io named system:serviceaccount::klusterlet-work-sa",
	])} with input as nil_gate(work("CREATE", null, null))
		with flotilla.authorized as may_execute_as_sa1
}

test_nil_executor_with_gate_removing_executor if {
	count(execute_as.deny) == 1 with input as nil_gate(work("UPDATE", null, sa1))
		with flotilla.authorized as may_execute_as_sa1
	count(execute_as.deny) == 0 with input as nil_gate(work("UPDATE", null, sa1))
		with flotilla.authorized as may_execute_as_agent
}

test_nil_executor_with_gate_unchanged_not_checked if {
	count(execute_as.deny) == 0 with input as nil_gate(work("UPDATE", null, null))
		with flotilla.authorized as never_asked
}

test_replica_set_allowed if {
	count(execute_as.deny) == 0 with input as replica_set("CREATE", sa1, null)
		with flotilla.authorized as may_execute_as_sa1_in_team_a
}

test_replica_set_denied_names_template_field if {
	execute_as.deny == {concat("", [
		"user alice cannot manipulate the ManifestWorkReplicaSet web with executor ns1/sa1 ",
		"(spec.manifestWorkTemplate.executor.subject.serviceAccount) in namespace team-a: needs ",
		"\"execute-as\" on manifestworks.work.open-cluster-management.io named system:serviceaccount:ns1:sa1",
	])} with input as replica_set("UPDATE", sa1, sa2)
		with flotilla.authorized as may_execute_as_sa1
}

test_replica_set_nil_executor_with_gate if {
	msgs := execute_as.deny with input as nil_gate(replica_set("CREATE", null, null))
		with flotilla.authorized as nothing
	count(msgs) == 1
	some msg in msgs
	contains(msg, "(spec.manifestWorkTemplate.executor unset,")
}

test_undefined_authorizer_answer_denies if {
	count(execute_as.deny) == 1 with input as work("CREATE", sa1, null)
		with flotilla.authorized as never_asked
}
