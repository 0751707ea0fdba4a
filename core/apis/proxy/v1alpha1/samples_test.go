package v1alpha1_test

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
)

func newValidator(t *testing.T) *seedcheck.Validator {
	t.Helper()
	v := seedcheck.ForTest(t, filepath.Join(crdDir, "proxy.open-cluster-management.io_*.yaml"), proxyv1alpha1.AddToScheme)
	v.CompareDefaulted = true
	return v
}

// TestSamplesDecodeStrictly validates every sample (testdata: upstream's chart rendering and
// objects written from upstream's schema) against the generated CRD as the API server
// would, decodes it strictly into the Go types, and requires the Go types to keep every
// value, defaults included.
func TestSamplesDecodeStrictly(t *testing.T) {
	v := newValidator(t)
	kinds := seedcheck.CheckSeeds(t, v, filepath.Join("testdata", "*.yaml"), proxyv1alpha1.GroupVersion)
	for _, k := range []string{"ManagedProxyConfiguration", "ManagedProxyServiceResolver"} {
		if kinds[k] == 0 {
			t.Errorf("no sample of kind %s", k)
		}
	}
}

// TestSampleShapes pins decoded values where a misnamed JSON tag would put them elsewhere.
func TestSampleShapes(t *testing.T) {
	mpc := seedcheck.DecodeSeed(t, "testdata", "hostname-managedproxyconfiguration.yaml", &proxyv1alpha1.ManagedProxyConfiguration{})
	s := mpc.Spec
	if s.Authentication.Signer.Type != proxyv1alpha1.SelfSigned || len(s.Authentication.Signer.SelfSigned.AdditionalSANs) != 2 ||
		s.Authentication.Dump.Secrets.SigningAgentServerSecretName != "my-agent-server" {
		t.Errorf("authentication: %+v", s.Authentication)
	}
	ps := s.ProxyServer
	if ps.Replicas != 2 || ps.InClusterServiceName != "my-entrypoint" || ps.Namespace != "proxy-system" ||
		ps.Entrypoint == nil || ps.Entrypoint.Type != proxyv1alpha1.EntryPointTypeHostname || ps.Entrypoint.Hostname.Value != "proxy.example.com" ||
		ps.Entrypoint.Port != 443 || len(ps.NodePlacement.Tolerations) != 1 || ps.NodePlacement.Tolerations[0].Effect != "NoSchedule" {
		t.Errorf("proxyServer: %+v", ps)
	}
	pa := s.ProxyAgent
	if pa.AdditionalServiceProxyArgs[0] != "--verbosity=4" || pa.ImagePullSecrets[0] != "pull-secret" || pa.AdditionalServiceCAConfigMap != "service-ca" {
		t.Errorf("proxyAgent: %+v", pa)
	}
	if s.Deploy == nil || s.Deploy.Ports.AdminServer != 18095 || s.UserServer == nil || s.UserServer.AdditionalSANs[0] != "user.proxy.example.com" {
		t.Errorf("deploy %+v, userServer %+v", s.Deploy, s.UserServer)
	}
	if mpc.Status.LastObservedGeneration != 1 || len(mpc.Status.Conditions) != 2 ||
		mpc.Status.Conditions[0].Type != proxyv1alpha1.ConditionTypeProxyServerDeployed ||
		mpc.Status.Conditions[0].Reason != proxyv1alpha1.ReasonSuccessfullyDeployed {
		t.Errorf("status: %+v", mpc.Status)
	}

	lb := seedcheck.DecodeSeed(t, "testdata", "loadbalancer-managedproxyconfiguration.yaml", &proxyv1alpha1.ManagedProxyConfiguration{})
	svc := lb.Spec.ProxyServer.Entrypoint.LoadBalancerService
	if svc == nil || svc.Name != "my-lb" || len(svc.Annotations) != 2 || svc.Annotations[1].Key != "example.com/flag" || svc.Annotations[1].Value != "" {
		t.Errorf("loadBalancerService: %+v", svc)
	}

	r := seedcheck.DecodeSeed(t, "testdata", "set-managedproxyserviceresolver.yaml", &proxyv1alpha1.ManagedProxyServiceResolver{})
	if r.Spec.ManagedClusterSelector.ManagedClusterSet.Name != "default" || r.Spec.ServiceSelector.ServiceRef.Namespace != "monitoring" ||
		r.Spec.ServiceSelector.ServiceRef.Name != "prometheus-k8s" || r.Status.Conditions[0].Type != proxyv1alpha1.ConditionTypeServiceResolverAvaliable {
		t.Errorf("resolver: %+v", r)
	}
}

