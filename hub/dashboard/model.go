package dashboard

import (
	"regexp"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/hub/admin"
)

// The KIND keys of the view model (design-26).
const (
	KindClusters    = "clusters"
	KindClusterSets = "clustersets"
	KindPlacements  = "placements"
	KindRollouts    = "rollouts"
	KindAddons      = "addons"
	KindAddonDefs   = "addondefs"
	KindPlugins     = "plugins"
	KindPolicies    = "policies"
)

// Kinds are the view-model kinds, in the order snapshots list them.
var Kinds = []string{KindClusters, KindClusterSets, KindPlacements, KindRollouts, KindAddons, KindAddonDefs, KindPlugins, KindPolicies}

// maxEvents bounds the Events shown per object (newest first).
const maxEvents = 10

// Cond is a condition as the page shows it.
type Cond struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Time    string `json:"time"`
}

// Event is one Event about an object.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Time    string `json:"time"`
	Count   int32  `json:"count"`
}

// Taint is a cluster taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Effect string `json:"effect"`
}

// Cluster is a ManagedCluster.
type Cluster struct {
	Key       string            `json:"key"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
	Accepted  bool              `json:"accepted"`
	Joined    string            `json:"joined"`
	Available string            `json:"available"`
	Reason    string            `json:"reason"`
	Message   string            `json:"message"`
	Since     string            `json:"since"`
	Taints    []Taint           `json:"taints"`
	Sets      []string          `json:"sets"`
	Version   string            `json:"version"`
	CPU       string            `json:"cpu"`
	Memory    string            `json:"memory"`
	Lease     string            `json:"lease"`
}

// ClusterSet is a ManagedClusterSet with its member count.
type ClusterSet struct {
	Key          string `json:"key"`
	Name         string `json:"name"`
	SelectorType string `json:"selectorType"`
	Clusters     int    `json:"clusters"`
}

// Placement is a Placement with its decisions and Events.
type Placement struct {
	Key       string     `json:"key"`
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Requested *int32     `json:"requested"`
	Selected  int32      `json:"selected"`
	Satisfied string     `json:"satisfied"`
	Reason    string     `json:"reason"`
	Message   string     `json:"message"`
	Groups    []Group    `json:"groups"`
	Decisions []Decision `json:"decisions"`
	Events    []Event    `json:"events"`
}

// Group is a decision group of a placement.
type Group struct {
	Index    int32    `json:"index"`
	Name     string   `json:"name"`
	Clusters []string `json:"clusters"`
}

// Decision is one selected cluster.
type Decision struct {
	Cluster string `json:"cluster"`
	Reason  string `json:"reason"`
}

// Addon is a ManagedClusterAddOn.
type Addon struct {
	Key              string        `json:"key"`
	Cluster          string        `json:"cluster"`
	Name             string        `json:"name"`
	Health           string        `json:"health"`
	Reason           string        `json:"reason"`
	Message          string        `json:"message"`
	Available        string        `json:"available"`
	Degraded         string        `json:"degraded"`
	Progressing      string        `json:"progressing"`
	Configs          []AddonConfig `json:"configs"`
	Version          string        `json:"version"`
	InstallNamespace string        `json:"installNamespace"`
}

// AddonConfig is one configuration of an add-on: desired and last applied spec hashes.
type AddonConfig struct {
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Desired   string `json:"desired"`
	Applied   string `json:"applied"`
}

// AddonDef is a ClusterManagementAddOn.
type AddonDef struct {
	Key             string          `json:"key"`
	Name            string          `json:"name"`
	DisplayName     string          `json:"displayName"`
	InstallStrategy string          `json:"installStrategy"`
	DefaultConfigs  []DefaultConfig `json:"defaultConfigs"`
}

// DefaultConfig is a supported configuration kind with its default object.
type DefaultConfig struct {
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Plugin is a WasmPlugin.
type Plugin struct {
	Key     string  `json:"key"`
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	Ready   string  `json:"ready"`
	Reason  string  `json:"reason"`
	Message string  `json:"message"`
	Digest  string  `json:"digest"`
	Events  []Event `json:"events"`
}

// Policy is a policy ConfigMap with the hub's verdicts on it.
type Policy struct {
	Key       string  `json:"key"`
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	State     string  `json:"state"`
	LastGood  string  `json:"lastGood"`
	Events    []Event `json:"events"`
}

// Access is what part of a kind the viewer's model covers.
type Access struct {
	AllNamespaces bool     `json:"allNamespaces"`
	Namespaces    []string `json:"namespaces"`
	Denied        []string `json:"denied"`
	Error         string   `json:"error"`
	// Notes name related resources that could not be read, and what the page lacks for it
	// (e.g. lease times without leases). Not in design-26's shape; an addition.
	Notes []string `json:"notes,omitempty"`
	// Partial (hub mode) says some namespaces hold objects of this kind the viewer may not
	// see, when the viewer may not list namespaces: Denied is then empty, since naming them
	// would tell the viewer the hub's namespaces. Not in design-26's shape; an addition.
	Partial bool `json:"partial,omitempty"`
}

func rfc3339(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// Conds converts conditions.
func Conds(cs []metav1.Condition) []Cond {
	out := make([]Cond, 0, len(cs))
	for _, c := range cs {
		out = append(out, Cond{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Time: rfc3339(c.LastTransitionTime)})
	}
	return out
}

func condStatus(cs []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(cs, t); c != nil {
		return string(c.Status)
	}
	return ""
}

func eventCount(e *corev1.Event) int32 {
	if e.Series != nil && e.Series.Count > e.Count {
		return e.Series.Count
	}
	if e.Count == 0 {
		return 1
	}
	return e.Count
}

// Events are the newest maxEvents of evs, newest first.
func Events(evs []corev1.Event) []Event {
	sorted := make([]*corev1.Event, len(evs))
	for i := range evs {
		sorted[i] = &evs[i]
	}
	sort.SliceStable(sorted, func(i, j int) bool { return admin.EventTime(sorted[i]).After(admin.EventTime(sorted[j])) })
	if len(sorted) > maxEvents {
		sorted = sorted[:maxEvents]
	}
	out := make([]Event, 0, len(sorted))
	for _, e := range sorted {
		out = append(out, Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Time: admin.EventTime(e).UTC().Format(time.RFC3339), Count: eventCount(e)})
	}
	return out
}

// setSelector is a ManagedClusterSet with its parsed selector (nil when invalid).
type setSelector struct {
	name string
	sel  labels.Selector
}

// ClusterOf converts a ManagedCluster; lease is its managed-cluster-lease (nil if unknown)
// and sets the cluster sets whose selector matches its labels (hub/registration/clusterset.Selector).
func ClusterOf(mc *clusterv1.ManagedCluster, lease *coordinationv1.Lease, sets []string) Cluster {
	row := admin.Row(mc)
	c := Cluster{
		Key: mc.Name, Name: mc.Name, Labels: mc.Labels, Accepted: mc.Spec.HubAcceptsClient,
		Joined: row.Joined, Available: row.Available, Version: row.KubernetesVersion, CPU: row.CPU, Memory: row.Memory,
		Taints: []Taint{}, Sets: sets,
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if c.Sets == nil {
		c.Sets = []string{}
	}
	if a := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); a != nil {
		c.Reason, c.Message, c.Since = a.Reason, a.Message, rfc3339(a.LastTransitionTime)
	}
	for _, t := range mc.Spec.Taints {
		c.Taints = append(c.Taints, Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	if lease != nil && lease.Spec.RenewTime != nil {
		c.Lease = lease.Spec.RenewTime.UTC().Format(time.RFC3339)
	}
	return c
}

// ClusterSetOf converts a ManagedClusterSet with its member count.
func ClusterSetOf(s *clusterv1beta2.ManagedClusterSet, members int) ClusterSet {
	st := string(s.Spec.ClusterSelector.SelectorType)
	if st == "" {
		st = string(clusterv1beta2.ExclusiveClusterSetLabel)
	}
	return ClusterSet{Key: s.Name, Name: s.Name, SelectorType: st, Clusters: members}
}

// PlacementOf converts a Placement with its PlacementDecisions (any order) and Events.
func PlacementOf(p *clusterv1beta1.Placement, ds []clusterv1beta1.PlacementDecision, evs []corev1.Event) Placement {
	admin.SortDecisions(p.Name, ds)
	d := admin.PlacementDetailOf(p, ds)
	row := admin.PlacementRowOf(p, ds)
	out := Placement{
		Key: p.Namespace + "/" + p.Name, Namespace: p.Namespace, Name: p.Name,
		Requested: d.Requested, Selected: d.Selected, Satisfied: row.Satisfied, Reason: row.Reason,
		Groups: []Group{}, Decisions: []Decision{}, Events: Events(evs),
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured); c != nil && c.Status == metav1.ConditionTrue {
		out.Message = c.Message
	} else if c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied); c != nil {
		out.Message = c.Message
	}
	byDecision := map[string][]string{}
	for _, dd := range d.Decisions {
		out.Decisions = append(out.Decisions, Decision{Cluster: dd.ClusterName, Reason: dd.Reason})
		byDecision[dd.PlacementDecision] = append(byDecision[dd.PlacementDecision], dd.ClusterName)
	}
	for _, g := range d.Groups {
		grp := Group{Index: g.DecisionGroupIndex, Name: g.DecisionGroupName, Clusters: []string{}}
		for _, pd := range g.Decisions {
			grp.Clusters = append(grp.Clusters, byDecision[pd]...)
		}
		out.Groups = append(out.Groups, grp)
	}
	return out
}

// Health of an add-on on a cluster, as design-26 defines it.
const (
	HealthHealthy     = "Healthy"
	HealthUnhealthy   = "Unhealthy"
	HealthProgressing = "Progressing"
	HealthUnknown     = "Unknown"
)

// AddonOf converts a ManagedClusterAddOn (admin.AddonRowOf for the columns `flotilla get addons` shows).
func AddonOf(mca *addonv1alpha1.ManagedClusterAddOn) Addon {
	row := admin.AddonRowOf(mca)
	a := Addon{
		Key: mca.Namespace + "/" + mca.Name, Cluster: mca.Namespace, Name: mca.Name,
		Available: row.Available, Degraded: row.Degraded, Progressing: row.Progressing,
		Version: row.Version, InstallNamespace: mca.Spec.InstallNamespace, Configs: []AddonConfig{},
	}
	cond := func(t string) *metav1.Condition { return meta.FindStatusCondition(mca.Status.Conditions, t) }
	why := func(c *metav1.Condition) {
		if c != nil {
			a.Reason, a.Message = c.Reason, c.Message
		}
	}
	switch {
	case a.Degraded == string(metav1.ConditionTrue):
		a.Health = HealthUnhealthy
		why(cond(addonv1alpha1.ManagedClusterAddOnConditionDegraded))
	case a.Available == string(metav1.ConditionFalse):
		a.Health = HealthUnhealthy
		why(cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable))
	case a.Available == string(metav1.ConditionTrue) && a.Progressing == string(metav1.ConditionTrue):
		a.Health = HealthProgressing
		why(cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing))
	case a.Available == string(metav1.ConditionTrue):
		a.Health = HealthHealthy
		why(cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable))
	default:
		a.Health = HealthUnknown
		if c := cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable); c != nil {
			why(c)
		} else {
			a.Reason, a.Message = "NoStatus", "the add-on has not reported Available yet"
		}
	}
	for _, ref := range mca.Status.ConfigReferences {
		c := AddonConfig{Group: ref.Group, Resource: ref.Resource, Namespace: ref.Namespace, Name: ref.Name}
		if ref.DesiredConfig != nil {
			c.Namespace, c.Name, c.Desired = ref.DesiredConfig.Namespace, ref.DesiredConfig.Name, ref.DesiredConfig.SpecHash
		}
		if ref.LastAppliedConfig != nil {
			c.Applied = ref.LastAppliedConfig.SpecHash
		}
		a.Configs = append(a.Configs, c)
	}
	return a
}

// AddonDefOf converts a ClusterManagementAddOn.
func AddonDefOf(cma *addonv1alpha1.ClusterManagementAddOn) AddonDef {
	d := AddonDef{
		Key: cma.Name, Name: cma.Name, DisplayName: cma.Spec.AddOnMeta.DisplayName,
		InstallStrategy: cma.Spec.InstallStrategy.Type, DefaultConfigs: []DefaultConfig{},
	}
	if d.InstallStrategy == "" {
		d.InstallStrategy = addonv1alpha1.AddonInstallStrategyManual
	}
	for _, c := range cma.Spec.SupportedConfigs {
		if c.DefaultConfig == nil {
			continue
		}
		d.DefaultConfigs = append(d.DefaultConfigs, DefaultConfig{Group: c.Group, Resource: c.Resource, Namespace: c.DefaultConfig.Namespace, Name: c.DefaultConfig.Name})
	}
	return d
}

// PluginOf converts a WasmPlugin with its Events.
func PluginOf(p *flotillav1alpha1.WasmPlugin, evs []corev1.Event) Plugin {
	out := Plugin{Key: p.Name, Name: p.Name, Type: string(p.Spec.Type), Ready: "Unknown", Digest: p.Status.Digest, Events: Events(evs)}
	if c := meta.FindStatusCondition(p.Status.Conditions, flotillav1alpha1.ConditionReady); c != nil {
		out.Ready, out.Reason, out.Message = string(c.Status), c.Reason, c.Message
	}
	return out
}

// Policy states.
const (
	PolicyLoaded   = "Loaded"
	PolicyRejected = "Rejected"
	PolicyUnknown  = "Unknown"
)

var loadedAtRV = regexp.MustCompile(`at resourceVersion (\S+)`)

// PolicyOf converts a policy ConfigMap with its Events: its state is the hub's latest verdict
// on its current resourceVersion (Unknown until the hub has one), and lastGood the
// resourceVersion of the newest PolicyLoaded Event.
func PolicyOf(cm *corev1.ConfigMap, evs []corev1.Event) Policy {
	out := Policy{Key: cm.Namespace + "/" + cm.Name, Namespace: cm.Namespace, Name: cm.Name, State: PolicyUnknown, Events: Events(evs)}
	var verdicts []*corev1.Event
	for i := range evs {
		if evs[i].Reason == policy.EventReasonLoaded || evs[i].Reason == policy.EventReasonRejected {
			verdicts = append(verdicts, &evs[i])
		}
	}
	sort.SliceStable(verdicts, func(i, j int) bool { return admin.EventTime(verdicts[i]).After(admin.EventTime(verdicts[j])) })
	for _, e := range verdicts {
		rv := eventRV(e)
		if out.LastGood == "" && e.Reason == policy.EventReasonLoaded {
			out.LastGood = rv
		}
		if out.State == PolicyUnknown && (rv == cm.ResourceVersion || rv == "") {
			out.State = PolicyLoaded
			if e.Reason == policy.EventReasonRejected {
				out.State = PolicyRejected
			}
		}
	}
	return out
}

// eventRV is the resourceVersion an Event's verdict is about: the involved object's, else
// the one the hub's message names.
func eventRV(e *corev1.Event) string {
	if e.InvolvedObject.ResourceVersion != "" {
		return e.InvolvedObject.ResourceVersion
	}
	if m := loadedAtRV.FindStringSubmatch(e.Message); m != nil {
		return strings.TrimSuffix(m[1], ".")
	}
	return ""
}
