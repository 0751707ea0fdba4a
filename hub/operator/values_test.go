package operator

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/install"
)

// specLeaves lists the leaf paths of the schema s under prefix, core/v1 subtrees as one.
func specLeaves(s apiextensionsv1.JSONSchemaProps, prefix string) []string {
	switch {
	case len(s.Properties) > 0:
		var out []string
		for k, c := range s.Properties {
			p := prefix + "." + k
			if slices.Contains(subtreeLeaves, k) {
				out = append(out, p)
				continue
			}
			out = append(out, specLeaves(c, p)...)
		}
		return out
	case s.Items != nil && s.Items.Schema != nil && len(s.Items.Schema.Properties) > 0:
		return specLeaves(*s.Items.Schema, prefix+"[]")
	default:
		return []string{prefix}
	}
}

// TestEveryClusterManagerLeafMappedOrRefused: every leaf of the served ClusterManager
// spec has a rule (mapped to chart values, or refused), and every rule names a leaf.
func TestEveryClusterManagerLeafMappedOrRefused(t *testing.T) {
	all, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var crd *apiextensionsv1.CustomResourceDefinition
	for _, c := range all {
		if c.Name == "clustermanagers.operator.open-cluster-management.io" {
			crd = c
		}
	}
	if crd == nil {
		t.Fatal("no embedded CRD clustermanagers.operator.open-cluster-management.io")
	}
	leaves := specLeaves(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"], "spec")
	if len(leaves) < 40 {
		t.Fatalf("only %d spec leaves found; the schema walk is broken", len(leaves))
	}
	for _, l := range leaves {
		if _, ok := clusterManagerFields[l]; !ok {
			t.Errorf("ClusterManager %s is neither mapped nor refused (add it to clusterManagerFields)", l)
		}
	}
	for p := range clusterManagerFields {
		if !slices.Contains(leaves, p) {
			t.Errorf("clusterManagerFields has %s, which the CRD does not", p)
		}
	}
}

func gates(mode operatorv1.FeatureGateModeType, names ...string) []operatorv1.FeatureGate {
	var out []operatorv1.FeatureGate
	for _, n := range names {
		out = append(out, operatorv1.FeatureGate{Feature: n, Mode: mode})
	}
	return out
}

// get returns the value at the dotted path of values (component names contain dashes,
// not dots).
func get(values map[string]any, path string) any {
	var v any = values
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		if v, ok = m[k]; !ok {
			return "<absent>"
		}
	}
	return v
}

