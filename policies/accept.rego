# Accepting a cluster (spec.hubAcceptsClient: true) lets its agent in, so it needs "update" on the
# virtual subresource managedclusters/accept, as in OCM. Un-accepting needs no more than the update.
package flotilla.admission.accept

import data.flotilla.lib

match := [{
	"group": "cluster.open-cluster-management.io",
	"resources": ["managedclusters"],
	"operations": ["CREATE", "UPDATE"],
}]

deny contains msg if {
	input.object.spec.hubAcceptsClient == true
	not accepted_before
	not lib.allowed({
		"verb": "update",
		"group": "register.open-cluster-management.io",
		"resource": "managedclusters",
		"subresource": "accept",
		"name": input.name,
	})
	msg := sprintf(
		"user %s cannot accept the ManagedCluster %s (spec.hubAcceptsClient: true): needs \"update\" on managedclusters/accept.register.open-cluster-management.io named %s",
		[input.user.username, input.name, input.name],
	)
}

# Undefined on CREATE (no oldObject), so a cluster created accepted is checked.
accepted_before if input.oldObject.spec.hubAcceptsClient == true
