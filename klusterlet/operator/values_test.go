package operator

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/crds"
)

// specLeaves lists the leaf paths of the Klusterlet CRD's spec, lists as [], stopping at the
// core/v1 subtrees (tolerations, resourceRequirements), as core/apis/operator/v1's schema test.
func specLeaves(t *testing.T) []string {
	t.Helper()
	objs, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var walk func(s apiextensionsv1.JSONSchemaProps, prefix string) []string
	walk = func(s apiextensionsv1.JSONSchemaProps, prefix string) []string {
		switch {
		case len(s.Properties) > 0:
			var out []string
			for k, c := range s.Properties {
				p := prefix + "." + k
				if k == "tolerations" || k == "resourceRequirements" {
					out = append(out, p)
					continue
				}
				out = append(out, walk(c, p)...)
			}
			return out
		case s.Items != nil && s.Items.Schema != nil && len(s.Items.Schema.Properties) > 0:
			return walk(*s.Items.Schema, prefix+"[]")
		default:
			return []string{prefix}
		}
	}
	for _, crd := range objs {
		if crd.Name == "klusterlets.operator.open-cluster-management.io" {
			leaves := walk(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"], "spec")
			slices.Sort(leaves)
			return leaves
		}
	}
	t.Fatal("no Klusterlet CRD in core/crds")
	return nil
}

// TestEveryKlusterletLeafMappedOrRefused: every leaf of the Klusterlet's spec is in exactly one
// of the tables, mappings (Flotilla acts on it) and refusals (it says it does not), and every
// leaf the tables name exists: a field added to the API fails here until it is decided.
func TestEveryKlusterletLeafMappedOrRefused(t *testing.T) {
	leaves := specLeaves(t)
	if len(leaves) < 30 {
		t.Fatalf("only %d spec leaves found: %v", len(leaves), leaves)
	}
	where := map[string][]string{}
	for _, m := range mappings {
		for _, l := range m.leaves {
			where[l] = append(where[l], "mapped")
		}
	}
	for _, r := range refusals {
		for _, l := range r.leaves {
			where[l] = append(where[l], "refused")
		}
	}
	for _, l := range leaves {
		switch w := where[l]; len(w) {
		case 0:
			t.Errorf("%s is neither mapped nor refused (klusterlet/operator/values.go)", l)
		case 1:
		default:
			t.Errorf("%s is in more than one row: %v", l, w)
		}
	}
	for l := range where {
		if !slices.Contains(leaves, l) {
			t.Errorf("values.go names %s, which the Klusterlet CRD's spec does not have", l)
		}
	}
}

func newKlusterlet(mode operatorv1.InstallMode, edit func(s *operatorv1.KlusterletSpec)) *operatorv1.Klusterlet {
	k := &operatorv1.Klusterlet{ObjectMeta: metav1.ObjectMeta{Name: "klusterlet"},
		Spec: operatorv1.KlusterletSpec{ClusterName: "cluster1", DeployOption: operatorv1.KlusterletDeployOption{Mode: mode}}}
	if edit != nil {
		edit(&k.Spec)
	}
	return k
}

// get follows path (dot-separated keys) in the chart values.
func get(v map[string]any, path string) any {
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestValuesFor: one case per acting field, the values it gives; the klusterlet chart's
// render test (core/install) shows each value on the rendered objects.
func TestValuesFor(t *testing.T) {
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	for _, tc := range []struct {
		name string
		mode operatorv1.InstallMode
		edit func(s *operatorv1.KlusterletSpec)
		want map[string]any // path in the values → value
	}{
		{"clusterName", operatorv1.InstallModeSingleton, nil, map[string]any{
			"clusterName": "cluster1", "specFlags.registration.cluster-name": "cluster1", "specFlags.work.cluster-name": "cluster1"}},
		{"mode unset is Default", "", nil, map[string]any{"klusterlet.spec.deployOption.mode": "Default", "klusterlet.create": false, "render": "components"}},
		{"mode", operatorv1.InstallModeHosted, nil, map[string]any{"klusterlet.spec.deployOption.mode": "Hosted", "klusterlet.managedNamespace": "open-cluster-management-agent"}},
		{"namespace, hosted", operatorv1.InstallModeSingletonHosted, func(s *operatorv1.KlusterletSpec) { s.Namespace = "open-cluster-management-c1" },
			map[string]any{"klusterlet.managedNamespace": "open-cluster-management-c1"}},
		{"imagePullSpec, singleton", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.ImagePullSpec, s.RegistrationImagePullSpec = "registry.example/flotilla:v2", "registry.example/reg:v2"
		}, map[string]any{"images": map[string]any{"agent": "registry.example/flotilla:v2"}}},
		{"registration and work images, Default", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.ImagePullSpec, s.RegistrationImagePullSpec, s.WorkImagePullSpec = "registry.example/x:1", "registry.example/reg:v2", "registry.example/work:v2"
		}, map[string]any{"images": map[string]any{"registration": "registry.example/reg:v2", "work": "registry.example/work:v2"}}},
		{"OCM's image runs Flotilla's", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.ImagePullSpec = "quay.io/open-cluster-management/registration-operator:latest"
		}, map[string]any{"images": map[string]any{}}},
		{"externalServerURLs", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.ExternalServerURLs = []operatorv1.ServerURL{{URL: "https://a.example:6443"}, {URL: "https://b.example"}}
		}, map[string]any{"specFlags.registration.external-server-urls": []any{"https://a.example:6443", "https://b.example"}}},
		{"nodePlacement", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.NodePlacement = operatorv1.NodePlacement{NodeSelector: map[string]string{"role": "infra"},
				Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
		}, map[string]any{"nodeSelector": map[string]any{"role": "infra"}, "tolerations": []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}}}},
		{"resourceRequirement BestEffort", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.ResourceRequirement = &operatorv1.ResourceRequirement{Type: operatorv1.ResourceQosClassBestEffort}
		}, map[string]any{"resources": nil}},
		{"resourceRequirement ResourceRequirement", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.ResourceRequirement = &operatorv1.ResourceRequirement{Type: operatorv1.ResourceQosClassResourceRequirement,
				ResourceRequirements: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}}}
		}, map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "300m", "memory": nil}, "limits": nil}}},
		{"priorityClassName", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) { s.PriorityClassName = "system-cluster-critical" },
			map[string]any{"priorityClassName": "system-cluster-critical"}},
		{"reportHostingCluster", operatorv1.InstallModeSingletonHosted, func(s *operatorv1.KlusterletSpec) {
			s.DeployOption.ReportHostingCluster = operatorv1.ReportHostingClusterModeEnable
			s.DeployOption.Hosted = &operatorv1.KlusterletHostedConfiguration{ManagementClusterName: "host"}
		}, map[string]any{"specFlags.registration.hosting-cluster-claim": "host"}},
		{"reportHostingCluster, not hosted", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.DeployOption.ReportHostingCluster = operatorv1.ReportHostingClusterModeEnable
		}, map[string]any{"specFlags.registration.hosting-cluster-claim": "cluster1"}},
		{"hubApiServerHostAlias", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.HubApiServerHostAlias = &operatorv1.HubApiServerHostAlias{IP: "10.0.0.1", Hostname: "hub.example"}
		}, map[string]any{"specFlags.registration.hub-host-alias": "hub.example=10.0.0.1", "specFlags.work.hub-host-alias": "hub.example=10.0.0.1"}},
		{"registrationConfiguration", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{
				ClientCertExpirationSeconds: 3600,
				FeatureGates:                []operatorv1.FeatureGate{{Feature: "AddonManagement", Mode: "Disable"}, {Feature: "ClusterClaim", Mode: "Enable"}, {Feature: "Nonsense", Mode: "Enable"}},
				ClusterAnnotations:          map[string]string{"agent.open-cluster-management.io/zone": "a", "other.example/x": "dropped"},
				ClusterLabels:               map[string]string{"env": "prod"},
				KubeAPIQPS:                  20, KubeAPIBurst: 40,
				ClusterClaimConfiguration: &operatorv1.ClusterClaimConfiguration{MaxCustomClusterClaims: 5, ReservedClusterClaimSuffixes: []string{"example.com"}},
			}
		}, map[string]any{
			"specFlags.registration.csr-expiration-seconds":          3600,
			"specFlags.registration.feature-gates":                   map[string]any{"AddonManagement": false},
			"specFlags.registration.cluster-annotations":             map[string]any{"agent.open-cluster-management.io/zone": "a"},
			"specFlags.registration.cluster-labels":                  map[string]any{"env": "prod"},
			"specFlags.registration.kube-api-qps":                    20,
			"specFlags.registration.kube-api-burst":                  40,
			"specFlags.registration.max-custom-cluster-claims":       5,
			"specFlags.registration.reserved-cluster-claim-suffixes": []any{"example.com"},
		}},
		{"workConfiguration", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.WorkConfiguration = &operatorv1.WorkAgentConfiguration{
				FeatureGates: []operatorv1.FeatureGate{{Feature: "RawFeedbackJsonString", Mode: "Enable"}},
				KubeAPIQPS:   60, KubeAPIBurst: 120, HubKubeAPIQPS: 30, HubKubeAPIBurst: 70,
				AppliedManifestWorkEvictionGracePeriod: dur(2 * time.Hour), StatusSyncInterval: dur(45 * time.Second),
			}
		}, map[string]any{
			"specFlags.work.feature-gates":                             map[string]any{"RawFeedbackJsonString": true},
			"specFlags.work.work-kube-api-qps":                         60,
			"specFlags.work.work-kube-api-burst":                       120,
			"specFlags.work.hub-kube-api-qps":                          30,
			"specFlags.work.hub-kube-api-burst":                        70,
			"specFlags.work.appliedmanifestwork-eviction-grace-period": "2h0m0s",
			"specFlags.work.status-sync-interval":                      "45s",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := ValuesFor(newKlusterlet(tc.mode, tc.edit), "")
			if len(v.Blocking) > 0 {
				t.Errorf("blocked: %v", v.Blocking)
			}
			for path, want := range tc.want {
				if got := get(v.Chart, path); !jsonEqual(got, want) {
					t.Errorf("values %s = %#v, want %#v", path, got, want)
				}
			}
		})
	}
}

