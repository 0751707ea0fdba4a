// Package operator is the hub operator (`flotilla operator hub`), Flotilla's counterpart of
// OCM's cluster-manager operator: the only reader of the ClusterManager
// (operator.open-cluster-management.io/v1, "cluster-manager" by default).
//
// The deploy reconciler renders the hub chart (core/install, charts/flotilla-hub with
// render: components) from the chart defaults, the values ConfigMap ValuesConfigMap in the
// operator's namespace (the Flotilla-only settings the chart's render: operator wrote) and the
// values the spec gives (ValuesFor; fields Flotilla does not act on are refused, see
// Refusal), server-side applies the objects owned by the ClusterManager with its own field
// manager and prunes those it rendered before and no longer renders (a component switched
// off). A spec change thus rolls the Deployments whose rendered template changes, as OCM's
// operator does; the hub processes (`flotilla hub --components ...`) take their settings from
// their flags only. A Deployment changed or deleted by someone else is applied again.
//
// The status reconciler writes OCM's conditions (Applied, Progressing, HubRegistrationDegraded,
// HubPlacementDegraded, ValidFeatureGates) and Flotilla's ValidConfiguration, observedGeneration,
// generations (every Deployment) and relatedResources (every applied object and the CRDs the
// registration-controller installs), which clusteradm's get hub-info reads.
//
// Deleting the ClusterManager leaves its components to garbage collection (owner references).
package operator
