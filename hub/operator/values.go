package operator

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/core/operatorrun"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

// Refusal is a ClusterManager spec field Flotilla does not act on.
type Refusal struct {
	// Path is the field's JSON path, with the index of list entries
	// (spec.registrationConfiguration.registrationDrivers[1].authType).
	Path string
	// Blocking refusals change where the hub runs: the operator applies nothing new
	// (Applied False UnsupportedConfiguration). The others are listed in ValidConfiguration
	// False UnsupportedFields and the rest of the spec is applied.
	Blocking bool
	// Message says what was asked for, for the conditions.
	Message string
}

// SpecValues is what a ClusterManager spec gives the hub chart.
type SpecValues struct {
	// Values go over the chart's defaults and the values ConfigMap (render: components).
	Values map[string]any
	// Refusals lists the fields set that Flotilla does not act on, sorted by path.
	Refusals []Refusal
	// Gates are the featureGates entries read per section, for ValidFeatureGates.
	Gates operatorrun.FeatureGates
	// Notes say which OCM image pull specs were replaced by the operator's image, for the
	// Applied message.
	Notes []string
}

// Blocking is the first blocking refusal, or nil.
func (v SpecValues) Blocking() *Refusal {
	for i := range v.Refusals {
		if v.Refusals[i].Blocking {
			return &v.Refusals[i]
		}
	}
	return nil
}

// Unsupported lists the paths of the non-blocking refusals.
func (v SpecValues) Unsupported() []string {
	var out []string
	for _, r := range v.Refusals {
		if !r.Blocking {
			out = append(out, r.Path)
		}
	}
	return out
}

// The hub components (hub/manager's names) and the ClusterManager sections that configure
// them.
var componentImage = map[string]func(*operatorv1.ClusterManagerSpec) (string, string){
	manager.RegistrationController: registrationImage,
	manager.RegistrationWebhook:    registrationImage,
	manager.WorkWebhook:            workImage,
	manager.WorkController:         workImage,
	manager.PlacementController: func(s *operatorv1.ClusterManagerSpec) (string, string) {
		return "spec.placementImagePullSpec", s.PlacementImagePullSpec
	},
	manager.AddonManager: func(s *operatorv1.ClusterManagerSpec) (string, string) {
		return "spec.addOnManagerImagePullSpec", s.AddOnManagerImagePullSpec
	},
}

func registrationImage(s *operatorv1.ClusterManagerSpec) (string, string) {
	return "spec.registrationImagePullSpec", s.RegistrationImagePullSpec
}

func workImage(s *operatorv1.ClusterManagerSpec) (string, string) {
	return "spec.workImagePullSpec", s.WorkImagePullSpec
}

// Gate sections of the spec, as OCM names the components in ValidFeatureGates.
const (
	sectionRegistration = "Registration"
	sectionWork         = "Work"
	sectionAddon        = "Addon"
	sectionPlacement    = "Placement"
)

// componentSection is the featureGates section each component takes its gates from.
var componentSection = map[string]string{
	manager.RegistrationController: sectionRegistration,
	manager.RegistrationWebhook:    sectionRegistration,
	manager.WorkWebhook:            sectionWork,
	manager.WorkController:         sectionWork,
	manager.PlacementController:    sectionPlacement,
	manager.AddonManager:           sectionAddon,
}

// webhookBind is the deployOption.default webhook configuration of each webhook component
// (the addon one configures the add-on manager's webhook server).
var webhookBind = map[string]func(*operatorv1.DefaultClusterManagerConfiguration) (string, *operatorv1.BindConfiguration){
	manager.RegistrationWebhook: func(d *operatorv1.DefaultClusterManagerConfiguration) (string, *operatorv1.BindConfiguration) {
		return "registrationWebhookConfiguration", d.RegistrationWebhookConfiguration.BindConfiguration
	},
	manager.WorkWebhook: func(d *operatorv1.DefaultClusterManagerConfiguration) (string, *operatorv1.BindConfiguration) {
		return "workWebhookConfiguration", d.WorkWebhookConfiguration.BindConfiguration
	},
	manager.AddonManager: func(d *operatorv1.DefaultClusterManagerConfiguration) (string, *operatorv1.BindConfiguration) {
		return "addonWebhookConfiguration", d.AddonWebhookConfiguration.BindConfiguration
	},
}

// ocmImage matches OCM's default images, which Flotilla replaces with its own.
var ocmImage = regexp.MustCompile(`^quay\.io/open-cluster-management/(registration|work|placement|addon-manager)([:@].*)?$`)

