package v1_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
)

// seedDir holds the documented example objects, relative to this package.
const seedDir = "../../../../e2e/testdata/seeds"

// seedKinds are the kinds the operator seeds must cover.
var seedKinds = []string{"ClusterManager", "Klusterlet"}

// newValidator checks operator-group documents against the generated CRDs. With exact,
// the typed object, defaulted as the API server would store it, must also match the
// defaulted document (see TestGoClientsWriteZeroValues for where OCM's types cannot).
func newValidator(t *testing.T, exact bool) *seedcheck.Validator {
	t.Helper()
	v := seedcheck.ForTest(t, filepath.Join(crdDir, "operator.open-cluster-management.io_*.yaml"), operatorv1.AddToScheme)
	v.CompareDefaulted = exact
	return v
}

// TestSeedsDecodeStrictly decodes every operator seed (the ClusterManager and Klusterlet
// snippets of OCM's documentation) strictly into the Go types and validates it against
// the generated CRD as the API server would on create plus a status update.
func TestSeedsDecodeStrictly(t *testing.T) {
	v := newValidator(t, true)
	kinds := seedcheck.CheckSeeds(t, v, filepath.Join(seedDir, "operator-*.yaml"), operatorv1.GroupVersion)
	for _, k := range seedKinds {
		if kinds[k] == 0 {
			t.Errorf("no seed document of kind %s", k)
		}
	}
}

// TestSeedShapes pins decoded values of the seeds.
func TestSeedShapes(t *testing.T) {
	cm := seedcheck.DecodeSeed(t, seedDir, "operator-concepts-3-clustermanager.yaml", &operatorv1.ClusterManager{})
	if cm.Name != operatorv1.ClusterManagerName || cm.Spec.WorkConfiguration == nil ||
		len(cm.Spec.WorkConfiguration.FeatureGates) != 1 ||
		cm.Spec.WorkConfiguration.FeatureGates[0] != (operatorv1.FeatureGate{Feature: "ManifestWorkReplicaSet", Mode: operatorv1.FeatureGateModeTypeEnable}) {
		t.Errorf("ClusterManager: got %+v", cm)
	}
	kl := seedcheck.DecodeSeed(t, seedDir, "operator-concepts-2-klusterlet.yaml", &operatorv1.Klusterlet{})
	if kl.Name != operatorv1.KlusterletName || kl.Spec.WorkConfiguration == nil ||
		len(kl.Spec.WorkConfiguration.FeatureGates) != 1 || kl.Spec.WorkConfiguration.FeatureGates[0].Feature != "ExecutorValidatingCaches" {
		t.Errorf("Klusterlet: got %+v", kl)
	}
	st := seedcheck.DecodeSeed(t, seedDir, "operator-concepts-4-clustermanager.yaml", &operatorv1.ClusterManager{}).Status
	if len(st.Generations) != 2 || st.Generations[1] != (operatorv1.GenerationStatus{Group: "apps", Version: "v1", Resource: "deployments",
		Namespace: operatorv1.ClusterManagerDefaultNamespace, Name: "cluster-manager-work-controller", LastGeneration: 1}) {
		t.Errorf("ClusterManager status: got %+v", st)
	}
}