func TestValuesForAgentNamespace(t *testing.T) {
	for _, tc := range []struct {
		mode      operatorv1.InstallMode
		namespace string
		want      string
	}{
		{operatorv1.InstallModeSingleton, "", "open-cluster-management-agent"},
		{operatorv1.InstallModeDefault, "open-cluster-management-agent-2", "open-cluster-management-agent-2"},
		{operatorv1.InstallModeHosted, "open-cluster-management-agent-2", "klusterlet"},
		{operatorv1.InstallModeSingletonHosted, "", "klusterlet"},
	} {
		v := ValuesFor(newKlusterlet(tc.mode, func(s *operatorv1.KlusterletSpec) { s.Namespace = tc.namespace }), "")
		if v.AgentNamespace != tc.want {
			t.Errorf("%s, spec.namespace %q: agent namespace %q, want %q", tc.mode, tc.namespace, v.AgentNamespace, tc.want)
		}
	}
}

func TestValuesForNotesOCMImages(t *testing.T) {
	v := ValuesFor(newKlusterlet(operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
		s.RegistrationImagePullSpec = "quay.io/open-cluster-management/registration:v0.15.0"
	}), "")
	if want := []string{"spec.registrationImagePullSpec: OCM's image quay.io/open-cluster-management/registration:v0.15.0, running Flotilla's image instead"}; !reflect.DeepEqual(v.Images, want) {
		t.Errorf("image notes %q, want %q", v.Images, want)
	}
}

