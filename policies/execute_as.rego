# A ManifestWork runs on its cluster as its executor's service account, so whoever sets the
# executor must be allowed to act as it: OCM's "execute-as" check on the ManifestWork and
# ManifestWorkReplicaSet webhooks.
package flotilla.admission.execute_as

import data.flotilla.lib

match := [{
	"group": "work.open-cluster-management.io",
	"resources": ["manifestworks", "manifestworkreplicasets"],
	"operations": ["CREATE", "UPDATE"],
}]

executor := object.get(input, "executor", null)

old_executor := object.get(input, "oldExecutor", null)

# What a work without executor runs as: the agent's own service account. OCM leaves its
# namespace empty, so the permission to check is named "system:serviceaccount::klusterlet-work-sa".
default_executor := {"kind": "ServiceAccount", "namespace": "", "name": "klusterlet-work-sa"}

# Only a set or changed executor is checked, so that users who may edit a work but not act as its
# executor can still change the rest of it (OCM does the same).
deny contains msg if {
	executor != null
	executor != old_executor
	not lib.allowed(permission(executor))
	msg := sprintf(
		"user %s cannot manipulate the %s with executor %s/%s (%s.subject.serviceAccount) in namespace %s: needs %s",
		[input.user.username, lib.object_desc, executor.namespace, executor.name, lib.executor_field, input.namespace, permission_desc(executor)],
	)
}

# With NilExecutorValidating, leaving the executor out (on CREATE, or removing it on UPDATE) needs
# the permission to act as the agent's own service account.
deny contains msg if {
	executor == null
	input.featureGates.NilExecutorValidating == true
	nil_executor_set
	not lib.allowed(permission(default_executor))
	msg := sprintf(
		"user %s cannot manipulate the %s without an executor (%s unset, so it runs as the work agent's klusterlet-work-sa) in namespace %s: needs %s",
		[input.user.username, lib.object_desc, lib.executor_field, input.namespace, permission_desc(default_executor)],
	)
}

nil_executor_set if input.operation == "CREATE"

nil_executor_set if old_executor != null

permission(sa) := {
	"verb": "execute-as",
	"group": "work.open-cluster-management.io",
	"resource": "manifestworks",
	"namespace": input.namespace,
	"name": lib.executor_username(sa),
}

permission_desc(sa) := sprintf(
	"\"execute-as\" on manifestworks.work.open-cluster-management.io named %s",
	[lib.executor_username(sa)],
)
