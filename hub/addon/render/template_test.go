package render

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// The hello-template AddOnTemplate of addon-gitops-upgrades.txt, as repaired in
// e2e/testdata/seeds, renders unchanged into one deploy ManifestWork.
func TestHelloTemplateSeed(t *testing.T) {
	data, err := os.ReadFile("../../../e2e/testdata/seeds/addon-addon-gitops-upgrades-2-addontemplate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	at := tmpl(t, string(data))
	r := mustTemplate(t, at, Input{AddOnName: "hello-template", Cluster: cluster("cluster1")})
	if len(r.Manifests) != 3 {
		t.Fatalf("%d manifests, want 3", len(r.Manifests))
	}
	for i, m := range r.Manifests {
		var want, got any
		_ = json.Unmarshal(at.Spec.AgentSpec.Workload.Manifests[i].Raw, &want)
		got = asMap(t, m)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("manifest %d changed:\n%s\nwant\n%s", i, m.Raw, at.Spec.AgentSpec.Workload.Manifests[i].Raw)
		}
	}
	if r.InstallNamespace != "open-cluster-management-agent-addon" || r.ManifestConfigs != nil || r.DeleteOption != nil || r.Executor != nil {
		t.Errorf("rendered %+v", r)
	}

	works, err := Works("hello-template", "cluster1", r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(works) != 1 {
		t.Fatalf("%d works", len(works))
	}
	w := works[0]
	if w.Name != "addon-hello-template-deploy-0" || w.Namespace != "cluster1" ||
		!reflect.DeepEqual(w.Labels, map[string]string{"open-cluster-management.io/addon-name": "hello-template"}) ||
		len(w.Spec.Workload.Manifests) != 3 {
		t.Fatalf("work %s/%s labels %v, %d manifests", w.Namespace, w.Name, w.Labels, len(w.Spec.Workload.Manifests))
	}
	wantConfigs := []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "open-cluster-management-agent-addon", Name: "hello-template-agent"},
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
	}}
	if !reflect.DeepEqual(w.Spec.ManifestConfigs, wantConfigs) {
		t.Errorf("manifestConfigs %+v", w.Spec.ManifestConfigs)
	}

	// The work agent applies it and reports the agent Deployment ready.
	one := int64(1)
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue}}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments",
			Namespace: "open-cluster-management-agent-addon", Name: "hello-template-agent"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			{Name: "ReadyReplicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: &one}},
			{Name: "Replicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: &one}},
		}},
	}}
	status, reason, msg := Availability(ModeDeploymentAvailability, []workv1.ManifestWork{w})
	if status != metav1.ConditionTrue || reason != "ProbeAvailable" || msg != "hello-template add-on is available." {
		t.Errorf("availability %s %s %q", status, reason, msg)
	}

	// With an AddOnDeploymentConfig moving the agent.
	r = mustTemplate(t, at, Input{AddOnName: "hello-template", Cluster: cluster("cluster1"),
		DeploymentConfig: &addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "hello"}})
	for i, want := range []string{"hello", "hello", ""} {
		if ns := decode[metav1.PartialObjectMetadata](t, r.Manifests[i]).Namespace; ns != want {
			t.Errorf("manifest %d in namespace %q, want %q", i, ns, want)
		}
	}
	if r.InstallNamespace != "hello" {
		t.Errorf("install namespace %q", r.InstallNamespace)
	}
}

const variablesTemplate = `      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: vars, namespace: agent-ns}
        data:
          cluster: "{{CLUSTER_NAME}}"
          namespace: "{{INSTALL_NAMESPACE}}"
          hub: "{{HUB_KUBECONFIG}}"
          level: "{{LOG_LEVEL}}"
          spaced: "{{ CLUSTER_NAME }}"
          unknown: "x{{NOPE}}y"
          twice: "{{CLUSTER_NAME}}-{{CLUSTER_NAME}}"
`