// TestValuesForRefuses: each refused field set gives its JSON path (with list indexes) in
// ValidConfiguration's message, and only the blocking ones stop the apply.
func TestValuesForRefuses(t *testing.T) {
	for _, tc := range []struct {
		name        string
		edit        func(s *operatorv1.KlusterletSpec)
		unsupported []string
		blocking    string // a substring of the Applied message; "" when not blocked
	}{
		{"nothing refused", func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{
				RegistrationDriver:                operatorv1.RegistrationDriver{AuthType: "csr"},
				BootstrapKubeConfigs:              operatorv1.BootstrapKubeConfigs{Type: operatorv1.None},
				AddOnKubeClientRegistrationDriver: &operatorv1.AddOnRegistrationDriver{AuthType: "csr"},
			}
		}, nil, ""},
		{"caBundle", func(s *operatorv1.KlusterletSpec) {
			s.ExternalServerURLs = []operatorv1.ServerURL{{URL: "https://a"}, {URL: "https://b", CABundle: []byte("pem")}}
		}, []string{"spec.externalServerURLs[1].caBundle"}, ""},
		{"bootstrapKubeConfigs", func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{BootstrapKubeConfigs: operatorv1.BootstrapKubeConfigs{
				Type: operatorv1.LocalSecrets, LocalSecrets: &operatorv1.LocalSecretsConfig{
					KubeConfigSecrets: []operatorv1.KubeConfigSecret{{Name: "hub1"}, {Name: "hub2"}}, HubConnectionTimeoutSeconds: 600}}}
		}, []string{
			"spec.registrationConfiguration.bootstrapKubeConfigs.localSecretsConfig.hubConnectionTimeoutSeconds",
			"spec.registrationConfiguration.bootstrapKubeConfigs.localSecretsConfig.kubeConfigSecrets[0].name",
			"spec.registrationConfiguration.bootstrapKubeConfigs.localSecretsConfig.kubeConfigSecrets[1].name",
			"spec.registrationConfiguration.bootstrapKubeConfigs.type",
		}, ""},
		{"addOnKubeClientRegistrationDriver token", func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{AddOnKubeClientRegistrationDriver: &operatorv1.AddOnRegistrationDriver{
				AuthType: "token", Token: &operatorv1.TokenConfig{ExpirationSeconds: 3600}}}
		}, []string{
			"spec.registrationConfiguration.addOnKubeClientRegistrationDriver.authType",
			"spec.registrationConfiguration.addOnKubeClientRegistrationDriver.token.expirationSeconds",
		}, ""},
		{"registrationDriver awsirsa blocks", func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{RegistrationDriver: operatorv1.RegistrationDriver{
				AuthType: "awsirsa", AwsIrsa: &operatorv1.AwsIrsa{HubClusterArn: "arn:aws:eks:us-west-2:123456789012:cluster/hub1", ManagedClusterArn: "arn:aws:eks:us-west-2:123456789012:cluster/c1"}}}
		}, []string{
			"spec.registrationConfiguration.registrationDriver.awsIrsa.hubClusterArn",
			"spec.registrationConfiguration.registrationDriver.awsIrsa.managedClusterArn",
		}, `spec.registrationConfiguration.registrationDriver.authType: "awsirsa" is not supported`},
		{"registrationDriver grpc blocks", func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{RegistrationDriver: operatorv1.RegistrationDriver{AuthType: "grpc"}}
		}, nil, `spec.registrationConfiguration.registrationDriver.authType: "grpc" is not supported`},
		{"clusterName missing blocks", func(s *operatorv1.KlusterletSpec) { s.ClusterName = "" }, nil, "spec.clusterName: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := ValuesFor(newKlusterlet(operatorv1.InstallModeSingleton, tc.edit), operatorv1.InstallModeSingleton)
			checkRefusals(t, v, tc.unsupported, tc.blocking)
		})
	}
}