// clusterManagerSample is OCM's ClusterManager sample (the registration operator's
// deploy/cluster-manager/config/samples, as clusteradm init writes it) extended to set
// every field of OCM's current API.
const clusterManagerSample = `apiVersion: operator.open-cluster-management.io/v1
kind: ClusterManager
metadata:
  name: cluster-manager
spec:
  registrationImagePullSpec: quay.io/open-cluster-management/registration:latest
  workImagePullSpec: quay.io/open-cluster-management/work:latest
  placementImagePullSpec: quay.io/open-cluster-management/placement:latest
  addOnManagerImagePullSpec: quay.io/open-cluster-management/addon-manager:latest
  nodePlacement:
    nodeSelector: {node-role.kubernetes.io/infra: ""}
    tolerations:
    - {key: node-role.kubernetes.io/infra, operator: Exists, effect: NoSchedule}
  deployOption:
    mode: Default
    default:
      registrationWebhookConfiguration:
        bindConfiguration: {port: 9443, healthProbePort: 8000, metricsPort: 8080, hostNetwork: true}
      workWebhookConfiguration:
        bindConfiguration: {port: 9444, healthProbePort: 8001, metricsPort: 8081}
      addonWebhookConfiguration:
        bindConfiguration: {port: 9445, healthProbePort: 0, metricsPort: 0}
    hosted:
      registrationWebhookConfiguration: {address: registration.hub.example.com, port: 443,
        bindConfiguration: {port: 9443, healthProbePort: 8000, metricsPort: 8080}}
      workWebhookConfiguration: {address: 10.0.0.7, port: 8443}
  registrationConfiguration:
    autoApproveUsers: ["system:serviceaccount:open-cluster-management:cluster-bootstrap"]
    featureGates:
    - feature: DefaultClusterSet
      mode: Enable
    - feature: ManagedClusterAutoApproval
    registrationDrivers:
    - authType: csr
      csr: {autoApprovedIdentities: [admin]}
    - authType: awsirsa
      awsirsa:
        hubClusterArn: arn:aws:eks:us-west-2:123456789012:cluster/hub1
        autoApprovedIdentities: ["arn:aws:eks:us-west-2:123456789012:cluster/*"]
        tags: ["product:v1:tenant:app-name=My-App"]
    - authType: grpc
      grpc: {autoApprovedIdentities: [agent]}
    importerConfiguration:
      renderers: [render-auto, render-from-config-secret]
  workConfiguration:
    workDriver: kube
    featureGates:
    - {feature: ManifestWorkReplicaSet, mode: Enable}
  addOnManagerConfiguration:
    featureGates:
    - {feature: AddonManagement, mode: Enable}
  placementConfiguration:
    featureGates:
    - {feature: SomePlacementFeature, mode: Disable}
  serverConfiguration:
    imagePullSpec: quay.io/open-cluster-management/registration:latest
    featureGates:
    - {feature: ClusterProxy, mode: Enable}
    endpointsExposure:
    - usage: agentToHub
      protocol: grpc
      grpc:
        type: hostname
        hostname: {host: grpc.hub.example.com, caBundle: LS0tLS0K}
    - usage: consumer
      protocol: https
      https:
        type: loadBalancer
        loadBalancer: {host: lb.hub.example.com, caBundle: LS0tLS0K}
    - protocol: grpc
      grpc:
        type: route
        route: {host: route.hub.example.com}
  resourceRequirement:
    type: ResourceRequirement
    resourceRequirements:
      requests: {cpu: 100m, memory: 128Mi}
      limits: {memory: 1Gi}
  networkPolicyConfiguration:
    monitoringNamespace: monitoring
    apiServerNamespace: kube-system
status:
  observedGeneration: 3
  conditions:
  - {type: Applied, status: "True", reason: ClusterManagerApplied, message: applied, lastTransitionTime: "2026-01-02T03:04:05Z"}
  - {type: HubRegistrationDegraded, status: "False", reason: RegistrationFunctional, message: "", lastTransitionTime: "2026-01-02T03:04:05Z", observedGeneration: 3}
  generations:
  - {group: apps, version: v1, resource: deployments, namespace: open-cluster-management-hub, name: cluster-manager-registration-controller, lastGeneration: 2}
  relatedResources:
  - {group: apiextensions.k8s.io, version: v1, resource: customresourcedefinitions, namespace: "", name: managedclusters.cluster.open-cluster-management.io}
`

