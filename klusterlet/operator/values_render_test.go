package operator

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
)

// renderFor renders the klusterlet chart's components for k as the operator will: the values
// of ValuesFor, in the agent namespace it names.
func renderFor(t *testing.T, k *operatorv1.Klusterlet) []*unstructured.Unstructured {
	t.Helper()
	v := ValuesFor(k, "")
	if len(v.Blocking) > 0 {
		t.Fatalf("blocked: %v", v.Blocking)
	}
	objs, err := install.Render(install.KlusterletChart, "klusterlet", v.AgentNamespace, v.Chart)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func findObj(t *testing.T, objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	var names []string
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name && o.GetNamespace() == namespace {
			return o
		}
		names = append(names, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	t.Fatalf("no %s %s/%s among %v", kind, namespace, name, names)
	return nil
}

func podSpec(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	spec, ok, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if !ok {
		t.Fatalf("%s has no pod spec", d.GetName())
	}
	return spec
}

func agentContainer(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _ := podSpec(t, d)["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("%s has %d containers, want 1", d.GetName(), len(cs))
	}
	return cs[0].(map[string]any)
}

func agentArgs(t *testing.T, d *unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, a := range agentContainer(t, d)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

// wantArgs checks that the Deployment's args hold each of want and no other --name= of theirs.
func wantArgs(t *testing.T, d *unstructured.Unstructured, want ...string) {
	t.Helper()
	got := agentArgs(t, d)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s args lack %s: %v", d.GetName(), w, got)
		}
		name, _, _ := strings.Cut(w, "=")
		for _, g := range got {
			if g != w && strings.HasPrefix(g, name+"=") {
				t.Errorf("%s args hold %s beside %s", d.GetName(), g, w)
			}
		}
	}
}

func noArg(t *testing.T, d *unstructured.Unstructured, prefix string) {
	t.Helper()
	for _, a := range agentArgs(t, d) {
		if strings.HasPrefix(a, prefix) {
			t.Errorf("%s args hold %s", d.GetName(), a)
		}
	}
}

const agentNS = "open-cluster-management-agent"

// TestEveryActingFieldRenders: one case per field Flotilla acts on, the Klusterlet's spec
// through ValuesFor and the chart to the agent Deployments it changes.
func TestEveryActingFieldRenders(t *testing.T) {
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	singleton := func(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
		return findObj(t, objs, "Deployment", agentNS, "klusterlet-agent")
	}
	registration := func(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
		return findObj(t, objs, "Deployment", agentNS, "klusterlet-registration-agent")
	}
	work := func(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
		return findObj(t, objs, "Deployment", agentNS, "klusterlet-work-agent")
	}
	for _, tc := range []struct {
		field string
		mode  operatorv1.InstallMode
		edit  func(s *operatorv1.KlusterletSpec)
		check func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		{"clusterName", operatorv1.InstallModeDefault, nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, registration(t, objs), "--cluster-name=cluster1")
			wantArgs(t, work(t, objs), "--cluster-name=cluster1")
		}},
		{"namespace", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) { s.Namespace = "open-cluster-management-agent-2" },
			func(t *testing.T, objs []*unstructured.Unstructured) {
				d := findObj(t, objs, "Deployment", "open-cluster-management-agent-2", "klusterlet-agent")
				wantArgs(t, d, "--agent-namespace=open-cluster-management-agent-2")
			}},
		{"deployOption.mode Singleton", operatorv1.InstallModeSingleton, nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			d := singleton(t, objs)
			noArg(t, d, "--work-only")
			noArg(t, d, "--disable-work-agent=true")
			if sa := podSpec(t, d)["serviceAccountName"]; sa != "klusterlet-agent" {
				t.Errorf("serviceAccountName %v", sa)
			}
			for _, o := range objs {
				if o.GetKind() == "Deployment" && o.GetName() != "klusterlet-agent" {
					t.Errorf("Singleton renders Deployment %s too", o.GetName())
				}
				if o.GetKind() == "Klusterlet" {
					t.Errorf("the components render for the operator holds the Klusterlet")
				}
			}
		}},
		{"deployOption.mode Default", operatorv1.InstallModeDefault, nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			r, w := registration(t, objs), work(t, objs)
			wantArgs(t, r, "--disable-work-agent=true", "--leader-elect-name=klusterlet-registration-agent-lock")
			wantArgs(t, w, "--work-only", "--disable-work-agent=false", "--leader-elect-name=klusterlet-work-agent-lock")
			noArg(t, r, "--work-only")
			if sa := podSpec(t, r)["serviceAccountName"]; sa != "klusterlet-registration-sa" {
				t.Errorf("registration agent's serviceAccountName %v, want OCM's klusterlet-registration-sa", sa)
			}
			if sa := podSpec(t, w)["serviceAccountName"]; sa != "klusterlet-work-sa" {
				t.Errorf("work agent's serviceAccountName %v, want klusterlet-work-sa", sa)
			}
			findObj(t, objs, "ServiceAccount", agentNS, "klusterlet-registration-sa")
			findObj(t, objs, "ServiceAccount", agentNS, "klusterlet-work-sa")
		}},
		{"deployOption.mode SingletonHosted", operatorv1.InstallModeSingletonHosted, nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			d := findObj(t, objs, "Deployment", "klusterlet", "klusterlet-agent")
			wantArgs(t, d, "--managed-kubeconfig-secret=external-managed-kubeconfig-agent", "--agent-namespace=klusterlet")
		}},
		{"deployOption.mode Hosted", operatorv1.InstallModeHosted, nil, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, findObj(t, objs, "Deployment", "klusterlet", "klusterlet-registration-agent"), "--managed-kubeconfig-secret=external-managed-kubeconfig-registration")
			wantArgs(t, findObj(t, objs, "Deployment", "klusterlet", "klusterlet-work-agent"), "--managed-kubeconfig-secret=external-managed-kubeconfig-work", "--work-only")
		}},
		{"imagePullSpec", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) { s.ImagePullSpec = "registry.example/flotilla:v2" },
			func(t *testing.T, objs []*unstructured.Unstructured) {
				if img := agentContainer(t, singleton(t, objs))["image"]; img != "registry.example/flotilla:v2" {
					t.Errorf("image %v", img)
				}
			}},
		{"registrationImagePullSpec, workImagePullSpec", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationImagePullSpec, s.WorkImagePullSpec = "registry.example/reg:v2", "quay.io/open-cluster-management/work:latest"
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if img := agentContainer(t, registration(t, objs))["image"]; img != "registry.example/reg:v2" {
				t.Errorf("registration image %v", img)
			}
			if img := agentContainer(t, work(t, objs))["image"]; img != "ghcr.io/flotilla-dev/flotilla:0.1.0" {
				t.Errorf("work image %v, want the chart's for OCM's", img)
			}
		}},
		{"externalServerURLs[].url", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.ExternalServerURLs = []operatorv1.ServerURL{{URL: "https://a.example:6443"}, {URL: "https://b.example"}}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, registration(t, objs), "--external-server-urls=https://a.example:6443,https://b.example")
			noArg(t, work(t, objs), "--external-server-urls")
		}},
		{"nodePlacement", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.NodePlacement = operatorv1.NodePlacement{NodeSelector: map[string]string{"role": "infra"},
				Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, d := range []*unstructured.Unstructured{registration(t, objs), work(t, objs)} {
				p := podSpec(t, d)
				if !jsonEqual(p["nodeSelector"], map[string]any{"role": "infra"}) || !jsonEqual(p["tolerations"], []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}}) {
					t.Errorf("%s nodeSelector %v tolerations %v", d.GetName(), p["nodeSelector"], p["tolerations"])
				}
			}
		}},
		{"resourceRequirement BestEffort", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.ResourceRequirement = &operatorv1.ResourceRequirement{Type: operatorv1.ResourceQosClassBestEffort}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if r, ok := agentContainer(t, singleton(t, objs))["resources"]; ok {
				t.Errorf("BestEffort renders resources %v", r)
			}
		}},
		{"resourceRequirement ResourceRequirement", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.ResourceRequirement = &operatorv1.ResourceRequirement{Type: operatorv1.ResourceQosClassResourceRequirement,
				ResourceRequirements: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}}}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			if r := agentContainer(t, singleton(t, objs))["resources"]; !jsonEqual(r, map[string]any{"requests": map[string]any{"cpu": "300m"}}) {
				t.Errorf("resources %v, want exactly the spec's", r)
			}
		}},
		{"resourceRequirement Default", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.ResourceRequirement = &operatorv1.ResourceRequirement{Type: operatorv1.ResourceQosClassDefault}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			want := map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "512Mi"}}
			if r := agentContainer(t, singleton(t, objs))["resources"]; !jsonEqual(r, want) {
				t.Errorf("resources %v, want the chart's %v", r, want)
			}
		}},
		{"priorityClassName", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) { s.PriorityClassName = "system-cluster-critical" },
			func(t *testing.T, objs []*unstructured.Unstructured) {
				for _, d := range []*unstructured.Unstructured{registration(t, objs), work(t, objs)} {
					if p := podSpec(t, d)["priorityClassName"]; p != "system-cluster-critical" {
						t.Errorf("%s priorityClassName %v", d.GetName(), p)
					}
				}
			}},
		{"deployOption.reportHostingCluster, hosted.managementClusterName", operatorv1.InstallModeSingletonHosted, func(s *operatorv1.KlusterletSpec) {
			s.DeployOption.ReportHostingCluster = operatorv1.ReportHostingClusterModeEnable
			s.DeployOption.Hosted = &operatorv1.KlusterletHostedConfiguration{ManagementClusterName: "host"}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, findObj(t, objs, "Deployment", "klusterlet", "klusterlet-agent"), "--hosting-cluster-claim=host")
		}},
		{"hubApiServerHostAlias", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.HubApiServerHostAlias = &operatorv1.HubApiServerHostAlias{IP: "10.0.0.1", Hostname: "hub.example"}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, registration(t, objs), "--hub-host-alias=hub.example=10.0.0.1")
			wantArgs(t, work(t, objs), "--hub-host-alias=hub.example=10.0.0.1")
		}},
		{"registrationConfiguration.clientCertExpirationSeconds", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{ClientCertExpirationSeconds: 3600}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, singleton(t, objs), "--csr-expiration-seconds=3600")
		}},
		{"registrationConfiguration.featureGates, workConfiguration.featureGates", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{FeatureGates: []operatorv1.FeatureGate{{Feature: "AddonManagement", Mode: "Disable"}, {Feature: "ClusterClaim", Mode: "Enable"}}}
			s.WorkConfiguration = &operatorv1.WorkAgentConfiguration{FeatureGates: []operatorv1.FeatureGate{{Feature: "RawFeedbackJsonString", Mode: "Enable"}}}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, registration(t, objs), "--feature-gates=AddonManagement=false")
			wantArgs(t, work(t, objs), "--feature-gates=RawFeedbackJsonString=true")
		}},
		{"featureGates, Singleton", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{FeatureGates: []operatorv1.FeatureGate{{Feature: "AddonManagement", Mode: "Disable"}}}
			s.WorkConfiguration = &operatorv1.WorkAgentConfiguration{FeatureGates: []operatorv1.FeatureGate{{Feature: "RawFeedbackJsonString", Mode: "Enable"}}}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, singleton(t, objs), "--feature-gates=AddonManagement=false,RawFeedbackJsonString=true")
		}},
		{"registrationConfiguration.clusterAnnotations", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{ClusterAnnotations: map[string]string{"agent.open-cluster-management.io/zone": "a", "other.example/x": "y"}}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, singleton(t, objs), "--cluster-annotations=agent.open-cluster-management.io/zone=a")
		}},
		{"registrationConfiguration.clusterLabels", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{ClusterLabels: map[string]string{"env": "prod", "tier": "1"}}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, singleton(t, objs), "--cluster-labels=env=prod,tier=1")
		}},
		{"registrationConfiguration.kubeAPIQPS, kubeAPIBurst", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{KubeAPIQPS: 20, KubeAPIBurst: 40}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, registration(t, objs), "--kube-api-qps=20", "--kube-api-burst=40")
			noArg(t, work(t, objs), "--kube-api-qps")
		}},
		{"registrationConfiguration.clusterClaimConfiguration", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.RegistrationConfiguration = &operatorv1.RegistrationConfiguration{ClusterClaimConfiguration: &operatorv1.ClusterClaimConfiguration{
				MaxCustomClusterClaims: 5, ReservedClusterClaimSuffixes: []string{"example.com", "corp.example"}}}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, singleton(t, objs), "--max-custom-cluster-claims=5", "--reserved-cluster-claim-suffixes=example.com,corp.example")
		}},
		{"workConfiguration QPS", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.WorkConfiguration = &operatorv1.WorkAgentConfiguration{KubeAPIQPS: 60, KubeAPIBurst: 120, HubKubeAPIQPS: 30, HubKubeAPIBurst: 70}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, work(t, objs), "--work-kube-api-qps=60", "--work-kube-api-burst=120", "--hub-kube-api-qps=30", "--hub-kube-api-burst=70")
			noArg(t, registration(t, objs), "--work-kube-api-qps")
		}},
		{"workConfiguration.appliedManifestWorkEvictionGracePeriod, statusSyncInterval", operatorv1.InstallModeDefault, func(s *operatorv1.KlusterletSpec) {
			s.WorkConfiguration = &operatorv1.WorkAgentConfiguration{AppliedManifestWorkEvictionGracePeriod: dur(2 * time.Hour), StatusSyncInterval: dur(45 * time.Second)}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, work(t, objs), "--appliedmanifestwork-eviction-grace-period=2h0m0s", "--status-sync-interval=45s")
		}},
		// The singleton agent takes the work agent's flags over values.flags too.
		{"workConfiguration.statusSyncInterval, Singleton", operatorv1.InstallModeSingleton, func(s *operatorv1.KlusterletSpec) {
			s.WorkConfiguration = &operatorv1.WorkAgentConfiguration{StatusSyncInterval: dur(45 * time.Second)}
		}, func(t *testing.T, objs []*unstructured.Unstructured) {
			wantArgs(t, singleton(t, objs), "--status-sync-interval=45s")
		}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			tc.check(t, renderFor(t, newKlusterlet(tc.mode, tc.edit)))
		})
	}
}