func TestVariables(t *testing.T) {
	data := func(r Rendered) map[string]string {
		return decode[corev1.ConfigMap](t, r.Manifests[0]).Data
	}
	in := Input{AddOnName: "hello", Cluster: cluster("cluster1")}

	got := data(mustTemplate(t, manifestsTemplate(t, variablesTemplate, ""), in))
	want := map[string]string{"cluster": "cluster1", "namespace": "", "hub": "", "level": "", "spaced": "", "unknown": "xy", "twice": "cluster1-cluster1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("no config: %v", got)
	}

	// customizedVariables override HUB_KUBECONFIG but not CLUSTER_NAME; without an
	// agentInstallNamespace there is no built-in INSTALL_NAMESPACE to protect (OCM).
	registered := manifestsTemplate(t, variablesTemplate, "  registration:\n  - type: KubeClient\n")
	in.DeploymentConfig = adcSpec(t, `customizedVariables:
- {name: LOG_LEVEL, value: debug}
- {name: CLUSTER_NAME, value: evil}
- {name: INSTALL_NAMESPACE, value: mine}
`)
	got = data(mustTemplate(t, registered, in))
	want = map[string]string{"cluster": "cluster1", "namespace": "mine", "hub": "/managed/hub-kubeconfig/kubeconfig", "level": "debug",
		"spaced": "", "unknown": "xy", "twice": "cluster1-cluster1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("customized: %v", got)
	}
	in.DeploymentConfig.CustomizedVariables = append(in.DeploymentConfig.CustomizedVariables, addonv1alpha1.CustomizedVariable{Name: "HUB_KUBECONFIG", Value: "/k"})
	in.DeploymentConfig.AgentInstallNamespace = "agents"
	r := mustTemplate(t, registered, in)
	got = data(r)
	if got["hub"] != "/k" || got["namespace"] != "agents" {
		t.Errorf("overrides: %v", got)
	}
	if ns := decode[corev1.ConfigMap](t, r.Manifests[0]).Namespace; ns != "agents" {
		t.Errorf("ConfigMap namespace %q", ns)
	}
}

func TestTemplateErrors(t *testing.T) {
	in := Input{AddOnName: "hello", Cluster: cluster("cluster1")}
	for _, tc := range []struct {
		name, manifests, msg string
		adc                  string
	}{
		{"unclosed tag", "      - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {x: '{{CLUSTER_NAME'}}\n",
			`agentSpec.workload.manifests[0]: after substituting variables: unexpected EOF`, ""},
		{"value breaks the JSON", "      - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {x: '{{Q}}'}}\n",
			"agentSpec.workload.manifests[0]: after substituting variables", "customizedVariables: [{name: Q, value: 'a\"b'}]"},
		{"variable empties the name", "      - {apiVersion: v1, kind: ConfigMap, metadata: {name: '{{NAME}}'}}\n",
			"agentSpec.workload.manifests[0]: metadata.name: must be set", ""},
		{"bad container ID", "      - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			`invalid containerID "deployments:a"`, "resourceRequirements: [{containerID: 'deployments:a', resources: {}}]"},
		{"bad workload ID", "      - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
			`invalid workloadID "daemonsets:a"`, "replicaConfigs: [{workloadID: 'daemonsets:a', replicas: 1}]"},
		{"containers not a list", "      - {apiVersion: apps/v1, kind: Deployment, metadata: {name: a, namespace: ns1}, spec: {template: {spec: {containers: 3}}}}\n",
			"Deployment ns1/a: containers is not a list", "customizedVariables: []"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := in
			if tc.adc != "" {
				in.DeploymentConfig = adcSpec(t, tc.adc)
			}
			if tc.name == "containers not a list" {
				in.DeploymentConfig = adcSpec(t, "nodePlacement: {nodeSelector: {a: b}}")
			}
			_, err := Template(manifestsTemplate(t, tc.manifests, ""), in)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want one containing %q", err, tc.msg)
			}
		})
	}
	if _, err := Template(nil, in); err == nil {
		t.Error("nil template accepted")
	}
	if _, err := Template(manifestsTemplate(t, variablesTemplate, ""), Input{AddOnName: "hello"}); err == nil {
		t.Error("missing cluster accepted")
	}
	bad := cluster("cluster1")
	bad.Annotations = map[string]string{clusterv1.ClusterImageRegistriesAnnotationKey: "{"}
	if _, err := Template(manifestsTemplate(t, variablesTemplate, ""), Input{Cluster: bad}); err == nil ||
		!strings.Contains(err.Error(), "annotation open-cluster-management.io/image-registries") {
		t.Errorf("bad registries annotation: %v", err)
	}
}

