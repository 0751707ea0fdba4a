package addon

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/hash"
)

// Configuration kinds the manager knows by group and resource.
var (
	AddOnTemplateResource         = addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addontemplates"}
	AddOnDeploymentConfigResource = addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addondeploymentconfigs"}
	// WasmPluginResource names a WasmPlugin of type AddOnTemplate as an add-on's template: a
	// strict superset of OCM, whose template add-ons name an AddOnTemplate.
	WasmPluginResource = addonv1alpha1.ConfigGroupResource{Group: "flotilla.dev", Resource: "wasmplugins"}
)

const (
	// InstallStrategyLabel marks the ManagedClusterAddOns the Placements install strategy
	// created: only those are deleted when their cluster leaves every placement (one a user
	// created by hand stays).
	InstallStrategyLabel = "addon.flotilla.dev/install-strategy"
	// HealthCheckAnnotation on a ClusterManagementAddOn chooses how a template add-on's
	// health is read: WorkloadAvailability (the default, as OCM's template add-ons: each
	// Deployment and DaemonSet has a ready replica), DeploymentAvailability (Deployments only),
	// Lease (the agent renews Lease <addon> in its install namespace; the klusterlet reports
	// it) or None (no Available condition is set). A Flotilla superset.
	HealthCheckAnnotation = "addon.flotilla.dev/health-check"
	// ConfigSpecHashAnnotation on an add-on's ManifestWorks records the spec hashes of the
	// configurations they were rendered from, as OCM records them.
	ConfigSpecHashAnnotation = "open-cluster-management.io/config-spec-hash"
	// DefaultInstallNamespace is where add-on agents go unless configured otherwise.
	DefaultInstallNamespace = "open-cluster-management-agent-addon"
)

// Health check modes of HealthCheckAnnotation.
const (
	HealthDeploymentAvailability = "DeploymentAvailability"
	HealthWorkloadAvailability   = "WorkloadAvailability"
	HealthLease                  = "Lease"
	HealthNone                   = "None"
)

// Reasons of the Configured condition (OCM's).
const (
	ReasonConfigured    = "ConfigurationsConfigured"
	ReasonNotConfigured = "ConfigurationsNotConfigured"
	// ReasonConfigInvalid: a configuration cannot be read (a Flotilla reason, with the
	// object and error in the message).
	ReasonConfigInvalid = "ConfigurationsInvalid"
)

// managed reports whether the hub's add-on manager handles cma: annotated for the
// addon-manager lifecycle, or a template add-on.
func managed(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	if cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey] == addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue {
		return true
	}
	return templateKind(cma) != (addonv1alpha1.ConfigGroupResource{})
}

// templateKind is the template resource a template add-on declares among its supported
// configs, or the zero value.
func templateKind(cma *addonv1alpha1.ClusterManagementAddOn) addonv1alpha1.ConfigGroupResource {
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.ConfigGroupResource == AddOnTemplateResource || sc.ConfigGroupResource == WasmPluginResource {
			return sc.ConfigGroupResource
		}
	}
	return addonv1alpha1.ConfigGroupResource{}
}

// healthMode is the health check a template add-on's ClusterManagementAddOn asks for:
// WorkloadAvailability by default, as OCM's template add-ons (every Deployment and DaemonSet
// of the works has a ready replica).
func healthMode(cma *addonv1alpha1.ClusterManagementAddOn) string {
	switch v := cma.Annotations[HealthCheckAnnotation]; v {
	case HealthLease, HealthNone, HealthDeploymentAvailability, HealthWorkloadAvailability:
		return v
	}
	return HealthWorkloadAvailability
}

// configEntry is one configuration reference and the namespace a reference without one
// means for a namespaced resource (the ManagedClusterAddOn's for its own configs, the
// placement's for a placement's; none for a default, which must name its namespace).
type configEntry struct {
	addonv1alpha1.ConfigReferent
	defaultNamespace string
}

// configList is an add-on's configurations by group and resource, several per group and
// resource allowed (OCM since v0.15).
type configList map[addonv1alpha1.ConfigGroupResource][]configEntry

// override replaces, per group and resource, the entries of l by configs.
func (l configList) override(configs []addonv1alpha1.AddOnConfig, defaultNamespace string) {
	seen := map[addonv1alpha1.ConfigGroupResource]bool{}
	for _, c := range configs {
		if !seen[c.ConfigGroupResource] {
			seen[c.ConfigGroupResource] = true
			l[c.ConfigGroupResource] = nil
		}
		l[c.ConfigGroupResource] = append(l[c.ConfigGroupResource], configEntry{c.ConfigReferent, defaultNamespace})
	}
}