// TestValuesFor has one case per acting field: the values it sets.
func TestValuesFor(t *testing.T) {
	const own = "ghcr.io/flotilla-dev/flotilla:v9"
	for _, tc := range []struct {
		name string
		spec operatorv1.ClusterManagerSpec
		want map[string]any // path → value (JSON form)
	}{
		{"empty spec: the operator's image everywhere, placement cleared, Default resources",
			operatorv1.ClusterManagerSpec{}, map[string]any{
				"components.registration-controller.image": own, "components.addon-manager.image": own,
				"nodeSelector": nil, "tolerations": nil, "resourceRequirement": map[string]any{"type": "Default"},
				"components.addon-manager.enabled": "<absent>", "flags": "<absent>",
			}},
		{"registrationImagePullSpec: OCM's image is replaced, another one used",
			operatorv1.ClusterManagerSpec{RegistrationImagePullSpec: "quay.io/open-cluster-management/registration:v0.16.0", WorkImagePullSpec: "example.com/flotilla:dev"},
			map[string]any{"components.registration-controller.image": own, "components.registration-webhook.image": own,
				"components.work-webhook.image": "example.com/flotilla:dev", "components.work-controller.image": "example.com/flotilla:dev",
				"components.placement-controller.image": own}},
		{"placementImagePullSpec", operatorv1.ClusterManagerSpec{PlacementImagePullSpec: "example.com/p:1"},
			map[string]any{"components.placement-controller.image": "example.com/p:1", "components.work-controller.image": own}},
		{"addOnManagerImagePullSpec", operatorv1.ClusterManagerSpec{AddOnManagerImagePullSpec: "example.com/a@sha256:00"},
			map[string]any{"components.addon-manager.image": "example.com/a@sha256:00"}},
		{"nodePlacement", operatorv1.ClusterManagerSpec{NodePlacement: operatorv1.NodePlacement{
			NodeSelector: map[string]string{"role": "infra"},
			Tolerations:  []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}},
			map[string]any{"nodeSelector": map[string]any{"role": "infra"},
				"tolerations": []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}}}},
		{"resourceRequirement BestEffort", operatorv1.ClusterManagerSpec{ResourceRequirement: &operatorv1.ResourceRequirement{Type: operatorv1.ResourceQosClassBestEffort}},
			map[string]any{"resourceRequirement": map[string]any{"type": "BestEffort"}}},
		{"resourceRequirement ResourceRequirement", operatorv1.ClusterManagerSpec{ResourceRequirement: &operatorv1.ResourceRequirement{
			Type: operatorv1.ResourceQosClassResourceRequirement, ResourceRequirements: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}}},
			map[string]any{"resourceRequirement": map[string]any{"type": "ResourceRequirement",
				"resourceRequirements": map[string]any{"requests": map[string]any{"cpu": "50m"}}}}},
		{"webhook bind configurations", operatorv1.ClusterManagerSpec{DeployOption: operatorv1.ClusterManagerDeployOption{
			Mode: operatorv1.InstallModeDefault, Default: &operatorv1.DefaultClusterManagerConfiguration{
				RegistrationWebhookConfiguration: operatorv1.DefaultWebhookConfiguration{BindConfiguration: &operatorv1.BindConfiguration{Port: 9444, HealthProbePort: 8001, MetricsPort: 8081, HostNetwork: true}},
				WorkWebhookConfiguration:         operatorv1.DefaultWebhookConfiguration{BindConfiguration: &operatorv1.BindConfiguration{Port: 9445}},
				AddonWebhookConfiguration:        operatorv1.DefaultWebhookConfiguration{BindConfiguration: &operatorv1.BindConfiguration{Port: 9446, HealthProbePort: 8003, MetricsPort: 8083}},
			}}},
			map[string]any{
				"components.registration-webhook.bind":    map[string]any{"port": float64(9444), "healthProbePort": float64(8001), "metricsPort": float64(8081), "hostNetwork": true},
				"components.work-webhook.bind":            map[string]any{"port": float64(9445), "hostNetwork": false},
				"components.addon-manager.bind":           map[string]any{"port": float64(9446), "healthProbePort": float64(8003), "metricsPort": float64(8083), "hostNetwork": false},
				"components.registration-controller.bind": "<absent>",
			}},
		{"feature gates per component", operatorv1.ClusterManagerSpec{
			RegistrationConfiguration: &operatorv1.RegistrationHubConfiguration{FeatureGates: gates(operatorv1.FeatureGateModeTypeDisable, "DefaultClusterSet")},
			WorkConfiguration:         &operatorv1.WorkConfiguration{FeatureGates: gates(operatorv1.FeatureGateModeTypeEnable, "CleanUpCompletedManifestWork")},
			PlacementConfiguration:    &operatorv1.PlacementConfiguration{FeatureGates: gates(operatorv1.FeatureGateModeTypeEnable, "PlacementDebugServer")},
		}, map[string]any{
			"components.registration-controller.featureGates": map[string]any{"DefaultClusterSet": false},
			"components.registration-webhook.featureGates":    map[string]any{"DefaultClusterSet": false},
			"components.work-webhook.featureGates":            map[string]any{"CleanUpCompletedManifestWork": true},
			"components.work-controller.featureGates":         map[string]any{"CleanUpCompletedManifestWork": true},
			"components.placement-controller.featureGates":    "<absent>",
			"components.addon-manager.featureGates":           "<absent>",
		}},
		{"AddonManagement off removes the add-on manager", operatorv1.ClusterManagerSpec{
			AddOnManagerConfiguration: &operatorv1.AddOnManagerConfiguration{FeatureGates: gates(operatorv1.FeatureGateModeTypeDisable, "AddonManagement")}},
			map[string]any{"components.addon-manager.enabled": false, "components.addon-manager.featureGates": map[string]any{"AddonManagement": false}}},
		{"autoApproveUsers and csr identities with ManagedClusterAutoApproval", operatorv1.ClusterManagerSpec{
			RegistrationConfiguration: &operatorv1.RegistrationHubConfiguration{
				FeatureGates:        gates(operatorv1.FeatureGateModeTypeEnable, "ManagedClusterAutoApproval"),
				AutoApproveUsers:    []string{"system:serviceaccount:a:b"},
				RegistrationDrivers: []operatorv1.RegistrationDriverHub{{AuthType: "csr", CSR: &operatorv1.CSRConfig{AutoApprovedIdentities: []string{"alice"}}}},
			}},
			map[string]any{"flags": map[string]any{"autoapprove-users": []any{"alice", "system:serviceaccount:a:b"}, "autoapprove-cluster-patterns": []any{"*"}}}},
		{"autoApproveUsers without ManagedClusterAutoApproval act on nothing, as in OCM", operatorv1.ClusterManagerSpec{
			RegistrationConfiguration: &operatorv1.RegistrationHubConfiguration{AutoApproveUsers: []string{"alice"}}},
			map[string]any{"flags": "<absent>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ValuesFor(&tc.spec, own)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Refusals) > 0 {
				t.Errorf("refusals %v, want none", got.Refusals)
			}
			// Compare in JSON form, as Helm reads the values.
			b, _ := json.Marshal(got.Values)
			var values map[string]any
			if err := json.Unmarshal(b, &values); err != nil {
				t.Fatal(err)
			}
			for path, want := range tc.want {
				if w, err := json.Marshal(want); err == nil {
					_ = json.Unmarshal(w, &want)
				}
				if g := get(values, path); !reflect.DeepEqual(g, want) {
					t.Errorf("%s = %#v, want %#v", path, g, want)
				}
			}
		})
	}
}