const workloads = `      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: agent, namespace: agent-ns}
        spec:
          replicas: 1
          selector: {matchLabels: {app: agent}}
          template:
            metadata: {labels: {app: agent}}
            spec:
              nodeSelector: {old: "true"}
              initContainers:
              - {name: init, image: quay.io/open-cluster-management/init:v1}
              containers:
              - name: agent
                image: quay.io/open-cluster-management/addon-agent:v1
                env: [{name: LOG_LEVEL, value: info}]
                resources: {requests: {cpu: 10m}}
              - name: sidecar
                image: docker.io/library/busybox:1.36
      - apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: ds, namespace: agent-ns}
        spec:
          selector: {matchLabels: {app: ds}}
          template:
            metadata: {labels: {app: ds}}
            spec:
              containers:
              - {name: agent, image: quay.io/open-cluster-management/addon-agent:v1}
      - apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: sts, namespace: agent-ns}
        spec:
          replicas: 1
          selector: {matchLabels: {app: sts}}
          template:
            metadata: {labels: {app: sts}}
            spec:
              containers:
              - {name: agent, image: quay.io/open-cluster-management/addon-agent:v1}
      - apiVersion: batch/v1
        kind: Job
        metadata: {name: job, namespace: agent-ns}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers:
              - {name: agent, image: quay.io/open-cluster-management/addon-agent:v1}
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: untouched, namespace: agent-ns}
        data: {image: quay.io/open-cluster-management/addon-agent:v1}
      - apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRoleBinding
        metadata: {name: agent}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
        subjects:
        - {kind: ServiceAccount, name: agent, namespace: agent-ns}
        - {kind: Group, name: g1}
      - apiVersion: rbac.authorization.k8s.io/v1
        kind: RoleBinding
        metadata: {name: agent, namespace: kube-system}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
        subjects:
        - {kind: ServiceAccount, name: agent, namespace: agent-ns}
      - apiVersion: v1
        kind: Namespace
        metadata: {name: agent-ns}
`

type rendered struct {
	deploy  appsv1.Deployment
	ds      appsv1.DaemonSet
	sts     appsv1.StatefulSet
	job     batchv1.Job
	cm      corev1.ConfigMap
	crb     rbacv1.ClusterRoleBinding
	rb      rbacv1.RoleBinding
	ns      corev1.Namespace
	extra   []workv1.Manifest
	configs []workv1.ManifestConfigOption
}

func renderWorkloads(t *testing.T, registration, adc string, in Input) rendered {
	t.Helper()
	at := manifestsTemplate(t, workloads, registration)
	if in.Cluster == nil {
		in.Cluster = cluster("cluster1")
	}
	in.AddOnName = "hello"
	if adc != "" {
		in.DeploymentConfig = adcSpec(t, adc)
	}
	r := mustTemplate(t, at, in)
	out := rendered{
		deploy: decode[appsv1.Deployment](t, r.Manifests[0]), ds: decode[appsv1.DaemonSet](t, r.Manifests[1]),
		sts: decode[appsv1.StatefulSet](t, r.Manifests[2]), job: decode[batchv1.Job](t, r.Manifests[3]),
		cm: decode[corev1.ConfigMap](t, r.Manifests[4]), crb: decode[rbacv1.ClusterRoleBinding](t, r.Manifests[5]),
		rb: decode[rbacv1.RoleBinding](t, r.Manifests[6]), ns: decode[corev1.Namespace](t, r.Manifests[7]),
		extra: r.Manifests[8:], configs: r.ManifestConfigs,
	}
	if out.cm.Data["image"] != "quay.io/open-cluster-management/addon-agent:v1" {
		t.Errorf("ConfigMap changed: %v", out.cm.Data)
	}
	return out
}

func (r rendered) pods() map[string]*corev1.PodSpec {
	return map[string]*corev1.PodSpec{"Deployment": &r.deploy.Spec.Template.Spec, "DaemonSet": &r.ds.Spec.Template.Spec,
		"StatefulSet": &r.sts.Spec.Template.Spec, "Job": &r.job.Spec.Template.Spec}
}

