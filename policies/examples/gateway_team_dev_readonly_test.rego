package flotilla.gateway.gateway_team_dev_readonly_test

import data.flotilla.gateway.gateway_team_dev_readonly as policy

request(groups, verb, labels) := {
	"user": {"username": "alice", "uid": "", "groups": groups, "extra": {}},
	"cluster": {"name": "cluster1", "labels": labels, "clusterSets": []},
	"request": {
		"method": "GET", "verb": verb, "path": "/api/v1/namespaces/default/configmaps", "query": {},
		"upgrade": false, "isResourceRequest": true, "apiGroup": "", "apiVersion": "v1",
		"resource": "configmaps", "subresource": "", "namespace": "default", "name": "",
	},
}

test_team_reads_dev if {
	count(policy.deny) == 0 with input as request(["team-a"], "list", {"env": "dev"})
	count(policy.deny) == 0 with input as request(["team-a"], "watch", {"env": "dev"})
}

test_team_cannot_delete if {
	policy.deny == {"members of team-a may only read through the gateway (get, list, watch), not delete /api/v1/namespaces/default/configmaps on cluster cluster1"} with input as request(["team-a"], "delete", {"env": "dev"})
}

test_team_cannot_reach_other_clusters if {
	policy.deny == {"members of team-a may only reach clusters labelled env=dev; cluster cluster1 is not"} with input as request(["team-a"], "get", {"env": "prod"})
	count(policy.deny) == 1 with input as request(["team-a"], "get", {})
}

test_team_cannot_exec if {
	exec := object.union(request(["team-a"], "create", {"env": "dev"}), {"request": {"upgrade": true, "subresource": "exec"}})
	count(policy.deny) == 2 with input as exec
}

test_others_unaffected if {
	count(policy.deny) == 0 with input as request(["team-b"], "delete", {"env": "prod"})
}