// klusterletSample is OCM's Klusterlet sample (deploy/klusterlet/config/samples, as
// clusteradm join writes it) extended to set every field of OCM's current API,
// including the MultipleHubs bootstrap kubeconfigs.
const klusterletSample = `apiVersion: operator.open-cluster-management.io/v1
kind: Klusterlet
metadata:
  name: klusterlet
spec:
  deployOption:
    mode: Singleton
    reportHostingCluster: Enable
    hosted: {managementClusterName: management1}
  registrationImagePullSpec: quay.io/open-cluster-management/registration:latest
  workImagePullSpec: quay.io/open-cluster-management/work:latest
  imagePullSpec: quay.io/open-cluster-management/registration-operator:latest
  clusterName: cluster1
  namespace: open-cluster-management-agent
  externalServerURLs:
  - url: https://localhost
  - url: https://cluster1.example.com:6443
    caBundle: LS0tLS0K
  hubApiServerHostAlias:
    ip: 1.2.3.4
    hostname: hub.example.com
  nodePlacement:
    nodeSelector: {kubernetes.io/os: linux}
    tolerations:
    - {key: dedicated, operator: Equal, value: ocm, effect: NoExecute, tolerationSeconds: 60}
  priorityClassName: klusterlet-critical
  resourceRequirement:
    type: BestEffort
  registrationConfiguration:
    clientCertExpirationSeconds: 86400
    featureGates:
    - {feature: AddonManagement, mode: Enable}
    - {feature: MultipleHubs, mode: Enable}
    - {feature: ClusterClaim, mode: Enable}
    clusterAnnotations: {agent.open-cluster-management.io/site: lab}
    clusterLabels: {env: dev}
    kubeAPIQPS: 20
    kubeAPIBurst: 40
    bootstrapKubeConfigs:
      type: LocalSecrets
      localSecretsConfig:
        kubeConfigSecrets:
        - name: hub1-bootstrap
        - name: hub2-bootstrap
        hubConnectionTimeoutSeconds: 300
    registrationDriver:
      authType: awsirsa
      awsIrsa:
        hubClusterArn: arn:aws:eks:us-west-2:123456789012:cluster/hub1
        managedClusterArn: arn:aws-us-gov:eks:us-gov-west-1:123456789012:cluster/cluster1
    addOnKubeClientRegistrationDriver:
      authType: token
      token: {expirationSeconds: 3600}
    clusterClaimConfiguration:
      maxCustomClusterClaims: 30
      reservedClusterClaimSuffixes: [openshift.io, example.com]
  workConfiguration:
    featureGates:
    - {feature: ExecutorValidatingCaches, mode: Enable}
    kubeAPIQPS: 10
    kubeAPIBurst: 20
    hubKubeAPIQPS: 30
    hubKubeAPIBurst: 60
    appliedManifestWorkEvictionGracePeriod: 1h30m0s
    statusSyncInterval: 30s
status:
  observedGeneration: 1
  conditions:
  - {type: HubConnectionDegraded, status: "False", reason: HubConnectionFunctional, message: connected, lastTransitionTime: "2026-01-02T03:04:05Z"}
  generations:
  - {group: apps, version: v1, resource: deployments, namespace: open-cluster-management-agent, name: klusterlet-agent, lastGeneration: 1}
  relatedResources:
  - {group: "", version: v1, resource: namespaces, name: open-cluster-management-agent}
`