func TestNoConfigLeavesWorkloadsAlone(t *testing.T) {
	r := renderWorkloads(t, "", "", Input{})
	c := r.deploy.Spec.Template.Spec.Containers[0]
	// CLUSTER_NAME is always injected (OCM's built-in variables).
	if got := envNames(c); !slices.Equal(got, []string{"LOG_LEVEL=info", "CLUSTER_NAME=cluster1"}) {
		t.Errorf("env %v", got)
	}
	if len(r.deploy.Spec.Template.Spec.Volumes) != 0 || r.deploy.Spec.Template.Spec.NodeSelector["old"] != "true" ||
		c.Image != "quay.io/open-cluster-management/addon-agent:v1" || len(r.extra) != 0 {
		t.Errorf("deployment decorated: %+v", r.deploy.Spec.Template.Spec)
	}
	if r.crb.Subjects[0].Namespace != "agent-ns" || r.ns.Name != "agent-ns" {
		t.Errorf("namespaces moved without an agentInstallNamespace")
	}
}

func TestReplicasVariableBecomesANumber(t *testing.T) {
	at := manifestsTemplate(t, `      - {apiVersion: apps/v1, kind: Deployment, metadata: {name: a, namespace: x}, spec: {replicas: "{{REPLICAS}}"}}
      - {apiVersion: apps/v1, kind: StatefulSet, metadata: {name: a, namespace: x}, spec: {replicas: "{{REPLICAS}}"}}
      - {apiVersion: apps/v1beta2, kind: Deployment, metadata: {name: b, namespace: x}, spec: {replicas: "{{REPLICAS}}"}}
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: x}, data: {replicas: "{{REPLICAS}}"}}
`, "")
	r := mustTemplate(t, at, Input{AddOnName: "hello", Cluster: cluster("c1"),
		DeploymentConfig: adcSpec(t, "customizedVariables: [{name: REPLICAS, value: '4'}]")})
	for i, want := range []any{float64(4), float64(4), "4"} {
		if got := asMap(t, r.Manifests[i])["spec"].(map[string]any)["replicas"]; got != want {
			t.Errorf("manifest %d: replicas %#v, want %#v", i, got, want)
		}
	}
	if got := asMap(t, r.Manifests[3])["data"].(map[string]any)["replicas"]; got != "4" {
		t.Errorf("ConfigMap data %#v", got)
	}
	// Unset, the variable renders empty and stays a string.
	r = mustTemplate(t, at, Input{AddOnName: "hello", Cluster: cluster("c1")})
	if got := asMap(t, r.Manifests[0])["spec"].(map[string]any)["replicas"]; got != "" {
		t.Errorf("unset: %#v", got)
	}
}

func TestRegistrationVolumesAndEnv(t *testing.T) {
	r := renderWorkloads(t, `  registration:
  - type: KubeClient
  - type: CustomSigner
    customSigner: {signerName: example.com/signer-name, signingCA: {name: ca}}
`, "agentInstallNamespace: agents", Input{})
	for kind, pod := range r.pods() {
		for _, c := range pod.Containers {
			env := envNames(c)
			wantTail := []string{"HUB_KUBECONFIG=/managed/hub-kubeconfig/kubeconfig", "CLUSTER_NAME=cluster1", "INSTALL_NAMESPACE=agents"}
			if len(env) < 3 || !slices.Equal(env[len(env)-3:], wantTail) {
				t.Errorf("%s/%s env %v", kind, c.Name, env)
			}
			mounts := mustJSON(t, c.VolumeMounts)
			if mounts != `[{"name":"hub-kubeconfig","mountPath":"/managed/hub-kubeconfig"},{"name":"cert-example-com-signer-name","mountPath":"/managed/example.com-signer-name"}]` {
				t.Errorf("%s/%s mounts %s", kind, c.Name, mounts)
			}
		}
		if got := mustJSON(t, pod.Volumes); got != `[{"name":"hub-kubeconfig","secret":{"secretName":"hello-hub-kubeconfig"}},`+
			`{"name":"cert-example-com-signer-name","secret":{"secretName":"hello-example.com-signer-name-client-cert"}}]` {
			t.Errorf("%s volumes %s", kind, got)
		}
	}
	// The env of the first container keeps its own variable first.
	if env := envNames(r.deploy.Spec.Template.Spec.Containers[0]); env[0] != "LOG_LEVEL=info" {
		t.Errorf("env %v", env)
	}

	// A caller-chosen secret name.
	r = renderWorkloads(t, "  registration:\n  - type: KubeClient\n", "", Input{HubKubeconfigSecret: "custom"})
	if v := r.deploy.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret.SecretName != "custom" {
		t.Errorf("volumes %+v", v)
	}
	_, err := Template(manifestsTemplate(t, workloads, "  registration:\n  - type: CustomSigner\n"), Input{Cluster: cluster("c1")})
	if err == nil || !strings.Contains(err.Error(), "customSigner must be set") {
		t.Errorf("custom signer without config: %v", err)
	}
}