// TestValuesForRefusesNamesTheChartCannotTake: a Klusterlet name that is no DNS label of at
// most 50 characters (a dotted name, a long one) blocks, naming metadata.name.
func TestValuesForRefusesNamesTheChartCannotTake(t *testing.T) {
	for _, name := range []string{"klusterlet.example", strings.Repeat("k", 51)} {
		k := newKlusterlet(operatorv1.InstallModeHosted, nil)
		k.Name = name
		checkRefusals(t, ValuesFor(k, ""), nil, fmt.Sprintf("metadata.name: %q: Flotilla needs a DNS label of at most 50 characters", name))
	}
	k := newKlusterlet(operatorv1.InstallModeHosted, nil)
	k.Name = strings.Repeat("k", 50)
	checkRefusals(t, ValuesFor(k, ""), nil, "")
}

func checkRefusals(t *testing.T, v Values, unsupported []string, blocking string) {
	t.Helper()
	if !slices.Equal(v.Unsupported, unsupported) {
		t.Errorf("unsupported %q, want %q", v.Unsupported, unsupported)
	}
	c := v.ValidConfiguration()
	if len(unsupported) == 0 {
		if c.Status != metav1.ConditionTrue || c.Reason != operatorv1.ReasonConfigurationValid {
			t.Errorf("ValidConfiguration %+v, want True ConfigurationValid", c)
		}
	} else {
		if c.Status != metav1.ConditionFalse || c.Reason != operatorv1.ReasonUnsupportedFields || c.Type != "ValidConfiguration" {
			t.Errorf("ValidConfiguration %+v, want False UnsupportedFields", c)
		}
		for _, p := range unsupported {
			if !strings.Contains(c.Message, p) {
				t.Errorf("ValidConfiguration message %q does not name %s", c.Message, p)
			}
		}
	}
	applied, blocked := v.NotApplied()
	switch {
	case blocking == "" && blocked:
		t.Errorf("blocked: %+v", applied)
	case blocking != "" && !blocked:
		t.Errorf("not blocked, want Applied False naming %q", blocking)
	case blocking != "":
		if applied.Type != "Applied" || applied.Status != metav1.ConditionFalse || applied.Reason != "UnsupportedConfiguration" || !strings.Contains(applied.Message, blocking) {
			t.Errorf("Applied %+v, want False UnsupportedConfiguration naming %q", applied, blocking)
		}
	}
}