// sectionGates returns, per section, the gates the hub implements for it: the work and
// add-on manager gates as in OCM's sets, the registration section the other hub gates,
// placement none.
func sectionGates() (map[string]map[string]bool, error) {
	gate, err := manager.NewFeatureGate()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{sectionRegistration: {}, sectionWork: {}, sectionAddon: {}, sectionPlacement: {}}
	work, addon := featuregates.DefaultHubWorkFeatureGates(), featuregates.DefaultHubAddonManagerFeatureGates()
	for _, name := range featuregates.Known(gate) {
		f := featuregate.Feature(name)
		switch {
		case hasGate(work, f):
			out[sectionWork][name] = true
		case hasGate(addon, f):
			out[sectionAddon][name] = true
		default:
			out[sectionRegistration][name] = true
		}
	}
	return out, nil
}

func hasGate(m map[featuregate.Feature]featuregate.FeatureSpec, f featuregate.Feature) bool {
	_, ok := m[f]
	return ok
}

// ValuesFor maps a ClusterManager spec to values of the hub chart (render: components) and
// lists the fields it refuses. ownImage (the operator's $FLOTILLA_IMAGE) replaces an empty
// or OCM image pull spec; "" leaves the chart's image. It is a pure function of its
// arguments: the table of fields, clusterManagerFields, says which field does what.
func ValuesFor(spec *operatorv1.ClusterManagerSpec, ownImage string) (SpecValues, error) {
	out := SpecValues{Values: map[string]any{}}
	known, err := sectionGates()
	if err != nil {
		return out, err
	}
	refusals, err := refusalsOf(spec)
	if err != nil {
		return out, err
	}
	out.Refusals = refusals

	gates := map[string][]operatorv1.FeatureGate{}
	if c := spec.RegistrationConfiguration; c != nil {
		gates[sectionRegistration] = c.FeatureGates
	}
	if c := spec.WorkConfiguration; c != nil {
		gates[sectionWork] = c.FeatureGates
	}
	if c := spec.AddOnManagerConfiguration; c != nil {
		gates[sectionAddon] = c.FeatureGates
	}
	if c := spec.PlacementConfiguration; c != nil {
		gates[sectionPlacement] = c.FeatureGates
	}
	perSection := map[string]map[string]bool{}
	for _, sec := range []string{sectionRegistration, sectionWork, sectionAddon, sectionPlacement} {
		var g operatorrun.FeatureGates
		g.Read(sec, gates[sec], func(name string) bool { return known[sec][name] })
		out.Gates.Read(sec, gates[sec], func(name string) bool { return known[sec][name] })
		perSection[sec] = g.Overrides
	}

	components := map[string]any{}
	for _, c := range manager.ComponentNames() {
		v := map[string]any{}
		path, image := componentImage[c](spec)
		switch {
		case image != "" && !ocmImage.MatchString(image):
			v["image"] = image
		case ownImage != "":
			v["image"] = ownImage
		}
		if fg := perSection[componentSection[c]]; len(fg) > 0 {
			m := map[string]any{}
			for k, on := range fg {
				m[k] = on
			}
			v["featureGates"] = m
		}
		if bind := webhookBind[c]; bind != nil && spec.DeployOption.Default != nil {
			if _, b := bind(spec.DeployOption.Default); b != nil {
				v["bind"] = bindValues(b)
			}
		}
		components[c] = v
		if image != "" && ocmImage.MatchString(image) && ownImage != "" {
			out.Notes = append(out.Notes, fmt.Sprintf("%s %s is OCM's image: running %s", path, image, ownImage))
		}
	}
	// OCM deletes the add-on manager when AddonManagement is off.
	if on, set := perSection[sectionAddon][string(featuregates.AddonManagement)]; set && !on {
		components[manager.AddonManager].(map[string]any)["enabled"] = false
	}
	out.Values["components"] = components
	slices.Sort(out.Notes)
	out.Notes = slices.Compact(out.Notes)

	// nodePlacement comes from the spec only: null clears what the values ConfigMap set.
	if ns := spec.NodePlacement.NodeSelector; len(ns) > 0 {
		m := map[string]any{}
		for k, v := range ns {
			m[k] = v
		}
		out.Values["nodeSelector"] = m
	} else {
		out.Values["nodeSelector"] = nil
	}
	if t := spec.NodePlacement.Tolerations; len(t) > 0 {
		l, err := toValue(t)
		if err != nil {
			return out, fmt.Errorf("spec.nodePlacement.tolerations: %w", err)
		}
		out.Values["tolerations"] = l
	} else {
		out.Values["tolerations"] = nil
	}

	rr := map[string]any{"type": string(operatorv1.ResourceQosClassDefault)}
	if r := spec.ResourceRequirement; r != nil && r.Type != "" {
		rr["type"] = string(r.Type)
		if r.Type == operatorv1.ResourceQosClassResourceRequirement && r.ResourceRequirements != nil {
			m, err := toValue(r.ResourceRequirements)
			if err != nil {
				return out, fmt.Errorf("spec.resourceRequirement.resourceRequirements: %w", err)
			}
			rr["resourceRequirements"] = m
		}
	}
	out.Values["resourceRequirement"] = rr

	// autoApproveUsers and the csr driver's identities act with ManagedClusterAutoApproval
	// on, for any cluster name (OCM's --cluster-auto-approval-users).
	if users := autoApproveUsers(spec); len(users) > 0 && perSection[sectionRegistration][string(featuregates.ManagedClusterAutoApproval)] {
		out.Values["flags"] = map[string]any{
			"autoapprove-users":            toAny(users),
			"autoapprove-cluster-patterns": []any{"*"},
		}
	}
	return out, nil
}