// TestHostedRenderSplitsByTarget: in the Hosted modes every object rendered has a Target: the
// managed-side ones (CRDs, namespaces, the ServiceAccounts the agents act as, in the
// klusterlet namespace spec.namespace, cluster-wide RBAC) the managed cluster, the agents and
// what they keep in the agent namespace (the Klusterlet's name) the management cluster.
func TestHostedRenderSplitsByTarget(t *testing.T) {
	for _, mode := range []operatorv1.InstallMode{operatorv1.InstallModeHosted, operatorv1.InstallModeSingletonHosted} {
		t.Run(string(mode), func(t *testing.T) {
			k := newKlusterlet(mode, func(s *operatorv1.KlusterletSpec) { s.Namespace = "open-cluster-management-klusterlet-c1" })
			k.Name = "klusterlet-c1"
			v := ValuesFor(k, "")
			v.Chart["bootstrapHubKubeconfig"] = "kubeconfig"
			objs, err := install.Render(install.KlusterletChart, "klusterlet", v.AgentNamespace, v.Chart)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				target := Target(o, "klusterlet-c1")
				switch {
				case o.GetName() == "klusterlets.operator.open-cluster-management.io" || o.GetName() == "wasmplugins.flotilla.dev",
					o.GetName() == "open-cluster-management:klusterlet-c1-work:plugins",
					o.GetKind() == "Namespace" && o.GetName() == "klusterlet-c1",
					o.GetKind() == "Deployment" || (o.GetKind() == "Role" || o.GetKind() == "RoleBinding" || o.GetKind() == "ServiceAccount" || o.GetKind() == "Secret") && o.GetNamespace() == "klusterlet-c1":
					if target != operatorv1.TargetManagement {
						t.Errorf("%s %s/%s: target %q, want management", o.GetKind(), o.GetNamespace(), o.GetName(), target)
					}
				default:
					if target != operatorv1.TargetManaged {
						t.Errorf("%s %s/%s: target %q, want managed", o.GetKind(), o.GetNamespace(), o.GetName(), target)
					}
					if o.GetKind() == "ServiceAccount" && o.GetNamespace() != "open-cluster-management-klusterlet-c1" {
						t.Errorf("managed ServiceAccount %s in %s", o.GetName(), o.GetNamespace())
					}
				}
			}
			ns := findObj(t, objs, "Namespace", "", "open-cluster-management-klusterlet-c1")
			if l := ns.GetLabels()[operatorv1.KlusterletNamespaceLabel]; l != "klusterlet-c1" {
				t.Errorf("klusterlet namespace label %q, want klusterlet-c1", l)
			}
			findObj(t, objs, "Namespace", "", operatorv1.AddOnDefaultNamespace)
			agentSA := "klusterlet-c1-agent"
			if mode == operatorv1.InstallModeHosted {
				agentSA = "klusterlet-c1-registration-sa"
			}
			findObj(t, objs, "ServiceAccount", "open-cluster-management-klusterlet-c1", agentSA)
			findObj(t, objs, "ServiceAccount", "open-cluster-management-klusterlet-c1", "klusterlet-c1-work-sa")
			// The plugin loader runs with the work agent, on the management cluster.
			loader := "klusterlet-c1-work-sa"
			if mode == operatorv1.InstallModeSingletonHosted {
				loader = "klusterlet-c1-agent"
			}
			plugins := findObj(t, objs, "ClusterRoleBinding", "", "open-cluster-management:klusterlet-c1-work:plugins")
			if !jsonEqual(plugins.Object["subjects"], []any{map[string]any{"kind": "ServiceAccount", "name": loader, "namespace": "klusterlet-c1"}}) {
				t.Errorf("plugin loader's ClusterRoleBinding subjects %v", plugins.Object["subjects"])
			}
			crb := findObj(t, objs, "ClusterRoleBinding", "", "open-cluster-management:klusterlet-c1-registration:agent")
			if !jsonEqual(crb.Object["subjects"], []any{map[string]any{"kind": "ServiceAccount", "name": agentSA, "namespace": "open-cluster-management-klusterlet-c1"}}) {
				t.Errorf("registration ClusterRoleBinding subjects %v", crb.Object["subjects"])
			}
		})
	}
}