// TestSamplesMatchOCM applies OCM's samples, extended to every field, through the
// generated CRDs and decodes them into the Go types.
func TestSamplesMatchOCM(t *testing.T) {
	v := newValidator(t, true)
	for name, doc := range map[string]string{"ClusterManager": clusterManagerSample, "Klusterlet": klusterletSample} {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Check([]byte(doc)); err != nil {
				t.Fatal(err)
			}
		})
	}

	cm := &operatorv1.ClusterManager{}
	if err := yaml.UnmarshalStrict([]byte(clusterManagerSample), cm); err != nil {
		t.Fatal(err)
	}
	drivers := cm.Spec.RegistrationConfiguration.RegistrationDrivers
	if len(drivers) != 3 || drivers[1].AuthType != operatorv1.AwsIrsaAuthType || drivers[1].AwsIrsa == nil ||
		len(drivers[1].AwsIrsa.Tags) != 1 || drivers[2].GRPC == nil || drivers[2].GRPC.AutoApprovedIdentities[0] != "agent" {
		t.Errorf("registrationDrivers: got %+v", drivers)
	}
	exp := cm.Spec.ServerConfiguration.EndpointsExposure
	if len(exp) != 3 || exp[0].GRPC.Hostname.Host != "grpc.hub.example.com" || string(exp[0].GRPC.Hostname.CABundle) != "-----\n" ||
		exp[1].HTTPS.Type != operatorv1.EndpointTypeLoadBalancer || exp[2].GRPC.Route.Host != "route.hub.example.com" {
		t.Errorf("endpointsExposure: got %+v", exp)
	}
	if h := cm.Spec.DeployOption.Hosted; h == nil || h.WorkWebhookConfiguration.Address != "10.0.0.7" || h.WorkWebhookConfiguration.Port != 8443 {
		t.Errorf("deployOption.hosted: got %+v", h)
	}
	if b := cm.Spec.DeployOption.Default.AddonWebhookConfiguration.BindConfiguration; b == nil || b.Port != 9445 || b.HealthProbePort != 0 {
		t.Errorf("deployOption.default.addonWebhookConfiguration: got %+v", b)
	}
	if rr := cm.Spec.ResourceRequirement; rr.Type != operatorv1.ResourceQosClassResourceRequirement ||
		rr.ResourceRequirements.Limits.Memory().String() != "1Gi" {
		t.Errorf("resourceRequirement: got %+v", rr)
	}

	kl := &operatorv1.Klusterlet{}
	if err := yaml.UnmarshalStrict([]byte(klusterletSample), kl); err != nil {
		t.Fatal(err)
	}
	rc := kl.Spec.RegistrationConfiguration
	bk := rc.BootstrapKubeConfigs
	if bk.Type != operatorv1.LocalSecrets || bk.LocalSecrets == nil || len(bk.LocalSecrets.KubeConfigSecrets) != 2 ||
		bk.LocalSecrets.KubeConfigSecrets[1].Name != "hub2-bootstrap" || bk.LocalSecrets.HubConnectionTimeoutSeconds != 300 {
		t.Errorf("bootstrapKubeConfigs: got %+v", bk)
	}
	if rc.RegistrationDriver.AwsIrsa == nil || !strings.HasPrefix(rc.RegistrationDriver.AwsIrsa.ManagedClusterArn, "arn:aws-us-gov:") ||
		rc.AddOnKubeClientRegistrationDriver.Token.ExpirationSeconds != 3600 || rc.ClusterClaimConfiguration.MaxCustomClusterClaims != 30 {
		t.Errorf("registrationConfiguration: got %+v", rc)
	}
	wc := kl.Spec.WorkConfiguration
	if wc.AppliedManifestWorkEvictionGracePeriod.Duration != 90*time.Minute || wc.StatusSyncInterval.Duration != 30*time.Second ||
		wc.HubKubeAPIBurst != 60 {
		t.Errorf("workConfiguration: got %+v", wc)
	}
	if d := kl.Spec.DeployOption; d.Mode != operatorv1.InstallModeSingleton || d.ReportHostingCluster != operatorv1.ReportHostingClusterModeEnable ||
		d.Hosted.ManagementClusterName != "management1" {
		t.Errorf("deployOption: got %+v", d)
	}
	if a := kl.Spec.HubApiServerHostAlias; a == nil || a.IP != "1.2.3.4" || kl.Spec.ExternalServerURLs[1].URL != "https://cluster1.example.com:6443" {
		t.Errorf("hubApiServerHostAlias / externalServerURLs: got %+v / %+v", a, kl.Spec.ExternalServerURLs)
	}
}