// TestVolumeNamesThatCannotBeCompared: a workload whose volume or mount name is no string (a
// list, an object) cannot have the registration volumes merged in; the render fails with an
// error naming the add-on, the manifest and the field instead of crashing the manager.
func TestVolumeNamesThatCannotBeCompared(t *testing.T) {
	for _, tc := range []struct{ name, pod, field string }{
		{"a volume named by a list", "{volumes: [{name: cache, emptyDir: {}}, {name: [a, b], emptyDir: {}}], containers: [{name: c, image: i}]}",
			"spec.template.spec.volumes[1].name: want a string, not a list"},
		{"a mount named by an object", "{containers: [{name: c, image: i}, {name: d, image: i, volumeMounts: [{name: {x: y}, mountPath: /x}]}]}",
			"spec.template.spec.containers[1].volumeMounts[0].name: want a string, not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifests := "      - {apiVersion: apps/v1, kind: Deployment, metadata: {name: agent, namespace: ns1}, spec: {template: {spec: " + tc.pod + "}}}\n"
			_, err := Template(manifestsTemplate(t, manifests, "  registration:\n  - type: KubeClient\n"), Input{AddOnName: "hello", Cluster: cluster("c1")})
			if err == nil {
				t.Fatal("rendered")
			}
			for _, want := range []string{"add-on hello", "Deployment ns1/agent", tc.field} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

func TestNodePlacement(t *testing.T) {
	r := renderWorkloads(t, "", `nodePlacement:
  nodeSelector: {node-role.kubernetes.io/infra: ""}
  tolerations: [{key: node-role.kubernetes.io/infra, operator: Exists, effect: NoSchedule}]
`, Input{})
	for kind, pod := range r.pods() {
		if !reflect.DeepEqual(pod.NodeSelector, map[string]string{"node-role.kubernetes.io/infra": ""}) {
			t.Errorf("%s nodeSelector %v", kind, pod.NodeSelector)
		}
		if len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "node-role.kubernetes.io/infra" || pod.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("%s tolerations %v", kind, pod.Tolerations)
		}
	}
	// Tolerations alone keep the template's nodeSelector.
	r = renderWorkloads(t, "", "nodePlacement: {tolerations: [{operator: Exists}]}", Input{})
	if p := r.deploy.Spec.Template.Spec; p.NodeSelector["old"] != "true" || len(p.Tolerations) != 1 {
		t.Errorf("tolerations only: %+v %+v", p.NodeSelector, p.Tolerations)
	}
}

func TestRegistries(t *testing.T) {
	const adc = `registries:
- {source: quay.io/open-cluster-management, mirror: quay.io/ocm}
- {source: quay.io/open-cluster-management/addon-agent, mirror: mirror.example.com/agents/addon-agent}
- {source: gcr.io, mirror: mirror.example.com/gcr}
`
	r := renderWorkloads(t, "", adc, Input{})
	d := r.deploy.Spec.Template.Spec
	// The last entry that changes an image wins.
	if d.Containers[0].Image != "mirror.example.com/agents/addon-agent:v1" || d.InitContainers[0].Image != "quay.io/ocm/init:v1" ||
		d.Containers[1].Image != "docker.io/library/busybox:1.36" {
		t.Errorf("images %s %s %s", d.Containers[0].Image, d.InitContainers[0].Image, d.Containers[1].Image)
	}
	for kind, pod := range r.pods() {
		if pod.Containers[0].Image != "mirror.example.com/agents/addon-agent:v1" {
			t.Errorf("%s image %s", kind, pod.Containers[0].Image)
		}
	}

	// The cluster's annotation applies without registries in the config...
	c := cluster("cluster1")
	c.Annotations = map[string]string{clusterv1.ClusterImageRegistriesAnnotationKey: `{"registries":[{"source":"docker.io/library","mirror":"mirror.example.com/hub"}]}`}
	r = renderWorkloads(t, "", "", Input{Cluster: c})
	if img := r.deploy.Spec.Template.Spec.Containers[1].Image; img != "mirror.example.com/hub/busybox:1.36" {
		t.Errorf("annotation: %s", img)
	}
	// ...and an empty list in the config turns it off, as in OCM.
	r = renderWorkloads(t, "", "registries: []", Input{Cluster: c})
	if img := r.deploy.Spec.Template.Spec.Containers[1].Image; img != "docker.io/library/busybox:1.36" {
		t.Errorf("empty registries: %s", img)
	}

	for _, tc := range []struct {
		source, mirror, image, want string
	}{
		{"quay.io/ocm/", "mirror.io/ocm/", "quay.io/ocm/agent:v1", "mirror.io/ocm/agent:v1"},
		{"", "mirror.io/all", "quay.io/ocm/agent@sha256:abc", "mirror.io/all/agent@sha256:abc"},
		{"", "", "quay.io/ocm/agent:v1", "agent:v1"},
		{"docker.io", "m.io", "quay.io/ocm/agent:v1", "quay.io/ocm/agent:v1"},
	} {
		if got := OverrideImage([]addonv1alpha1.ImageMirror{{Source: tc.source, Mirror: tc.mirror}}, tc.image); got != tc.want {
			t.Errorf("OverrideImage(%q→%q, %s) = %s, want %s", tc.source, tc.mirror, tc.image, got, tc.want)
		}
	}
}

func TestProxy(t *testing.T) {
	r := renderWorkloads(t, "", `proxyConfig:
  httpProxy: http://proxy:3128
  httpsProxy: https://proxy:3129
  noProxy: .cluster.local,.svc
  caBundle: LS0tLS1CRUdJTgo=
agentInstallNamespace: agents
`, Input{})
	for kind, pod := range r.pods() {
		env := envNames(pod.Containers[0])
		want := []string{"CLUSTER_NAME=cluster1", "INSTALL_NAMESPACE=agents",
			"HTTP_PROXY=http://proxy:3128", "http_proxy=http://proxy:3128", "HTTPS_PROXY=https://proxy:3129", "https_proxy=https://proxy:3129",
			"NO_PROXY=.cluster.local,.svc", "no_proxy=.cluster.local,.svc", "CA_BUNDLE_FILE_PATH=/managed/proxy-ca/ca-bundle.crt"}
		if kind == "Deployment" {
			want = append([]string{"LOG_LEVEL=info"}, want...)
		}
		if !slices.Equal(env, want) {
			t.Errorf("%s env %v", kind, env)
		}
		if got := mustJSON(t, pod.Containers[0].VolumeMounts); got != `[{"name":"proxy-ca-bundle","mountPath":"/managed/proxy-ca"}]` {
			t.Errorf("%s mounts %s", kind, got)
		}
		if got := mustJSON(t, pod.Volumes); got != `[{"name":"proxy-ca-bundle","configMap":{"name":"hello-proxy-ca"}}]` {
			t.Errorf("%s volumes %s", kind, got)
		}
	}
	if len(r.extra) != 1 {
		t.Fatalf("%d added manifests", len(r.extra))
	}
	cm := decode[corev1.ConfigMap](t, r.extra[0])
	if cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Name != "hello-proxy-ca" || cm.Namespace != "agents" || cm.Data["ca-bundle.crt"] != "-----BEGIN\n" {
		t.Errorf("CA ConfigMap %+v", cm)
	}

	// Without the install namespace override the ConfigMap lands in OCM's default
	// namespace; a CA bundle without proxy URLs only ships the ConfigMap (OCM).
	r = renderWorkloads(t, "", "proxyConfig: {caBundle: LS0tLS1CRUdJTgo=}", Input{})
	if len(r.extra) != 1 || decode[corev1.ConfigMap](t, r.extra[0]).Namespace != DefaultInstallNamespace {
		t.Errorf("CA only: %v", r.extra)
	}
	if len(r.deploy.Spec.Template.Spec.Volumes) != 0 || len(r.deploy.Spec.Template.Spec.Containers[0].Env) != 2 {
		t.Errorf("CA only decorated the pod: %+v", r.deploy.Spec.Template.Spec)
	}
	// HTTPS only.
	r = renderWorkloads(t, "", "proxyConfig: {httpsProxy: 'https://p'}", Input{})
	if env := envNames(r.ds.Spec.Template.Spec.Containers[0]); !slices.Equal(env, []string{"CLUSTER_NAME=cluster1", "HTTPS_PROXY=https://p", "https_proxy=https://p"}) {
		t.Errorf("https only: %v", env)
	}
}

func TestResourceRequirements(t *testing.T) {
	r := renderWorkloads(t, "", `resourceRequirements:
- containerID: "*:*:*"
  resources: {requests: {memory: 64Mi}}
- containerID: "deployments:agent:agent"
  resources: {requests: {cpu: 100m}, limits: {cpu: "1"}}
- containerID: "daemonsets:*:agent"
  resources: {requests: {cpu: 5m}}
- containerID: "jobs:job:other"
  resources: {requests: {cpu: 7m}}
`, Input{})
	d := r.deploy.Spec.Template.Spec
	if got := mustJSON(t, d.Containers[0].Resources); got != `{"limits":{"cpu":"1"},"requests":{"cpu":"100m"}}` {
		t.Errorf("deployment agent %s", got)
	}
	if got := mustJSON(t, d.Containers[1].Resources); got != `{"requests":{"memory":"64Mi"}}` {
		t.Errorf("deployment sidecar %s", got)
	}
	if got := mustJSON(t, r.ds.Spec.Template.Spec.Containers[0].Resources); got != `{"requests":{"cpu":"5m"}}` {
		t.Errorf("daemonset %s", got)
	}
	for _, pod := range []*corev1.PodSpec{&r.sts.Spec.Template.Spec, &r.job.Spec.Template.Spec} {
		if got := mustJSON(t, pod.Containers[0].Resources); got != `{"requests":{"memory":"64Mi"}}` {
			t.Errorf("%s", got)
		}
	}
}

func TestReplicaConfigs(t *testing.T) {
	r := renderWorkloads(t, "", `replicaConfigs:
- {workloadID: "*:*", replicas: 2}
- {workloadID: "deployments:ag*", replicas: 3}
- {workloadID: "statefulsets:other", replicas: 9}
`, Input{})
	if *r.deploy.Spec.Replicas != 3 || *r.sts.Spec.Replicas != 2 {
		t.Errorf("replicas %d %d", *r.deploy.Spec.Replicas, *r.sts.Spec.Replicas)
	}
	r = renderWorkloads(t, "", "replicaConfigs: [{workloadID: 'statefulsets:none', replicas: 5}]", Input{})
	if *r.deploy.Spec.Replicas != 1 || *r.sts.Spec.Replicas != 1 {
		t.Errorf("unmatched replicas %d %d", *r.deploy.Spec.Replicas, *r.sts.Spec.Replicas)
	}
}

func TestInstallNamespaceOverride(t *testing.T) {
	r := renderWorkloads(t, "", "agentInstallNamespace: agents", Input{})
	for _, m := range []metav1.ObjectMeta{r.deploy.ObjectMeta, r.ds.ObjectMeta, r.sts.ObjectMeta, r.job.ObjectMeta, r.cm.ObjectMeta, r.rb.ObjectMeta} {
		if m.Namespace != "agents" {
			t.Errorf("%s in %q", m.Name, m.Namespace)
		}
	}
	if r.crb.Namespace != "" || r.crb.Subjects[0].Namespace != "agents" || r.crb.Subjects[1].Namespace != "agents" || r.rb.Subjects[0].Namespace != "agents" {
		t.Errorf("bindings %+v %+v", r.crb, r.rb)
	}
	if r.ns.Name != "agents" {
		t.Errorf("Namespace %q", r.ns.Name)
	}
}

func TestManifestConfigsFollowTheNamespace(t *testing.T) {
	extra := `    manifestConfigs:
    - resourceIdentifier: {group: apps, resource: deployments, namespace: agent-ns, name: agent}
      feedbackRules: [{type: JSONPaths, jsonPaths: [{name: gen, path: .status.observedGeneration}]}]
    - resourceIdentifier: {resource: configmaps, namespace: elsewhere, name: x}
      updateStrategy: {type: ServerSideApply}
    deleteOption: {propagationPolicy: Orphan}
    executor: {subject: {type: ServiceAccount, serviceAccount: {namespace: agent-ns, name: applier}}}
`
	at := tmpl(t, "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnTemplate\nmetadata: {name: t1}\n"+
		"spec:\n  addonName: hello\n  agentSpec:\n"+extra+"    workload:\n      manifests:\n"+workloads)
	r := mustTemplate(t, at, Input{Cluster: cluster("c1"), DeploymentConfig: adcSpec(t, "agentInstallNamespace: agents")})
	if r.ManifestConfigs[0].ResourceIdentifier.Namespace != "agents" || r.ManifestConfigs[1].ResourceIdentifier.Namespace != "elsewhere" {
		t.Errorf("manifestConfigs %+v", r.ManifestConfigs)
	}
	if r.DeleteOption == nil || r.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan ||
		r.Executor == nil || r.Executor.Subject.ServiceAccount.Name != "applier" {
		t.Errorf("deleteOption %+v executor %+v", r.DeleteOption, r.Executor)
	}
	// The template itself is not modified.
	if at.Spec.AgentSpec.ManifestConfigs[0].ResourceIdentifier.Namespace != "agent-ns" {
		t.Error("template modified")
	}
	// Without an override nothing moves.
	r = mustTemplate(t, at, Input{Cluster: cluster("c1")})
	if r.ManifestConfigs[0].ResourceIdentifier.Namespace != "agent-ns" {
		t.Errorf("manifestConfigs %+v", r.ManifestConfigs)
	}
}

func TestTemplateInstallNamespace(t *testing.T) {
	for _, tc := range []struct{ manifests, adc, want string }{
		{"      - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: x}}\n", "", DefaultInstallNamespace},
		{"      - {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: a, namespace: ds-ns}}\n      - {apiVersion: apps/v1, kind: Deployment, metadata: {name: a, namespace: d-ns}}\n", "", "d-ns"},
		{"      - {apiVersion: apps/v1, kind: DaemonSet, metadata: {name: a, namespace: ds-ns}}\n", "", "ds-ns"},
		{"      - {apiVersion: apps/v1, kind: Deployment, metadata: {name: a, namespace: d-ns}}\n", "agentInstallNamespace: o", "o"},
	} {
		in := Input{Cluster: cluster("c1")}
		if tc.adc != "" {
			in.DeploymentConfig = adcSpec(t, tc.adc)
		}
		if got := mustTemplate(t, manifestsTemplate(t, tc.manifests, ""), in).InstallNamespace; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.manifests, got, tc.want)
		}
	}
}

