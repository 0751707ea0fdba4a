# Helpers shared by the admission policies. This package is not a policy: it lives outside
# flotilla.admission and has no match rule.
package flotilla.lib

# The label that puts a ManagedCluster in a ManagedClusterSet.
clusterset_label := "cluster.open-cluster-management.io/clusterset"

# allowed asks the hub's authorizer (SubjectAccessReview) whether the requesting user may do
# attributes ({"verb", "group", "resource", "subresource", "name", "namespace"}).
allowed(attributes) := flotilla.authorized(input.user, attributes)

# executor_username is the username a work executor's service account authenticates as. It is
# built from namespace and name (not input.executor.username) so that OCM's default executor,
# which has no namespace, yields the same "system:serviceaccount::klusterlet-work-sa" as OCM.
executor_username(executor) := sprintf("system:serviceaccount:%s:%s", [executor.namespace, executor.name])

# executor_user is the user (shaped like input.user) of an executor's service account, with the
# groups Kubernetes gives every service account, to ask what the executor itself may do.
executor_user(executor) := {
	"username": executor_username(executor),
	"uid": "",
	"groups": [
		"system:serviceaccounts",
		sprintf("system:serviceaccounts:%s", [executor.namespace]),
		"system:authenticated",
	],
	"extra": {},
}

# executor_field is where the request's object keeps its executor, for messages.
executor_field := "spec.manifestWorkTemplate.executor" if {
	input.kind.kind == "ManifestWorkReplicaSet"
} else := "spec.executor"

# manifests_field is where the request's object keeps its manifests, for messages.
manifests_field := "spec.manifestWorkTemplate.workload.manifests" if {
	input.kind.kind == "ManifestWorkReplicaSet"
} else := "spec.workload.manifests"

# label is obj's label key, "" when obj, its labels or the key are absent.
label(obj, key) := value if {
	value := obj.metadata.labels[key]
} else := ""

# object_desc names the request's object for messages: kind and name, e.g. "ManifestWork web"
# (the kind alone when the name is not known yet).
object_desc := sprintf("%s %s", [input.kind.kind, input.name]) if {
	input.name != ""
} else := input.kind.kind