// TestDefaultsFromCRD checks that the API server fills in OCM's defaults.
func TestDefaultsFromCRD(t *testing.T) {
	v := newValidator(t, false)
	for _, tc := range []struct {
		name, doc string
		want      map[string]any
	}{
		{"ClusterManager without spec", `apiVersion: operator.open-cluster-management.io/v1
kind: ClusterManager
metadata: {name: cluster-manager}`, map[string]any{
			"spec.deployOption.mode":            "Default",
			"spec.registrationImagePullSpec":    "quay.io/open-cluster-management/registration",
			"spec.workImagePullSpec":            "quay.io/open-cluster-management/work",
			"spec.placementImagePullSpec":       "quay.io/open-cluster-management/placement",
			"spec.addOnManagerImagePullSpec":    "quay.io/open-cluster-management/addon-manager",
			"spec.workConfiguration.workDriver": "kube",
		}},
		{"ClusterManager nested defaults", `apiVersion: operator.open-cluster-management.io/v1
kind: ClusterManager
metadata: {name: cluster-manager}
spec:
  deployOption:
    mode: Hosted
    hosted:
      registrationWebhookConfiguration: {address: reg.example.com, bindConfiguration: {}}
  registrationConfiguration:
    featureGates: [{feature: DefaultClusterSet}]
    registrationDrivers: [{csr: {autoApprovedIdentities: [admin]}}]
  serverConfiguration:
    endpointsExposure: [{grpc: {hostname: {host: grpc.example.com}}}]
  resourceRequirement: {}`, map[string]any{
			"spec.deployOption.hosted.registrationWebhookConfiguration.port":                              int64(443),
			"spec.deployOption.hosted.registrationWebhookConfiguration.bindConfiguration.port":            int64(9443),
			"spec.deployOption.hosted.registrationWebhookConfiguration.bindConfiguration.healthProbePort": int64(8000),
			"spec.deployOption.hosted.registrationWebhookConfiguration.bindConfiguration.metricsPort":     int64(8080),
			"spec.registrationConfiguration.featureGates.0.mode":                                          "Disable",
			"spec.registrationConfiguration.registrationDrivers.0.authType":                               "csr",
			"spec.serverConfiguration.endpointsExposure.0.protocol":                                       "grpc",
			"spec.serverConfiguration.endpointsExposure.0.grpc.type":                                      "hostname",
			"spec.resourceRequirement.type":                                                               "Default",
		}},
		{"Klusterlet", `apiVersion: operator.open-cluster-management.io/v1
kind: Klusterlet
metadata: {name: klusterlet}
spec:
  registrationConfiguration:
    bootstrapKubeConfigs:
      localSecretsConfig:
        kubeConfigSecrets: [{name: hub1}, {name: hub2}]
    registrationDriver: {}
    clusterClaimConfiguration: {}
  workConfiguration: {}`, map[string]any{
			"spec.registrationConfiguration.kubeAPIQPS":                                                          int64(50),
			"spec.registrationConfiguration.kubeAPIBurst":                                                        int64(100),
			"spec.registrationConfiguration.bootstrapKubeConfigs.type":                                           "None",
			"spec.registrationConfiguration.bootstrapKubeConfigs.localSecretsConfig.hubConnectionTimeoutSeconds": int64(600),
			"spec.registrationConfiguration.registrationDriver.authType":                                         "csr",
			"spec.registrationConfiguration.clusterClaimConfiguration.maxCustomClusterClaims":                    int64(20),
			"spec.workConfiguration.kubeAPIQPS":                                                                  int64(50),
			"spec.workConfiguration.kubeAPIBurst":                                                                int64(100),
			"spec.workConfiguration.hubKubeAPIQPS":                                                               int64(50),
			"spec.workConfiguration.hubKubeAPIBurst":                                                             int64(100),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := v.Check([]byte(tc.doc)); err != nil {
				t.Fatal(err)
			}
			u, err := v.Defaulted([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			for path, w := range tc.want {
				if got := lookup(u, path); got != w {
					t.Errorf("%s = %#v, want %#v", path, got, w)
				}
			}
		})
	}
}

// TestGoClientsWriteZeroValues pins a property of OCM's types that Flotilla keeps for
// wire compatibility: these fields have CRD defaults but no omitempty, so a Go client
// that decodes and re-encodes a document relying on the default writes the zero value
// instead (a port of 0 disables the health probe or metrics endpoint, an empty QoS class
// or protocol fails the enum). Code writing these objects must set them explicitly.
func TestGoClientsWriteZeroValues(t *testing.T) {
	v := newValidator(t, true)
	for _, tc := range []struct{ doc, want string }{
		{`apiVersion: operator.open-cluster-management.io/v1
kind: ClusterManager
metadata: {name: cluster-manager}
spec:
  deployOption:
    default:
      workWebhookConfiguration: {bindConfiguration: {}}
  serverConfiguration:
    endpointsExposure: [{grpc: {hostname: {host: grpc.example.com}}}]
  resourceRequirement: {}`, strings.Join([]string{
			".spec.deployOption.default.workWebhookConfiguration.bindConfiguration.healthProbePort (8000, got 0)",
			".spec.deployOption.default.workWebhookConfiguration.bindConfiguration.metricsPort (8080, got 0)",
			".spec.resourceRequirement.type (Default, got )",
			".spec.serverConfiguration.endpointsExposure[0].protocol (grpc, got )",
		}, ", ")},
		{`apiVersion: operator.open-cluster-management.io/v1
kind: Klusterlet
metadata: {name: klusterlet}
spec:
  registrationConfiguration:
    clusterClaimConfiguration: {}`,
			".spec.registrationConfiguration.clusterClaimConfiguration.maxCustomClusterClaims (20, got 0)"},
	} {
		_, err := v.Check([]byte(tc.doc))
		if err == nil || !strings.HasSuffix(err.Error(), "once defaulted: "+tc.want) {
			t.Errorf("got %v, want the fields %s", err, tc.want)
		}
	}
}

// lookup walks a dotted path through maps and (numeric) list indexes.
func lookup(obj map[string]any, path string) any {
	var cur any = obj
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// TestValidatorRejects shows the checks have teeth: OCM's schema rules these out.
func TestValidatorRejects(t *testing.T) {
	v := newValidator(t, false)
	const cm = "apiVersion: operator.open-cluster-management.io/v1\nkind: ClusterManager\nmetadata: {name: cluster-manager}\n"
	const kl = "apiVersion: operator.open-cluster-management.io/v1\nkind: Klusterlet\nmetadata: {name: klusterlet}\n"
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{Name: "misnamed field", Doc: cm + "spec: {registrationImage: quay.io/x}", Want: `unknown field "registrationImage"`},
		{Name: "namespaced ClusterManager", Doc: "apiVersion: operator.open-cluster-management.io/v1\nkind: ClusterManager\nmetadata: {name: c, namespace: default}", Want: "metadata.namespace"},
		{Name: "namespaced Klusterlet", Doc: "apiVersion: operator.open-cluster-management.io/v1\nkind: Klusterlet\nmetadata: {name: k, namespace: default}", Want: "metadata.namespace"},
		{Name: "ClusterManager mode Singleton", Doc: cm + "spec: {deployOption: {mode: Singleton}}", Want: "spec.deployOption.mode"},
		{Name: "hosted webhook without address", Doc: cm + "spec: {deployOption: {mode: Hosted, hosted: {workWebhookConfiguration: {port: 443}}}}", Want: "spec.deployOption.hosted.workWebhookConfiguration.address"},
		{Name: "webhook port above 65535", Doc: cm + "spec: {deployOption: {default: {workWebhookConfiguration: {bindConfiguration: {port: 70000}}}}}", Want: "bindConfiguration.port"},
		{Name: "feature gate mode", Doc: cm + "spec: {workConfiguration: {featureGates: [{feature: X, mode: \"on\"}]}}", Want: "spec.workConfiguration.featureGates[0].mode"},
		{Name: "feature gate without feature", Doc: kl + "spec: {workConfiguration: {featureGates: [{mode: Enable}]}}", Want: "spec.workConfiguration.featureGates[0].feature"},
		{Name: "unknown work driver", Doc: cm + "spec: {workConfiguration: {workDriver: kafka}}", Want: "spec.workConfiguration.workDriver"},
		{Name: "duplicate registration driver", Doc: cm + "spec: {registrationConfiguration: {registrationDrivers: [{authType: csr}, {authType: csr}]}}", Want: "spec.registrationConfiguration.registrationDrivers[1]"},
		{Name: "hub ARN", Doc: cm + "spec: {registrationConfiguration: {registrationDrivers: [{authType: awsirsa, awsirsa: {hubClusterArn: hub1}}]}}", Want: "hubClusterArn"},
		{Name: "endpoint type", Doc: cm + "spec: {serverConfiguration: {endpointsExposure: [{protocol: grpc, grpc: {type: nodePort}}]}}", Want: "spec.serverConfiguration.endpointsExposure[0].grpc.type"},
		{Name: "hostname without host", Doc: cm + "spec: {serverConfiguration: {endpointsExposure: [{grpc: {hostname: {caBundle: LS0tLS0K}}}]}}", Want: "hostname.host"},
		{Name: "QoS class", Doc: kl + "spec: {resourceRequirement: {type: Guaranteed}}", Want: "spec.resourceRequirement.type"},
		{Name: "agent namespace without prefix", Doc: kl + "spec: {namespace: agent}", Want: "spec.namespace"},
		{Name: "agent namespace too long", Doc: kl + "spec: {namespace: open-cluster-management-" + strings.Repeat("a", 34) + "}", Want: "spec.namespace"},
		{Name: "cluster name not a DNS label", Doc: kl + "spec: {clusterName: Cluster_1}", Want: "spec.clusterName"},
		{Name: "external server URL without url", Doc: kl + "spec: {externalServerURLs: [{caBundle: LS0tLS0K}]}", Want: "spec.externalServerURLs[0].url"},
		{Name: "host alias IPv6", Doc: kl + "spec: {hubApiServerHostAlias: {ip: \"::1\", hostname: hub}}", Want: "spec.hubApiServerHostAlias.ip"},
		{Name: "bootstrap kubeconfig type", Doc: kl + "spec: {registrationConfiguration: {bootstrapKubeConfigs: {type: Remote}}}", Want: "bootstrapKubeConfigs.type"},
		{Name: "hub connection timeout below 180", Doc: kl + "spec: {registrationConfiguration: {bootstrapKubeConfigs: {type: LocalSecrets, localSecretsConfig: {kubeConfigSecrets: [{name: a}, {name: b}], hubConnectionTimeoutSeconds: 60}}}}", Want: "hubConnectionTimeoutSeconds"},
		{Name: "local secrets without names", Doc: kl + "spec: {registrationConfiguration: {bootstrapKubeConfigs: {type: LocalSecrets, localSecretsConfig: {}}}}", Want: "localSecretsConfig.kubeConfigSecrets"},
		{Name: "registration auth type", Doc: kl + "spec: {registrationConfiguration: {registrationDriver: {authType: token}}}", Want: "registrationDriver.authType"},
		{Name: "awsirsa without managed cluster ARN", Doc: kl + "spec: {registrationConfiguration: {registrationDriver: {authType: awsirsa, awsIrsa: {hubClusterArn: \"arn:aws:eks:us-west-2:123456789012:cluster/hub1\"}}}}", Want: "awsIrsa.managedClusterArn"},
		{Name: "add-on auth type", Doc: kl + "spec: {registrationConfiguration: {addOnKubeClientRegistrationDriver: {authType: awsirsa}}}", Want: "addOnKubeClientRegistrationDriver.authType"},
		{Name: "too many reserved claim suffixes", Doc: kl + "spec: {registrationConfiguration: {clusterClaimConfiguration: {reservedClusterClaimSuffixes: [a, b, c, d, e, f, g, h, i, j, k]}}}", Want: "reservedClusterClaimSuffixes"},
		{Name: "status sync interval", Doc: kl + "spec: {workConfiguration: {statusSyncInterval: 5 minutes}}", Want: "spec.workConfiguration.statusSyncInterval"},
		{Name: "report hosting cluster", Doc: kl + "spec: {deployOption: {reportHostingCluster: \"true\"}}", Want: "spec.deployOption.reportHostingCluster"},
		{Name: "generation without lastGeneration", Doc: kl + "status: {generations: [{group: apps, version: v1, resource: deployments, name: a}]}", Want: "status.generations[0].lastGeneration"},
		{Name: "duplicate condition types", Doc: cm + "status: {conditions: [{type: Applied, status: \"True\", reason: A, message: \"\", lastTransitionTime: \"2026-01-02T03:04:05Z\"}, {type: Applied, status: \"False\", reason: B, message: \"\", lastTransitionTime: \"2026-01-02T03:04:05Z\"}]}", Want: "status.conditions[1]"},
	})
}