func (l configList) clone() configList {
	out := make(configList, len(l))
	for k, v := range l {
		out[k] = append([]configEntry(nil), v...)
	}
	return out
}

// keys returns the group/resources in a stable order.
func (l configList) keys() []addonv1alpha1.ConfigGroupResource {
	out := make([]addonv1alpha1.ConfigGroupResource, 0, len(l))
	for gr := range l {
		out = append(out, gr)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// defaults are a ClusterManagementAddOn's default configurations.
func defaults(cma *addonv1alpha1.ClusterManagementAddOn) configList {
	l := configList{}
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.DefaultConfig != nil {
			l[sc.ConfigGroupResource] = []configEntry{{ConfigReferent: *sc.DefaultConfig}}
		}
	}
	return l
}

// placementConfigs are the defaults overridden by a placement's configs.
func placementConfigs(cma *addonv1alpha1.ClusterManagementAddOn, ps *addonv1alpha1.PlacementStrategy) configList {
	l := defaults(cma)
	if ps != nil {
		l.override(ps.Configs, ps.Namespace)
	}
	return l
}

// resolvedConfig is one configuration with the spec hash of its current object.
type resolvedConfig struct {
	addonv1alpha1.ConfigGroupResource
	addonv1alpha1.ConfigSpecHash
	// Object is the configuration as read (nil when missing).
	Object *unstructured.Unstructured
}

// configReader reads configuration objects by group/resource, once per reconcile.
type configReader struct {
	c      client.Reader
	cached client.Reader // the add-on API's kinds; nil: all from c
	mapper meta.RESTMapper
	cache  map[string]*readResult
}

type readResult struct {
	obj *unstructured.Unstructured
	err error
}

func newConfigReader(c, cached client.Reader, mapper meta.RESTMapper) *configReader {
	return &configReader{c: c, cached: cached, mapper: mapper, cache: map[string]*readResult{}}
}

// namespaced reports whether gr is a namespaced resource.
func (r *configReader) namespaced(gr addonv1alpha1.ConfigGroupResource) (bool, error) {
	gvk, err := r.mapper.KindFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
	if err != nil {
		return false, fmt.Errorf("configuration resource %s.%s: %w", gr.Resource, gr.Group, err)
	}
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("configuration resource %s.%s: %w", gr.Resource, gr.Group, err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// read returns the configuration object, nil when it does not exist.
func (r *configReader) read(ctx context.Context, gr addonv1alpha1.ConfigGroupResource, ref addonv1alpha1.ConfigReferent) (*unstructured.Unstructured, error) {
	return r.readFrom(ctx, gr, ref, r.cached)
}

// readLive is read from the API server (Client), never the cache.
func (r *configReader) readLive(ctx context.Context, gr addonv1alpha1.ConfigGroupResource, ref addonv1alpha1.ConfigReferent) (*unstructured.Unstructured, error) {
	return r.readFrom(ctx, gr, ref, nil)
}

func (r *configReader) readFrom(ctx context.Context, gr addonv1alpha1.ConfigGroupResource, ref addonv1alpha1.ConfigReferent, cached client.Reader) (*unstructured.Unstructured, error) {
	key := gr.Resource + "." + gr.Group + "/" + ref.Namespace + "/" + ref.Name
	if cached == nil {
		key = "live:" + key
	}
	if res, ok := r.cache[key]; ok {
		return res.obj, res.err
	}
	res := &readResult{}
	r.cache[key] = res
	gvk, err := r.mapper.KindFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
	if err != nil {
		res.err = fmt.Errorf("configuration resource %s.%s: %w", gr.Resource, gr.Group, err)
		return nil, res.err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	// The add-on API's own kinds (AddOnTemplate, AddOnDeploymentConfig) are read from the
	// manager's cache, as unstructured so their spec hashes stay what they are: read from
	// the API server they cost 2.3 reads per cluster installing a template add-on in
	// make bench-fleet. Other kinds are read from the API server (the hub may not be allowed
	// to watch them).
	c := r.c
	if cached != nil && gvk.Group == addonv1alpha1.GroupVersion.Group {
		c = cached
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		if !apierrors.IsNotFound(err) {
			res.err = fmt.Errorf("reading %s %s: %w", gvk.Kind, refString(ref), err)
		}
		return nil, res.err
	}
	res.obj = u
	return u, nil
}

// resolve reads every configuration of l and returns them with their spec hashes. A missing
// configuration is an error naming it.
func (r *configReader) resolve(ctx context.Context, l configList) ([]resolvedConfig, error) {
	var out []resolvedConfig
	for _, gr := range l.keys() {
		nsd, err := r.namespaced(gr)
		if err != nil {
			return nil, err
		}
		for _, e := range l[gr] {
			ref := e.ConfigReferent
			if nsd && ref.Namespace == "" {
				if e.defaultNamespace == "" {
					return nil, fmt.Errorf("%s.%s %s: a namespaced configuration needs a namespace", gr.Resource, gr.Group, ref.Name)
				}
				ref.Namespace = e.defaultNamespace
			}
			if !nsd {
				ref.Namespace = ""
			}
			obj, err := r.read(ctx, gr, ref)
			if err != nil {
				return nil, err
			}
			if obj == nil {
				return nil, fmt.Errorf("%s.%s %s not found", gr.Resource, gr.Group, refString(ref))
			}
			hash, err := specHash(obj)
			if err != nil {
				return nil, fmt.Errorf("%s.%s %s: %w", gr.Resource, gr.Group, refString(ref), err)
			}
			out = append(out, resolvedConfig{ConfigGroupResource: gr, ConfigSpecHash: addonv1alpha1.ConfigSpecHash{ConfigReferent: ref, SpecHash: hash}, Object: obj})
		}
	}
	return out, nil
}

func refString(ref addonv1alpha1.ConfigReferent) string {
	if ref.Namespace == "" {
		return ref.Name
	}
	return ref.Namespace + "/" + ref.Name
}

// specHash is OCM's spec hash of a configuration: the SHA-256 of its spec as JSON (keys
// sorted), hex.
func specHash(obj *unstructured.Unstructured) (string, error) {
	spec, ok := obj.Object["spec"]
	if !ok {
		spec = map[string]any{}
	}
	return hash.JSON(spec)
}

// sameDesired reports whether an MCA's status.configReferences desire exactly want.
func sameDesired(refs []addonv1alpha1.ConfigReference, want []resolvedConfig) bool {
	if len(refs) != len(want) {
		return false
	}
	for i := range want {
		r := refs[i]
		if r.ConfigGroupResource != want[i].ConfigGroupResource || r.DesiredConfig == nil || *r.DesiredConfig != want[i].ConfigSpecHash {
			return false
		}
	}
	return true
}

// applied reports whether every desired configuration of refs has been applied.
func applied(refs []addonv1alpha1.ConfigReference) bool {
	for _, r := range refs {
		if r.DesiredConfig == nil || r.LastAppliedConfig == nil || *r.DesiredConfig != *r.LastAppliedConfig {
			return false
		}
	}
	return true
}

// desiredReferences merges want into an MCA's config references, keeping each existing
// entry's lastAppliedConfig and lastObservedGeneration.
func desiredReferences(old []addonv1alpha1.ConfigReference, want []resolvedConfig) []addonv1alpha1.ConfigReference {
	type key struct {
		gr  addonv1alpha1.ConfigGroupResource
		ref addonv1alpha1.ConfigReferent
	}
	prev := map[key]addonv1alpha1.ConfigReference{}
	prevByGR := map[addonv1alpha1.ConfigGroupResource]addonv1alpha1.ConfigReference{}
	for _, r := range old {
		prev[key{r.ConfigGroupResource, r.ConfigReferent}] = r
		if _, ok := prevByGR[r.ConfigGroupResource]; !ok {
			prevByGR[r.ConfigGroupResource] = r
		}
	}
	out := make([]addonv1alpha1.ConfigReference, 0, len(want))
	for _, w := range want {
		ref := addonv1alpha1.ConfigReference{ConfigGroupResource: w.ConfigGroupResource, ConfigReferent: w.ConfigReferent}
		p, ok := prev[key{w.ConfigGroupResource, w.ConfigReferent}]
		if !ok {
			// A renamed configuration (managed-serviceaccount-0.4.0 -> 0.4.1) still upgrades
			// from what was applied for its group and resource.
			p, ok = prevByGR[w.ConfigGroupResource]
		}
		if ok {
			ref.LastAppliedConfig = p.LastAppliedConfig
			ref.LastObservedGeneration = p.LastObservedGeneration
		}
		d := w.ConfigSpecHash
		ref.DesiredConfig = &d
		if g := w.Object.GetGeneration(); g > 0 && ref.LastAppliedConfig != nil && *ref.LastAppliedConfig == d {
			ref.LastObservedGeneration = g
		}
		out = append(out, ref)
	}
	return out
}

// condition returns the condition of type t, or nil.
func condition(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

// jsonMap encodes v as a plain JSON value for an apply, without the nulls of unset pointer
// fields (an apply would read a null as "remove").
func jsonMap(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return pruneNulls(out), nil
}

func pruneNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = pruneNulls(e)
		}
	case []any:
		for i := range t {
			t[i] = pruneNulls(t[i])
		}
	}
	return v
}
