# Putting a ManagedCluster in a ManagedClusterSet (its clusterset label), or taking it out, needs
# "create" on the virtual subresource managedclustersets/join of that set, as in OCM. Moving a cluster
# between sets needs it on both.
package flotilla.admission.join

import data.flotilla.lib

match := [{
	"group": "cluster.open-cluster-management.io",
	"resources": ["managedclusters"],
	"operations": ["CREATE", "UPDATE"],
}]

# "" when the label is absent (and on CREATE for the old set, oldObject being null).
new_set := lib.label(input.object, lib.clusterset_label)

old_set := lib.label(input.oldObject, lib.clusterset_label)

deny contains msg if {
	new_set != old_set
	new_set != ""
	not may_join(new_set)
	msg := sprintf(
		"user %s cannot add the ManagedCluster %s to the ManagedClusterSet %s (label %s): needs %s",
		[input.user.username, input.name, new_set, lib.clusterset_label, permission_desc(new_set)],
	)
}

deny contains msg if {
	new_set != old_set
	old_set != ""
	not may_join(old_set)
	msg := sprintf(
		"user %s cannot remove the ManagedCluster %s from the ManagedClusterSet %s (label %s): needs %s",
		[input.user.username, input.name, old_set, lib.clusterset_label, permission_desc(old_set)],
	)
}

may_join(set) := lib.allowed({
	"verb": "create",
	"group": "cluster.open-cluster-management.io",
	"resource": "managedclustersets",
	"subresource": "join",
	"name": set,
})

permission_desc(set) := sprintf(
	"\"create\" on managedclustersets/join.cluster.open-cluster-management.io named %s",
	[set],
)