// TestValuesForRefusesAModeChange: deployOption.mode cannot change after the first apply.
func TestValuesForRefusesAModeChange(t *testing.T) {
	for _, tc := range []struct {
		applied, now operatorv1.InstallMode
		blocked      bool
	}{
		{"", operatorv1.InstallModeHosted, false},
		{operatorv1.InstallModeSingleton, operatorv1.InstallModeSingleton, false},
		{operatorv1.InstallModeDefault, "", false},
		{operatorv1.InstallModeSingleton, operatorv1.InstallModeDefault, true},
		{operatorv1.InstallModeDefault, operatorv1.InstallModeHosted, true},
		{"", operatorv1.InstallModeSingletonHosted, false},
		{operatorv1.InstallModeSingletonHosted, operatorv1.InstallModeSingleton, true},
	} {
		v := ValuesFor(newKlusterlet(tc.now, nil), tc.applied)
		c, blocked := v.NotApplied()
		if blocked != tc.blocked {
			t.Errorf("applied %q, now %q: blocked %t (%s), want %t", tc.applied, tc.now, blocked, c.Message, tc.blocked)
			continue
		}
		if blocked && (c.Reason != operatorv1.ReasonUnsupportedConfiguration || !strings.Contains(c.Message, "spec.deployOption.mode: "+string(normalMode(tc.now))) || !strings.Contains(c.Message, string(tc.applied)+" mode")) {
			t.Errorf("Applied %+v does not name the field, the new and the old mode", c)
		}
	}
}

// TestValuesForGates: the gates `flotilla klusterlet` implements of each agent's OCM set go to
// that agent's flags; the others (OCM gates Flotilla lacks, misspellings) are what
// ValidFeatureGates names, per agent, and no flag carries them.
func TestValuesForGates(t *testing.T) {
	v := ValuesFor(newKlusterlet(operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
		s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{FeatureGates: []operatorv1.FeatureGate{
			{Feature: "AddonManagement", Mode: "Enable"}, {Feature: "ClusterClaim", Mode: "Enable"}, {Feature: "RawFeedbackJsonString", Mode: "Enable"}}}
		s.WorkConfiguration = &operatorv1.WorkAgentConfiguration{FeatureGates: []operatorv1.FeatureGate{
			{Feature: "ExecutorValidatingCaches", Mode: "Enable"}, {Feature: "Nonsense", Mode: "Enable"}}}
	}), "")
	if got := get(v.Chart, "specFlags.registration.feature-gates"); !jsonEqual(got, map[string]any{"AddonManagement": true}) {
		t.Errorf("registration gates %v", got)
	}
	if got := get(v.Chart, "specFlags.work.feature-gates"); !jsonEqual(got, map[string]any{"ExecutorValidatingCaches": true}) {
		t.Errorf("work gates %v", got)
	}
	c := v.Gates.Condition()
	if c.Status != metav1.ConditionFalse || c.Reason != operatorv1.ReasonInvalidFeatureGatesExisting ||
		!strings.Contains(c.Message, "Registration: [ClusterClaim RawFeedbackJsonString]") || !strings.Contains(c.Message, "Work: [Nonsense]") {
		t.Errorf("ValidFeatureGates %+v", c)
	}
}
