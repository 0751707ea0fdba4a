# Example: every Placement must carry a label saying whose it is, e.g. for cost reports.
package flotilla.admission.placement_label

import data.flotilla.lib

# The label every Placement must have, with a non-empty value.
required_label := "team"

match := [{
	"group": "cluster.open-cluster-management.io",
	"resources": ["placements"],
	"operations": ["CREATE", "UPDATE"],
}]

deny contains msg if {
	lib.label(input.object, required_label) == ""
	msg := sprintf(
		"the Placement %s in namespace %s must have the label %s with a non-empty value (metadata.labels)",
		[input.name, input.namespace, required_label],
	)
}