// TestValuesForRefuses: every refused field set is listed by path, with the index of list
// entries; only Hosted mode blocks.
func TestValuesForRefuses(t *testing.T) {
	spec := operatorv1.ClusterManagerSpec{
		DeployOption: operatorv1.ClusterManagerDeployOption{Mode: operatorv1.InstallModeHosted,
			Hosted: &operatorv1.HostedClusterManagerConfiguration{RegistrationWebhookConfiguration: operatorv1.HostedWebhookConfiguration{Address: "hub.example.com", Port: 443}}},
		RegistrationConfiguration: &operatorv1.RegistrationHubConfiguration{
			RegistrationDrivers: []operatorv1.RegistrationDriverHub{
				{AuthType: "csr", CSR: &operatorv1.CSRConfig{AutoApprovedIdentities: []string{"alice"}}},
				{AuthType: "awsirsa", AwsIrsa: &operatorv1.AwsIrsaConfig{HubClusterArn: "arn:aws:eks:us-west-2:123456789012:cluster/hub"}},
				{AuthType: "grpc", GRPC: &operatorv1.GRPCRegistrationConfig{AutoApprovedIdentities: []string{"bob"}}},
			},
			ImporterConfiguration: &operatorv1.ImporterConfiguration{Renderers: []string{"render-auto"}},
		},
		WorkConfiguration: &operatorv1.WorkConfiguration{WorkDriver: operatorv1.WorkDriverTypeGrpc},
		ServerConfiguration: &operatorv1.ServerConfiguration{ImagePullSpec: "quay.io/open-cluster-management/server",
			EndpointsExposure: []operatorv1.EndpointExposure{{Protocol: "grpc", GRPC: &operatorv1.Endpoint{Type: operatorv1.EndpointTypeHostname, Hostname: &operatorv1.HostnameConfig{Host: "grpc.example.com"}}}}},
		NetworkPolicyConfiguration: &operatorv1.NetworkPolicyConfiguration{MonitoringNamespace: "monitoring", APIServerNamespace: "kube-system"},
	}
	got, err := ValuesFor(&spec, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"spec.deployOption.hosted.registrationWebhookConfiguration.address",
		"spec.deployOption.hosted.registrationWebhookConfiguration.port",
		"spec.networkPolicyConfiguration.apiServerNamespace",
		"spec.networkPolicyConfiguration.monitoringNamespace",
		"spec.registrationConfiguration.importerConfiguration.renderers",
		"spec.registrationConfiguration.registrationDrivers[1].authType",
		"spec.registrationConfiguration.registrationDrivers[1].awsirsa.hubClusterArn",
		"spec.registrationConfiguration.registrationDrivers[2].authType",
		"spec.registrationConfiguration.registrationDrivers[2].grpc.autoApprovedIdentities",
		"spec.serverConfiguration.endpointsExposure[0].grpc.hostname.host",
		"spec.serverConfiguration.endpointsExposure[0].grpc.type",
		"spec.serverConfiguration.endpointsExposure[0].protocol",
		"spec.serverConfiguration.imagePullSpec",
		"spec.workConfiguration.workDriver",
	}
	if u := got.Unsupported(); !slices.Equal(u, want) {
		t.Errorf("unsupported fields\n got %q\nwant %q", u, want)
	}
	b := got.Blocking()
	if b == nil || b.Path != "spec.deployOption.mode" || b.Message != "spec.deployOption.mode: Hosted ClusterManager is not supported" {
		t.Errorf("blocking refusal %+v, want spec.deployOption.mode: Hosted ClusterManager is not supported", b)
	}
	// The csr driver's identities still act (with the gate): refusing a driver leaves the others.
	for _, r := range got.Refusals {
		if strings.Contains(r.Path, "registrationDrivers[0]") {
			t.Errorf("the csr driver is refused: %s", r.Path)
		}
	}

	spec.DeployOption.Mode = operatorv1.InstallModeDefault
	if got, _ := ValuesFor(&spec, ""); got.Blocking() != nil {
		t.Errorf("mode Default refused: %+v", got.Blocking())
	}
}

