# A ManifestWorkReplicaSetOverride changes the works of the replica sets it names (and, when it
# moves off one or is deleted, of the ones it named), so whoever writes it must be allowed to
# update each of them; a transform rule runs a WasmPlugin on the hub, so it needs "use" on it.
package flotilla.admission.override_target

import data.flotilla.lib

match := [{
	"group": "flotilla.dev",
	"resources": ["manifestworkreplicasetoverrides"],
	"operations": ["CREATE", "UPDATE", "DELETE"],
}]

# Old and new targets both: moving an override off a replica set changes that set's works.
targets contains t.name if some t in object.get(input, ["object", "spec", "replicaSets"], [])

targets contains t.name if some t in object.get(input, ["oldObject", "spec", "replicaSets"], [])

deny contains msg if {
	some name in targets
	not lib.allowed({
		"verb": "update",
		"group": "work.open-cluster-management.io",
		"resource": "manifestworkreplicasets",
		"namespace": input.namespace,
		"name": name,
	})
	msg := sprintf(
		"user %s may not override ManifestWorkReplicaSet %s/%s with %s: needs \"update\" on manifestworkreplicasets.work.open-cluster-management.io named %s in namespace %s",
		[input.user.username, input.namespace, name, lib.object_desc, name, input.namespace],
	)
}

# Only the new spec's plugins: a removed transform runs no more.
plugins contains r.transform.plugin if {
	some r in object.get(input, ["object", "spec", "rules"], [])
	r.transform.plugin
}

deny contains msg if {
	some p in plugins
	not lib.allowed({"verb": "use", "group": "flotilla.dev", "resource": "wasmplugins", "name": p})
	msg := sprintf(
		"user %s may not run WasmPlugin %s in %s: needs \"use\" on wasmplugins.flotilla.dev named %s",
		[input.user.username, p, lib.object_desc, p],
	)
}
