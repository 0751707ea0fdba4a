# Overrides may point images only at the allowed registries. It sees the images an override
# writes (image.registry, a jsonPatch value at a path ending in /image, a mergePatch key "image"),
# not what a transform rule's plugin writes (gate plugins with "use") nor the replica set's own
# template (pair this with a policy on manifestworkreplicasets).
package flotilla.admission.override_registry_allowlist

# Edit: the registries images may come from.
allowed := {"registry.eu.example.com", "registry.us.example.com"}

match := [{
	"group": "flotilla.dev",
	"resources": ["manifestworkreplicasetoverrides"],
	"operations": ["CREATE", "UPDATE"],
}]

rules := object.get(input, ["object", "spec", "rules"], [])

# registry of an image reference: its first component when that names a host (has "." or ":",
# or is localhost), else Docker Hub.
registry(image) := r if {
	parts := split(image, "/")
	count(parts) > 1
	r := parts[0]
	host(r)
} else := "docker.io"

host(r) if contains(r, ".")

host(r) if contains(r, ":")

host("localhost")

templated(s) if contains(s, "{{")

# Every image an override writes: [field, value, kind], kind "registry" or "image".
written contains [sprintf("spec.rules[%d].image.registry", [i]), r.image.registry, "registry"] if {
	some i, r in rules
	r.image.registry
}

written contains [sprintf("spec.rules[%d].jsonPatch[%d].value", [i, j]), op.value, "image"] if {
	some i, r in rules
	some j, op in r.jsonPatch
	endswith(op.path, "/image")
	is_string(op.value)
}

written contains [sprintf("spec.rules[%d].jsonPatch[%d].valueTemplate", [i, j]), op.valueTemplate, "image"] if {
	some i, r in rules
	some j, op in r.jsonPatch
	endswith(op.path, "/image")
	op.valueTemplate
}

written contains [sprintf("spec.rules[%d].mergePatch.%s", [i, concat(".", [format_key(k) | some k in path])]), v, "image"] if {
	some i, r in rules
	walk(r.mergePatch, [path, v])
	count(path) > 0
	path[count(path) - 1] == "image"
	is_string(v)
}

format_key(k) := k if is_string(k) else := sprintf("[%v]", [k])

deny contains msg if {
	some [fld, v, _] in written
	templated(v)
	msg := sprintf("%s: %q is a template, so its registry cannot be checked at admission; write it out (allowed: %s)", [fld, v, concat(", ", sort(allowed))])
}

deny contains msg if {
	some [fld, v, "registry"] in written
	not templated(v)
	not v in allowed
	msg := sprintf("%s: registry %q is not allowed (allowed: %s)", [fld, v, concat(", ", sort(allowed))])
}

deny contains msg if {
	some [fld, v, "image"] in written
	not templated(v)
	not registry(v) in allowed
	msg := sprintf("%s: image %q is from registry %s, which is not allowed (allowed: %s)", [fld, v, registry(v), concat(", ", sort(allowed))])
}