// TestValuesForFeatureGates: a gate a section does not implement is named in
// ValidFeatureGates and set nowhere.
func TestValuesForFeatureGates(t *testing.T) {
	got, err := ValuesFor(&operatorv1.ClusterManagerSpec{
		RegistrationConfiguration: &operatorv1.RegistrationHubConfiguration{FeatureGates: gates(operatorv1.FeatureGateModeTypeEnable, "ManagedClusterAutoApproval", "ClusterImporter")},
		PlacementConfiguration:    &operatorv1.PlacementConfiguration{FeatureGates: gates(operatorv1.FeatureGateModeTypeEnable, "PlacementDebugServer")},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	c := got.Gates.Condition()
	if c.Status != "False" || c.Reason != operatorv1.ReasonInvalidFeatureGatesExisting ||
		!strings.Contains(c.Message, "Registration: [ClusterImporter]") || !strings.Contains(c.Message, "Placement: [PlacementDebugServer]") {
		t.Errorf("ValidFeatureGates %+v", c)
	}
	if g := get(got.Values, "components.registration-controller.featureGates"); !reflect.DeepEqual(g, map[string]any{"ManagedClusterAutoApproval": true}) {
		t.Errorf("registration gates %v", g)
	}
}

// TestSpecRendersEveryComponent: the values of a spec render (topology Split) with each
// acting field on every component it names.
func TestSpecRendersEveryComponent(t *testing.T) {
	spec := operatorv1.ClusterManagerSpec{
		PlacementImagePullSpec: "example.com/flotilla:p",
		NodePlacement: operatorv1.NodePlacement{NodeSelector: map[string]string{"role": "infra"},
			Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}},
		ResourceRequirement:       &operatorv1.ResourceRequirement{Type: operatorv1.ResourceQosClassBestEffort},
		AddOnManagerConfiguration: &operatorv1.AddOnManagerConfiguration{FeatureGates: gates(operatorv1.FeatureGateModeTypeDisable, "AddonManagement")},
		PlacementConfiguration:    &operatorv1.PlacementConfiguration{},
	}
	sv, err := ValuesFor(&spec, "ghcr.io/flotilla-dev/flotilla:own")
	if err != nil {
		t.Fatal(err)
	}
	// The values ConfigMap's settings under the spec's, as the operator merges them.
	cmValues := map[string]any{"topology": "Split", "nodeSelector": map[string]any{"from": "configmap"}}
	objs, err := install.Render(install.HubChart, "flotilla-hub", install.HubNamespace, ComponentValues(cmValues, sv, "cluster-manager"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		names = append(names, o.GetName())
		pod, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
		if !reflect.DeepEqual(pod["nodeSelector"], map[string]any{"role": "infra"}) {
			t.Errorf("%s nodeSelector %v, want the spec's only", o.GetName(), pod["nodeSelector"])
		}
		c := pod["containers"].([]any)[0].(map[string]any)
		if _, ok := c["resources"]; ok {
			t.Errorf("%s has resources %v with BestEffort", o.GetName(), c["resources"])
		}
		want := "ghcr.io/flotilla-dev/flotilla:own"
		if o.GetName() == "cluster-manager-placement-controller" {
			want = "example.com/flotilla:p"
		}
		if c["image"] != want {
			t.Errorf("%s image %v, want %s", o.GetName(), c["image"], want)
		}
	}
	slices.Sort(names)
	if want := []string{"cluster-manager-placement-controller", "cluster-manager-registration-controller", "cluster-manager-registration-webhook",
		"cluster-manager-work-controller", "cluster-manager-work-webhook"}; !slices.Equal(names, want) {
		t.Errorf("Deployments %v, want %v (AddonManagement off)", names, want)
	}
}

// TestSingleUnderTheOperator: topology Single rendered by the operator is today's one
// Deployment, following no ClusterManager itself (the operator does), and no ClusterManager.
func TestSingleUnderTheOperator(t *testing.T) {
	sv, err := ValuesFor(&operatorv1.ClusterManagerSpec{}, "")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := install.Render(install.HubChart, "flotilla-hub", install.HubNamespace, ComponentValues(map[string]any{"topology": "Single"}, sv, "cluster-manager"))
	if err != nil {
		t.Fatal(err)
	}
	var deployments []string
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterManager":
			t.Errorf("the operator's render holds ClusterManager %s", o.GetName())
		case "Deployment":
			deployments = append(deployments, o.GetName())
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args := containers[0].(map[string]any)["args"].([]any)
			if slices.ContainsFunc(args, func(a any) bool { return strings.HasPrefix(a.(string), "--cluster-manager-name") }) {
				t.Errorf("%s args %v pass the deprecated --cluster-manager-name (the operator, not the hub process, follows the ClusterManager)", o.GetName(), args)
			}
		}
	}
	if !slices.Equal(deployments, []string{"flotilla-hub"}) {
		t.Errorf("Deployments %v, want flotilla-hub", deployments)
	}
}

// TestValuesForNotesReplacedImages: an OCM image replaced by the operator's is said once.
func TestValuesForNotesReplacedImages(t *testing.T) {
	got, err := ValuesFor(&operatorv1.ClusterManagerSpec{RegistrationImagePullSpec: "quay.io/open-cluster-management/registration:v0.16.0"}, "own:1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"spec.registrationImagePullSpec quay.io/open-cluster-management/registration:v0.16.0 is OCM's image: running own:1"}
	if !slices.Equal(got.Notes, want) {
		t.Errorf("notes %q, want %q", got.Notes, want)
	}
}
