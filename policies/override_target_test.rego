package flotilla.admission.override_target_test

import data.flotilla.admission.override_target

alice := {"username": "alice", "uid": "u1", "groups": ["dev", "system:authenticated"], "extra": {}}

spec(sets, rules) := {"replicaSets": [{"name": s} | some s in sets], "rules": rules}

obj(s) := {"metadata": {"name": "eu", "namespace": "team-a"}, "spec": s}

req(op, new, old) := {
	"operation": op,
	"user": alice,
	"resource": {"group": "flotilla.dev", "version": "v1alpha1", "resource": "manifestworkreplicasetoverrides", "subresource": ""},
	"kind": {"group": "flotilla.dev", "version": "v1alpha1", "kind": "ManifestWorkReplicaSetOverride"},
	"name": "eu",
	"namespace": "team-a",
	"object": new,
	"oldObject": old,
	"dryRun": false,
	"clusterNamespace": "",
	"featureGates": {},
}

image_rule := {"name": "r", "image": {"registry": "registry.eu.example.com"}}

transform_rule := {"name": "t", "transform": {"plugin": "labeller"}}

# Mocks of flotilla.authorized: exactly alice, exactly these attributes.

update_attrs(name) := {
	"verb": "update",
	"group": "work.open-cluster-management.io",
	"resource": "manifestworkreplicasets",
	"namespace": "team-a",
	"name": name,
}

may_update_web(user, attrs) if {
	user.username == "alice"
	attrs == update_attrs("web")
} else := false

may_update_web_and_api(user, attrs) if {
	user.username == "alice"
	attrs in {update_attrs("web"), update_attrs("api")}
} else := false

may_update_web_and_use_labeller(user, attrs) if {
	user.username == "alice"
	attrs in {update_attrs("web"), {"verb": "use", "group": "flotilla.dev", "resource": "wasmplugins", "name": "labeller"}}
} else := false

msg_web := "user alice may not override ManifestWorkReplicaSet team-a/web with ManifestWorkReplicaSetOverride eu: needs \"update\" on manifestworkreplicasets.work.open-cluster-management.io named web in namespace team-a"

msg_api := "user alice may not override ManifestWorkReplicaSet team-a/api with ManifestWorkReplicaSetOverride eu: needs \"update\" on manifestworkreplicasets.work.open-cluster-management.io named api in namespace team-a"

msg_labeller := "user alice may not run WasmPlugin labeller in ManifestWorkReplicaSetOverride eu: needs \"use\" on wasmplugins.flotilla.dev named labeller"

test_create_allowed if {
	count(override_target.deny) == 0 with input as req("CREATE", obj(spec(["web"], [image_rule])), null)
		with flotilla.authorized as may_update_web
}

test_create_denied_per_target if {
	override_target.deny == {msg_api} with input as req("CREATE", obj(spec(["web", "api"], [image_rule])), null)
		with flotilla.authorized as may_update_web
}

test_create_denied_without_any if {
	override_target.deny == {msg_web, msg_api} with input as req("CREATE", obj(spec(["web", "api"], [image_rule])), null)
		with flotilla.authorized as false
}

test_update_checks_old_target if {
	override_target.deny == {msg_api} with input as req("UPDATE", obj(spec(["web"], [image_rule])), obj(spec(["api"], [image_rule])))
		with flotilla.authorized as may_update_web
}

test_update_old_and_new_allowed if {
	count(override_target.deny) == 0 with input as req("UPDATE", obj(spec(["web"], [image_rule])), obj(spec(["api"], [image_rule])))
		with flotilla.authorized as may_update_web_and_api
}

test_delete_checks_old_targets if {
	override_target.deny == {msg_web} with input as req("DELETE", null, obj(spec(["web"], [transform_rule])))
		with flotilla.authorized as false
}

test_delete_allowed if {
	count(override_target.deny) == 0 with input as req("DELETE", null, obj(spec(["web"], [transform_rule])))
		with flotilla.authorized as may_update_web
}

test_transform_needs_use if {
	override_target.deny == {msg_labeller} with input as req("CREATE", obj(spec(["web"], [image_rule, transform_rule])), null)
		with flotilla.authorized as may_update_web
}

test_transform_with_use_allowed if {
	count(override_target.deny) == 0 with input as req("CREATE", obj(spec(["web"], [transform_rule])), null)
		with flotilla.authorized as may_update_web_and_use_labeller
}