func TestSubstitute(t *testing.T) {
	vals := map[string]string{"A": "1", "B C": "2", "": "e"}
	for in, want := range map[string]string{
		"":              "",
		"plain":         "plain",
		"{{A}}{{A}}":    "11",
		"x{{B C}}y":     "x2y",
		"{{}}":          "e",
		"{{{A}}}":       "}", // the tag is "{A"
		"}}{{A}}":       "}}1",
		"{{missing}}-z": "-z",
	} {
		got, err := substitute(in, vals)
		if err != nil || got != want {
			t.Errorf("substitute(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := substitute("a{{b", vals); err == nil {
		t.Error("unclosed tag accepted")
	}
}

// Template output is stable: the same input renders the same bytes.
func TestTemplateIsDeterministic(t *testing.T) {
	at := manifestsTemplate(t, workloads, "  registration:\n  - type: KubeClient\n")
	in := Input{Cluster: cluster("c1"), DeploymentConfig: adcSpec(t, `nodePlacement: {nodeSelector: {a: b, c: d, e: f}}
proxyConfig: {httpProxy: 'http://p', caBundle: YQ==}
customizedVariables: [{name: X, value: y}]`)}
	first := mustTemplate(t, at, in)
	for range 5 {
		if again := mustTemplate(t, at, in); !reflect.DeepEqual(first, again) {
			t.Fatal("two renderings differ")
		}
	}
	var y any
	if err := yaml.Unmarshal(first.Manifests[0].Raw, &y); err != nil {
		t.Fatal(err)
	}
}