// TestTwoHostedKlusterletsShareOnlyTheSharedObjects: two Hosted Klusterlets (for two hubs) of
// one managed cluster render no object of the same kind, namespace and name on either cluster
// but those meant to be shared: the CRDs, the add-on namespace, and the built-in
// managed-serviceaccount namespace (builtinAddons.createNamespace false on the second).
func TestTwoHostedKlusterletsShareOnlyTheSharedObjects(t *testing.T) {
	seen := map[string]string{}
	for i, name := range []string{"klusterlet-c1", "klusterlet-c1-hub2"} {
		k := newKlusterlet(operatorv1.InstallModeHosted, func(s *operatorv1.KlusterletSpec) { s.Namespace = "open-cluster-management-" + name })
		k.Name = name
		v := ValuesFor(k, "")
		if i == 1 {
			v.Chart["builtinAddons"] = map[string]any{"createNamespace": false}
		}
		objs, err := install.Render(install.KlusterletChart, "klusterlet", v.AgentNamespace, v.Chart)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" || (o.GetKind() == "Namespace" && o.GetName() == operatorv1.AddOnDefaultNamespace) {
				continue
			}
			key := Target(o, v.AgentNamespace) + " " + o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
			if other, ok := seen[key]; ok {
				t.Errorf("%s and %s both render %s", other, name, key)
			}
			seen[key] = name
		}
	}
}
