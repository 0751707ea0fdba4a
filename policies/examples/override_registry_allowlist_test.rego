package flotilla.admission.override_registry_allowlist_test

import data.flotilla.admission.override_registry_allowlist as p

req(rules) := {
	"operation": "CREATE",
	"user": {"username": "alice", "uid": "", "groups": [], "extra": {}},
	"kind": {"group": "flotilla.dev", "version": "v1alpha1", "kind": "ManifestWorkReplicaSetOverride"},
	"name": "eu",
	"namespace": "team-a",
	"object": {"spec": {"replicaSets": [{"name": "web"}], "rules": rules}},
}

allowed_list := "registry.eu.example.com, registry.us.example.com"

test_allowed_registry if {
	count(p.deny) == 0 with input as req([
		{"name": "a", "image": {"registry": "registry.eu.example.com"}},
		{"name": "b", "jsonPatch": [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "registry.us.example.com/web:1"}]},
		{"name": "c", "mergePatch": {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "registry.eu.example.com/web"}]}}}}},
		{"name": "d", "image": {"tag": "{{ .cluster.name }}"}},
	])
}

test_image_registry_denied if {
	p.deny == {sprintf("spec.rules[0].image.registry: registry \"quay.io\" is not allowed (allowed: %s)", [allowed_list])} with input as req([{"name": "a", "image": {"registry": "quay.io"}}])
}

test_json_patch_denied if {
	p.deny == {sprintf("spec.rules[1].jsonPatch[0].value: image \"evil.example.com/web:1\" is from registry evil.example.com, which is not allowed (allowed: %s)", [allowed_list])} with input as req([
		{"name": "a", "labels": {"set": {"a": "b"}}},
		{"name": "b", "jsonPatch": [{"op": "add", "path": "/spec/template/spec/containers/0/image", "value": "evil.example.com/web:1"}]},
	])
}

test_docker_hub_default if {
	p.deny == {sprintf("spec.rules[0].jsonPatch[0].value: image \"library/nginx\" is from registry docker.io, which is not allowed (allowed: %s)", [allowed_list])} with input as req([
		{"name": "a", "jsonPatch": [{"op": "add", "path": "/spec/image", "value": "library/nginx"}]},
	])
}

test_merge_patch_denied if {
	p.deny == {sprintf("spec.rules[0].mergePatch.spec.template.spec.containers.[0].image: image \"localhost/web\" is from registry localhost, which is not allowed (allowed: %s)", [allowed_list])} with input as req([
		{"name": "a", "mergePatch": {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "localhost/web"}]}}}}},
	])
}

test_templates_denied if {
	p.deny == {
		sprintf("spec.rules[0].image.registry: \"{{ .cluster.labels.region }}\" is a template, so its registry cannot be checked at admission; write it out (allowed: %s)", [allowed_list]),
		sprintf("spec.rules[1].jsonPatch[0].valueTemplate: \"{{ .cluster.name }}/web\" is a template, so its registry cannot be checked at admission; write it out (allowed: %s)", [allowed_list]),
	} with input as req([
		{"name": "a", "image": {"registry": "{{ .cluster.labels.region }}"}},
		{"name": "b", "jsonPatch": [{"op": "add", "path": "/spec/image", "valueTemplate": "{{ .cluster.name }}/web"}]},
	])
}

test_other_paths_ignored if {
	count(p.deny) == 0 with input as req([
		{"name": "a", "jsonPatch": [{"op": "add", "path": "/metadata/labels/image", "value": 3}]},
		{"name": "b", "jsonPatch": [{"op": "add", "path": "/spec/replicas", "value": "quay.io/x"}]},
	])
}
