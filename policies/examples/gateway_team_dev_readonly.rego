# Example gateway policy: members of group team-a reach managed clusters through the hub's
# cluster-gateway only to read, and only clusters labelled env=dev.
#
# A gateway policy (package flotilla.gateway.<name>) sees every request the gateway proxies
# (.../clustergateways/<cluster>/proxy/...), after hub RBAC allowed it; it has no match rule.
# input.request is the request sent to the managed cluster, input.cluster the ManagedCluster.
package flotilla.gateway.gateway_team_dev_readonly

# The group this policy restricts; other users are not judged by it.
team := "team-a"

# Verbs a team member may use (kubectl get, including -w).
read_verbs := {"get", "list", "watch"}

member if team in input.user.groups

deny contains msg if {
	member
	not input.request.verb in read_verbs
	msg := sprintf("members of %s may only read through the gateway (get, list, watch), not %s %s on cluster %s",
		[team, input.request.verb, input.request.path, input.cluster.name])
}

deny contains msg if {
	member
	object.get(input.cluster.labels, "env", "") != "dev"
	msg := sprintf("members of %s may only reach clusters labelled env=dev; cluster %s is not", [team, input.cluster.name])
}

deny contains msg if {
	member
	input.request.upgrade
	msg := sprintf("members of %s may not open exec, attach or port-forward sessions (cluster %s)", [team, input.cluster.name])
}