// TestCRDDefaults: the defaults upstream's schema fills in, as the API server applies them
// (the API server suite in core/crds shows the same on a real server).
func TestCRDDefaults(t *testing.T) {
	v := newValidator(t)
	u, err := v.Defaulted([]byte(`apiVersion: proxy.open-cluster-management.io/v1alpha1
kind: ManagedProxyConfiguration
metadata: {name: cluster-proxy}
spec:
  authentication: {signer: {}, dump: {secrets: {}}}
  proxyServer: {image: s, entrypoint: {type: LoadBalancerService, loadBalancerService: {}}}
  proxyAgent: {image: a}
  deploy: {ports: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"spec.authentication.signer.type":                               "SelfSigned",
		"spec.authentication.dump.secrets.signingProxyServerSecretName": proxyv1alpha1.DefaultProxyServerSecretName,
		"spec.authentication.dump.secrets.signingProxyClientSecretName": proxyv1alpha1.DefaultProxyClientSecretName,
		"spec.authentication.dump.secrets.signingAgentServerSecretName": proxyv1alpha1.DefaultAgentServerSecretName,
		"spec.proxyServer.replicas":                                     int64(proxyv1alpha1.DefaultProxyServerReplicas),
		"spec.proxyServer.inClusterServiceName":                         proxyv1alpha1.DefaultInClusterServiceName,
		"spec.proxyServer.namespace":                                    proxyv1alpha1.AgentInstallNamespace,
		"spec.proxyServer.entrypoint.port":                              int64(proxyv1alpha1.DefaultEntrypointPort),
		"spec.proxyServer.entrypoint.loadBalancerService.name":          proxyv1alpha1.DefaultLoadBalancerServiceName,
		"spec.proxyAgent.replicas":                                      int64(proxyv1alpha1.DefaultProxyAgentReplicas),
		"spec.deploy.ports.proxyServer":                                 int64(proxyv1alpha1.DefaultProxyServerPort),
		"spec.deploy.ports.agentServer":                                 int64(proxyv1alpha1.DefaultAgentServerPort),
		"spec.deploy.ports.healthServer":                                int64(proxyv1alpha1.DefaultHealthServerPort),
		"spec.deploy.ports.adminServer":                                 int64(proxyv1alpha1.DefaultAdminServerPort),
	} {
		if got := lookup(u, path); got != want {
			t.Errorf("%s defaults to %v (%T), want %v", path, got, got, want)
		}
	}

	u, err = v.Defaulted([]byte(`apiVersion: proxy.open-cluster-management.io/v1alpha1
kind: ManagedProxyServiceResolver
metadata: {name: r}
spec:
  managedClusterSelector: {managedClusterSet: {name: default}}
  serviceSelector: {serviceRef: {namespace: ns, name: svc}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"spec.managedClusterSelector.type": string(proxyv1alpha1.ManagedClusterSelectorTypeClusterSet),
		"spec.serviceSelector.type":        string(proxyv1alpha1.ServiceSelectorTypeServiceRef),
	} {
		if got := lookup(u, path); got != want {
			t.Errorf("%s defaults to %v, want %v", path, got, want)
		}
	}
}

// TestValidatorRejects: what upstream's schema refuses is refused, naming the field,
// including the fields of upstream's own outdated sample and chart.
func TestValidatorRejects(t *testing.T) {
	v := newValidator(t)
	const mpc = "apiVersion: proxy.open-cluster-management.io/v1alpha1\nkind: ManagedProxyConfiguration\nmetadata: {name: c}\nspec:\n  proxyAgent: {image: a}\n"
	const auth = "  authentication: {}\n"
	const mpsr = "apiVersion: proxy.open-cluster-management.io/v1alpha1\nkind: ManagedProxyServiceResolver\nmetadata: {name: r}\n"
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{Name: "entrypoint type outside the enum", Doc: mpc + auth + "  proxyServer: {image: s, entrypoint: {type: NodePort}}", Want: "spec.proxyServer.entrypoint.type: Unsupported value"},
		{Name: "entrypoint without type", Doc: mpc + auth + "  proxyServer: {image: s, entrypoint: {port: 8091}}", Want: "spec.proxyServer.entrypoint.type: Required value"},
		{Name: "entrypoint port 0", Doc: mpc + auth + "  proxyServer: {image: s, entrypoint: {type: PortForward, port: 0}}", Want: "spec.proxyServer.entrypoint.port"},
		{Name: "hostname without value", Doc: mpc + auth + "  proxyServer: {image: s, entrypoint: {type: Hostname, hostname: {}}}", Want: "spec.proxyServer.entrypoint.hostname.value: Required value"},
		{Name: "chart's port under hostname", Doc: mpc + auth + "  proxyServer: {image: s, entrypoint: {type: Hostname, hostname: {value: h, port: 8091}}}", Want: "fields unknown to the CRD: spec.proxyServer.entrypoint.hostname.port"},
		{Name: "annotation without key", Doc: mpc + auth + "  proxyServer: {image: s, entrypoint: {type: LoadBalancerService, loadBalancerService: {annotations: [{value: v}]}}}", Want: "spec.proxyServer.entrypoint.loadBalancerService.annotations[0].key: Required value"},
		{Name: "proxy server without image", Doc: mpc + auth + "  proxyServer: {replicas: 1}", Want: "spec.proxyServer.image: Required value"},
		{Name: "no proxy server", Doc: mpc + auth, Want: "spec.proxyServer: Required value"},
		{Name: "signer type outside the enum", Doc: mpc + "  proxyServer: {image: s}\n  authentication: {signer: {type: Vault}}", Want: "spec.authentication.signer.type: Unsupported value"},
		{Name: "deploy without ports", Doc: mpc + auth + "  proxyServer: {image: s}\n  deploy: {}", Want: "spec.deploy.ports: Required value"},
		{Name: "chart's proxyAgent.additionalValues", Doc: "apiVersion: proxy.open-cluster-management.io/v1alpha1\nkind: ManagedProxyConfiguration\nmetadata: {name: c}\nspec:\n" + auth + "  proxyServer: {image: s}\n  proxyAgent: {image: a, additionalValues: {enableImpersonation: 'true'}}", Want: "fields unknown to the CRD: spec.proxyAgent.additionalValues"},
		{Name: "no authentication", Doc: mpc + "  proxyServer: {image: s}", Want: "spec.authentication: Required value"},
		{Name: "hack/samples' outdated certificateSigning", Doc: mpc + "  proxyServer: {image: s}\n  authentication: {certificateSigning: {type: SelfSigned}}", Want: "fields unknown to the CRD: spec.authentication.certificateSigning"},
		{Name: "resolver without serviceSelector", Doc: mpsr + "spec: {managedClusterSelector: {managedClusterSet: {name: default}}}", Want: "spec.serviceSelector: Required value"},
		{Name: "resolver without managedClusterSelector", Doc: mpsr + "spec: {serviceSelector: {serviceRef: {namespace: n, name: s}}}", Want: "spec.managedClusterSelector: Required value"},
		{Name: "serviceRef without name", Doc: mpsr + "spec: {managedClusterSelector: {}, serviceSelector: {serviceRef: {namespace: n}}}", Want: "spec.serviceSelector.serviceRef.name: Required value"},
		{Name: "managedClusterSet without name", Doc: mpsr + "spec: {managedClusterSelector: {managedClusterSet: {}}, serviceSelector: {}}", Want: "spec.managedClusterSelector.managedClusterSet.name: Required value"},
		{Name: "cluster selector type Placement", Doc: mpsr + "spec: {managedClusterSelector: {type: Placement}, serviceSelector: {}}", Want: "spec.managedClusterSelector.type: Unsupported value"},
		{Name: "service selector type Label", Doc: mpsr + "spec: {managedClusterSelector: {}, serviceSelector: {type: Label}}", Want: "spec.serviceSelector.type: Unsupported value"},
		{Name: "resolver status without conditions", Doc: mpsr + "spec: {managedClusterSelector: {}, serviceSelector: {}}\nstatus: {}", Want: "status.conditions: Required value"},
	})
}

// lookup returns the value at the dotted path of u, nil if absent.
func lookup(u map[string]any, path string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u, strings.Split(path, ".")...)
	return v
}