func autoApproveUsers(spec *operatorv1.ClusterManagerSpec) []string {
	c := spec.RegistrationConfiguration
	if c == nil {
		return nil
	}
	users := slices.Clone(c.AutoApproveUsers)
	for _, d := range c.RegistrationDrivers {
		if (d.AuthType == operatorv1.CSRAuthType || d.AuthType == "") && d.CSR != nil {
			users = append(users, d.CSR.AutoApprovedIdentities...)
		}
	}
	slices.Sort(users)
	return slices.Compact(users)
}

func bindValues(b *operatorv1.BindConfiguration) map[string]any {
	m := map[string]any{"hostNetwork": b.HostNetwork}
	for k, p := range map[string]int32{"port": b.Port, "healthProbePort": b.HealthProbePort, "metricsPort": b.MetricsPort} {
		if p > 0 {
			m[k] = int64(p)
		}
	}
	return m
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// toValue converts a typed value to plain JSON values (maps, lists, strings, numbers).
func toValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// fieldRule says what the operator does with one leaf of the ClusterManager spec.
type fieldRule struct {
	// does says where the value goes (mapped) or why it is refused.
	does string
	// refuse reports whether a set value is refused, and whether blocking; nil: always mapped.
	refuse func(v any) (refused, blocking bool)
}

func mapped(does string) fieldRule { return fieldRule{does: does} }

func refused(why string) fieldRule {
	return fieldRule{does: why, refuse: func(any) (bool, bool) { return true, false }}
}

// unless maps the values listed and refuses the others (blocking or not).
func unless(does string, blocking bool, ok ...string) fieldRule {
	return fieldRule{does: does, refuse: func(v any) (bool, bool) {
		s, _ := v.(string)
		if slices.Contains(ok, s) {
			return false, false
		}
		return true, blocking
	}}
}

// clusterManagerFields is every leaf of the ClusterManager spec (core/v1 subtrees,
// tolerations and resourceRequirements, count as one), with [] for list entries.
// TestEveryClusterManagerLeafMappedOrRefused holds it to the CRD's schema.
var clusterManagerFields = map[string]fieldRule{
	"spec.registrationImagePullSpec":  mapped("image of registration-controller and registration-webhook (OCM's image or empty: the operator's)"),
	"spec.workImagePullSpec":          mapped("image of work-webhook and work-controller (same rule)"),
	"spec.placementImagePullSpec":     mapped("image of placement-controller (same rule)"),
	"spec.addOnManagerImagePullSpec":  mapped("image of addon-manager (same rule)"),
	"spec.nodePlacement.nodeSelector": mapped("nodeSelector of every component Deployment"),
	"spec.nodePlacement.tolerations":  mapped("tolerations of every component Deployment"),
	"spec.deployOption.mode":          unless("Default: components in open-cluster-management-hub; Hosted is refused (blocking)", true, "", string(operatorv1.InstallModeDefault)),

	"spec.deployOption.hosted.registrationWebhookConfiguration.address":                           refused("Hosted mode only"),
	"spec.deployOption.hosted.registrationWebhookConfiguration.port":                              refused("Hosted mode only"),
	"spec.deployOption.hosted.registrationWebhookConfiguration.bindConfiguration.port":            refused("Hosted mode only"),
	"spec.deployOption.hosted.registrationWebhookConfiguration.bindConfiguration.healthProbePort": refused("Hosted mode only"),
	"spec.deployOption.hosted.registrationWebhookConfiguration.bindConfiguration.metricsPort":     refused("Hosted mode only"),
	"spec.deployOption.hosted.registrationWebhookConfiguration.bindConfiguration.hostNetwork":     refused("Hosted mode only"),
	"spec.deployOption.hosted.workWebhookConfiguration.address":                                   refused("Hosted mode only"),
	"spec.deployOption.hosted.workWebhookConfiguration.port":                                      refused("Hosted mode only"),
	"spec.deployOption.hosted.workWebhookConfiguration.bindConfiguration.port":                    refused("Hosted mode only"),
	"spec.deployOption.hosted.workWebhookConfiguration.bindConfiguration.healthProbePort":         refused("Hosted mode only"),
	"spec.deployOption.hosted.workWebhookConfiguration.bindConfiguration.metricsPort":             refused("Hosted mode only"),
	"spec.deployOption.hosted.workWebhookConfiguration.bindConfiguration.hostNetwork":             refused("Hosted mode only"),

	"spec.deployOption.default.registrationWebhookConfiguration.bindConfiguration.port":            mapped("registration-webhook --webhook-bind-address, container port, Service targetPort"),
	"spec.deployOption.default.registrationWebhookConfiguration.bindConfiguration.healthProbePort": mapped("registration-webhook --health-probe-bind-address"),
	"spec.deployOption.default.registrationWebhookConfiguration.bindConfiguration.metricsPort":     mapped("registration-webhook --metrics-bind-address"),
	"spec.deployOption.default.registrationWebhookConfiguration.bindConfiguration.hostNetwork":     mapped("registration-webhook hostNetwork"),
	"spec.deployOption.default.workWebhookConfiguration.bindConfiguration.port":                    mapped("work-webhook --webhook-bind-address, container port, Service targetPort"),
	"spec.deployOption.default.workWebhookConfiguration.bindConfiguration.healthProbePort":         mapped("work-webhook --health-probe-bind-address"),
	"spec.deployOption.default.workWebhookConfiguration.bindConfiguration.metricsPort":             mapped("work-webhook --metrics-bind-address"),
	"spec.deployOption.default.workWebhookConfiguration.bindConfiguration.hostNetwork":             mapped("work-webhook hostNetwork"),
	"spec.deployOption.default.addonWebhookConfiguration.bindConfiguration.port":                   mapped("addon-manager --webhook-bind-address, container port, Service targetPort"),
	"spec.deployOption.default.addonWebhookConfiguration.bindConfiguration.healthProbePort":        mapped("addon-manager --health-probe-bind-address"),
	"spec.deployOption.default.addonWebhookConfiguration.bindConfiguration.metricsPort":            mapped("addon-manager --metrics-bind-address"),
	"spec.deployOption.default.addonWebhookConfiguration.bindConfiguration.hostNetwork":            mapped("addon-manager hostNetwork"),

	"spec.registrationConfiguration.autoApproveUsers":                                     mapped("--autoapprove-users with ManagedClusterAutoApproval, any cluster name"),
	"spec.registrationConfiguration.featureGates[].feature":                               mapped("--feature-gates of registration-controller and registration-webhook"),
	"spec.registrationConfiguration.featureGates[].mode":                                  mapped("Enable or Disable"),
	"spec.registrationConfiguration.registrationDrivers[].authType":                       unless("csr is Flotilla's registration; awsirsa and grpc are refused", false, "", operatorv1.CSRAuthType),
	"spec.registrationConfiguration.registrationDrivers[].csr.autoApprovedIdentities":     mapped("--autoapprove-users, as autoApproveUsers"),
	"spec.registrationConfiguration.registrationDrivers[].awsirsa.hubClusterArn":          refused("AWS IRSA registration"),
	"spec.registrationConfiguration.registrationDrivers[].awsirsa.autoApprovedIdentities": refused("AWS IRSA registration"),
	"spec.registrationConfiguration.registrationDrivers[].awsirsa.tags":                   refused("AWS IRSA registration"),
	"spec.registrationConfiguration.registrationDrivers[].grpc.autoApprovedIdentities":    refused("gRPC registration"),
	"spec.registrationConfiguration.importerConfiguration.renderers":                      refused("ClusterImporter"),

	"spec.workConfiguration.featureGates[].feature": mapped("--feature-gates of work-webhook and work-controller"),
	"spec.workConfiguration.featureGates[].mode":    mapped("Enable or Disable"),
	"spec.workConfiguration.workDriver":             unless("kube is Flotilla's work driver; grpc and mqtt are refused", false, "", string(operatorv1.WorkDriverTypeKube)),

	"spec.addOnManagerConfiguration.featureGates[].feature": mapped("--feature-gates of addon-manager; AddonManagement Disable removes it"),
	"spec.addOnManagerConfiguration.featureGates[].mode":    mapped("Enable or Disable"),
	"spec.placementConfiguration.featureGates[].feature":    mapped("--feature-gates of placement-controller (no placement gate is implemented: ValidFeatureGates names them)"),
	"spec.placementConfiguration.featureGates[].mode":       mapped("Enable or Disable"),

	"spec.serverConfiguration.imagePullSpec":                refused("gRPC server"),
	"spec.serverConfiguration.featureGates[].feature":       refused("gRPC server"),
	"spec.serverConfiguration.featureGates[].mode":          refused("gRPC server"),
	"spec.serverConfiguration.endpointsExposure[].usage":    refused("gRPC server"),
	"spec.serverConfiguration.endpointsExposure[].protocol": refused("gRPC server"),

	"spec.resourceRequirement.type":                 mapped("Default: chart resources; BestEffort: none; ResourceRequirement: resourceRequirements; every container"),
	"spec.resourceRequirement.resourceRequirements": mapped("resources of every container with type ResourceRequirement"),

	"spec.networkPolicyConfiguration.monitoringNamespace": refused("NetworkPolicies of the hub namespace"),
	"spec.networkPolicyConfiguration.apiServerNamespace":  refused("NetworkPolicies of the hub namespace"),
}

func init() {
	for _, p := range []string{"grpc", "https"} {
		e := "spec.serverConfiguration.endpointsExposure[]." + p
		for _, f := range []string{".type", ".hostname.host", ".hostname.caBundle", ".loadBalancer.host", ".loadBalancer.caBundle", ".route.host", ".route.caBundle"} {
			clusterManagerFields[e+f] = refused("gRPC server")
		}
	}
}

// subtreeLeaves are core/v1 types and free-form maps, taken whole.
var subtreeLeaves = []string{"tolerations", "resourceRequirements", "nodeSelector"}

var listIndex = regexp.MustCompile(`\[\d+\]`)

// refusalsOf walks the fields set in spec (zero values count as unset) and returns the
// refused ones. A field missing from clusterManagerFields is an error: the table is the one
// place that says what a field does.
func refusalsOf(spec *operatorv1.ClusterManagerSpec) ([]Refusal, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		return nil, fmt.Errorf("reading the ClusterManager spec: %w", err)
	}
	var out []Refusal
	var walkErr error
	var walk func(v any, path string)
	walk = func(v any, path string) {
		if slices.Contains(subtreeLeaves, path[strings.LastIndex(path, ".")+1:]) {
			v = "set"
		}
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], path+"."+k)
			}
			return
		case []any:
			if len(t) > 0 {
				if _, isMap := t[0].(map[string]any); isMap {
					for i, e := range t {
						walk(e, fmt.Sprintf("%s[%d]", path, i))
					}
					return
				}
			}
		}
		if isZero(v) {
			return
		}
		rule, ok := clusterManagerFields[listIndex.ReplaceAllString(path, "[]")]
		if !ok {
			if walkErr == nil {
				walkErr = fmt.Errorf("ClusterManager field %s: the operator has no rule for it", path)
			}
			return
		}
		if rule.refuse == nil {
			return
		}
		if r, blocking := rule.refuse(v); r {
			msg := fmt.Sprintf("%s: %v (%s)", path, v, rule.does)
			if blocking {
				msg = fmt.Sprintf("%s: %v ClusterManager is not supported", path, v)
			}
			out = append(out, Refusal{Path: path, Blocking: blocking, Message: msg})
		}
	}
	walk(m, "spec")
	slices.SortFunc(out, func(a, b Refusal) int { return strings.Compare(a.Path, b.Path) })
	return out, walkErr
}

func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case int64:
		return t == 0
	case float64:
		return t == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// specOwnedValues are the chart values only the ClusterManager sets when the operator
// renders: the values ConfigMap's are dropped (they seeded the ClusterManager's
// nodePlacement when render: operator created it).
var specOwnedValues = []string{"nodeSelector", "tolerations", "resourceRequirement", "render", "clusterManager"}

// ComponentValues are the values the operator renders the hub chart with: the values
// ConfigMap's (Flotilla-only settings) under the spec's, render components, the
// ClusterManager's name.
func ComponentValues(configMap map[string]any, spec SpecValues, clusterManagerName string) map[string]any {
	base := map[string]any{}
	for k, v := range configMap {
		if !slices.Contains(specOwnedValues, k) {
			base[k] = v
		}
	}
	out := install.MergeValues(base, spec.Values)
	out["render"] = "components"
	out["clusterManager"] = map[string]any{"name": clusterManagerName}
	return out
}
