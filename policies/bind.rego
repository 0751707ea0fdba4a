# A ManagedClusterSetBinding makes a set's clusters usable (by Placements) in its namespace, so it
# needs "create" on the virtual subresource managedclustersets/bind of that set, as in OCM; and its
# name must be the set's, so a namespace holds at most one binding per set.
package flotilla.admission.bind

import data.flotilla.lib

match := [{
	"group": "cluster.open-cluster-management.io",
	"resources": ["managedclustersetbindings"],
	"operations": ["CREATE", "UPDATE"],
}]

cluster_set := object.get(input.object, ["spec", "clusterSet"], "")

deny contains msg if {
	input.object.metadata.name != cluster_set
	msg := sprintf(
		"the ManagedClusterSetBinding must have the same name as spec.clusterSet: metadata.name is %q, spec.clusterSet is %q",
		[input.object.metadata.name, cluster_set],
	)
}

deny contains msg if {
	not lib.allowed({
		"verb": "create",
		"group": "cluster.open-cluster-management.io",
		"resource": "managedclustersets",
		"subresource": "bind",
		"name": cluster_set,
	})
	msg := sprintf(
		"user %s cannot bind the ManagedClusterSet %s to namespace %s (spec.clusterSet of the ManagedClusterSetBinding %s): needs \"create\" on managedclustersets/bind.cluster.open-cluster-management.io named %s",
		[input.user.username, cluster_set, input.namespace, input.name, cluster_set],
	)
}
