# Example: a team's users may only give their works executors (service accounts) from the
# team's own namespaces.
package flotilla.admission.team_executor_namespaces

import data.flotilla.lib

# Group of the requesting user -> namespaces its executors may come from. A user in several
# groups may use the namespaces of all of them; a user in none is not restricted by this policy.
executor_namespaces := {
	"team-a": {"team-a", "team-a-jobs"},
	"team-b": {"team-b"},
}

match := [{
	"group": "work.open-cluster-management.io",
	"resources": ["manifestworks", "manifestworkreplicasets"],
	"operations": ["CREATE", "UPDATE"],
}]

teams contains group if {
	some group in input.user.groups
	executor_namespaces[group]
}

permitted contains namespace if {
	some group in teams
	some namespace in executor_namespaces[group]
}

deny contains msg if {
	count(teams) > 0
	executor := input.executor
	executor != null
	not executor.namespace in permitted
	msg := sprintf(
		"user %s (groups %s) cannot use executor %s/%s (%s.subject.serviceAccount) in the %s: executors must come from namespaces %s",
		[input.user.username, sorted_list(teams), executor.namespace, executor.name, lib.executor_field, lib.object_desc, sorted_list(permitted)],
	)
}

# Without an executor the work runs as the agent's own service account, which belongs to no team.
deny contains msg if {
	count(teams) > 0
	object.get(input, "executor", null) == null
	msg := sprintf(
		"user %s (groups %s) must set an executor (%s) in the %s, from namespaces %s",
		[input.user.username, sorted_list(teams), lib.executor_field, lib.object_desc, sorted_list(permitted)],
	)
}

sorted_list(s) := concat(", ", sort(s))
