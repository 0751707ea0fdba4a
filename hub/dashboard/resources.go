package dashboard

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

// The resources the dashboard watches. Events are watched once per kind of object they are
// about (a field selector each), so a hub's other Events are not cached.
const (
	resClusters     = "managedclusters"
	resLeases       = "leases"
	resClusterSets  = "managedclustersets"
	resPlacements   = "placements"
	resDecisions    = "placementdecisions"
	resMWRS         = "manifestworkreplicasets"
	resWorks        = "manifestworks"
	resOverrides    = "manifestworkreplicasetoverrides"
	resAddons       = "managedclusteraddons"
	resAddonDefs    = "clustermanagementaddons"
	resPlugins      = "wasmplugins"
	resPolicies     = "configmaps"
	resEvents       = "events"
	leaseName       = "managed-cluster-lease"
	involvedIndex   = "dashboard.involved"
	eventsPlacement = "Placement"
	eventsPlugin    = "WasmPlugin"
	eventsConfigMap = "ConfigMap"
)

// watched is one watched resource.
type watched struct {
	gr         schema.GroupResource
	namespaced bool
	obj        func() client.Object
}

var resources = map[string]watched{
	resClusters:    {schema.GroupResource{Group: clusterv1.GroupVersion.Group, Resource: resClusters}, false, func() client.Object { return &clusterv1.ManagedCluster{} }},
	resLeases:      {schema.GroupResource{Group: coordinationv1.GroupName, Resource: resLeases}, true, func() client.Object { return &coordinationv1.Lease{} }},
	resClusterSets: {schema.GroupResource{Group: clusterv1beta2.GroupVersion.Group, Resource: resClusterSets}, false, func() client.Object { return &clusterv1beta2.ManagedClusterSet{} }},
	resPlacements:  {schema.GroupResource{Group: clusterv1beta1.GroupVersion.Group, Resource: resPlacements}, true, func() client.Object { return &clusterv1beta1.Placement{} }},
	resDecisions:   {schema.GroupResource{Group: clusterv1beta1.GroupVersion.Group, Resource: resDecisions}, true, func() client.Object { return &clusterv1beta1.PlacementDecision{} }},
	resMWRS:        {schema.GroupResource{Group: workv1alpha1.GroupVersion.Group, Resource: resMWRS}, true, func() client.Object { return &workv1alpha1.ManifestWorkReplicaSet{} }},
	resWorks:       {schema.GroupResource{Group: workv1.GroupVersion.Group, Resource: resWorks}, true, func() client.Object { return &workv1.ManifestWork{} }},
	resOverrides:   {schema.GroupResource{Group: flotillav1alpha1.GroupVersion.Group, Resource: resOverrides}, true, func() client.Object { return &flotillav1alpha1.ManifestWorkReplicaSetOverride{} }},
	resAddons:      {schema.GroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: resAddons}, true, func() client.Object { return &addonv1alpha1.ManagedClusterAddOn{} }},
	resAddonDefs:   {schema.GroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: resAddonDefs}, false, func() client.Object { return &addonv1alpha1.ClusterManagementAddOn{} }},
	resPlugins:     {schema.GroupResource{Group: flotillav1alpha1.GroupVersion.Group, Resource: resPlugins}, false, func() client.Object { return &flotillav1alpha1.WasmPlugin{} }},
	resPolicies:    {schema.GroupResource{Resource: resPolicies}, true, func() client.Object { return &corev1.ConfigMap{} }},
	resEvents:      {schema.GroupResource{Resource: resEvents}, true, func() client.Object { return &corev1.Event{} }},
}

// mainResources are watched by the main cache. Events are watched by one cache per involved
// kind, and policy ConfigMaps by their own: the main cache has no ConfigMap informer, so a
// read of another ConfigMap (a plugin's source) is not answered "not found" by a
// label-selected one but ErrResourceNotCached, and falls back to a direct read.
var mainResources = []string{resClusters, resLeases, resClusterSets, resPlacements, resDecisions, resMWRS, resWorks,
	resOverrides, resAddons, resAddonDefs, resPlugins}

// kindResources are, per view kind, the resource its objects are (first) and those it
// also reads; access to the first decides what the kind shows.
var kindResources = map[string][]string{
	KindClusters:    {resClusters, resLeases, resClusterSets},
	KindClusterSets: {resClusterSets, resClusters},
	KindPlacements:  {resPlacements, resDecisions, resEvents},
	KindRollouts:    {resMWRS, resWorks, resPlacements, resDecisions, resOverrides, resAddonDefs, resAddons},
	KindAddons:      {resAddons},
	KindAddonDefs:   {resAddonDefs},
	KindPlugins:     {resPlugins, resEvents},
	KindPolicies:    {resPolicies, resEvents},
}

// kindGR is the resource whose access decides whether a viewer sees objects of kind (hub mode).
func kindGR(kind string) schema.GroupResource { return resources[kindResources[kind][0]].gr }

// auxNote says what the page lacks without a related resource.
var auxNote = map[string]string{
	resLeases:      "leases: last lease times are unknown",
	resClusterSets: "managedclustersets: cluster sets are not shown",
	resClusters:    "managedclusters: member counts are unknown",
	resDecisions:   "placementdecisions: decisions are not shown",
	resEvents:      "events: Events are not shown",
	resWorks:       "manifestworks: cluster states are unknown",
	resPlacements:  "placements: rollout placements are unknown",
	resOverrides:   "manifestworkreplicasetoverrides: overrides are not applied",
	resAddonDefs:   "clustermanagementaddons: add-on rollouts are not shown",
	resAddons:      "managedclusteraddons: add-on cluster states are unknown",
}
