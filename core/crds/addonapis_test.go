package crds_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authenticationv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1alpha1"
	authenticationv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
)

// The APIs of the cluster-proxy, managed-serviceaccount and cluster-gateway add-ons as the
// hub's API server serves them.

var (
	msaV1beta1  = authenticationv1beta1.GroupVersion.WithResource("managedserviceaccounts")
	msaV1alpha1 = authenticationv1alpha1.GroupVersion.WithResource("managedserviceaccounts")
	mpcs        = proxyv1alpha1.GroupVersion.WithResource("managedproxyconfigurations")
	mpsrs       = proxyv1alpha1.GroupVersion.WithResource("managedproxyserviceresolvers")
)

const (
	msaDeprecation = "authentication.open-cluster-management.io/v1alpha1 ManagedServiceAccount is deprecated; " +
		"use authentication.open-cluster-management.io/v1beta1 ManagedServiceAccount; version v1alpha1 will be removed in the next release"
	mpsrDeprecation = "ManagedProxyServiceResolver is deprecated and will be removed in the next release"
)

var _ = Describe("ManagedServiceAccount", func() {
	It("defaults rotation as upstream does: enabled, 8640h0m0s", func(ctx SpecContext) {
		ns := namespace(ctx, "msa-defaults")
		c := newClient()
		// managed-serviceaccount's README sample.
		got := c.mustCreate(ctx, msaV1beta1, ns, `
apiVersion: authentication.open-cluster-management.io/v1beta1
kind: ManagedServiceAccount
metadata: {name: my-sample}
spec:
  rotation: {}
`)
		Expect(field(got, "spec", "rotation")).To(Equal(map[string]any{"enabled": true, "validity": "8640h0m0s"}))
		Expect(c.warnings.take()).To(BeEmpty(), "v1beta1 is not deprecated")

		typed := &authenticationv1beta1.ManagedServiceAccount{}
		Expect(c.typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "my-sample"}, typed)).To(Succeed())
		Expect(typed.Spec.Rotation.Validity.Duration).To(Equal(authenticationv1beta1.DefaultValidity))
		Expect(typed.Spec.Rotation.Enabled).To(BeTrue())
	}, SpecTimeout(2*time.Minute))

	It("serves v1alpha1 with upstream's deprecation warning and converts losslessly both ways", func(ctx SpecContext) {
		ns := namespace(ctx, "msa-versions")
		c := newClient()

		// What cluster-gateway's add-on manager writes, in v1alpha1; read back in v1beta1.
		alpha := c.mustCreate(ctx, msaV1alpha1, ns, `
apiVersion: authentication.open-cluster-management.io/v1alpha1
kind: ManagedServiceAccount
metadata: {name: cluster-gateway}
spec:
  rotation: {enabled: true, validity: 4320h0m0s}
  ttlSecondsAfterCreation: 3600
`)
		Expect(c.warnings.take()).To(ContainElement(msaDeprecation))
		beta, err := c.resource(msaV1beta1, ns).Get(ctx, "cluster-gateway", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.warnings.take()).To(BeEmpty(), "reading v1beta1 warns")
		Expect(beta.GetAPIVersion()).To(Equal(authenticationv1beta1.GroupVersion.String()))
		Expect(beta.Object["spec"]).To(Equal(alpha.Object["spec"]))

		// The agent reports status in v1beta1; a v1alpha1 reader sees all of it.
		Expect(unstructured.SetNestedField(beta.Object, map[string]any{
			"conditions": []any{map[string]any{"type": "TokenReported", "status": "True", "reason": "TokenReported",
				"message": "", "lastTransitionTime": "2026-11-27T06:00:00Z"}},
			"expirationTimestamp": "2027-05-26T06:00:00Z",
			"tokenSecretRef":      map[string]any{"name": "cluster-gateway", "lastRefreshTimestamp": "2026-11-27T06:00:00Z"},
		}, "status")).To(Succeed())
		beta, err = c.resource(msaV1beta1, ns).UpdateStatus(ctx, beta, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		alpha, err = c.resource(msaV1alpha1, ns).Get(ctx, "cluster-gateway", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.warnings.take()).To(ContainElement(msaDeprecation))
		Expect(alpha.GetAPIVersion()).To(Equal(authenticationv1alpha1.GroupVersion.String()))
		Expect(alpha.Object["spec"]).To(Equal(beta.Object["spec"]))
		Expect(alpha.Object["status"]).To(Equal(beta.Object["status"]))

		// The typed clients of both versions decode the same object.
		typedAlpha := &authenticationv1alpha1.ManagedServiceAccount{}
		Expect(c.typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-gateway"}, typedAlpha)).To(Succeed())
		Expect(typedAlpha.Spec.Rotation.Validity.Duration).To(Equal(clustergatewayv1alpha1.ManagedServiceAccountValidity))
		Expect(typedAlpha.Status.TokenSecretRef).NotTo(BeNil())
		Expect(typedAlpha.Status.TokenSecretRef.Name).To(Equal("cluster-gateway"))
	}, SpecTimeout(2*time.Minute))

	DescribeTable("refuses what upstream's schema refuses, naming the field",
		func(ctx SpecContext, doc string, want ...string) {
			ns := namespace(ctx, fmt.Sprintf("msa-invalid-%d", CurrentSpecReport().LeafNodeLocation.LineNumber))
			_, err := newClient().create(ctx, msaV1beta1, ns, "apiVersion: authentication.open-cluster-management.io/v1beta1\n"+
				"kind: ManagedServiceAccount\nmetadata: {name: bad}\n"+doc)
			rejected(err, want...)
		},
		Entry("no rotation", "spec: {}", "spec.rotation", "Required value", SpecTimeout(time.Minute)),
		Entry("ttlSecondsAfterCreation 0", "spec: {rotation: {}, ttlSecondsAfterCreation: 0}", "spec.ttlSecondsAfterCreation", SpecTimeout(time.Minute)),
		Entry("upstream's outdated spec.projected", "spec: {rotation: {}, projected: {type: Secret}}", `unknown field "spec.projected"`, SpecTimeout(time.Minute)),
	)

	It("refuses a status whose tokenSecretRef has no lastRefreshTimestamp", func(ctx SpecContext) {
		ns := namespace(ctx, "msa-status")
		c := newClient()
		u := c.mustCreate(ctx, msaV1beta1, ns, "apiVersion: authentication.open-cluster-management.io/v1beta1\n"+
			"kind: ManagedServiceAccount\nmetadata: {name: m}\nspec: {rotation: {}}\n")
		Expect(unstructured.SetNestedField(u.Object, map[string]any{"name": "m"}, "status", "tokenSecretRef")).To(Succeed())
		_, err := c.resource(msaV1beta1, ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		rejected(err, "status.tokenSecretRef.lastRefreshTimestamp", "Required value")
	}, SpecTimeout(2*time.Minute))

	// Upstream's schema types validity as a plain string; an agent must not assume the
	// objects it lists parse.
	It("stores a validity that does not parse as a duration, as upstream's schema does", func(ctx SpecContext) {
		ns := namespace(ctx, "msa-validity")
		c := newClient()
		c.mustCreate(ctx, msaV1beta1, ns, "apiVersion: authentication.open-cluster-management.io/v1beta1\n"+
			"kind: ManagedServiceAccount\nmetadata: {name: yearly}\nspec: {rotation: {validity: 1y}}\n")
		err := c.typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "yearly"}, &authenticationv1beta1.ManagedServiceAccount{})
		Expect(err).To(MatchError(ContainSubstring(`unknown unit "y"`)), "the typed client decodes it")
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("ManagedProxyConfiguration", func() {
	It("fills upstream's defaults into the Helm chart's object", func(ctx SpecContext) {
		got := newClient().mustCreate(ctx, mpcs, "", `
apiVersion: proxy.open-cluster-management.io/v1alpha1
kind: ManagedProxyConfiguration
metadata: {name: chart-defaults}
spec:
  authentication:
    dump: {secrets: {}}
    signer: {type: SelfSigned}
  proxyServer:
    image: quay.io/open-cluster-management/cluster-proxy:v0.10.0
    replicas: 1
    namespace: open-cluster-management-addon
    entrypoint: {type: PortForward, port: 8091}
  proxyAgent:
    image: quay.io/open-cluster-management/cluster-proxy:v0.10.0
    replicas: 1
`)
		Expect(field(got, "spec", "authentication", "dump", "secrets")).To(Equal(map[string]any{
			"signingProxyServerSecretName": "proxy-server", "signingProxyClientSecretName": "proxy-client", "signingAgentServerSecretName": "agent-server"}))
		Expect(field(got, "spec", "proxyServer", "inClusterServiceName")).To(Equal("proxy-entrypoint"))
		Expect(field(got, "spec", "proxyServer", "replicas")).To(Equal(int64(1)))
	}, SpecTimeout(2*time.Minute))

	It("fills the entrypoint, port and replica defaults into a minimal object", func(ctx SpecContext) {
		got := newClient().mustCreate(ctx, mpcs, "", `
apiVersion: proxy.open-cluster-management.io/v1alpha1
kind: ManagedProxyConfiguration
metadata: {name: minimal-defaults}
spec:
  authentication: {}
  proxyServer: {image: s, entrypoint: {type: LoadBalancerService, loadBalancerService: {}}}
  proxyAgent: {image: a}
  deploy: {ports: {}}
`)
		Expect(field(got, "spec", "authentication")).To(Equal(map[string]any{}), "no signer, no default type (as upstream)")
		Expect(field(got, "spec", "proxyServer")).To(Equal(map[string]any{
			"image": "s", "replicas": int64(3), "inClusterServiceName": "proxy-entrypoint", "namespace": "open-cluster-management-cluster-proxy",
			"entrypoint": map[string]any{"type": "LoadBalancerService", "port": int64(8091),
				"loadBalancerService": map[string]any{"name": "proxy-agent-entrypoint"}}}))
		Expect(field(got, "spec", "proxyAgent", "replicas")).To(Equal(int64(3)))
		Expect(field(got, "spec", "deploy", "ports")).To(Equal(map[string]any{
			"proxyServer": int64(8090), "agentServer": int64(8091), "healthServer": int64(8092), "adminServer": int64(8095)}))
	}, SpecTimeout(2*time.Minute))

	It("gives an object built in Go the same defaults", func(ctx SpecContext) {
		c := newClient()
		mpc := &proxyv1alpha1.ManagedProxyConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "typed-defaults"},
			Spec: proxyv1alpha1.ManagedProxyConfigurationSpec{
				ProxyServer: proxyv1alpha1.ManagedProxyConfigurationProxyServer{Image: "s",
					Entrypoint: &proxyv1alpha1.ManagedProxyConfigurationProxyServerEntrypoint{Type: proxyv1alpha1.EntryPointTypePortForward}},
				ProxyAgent: proxyv1alpha1.ManagedProxyConfigurationProxyAgent{Image: "a"},
				Deploy:     &proxyv1alpha1.ManagedProxyConfigurationDeploy{},
			},
		}
		Expect(c.typed.Create(ctx, mpc)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(c.typed.Delete(ctx, mpc)).To(Succeed()) }, NodeTimeout(time.Minute))
		s := mpc.Spec
		Expect(s.Authentication.Signer.Type).To(Equal(proxyv1alpha1.SelfSigned))
		Expect(s.ProxyServer.Replicas).To(BeEquivalentTo(proxyv1alpha1.DefaultProxyServerReplicas))
		Expect(s.ProxyAgent.Replicas).To(BeEquivalentTo(proxyv1alpha1.DefaultProxyAgentReplicas))
		Expect(s.ProxyServer.Entrypoint.Port).To(BeEquivalentTo(proxyv1alpha1.DefaultEntrypointPort))
		Expect(s.Deploy.Ports).To(Equal(proxyv1alpha1.ManagedProxyConfigurationDeployPorts{
			ProxyServer: proxyv1alpha1.DefaultProxyServerPort, AgentServer: proxyv1alpha1.DefaultAgentServerPort,
			HealthServer: proxyv1alpha1.DefaultHealthServerPort, AdminServer: proxyv1alpha1.DefaultAdminServerPort}))
	}, SpecTimeout(2*time.Minute))

	DescribeTable("refuses what upstream's schema refuses, naming the field",
		func(ctx SpecContext, spec string, want ...string) {
			_, err := newClient().create(ctx, mpcs, "", "apiVersion: proxy.open-cluster-management.io/v1alpha1\n"+
				"kind: ManagedProxyConfiguration\nmetadata: {name: bad}\nspec:\n  authentication: {}\n  proxyAgent: {image: a}\n"+spec)
			rejected(err, want...)
		},
		Entry("entrypoint type outside the enum", "  proxyServer: {image: s, entrypoint: {type: NodePort}}",
			"spec.proxyServer.entrypoint.type", `"NodePort"`, SpecTimeout(time.Minute)),
		Entry("entrypoint port 0", "  proxyServer: {image: s, entrypoint: {type: PortForward, port: 0}}",
			"spec.proxyServer.entrypoint.port", "greater than or equal to 1", SpecTimeout(time.Minute)),
		Entry("proxy server without image", "  proxyServer: {replicas: 1}", "spec.proxyServer.image", "Required value", SpecTimeout(time.Minute)),
		Entry("annotation without key", "  proxyServer: {image: s, entrypoint: {type: LoadBalancerService, loadBalancerService: {annotations: [{value: v}]}}}",
			"spec.proxyServer.entrypoint.loadBalancerService.annotations[0].key", "Required value", SpecTimeout(time.Minute)),
		Entry("the Helm chart's proxyAgent.additionalValues, with kubectl's strict validation",
			"  proxyServer: {image: s}\n  proxyAgent: {image: a, additionalValues: {enableImpersonation: 'true'}}",
			`unknown field "spec.proxyAgent.additionalValues"`, SpecTimeout(time.Minute)),
	)

	It("prunes the Helm chart's proxyAgent.additionalValues with a warning when validation only warns", func(ctx SpecContext) {
		c := newClient()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(proxyv1alpha1.GroupVersion.String())
		u.SetKind("ManagedProxyConfiguration")
		u.SetName("chart-extra-values")
		u.Object["spec"] = map[string]any{"authentication": map[string]any{}, "proxyServer": map[string]any{"image": "s"},
			"proxyAgent": map[string]any{"image": "a", "additionalValues": map[string]any{"enableImpersonation": "true"}}}
		got, err := c.resource(mpcs, "").Create(ctx, u, metav1.CreateOptions{FieldValidation: metav1.FieldValidationWarn})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(c.resource(mpcs, "").Delete(ctx, got.GetName(), metav1.DeleteOptions{})).To(Succeed())
		}, NodeTimeout(time.Minute))
		Expect(field(got, "spec", "proxyAgent")).To(Equal(map[string]any{"image": "a", "replicas": int64(3)}))
		Expect(c.warnings.take()).To(ContainElement(ContainSubstring(`unknown field "spec.proxyAgent.additionalValues"`)))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("ManagedProxyServiceResolver", func() {
	const resolver = `
apiVersion: proxy.open-cluster-management.io/v1alpha1
kind: ManagedProxyServiceResolver
metadata: {name: %s}
spec:
  managedClusterSelector: {managedClusterSet: {name: default}}
  serviceSelector: {serviceRef: {namespace: monitoring, name: prometheus-k8s}}
`
	It("defaults the selector types and warns on every request that it is deprecated", func(ctx SpecContext) {
		c := newClient()
		got := c.mustCreate(ctx, mpsrs, "", fmt.Sprintf(resolver, "resolver-defaults"))
		Expect(c.warnings.take()).To(ContainElement(mpsrDeprecation))
		Expect(field(got, "spec", "managedClusterSelector", "type")).To(Equal("ManagedClusterSet"))
		Expect(field(got, "spec", "serviceSelector", "type")).To(Equal("ServiceRef"))
		_, err := c.resource(mpsrs, "").List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.warnings.take()).To(ContainElement(mpsrDeprecation))
	}, SpecTimeout(2*time.Minute))

	It("requires status.conditions in a status write", func(ctx SpecContext) {
		c := newClient()
		u := c.mustCreate(ctx, mpsrs, "", fmt.Sprintf(resolver, "resolver-status"))
		u.Object["status"] = map[string]any{}
		_, err := c.resource(mpsrs, "").UpdateStatus(ctx, u, metav1.UpdateOptions{})
		rejected(err, "status.conditions", "Required value")

		r := &proxyv1alpha1.ManagedProxyServiceResolver{}
		Expect(c.typed.Get(ctx, client.ObjectKey{Name: "resolver-status"}, r)).To(Succeed())
		r.Status.Conditions = []metav1.Condition{{Type: proxyv1alpha1.ConditionTypeServiceResolverAvaliable, Status: metav1.ConditionFalse,
			Reason: proxyv1alpha1.ReasonManagedClusterSetNotExisted, Message: "ManagedClusterSet default not found", LastTransitionTime: metav1.Now()}}
		Expect(c.typed.Status().Update(ctx, r)).To(Succeed())
	}, SpecTimeout(2*time.Minute))

	DescribeTable("refuses what upstream's schema refuses, naming the field",
		func(ctx SpecContext, spec string, want ...string) {
			_, err := newClient().create(ctx, mpsrs, "", "apiVersion: proxy.open-cluster-management.io/v1alpha1\n"+
				"kind: ManagedProxyServiceResolver\nmetadata: {name: bad}\n"+spec)
			rejected(err, want...)
		},
		Entry("no serviceSelector", "spec: {managedClusterSelector: {managedClusterSet: {name: default}}}",
			"spec.serviceSelector", "Required value", SpecTimeout(time.Minute)),
		Entry("serviceRef without name", "spec: {managedClusterSelector: {}, serviceSelector: {serviceRef: {namespace: n}}}",
			"spec.serviceSelector.serviceRef.name", "Required value", SpecTimeout(time.Minute)),
		Entry("managedClusterSet without name", "spec: {managedClusterSelector: {managedClusterSet: {}}, serviceSelector: {}}",
			"spec.managedClusterSelector.managedClusterSet.name", "Required value", SpecTimeout(time.Minute)),
		Entry("cluster selector type Placement", "spec: {managedClusterSelector: {type: Placement}, serviceSelector: {}}",
			"spec.managedClusterSelector.type", `"Placement"`, SpecTimeout(time.Minute)),
	)
})

var _ = Describe("ClusterGateway", func() {
	It("has no CRD: its group is served only once the hub registers its APIService", func(ctx SpecContext) {
		disc, err := discovery.NewDiscoveryClientForConfig(hubConfig)
		Expect(err).NotTo(HaveOccurred())
		groups, err := disc.ServerGroups()
		Expect(err).NotTo(HaveOccurred())
		for _, g := range groups.Groups {
			Expect(g.Name).NotTo(Equal(clustergatewayv1alpha1.GroupVersion.Group))
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		typed := newClient().typed
		for _, name := range []string{"managedserviceaccounts.authentication.open-cluster-management.io",
			"managedproxyconfigurations.proxy.open-cluster-management.io", "managedproxyserviceresolvers.proxy.open-cluster-management.io"} {
			Expect(typed.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed(), "crds.Install installs %s", name)
		}
	}, SpecTimeout(time.Minute))
})
