package webhook_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	addonv1beta1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1beta1"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/addonconversion"
)

// resource is the add-on resource plural at version.
func resource(version, plural string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: addonconversion.Group, Version: version, Resource: plural}
}

// create creates an object written as YAML, in its namespace if it has one.
func create(ctx context.Context, plural, doc string) *unstructured.Unstructured {
	GinkgoHelper()
	obj := parseYAML(doc)
	gvr := resource(obj.GroupVersionKind().Version, plural)
	got, err := dyn.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return got
}

// get reads namespace/name at version into typed.
func get(ctx context.Context, version, plural, namespace, name string, typed runtime.Object) *unstructured.Unstructured {
	GinkgoHelper()
	u, err := dyn.Resource(resource(version, plural)).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(u.GetAPIVersion()).To(Equal(addonconversion.Group + "/" + version))
	if typed != nil {
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed)).To(Succeed())
	}
	return u
}

var _ = Describe("The add-on conversion webhook", Ordered, func() {
	opts := webhook.Options{ConfigurationName: "conversion", SecretName: "conversion-certs"}
	var srv *running
	var apiext apiextensionsclient.Interface

	conversionOf := func(ctx context.Context, name string) *apiextensionsv1.CustomResourceDefinition {
		GinkgoHelper()
		crd, err := apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		return crd
	}
	// configured checks that every add-on CRD converts through srv with the CA of its Secret.
	configured := func(g Gomega, ctx context.Context) {
		secret, err := kube.CoreV1().Secrets(webhook.DefaultNamespace).Get(ctx, opts.SecretName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		for _, name := range addonconversion.CRDs {
			crd, err := apiext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			c := crd.Spec.Conversion
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Strategy).To(Equal(apiextensionsv1.WebhookConverter), name)
			g.Expect(c.Webhook).NotTo(BeNil())
			g.Expect(c.Webhook.ConversionReviewVersions).To(Equal([]string{"v1"}))
			g.Expect(c.Webhook.ClientConfig.URL).To(HaveValue(Equal("https://" + srv.Addr().String() + addonconversion.Path)))
			g.Expect(c.Webhook.ClientConfig.CABundle).To(Equal(secret.Data[webhook.SecretCABundleKey]))
		}
	}

	BeforeAll(func(ctx SpecContext) {
		apiext = apiextensionsclient.NewForConfigOrDie(hubConf)
		DeferCleanup(func(ctx SpecContext) {
			// Once the server stopped: back to no conversion, so that later specs do not
			// depend on a stopped server.
			for _, name := range addonconversion.CRDs {
				_, err := apiext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, name, types.MergePatchType,
					[]byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`), metav1.PatchOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
		})
		srv = startWith(opts, func(s *webhook.Server) {
			Expect(s.RegisterConversion(addonconversion.New())).To(Succeed())
		})
		cleanup(srv)
		Eventually(configured).WithContext(ctx).Should(Succeed())

		By("the API server converting through it")
		create(ctx, "addondeploymentconfigs", `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {name: in-effect, namespace: cluster1}
spec: {agentInstallNamespace: agents}
`)
		create(ctx, "clustermanagementaddons", `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: in-effect}
spec: {supportedConfigs: [{resource: configmaps}]}
`)
		// The API server picks up a changed CRD within moments: until then it does not convert.
		Eventually(func(g Gomega, ctx context.Context) {
			u, err := dyn.Resource(resource("v1beta1", "clustermanagementaddons")).Get(ctx, "in-effect", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			configs, _, _ := unstructured.NestedSlice(u.Object, "spec", "defaultConfigs")
			g.Expect(configs).To(HaveLen(1), "not converted yet: %v", u.Object["spec"])
			g.Expect(configs[0]).To(HaveKeyWithValue("name", addonv1beta1.ReservedNoDefaultConfigName))
		}).WithContext(ctx).Should(Succeed())
	})

	It("owns spec.conversion of the add-on CRDs, which installing the CRDs leaves alone", func(ctx SpecContext) {
		before := map[string]int64{}
		for _, name := range addonconversion.CRDs {
			crd := conversionOf(ctx, name)
			before[name] = crd.Generation
			owners := map[string]bool{}
			for _, mf := range crd.ManagedFields {
				if mf.FieldsV1 != nil && json.Valid(mf.FieldsV1.Raw) {
					fields := map[string]any{}
					Expect(json.Unmarshal(mf.FieldsV1.Raw, &fields)).To(Succeed())
					if spec, ok := fields["f:spec"].(map[string]any); ok && spec["f:conversion"] != nil {
						owners[mf.Manager] = true
					}
				}
			}
			Expect(owners).To(Equal(map[string]bool{webhook.FieldManager: true}), "managers of %s spec.conversion", name)
		}

		// What every hub start does.
		Expect(crds.Install(ctx, hubConf)).To(Succeed())
		for _, name := range addonconversion.CRDs {
			crd := conversionOf(ctx, name)
			Expect(crd.Generation).To(Equal(before[name]), "installing the CRDs changed the spec of %s", name)
			Expect(crd.Spec.Conversion.Strategy).To(Equal(apiextensionsv1.WebhookConverter))
		}
	})

	It("serves v1alpha1 objects at v1beta1", func(ctx SpecContext) {
		create(ctx, "clustermanagementaddons", `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: application-manager}
spec:
  addOnMeta: {displayName: Application Manager}
  addOnConfiguration: {crdName: legacy.example.io}
  supportedConfigs:
  - group: addon.open-cluster-management.io
    resource: addondeploymentconfigs
    defaultConfig: {name: default-deploy-config, namespace: open-cluster-management}
  - {group: example.io, resource: exampleconfigs}
  installStrategy:
    type: Placements
    placements:
    - {name: global, namespace: open-cluster-management, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 25%}}}
`)
		cma := &addonv1beta1.ClusterManagementAddOn{}
		get(ctx, "v1beta1", "clustermanagementaddons", "", "application-manager", cma)
		Expect(cma.Spec.AddOnMeta.DisplayName).To(Equal("Application Manager"))
		Expect(cma.Spec.DefaultConfigs).To(Equal([]addonv1beta1.AddOnConfig{
			{ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
				ConfigReferent: addonv1beta1.ConfigReferent{Namespace: "open-cluster-management", Name: "default-deploy-config"}},
			{ConfigGroupResource: addonv1beta1.ConfigGroupResource{Group: "example.io", Resource: "exampleconfigs"},
				ConfigReferent: addonv1beta1.ConfigReferent{Name: addonv1beta1.ReservedNoDefaultConfigName}},
		}))
		Expect(cma.Spec.InstallStrategy.Placements).To(HaveLen(1))
		Expect(cma.Spec.InstallStrategy.Placements[0].RolloutStrategy.Progressive.MaxConcurrency.String()).To(Equal("25%"))
		Expect(cma.Annotations).To(HaveKeyWithValue(addonv1beta1.AddOnConfigurationAnnotation, ContainSubstring("legacy.example.io")))

		create(ctx, "managedclusteraddons", `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: application-manager, namespace: cluster1, labels: {team: apps}}
spec:
  installNamespace: apps-agent
  configs: [{group: addon.open-cluster-management.io, resource: addondeploymentconfigs, name: in-effect, namespace: cluster1}]
`)
		status := &addonv1alpha1.ManagedClusterAddOn{}
		u := get(ctx, "v1alpha1", "managedclusteraddons", workNamespace, "application-manager", status)
		status.Status = addonv1alpha1.ManagedClusterAddOnStatus{
			Namespace: "apps-agent",
			Registrations: []addonv1alpha1.RegistrationConfig{
				{SignerName: "kubernetes.io/kube-apiserver-client", Subject: addonv1alpha1.Subject{User: "agent", Groups: []string{"agents"}}},
				{SignerName: "example.com/signer", Subject: addonv1alpha1.Subject{User: "agent", OrganizationUnits: []string{"ou"}}},
			},
			KubeClientDriver: addonv1alpha1.KubeClientDriverToken,
			ConfigReferences: []addonv1alpha1.ConfigReference{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
				ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "cluster1", Name: "in-effect"},
				DesiredConfig:       &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "cluster1", Name: "in-effect"}, SpecHash: "abc"},
			}},
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
		Expect(err).NotTo(HaveOccurred())
		u.Object = content
		_, err = dyn.Resource(resource("v1alpha1", "managedclusteraddons")).Namespace(workNamespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())

		mca := &addonv1beta1.ManagedClusterAddOn{}
		get(ctx, "v1beta1", "managedclusteraddons", workNamespace, "application-manager", mca)
		Expect(mca.Labels).To(Equal(map[string]string{"team": "apps"}))
		Expect(mca.Annotations).To(Equal(map[string]string{addonv1beta1.InstallNamespaceAnnotation: "apps-agent"}))
		Expect(mca.Spec.Configs).To(HaveLen(1))
		Expect(mca.Status.Registrations).To(Equal([]addonv1beta1.RegistrationConfig{
			{Type: addonv1beta1.KubeClient, KubeClient: &addonv1beta1.KubeClientConfig{
				Subject: addonv1beta1.KubeClientSubject{BaseSubject: addonv1beta1.BaseSubject{User: "agent", Groups: []string{"agents"}}}, Driver: "token"}},
			{Type: addonv1beta1.CustomSigner, CustomSigner: &addonv1beta1.CustomSignerConfig{SignerName: "example.com/signer",
				Subject: addonv1beta1.Subject{BaseSubject: addonv1beta1.BaseSubject{User: "agent"}, OrganizationUnits: []string{"ou"}}}},
		}))
		Expect(mca.Status.ConfigReferences).To(HaveLen(1))
		Expect(mca.Status.ConfigReferences[0].DesiredConfig.SpecHash).To(Equal("abc"))
		Expect(mca.Status.HealthCheck.Mode).To(Equal(addonv1beta1.HealthCheckModeLease)) // the v1alpha1 default

		create(ctx, "addontemplates", `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: hello-template}
spec:
  addonName: hello-template
  agentSpec:
    workload:
      manifests:
      - {apiVersion: v1, kind: ServiceAccount, metadata: {name: hello-agent, namespace: open-cluster-management-agent-addon}}
  registration:
  - type: CustomSigner
    customSigner:
      signerName: example.com/hello
      signingCA: {name: hello-ca, namespace: signers}
`)
		tmpl := &addonv1beta1.AddOnTemplate{}
		get(ctx, "v1beta1", "addontemplates", "", "hello-template", tmpl)
		Expect(tmpl.Spec.Registration).To(HaveLen(1))
		Expect(tmpl.Spec.Registration[0].CustomSigner.SigningCA).To(Equal(addonv1beta1.SigningCARef{Name: "hello-ca", Namespace: "signers"}))
		Expect(tmpl.Spec.AgentSpec.Workload.Manifests).To(HaveLen(1))

		adc := &addonv1beta1.AddOnDeploymentConfig{}
		get(ctx, "v1beta1", "addondeploymentconfigs", workNamespace, "in-effect", adc)
		Expect(adc.Spec.AgentInstallNamespace).To(Equal("agents"))
	})

	It("lists at v1beta1", func(ctx SpecContext) {
		create(ctx, "managedclusteraddons", `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: second, namespace: cluster1}
spec: {}
`)
		list, err := dyn.Resource(resource("v1beta1", "managedclusteraddons")).Namespace(workNamespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(2))
		for _, item := range list.Items {
			Expect(item.GetAPIVersion()).To(Equal(addonconversion.Group + "/v1beta1"))
			_, found, _ := unstructured.NestedFieldNoCopy(item.Object, "spec", "installNamespace")
			Expect(found).To(BeFalse(), "v1beta1 has no spec.installNamespace")
			// v1alpha1 defaults the install namespace; v1beta1 shows it as OCM's annotation.
			Expect(item.GetAnnotations()).To(HaveKey(addonv1beta1.InstallNamespaceAnnotation))
		}
	})

	It("serves v1beta1 objects at v1alpha1", func(ctx SpecContext) {
		create(ctx, "managedclusteraddons", `
apiVersion: addon.open-cluster-management.io/v1beta1
kind: ManagedClusterAddOn
metadata:
  name: from-beta
  namespace: cluster1
  annotations: {addon.open-cluster-management.io/v1alpha1-install-namespace: beta-agent}
spec:
  configs: [{resource: addondeploymentconfigs, name: in-effect, namespace: cluster1}]
`)
		alpha := &addonv1alpha1.ManagedClusterAddOn{}
		get(ctx, "v1alpha1", "managedclusteraddons", workNamespace, "from-beta", alpha)
		Expect(alpha.Spec.InstallNamespace).To(Equal("beta-agent"))
		Expect(alpha.Annotations).NotTo(HaveKey(addonv1beta1.InstallNamespaceAnnotation))
		Expect(alpha.Spec.Configs).To(Equal([]addonv1alpha1.AddOnConfig{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Resource: "addondeploymentconfigs"},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: "cluster1", Name: "in-effect"},
		}}))

		By("a status written at v1beta1")
		u := get(ctx, "v1beta1", "managedclusteraddons", workNamespace, "from-beta", nil)
		Expect(unstructured.SetNestedSlice(u.Object, []any{map[string]any{
			"type": "kubeClient", "kubeClient": map[string]any{"driver": "csr", "subject": map[string]any{"user": "beta-agent"}},
		}}, "status", "registrations")).To(Succeed())
		_, err := dyn.Resource(resource("v1beta1", "managedclusteraddons")).Namespace(workNamespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		get(ctx, "v1alpha1", "managedclusteraddons", workNamespace, "from-beta", alpha)
		Expect(alpha.Status.Registrations).To(Equal([]addonv1alpha1.RegistrationConfig{{
			SignerName: "kubernetes.io/kube-apiserver-client", Subject: addonv1alpha1.Subject{User: "beta-agent"},
		}}))
		Expect(alpha.Status.KubeClientDriver).To(Equal("csr"))

		create(ctx, "clustermanagementaddons", `
apiVersion: addon.open-cluster-management.io/v1beta1
kind: ClusterManagementAddOn
metadata: {name: from-beta}
spec:
  defaultConfigs:
  - {group: addon.open-cluster-management.io, resource: addontemplates, name: hello-template}
  - {group: addon.open-cluster-management.io, resource: addondeploymentconfigs, name: __reserved_no_default__}
`)
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		get(ctx, "v1alpha1", "clustermanagementaddons", "", "from-beta", cma)
		Expect(cma.Spec.SupportedConfigs).To(Equal([]addonv1alpha1.ConfigMeta{
			{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
				DefaultConfig: &addonv1alpha1.ConfigReferent{Name: "hello-template"}},
			{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}},
		}))
		Expect(cma.Spec.InstallStrategy.Type).To(Equal(addonv1alpha1.AddonInstallStrategyManual))
		Expect(cma.Annotations).To(BeEmpty())

		create(ctx, "addondeploymentconfigs", `
apiVersion: addon.open-cluster-management.io/v1beta1
kind: AddOnDeploymentConfig
metadata: {name: from-beta, namespace: cluster1}
spec:
  customizedVariables: [{name: LOG_LEVEL, value: "4"}]
  replicaConfigs: [{workloadID: "deployments:*", replicas: 2}]
`)
		create(ctx, "addontemplates", `
apiVersion: addon.open-cluster-management.io/v1beta1
kind: AddOnTemplate
metadata: {name: from-beta}
spec:
  addonName: from-beta
  agentSpec: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: agents}, data: {k: v}}]}}
  registration:
  - type: KubeClient
    kubeClient: {hubPermissions: [{type: CurrentCluster, currentCluster: {clusterRoleName: reader}}]}
`)
		tmpl := &addonv1alpha1.AddOnTemplate{}
		get(ctx, "v1alpha1", "addontemplates", "", "from-beta", tmpl)
		Expect(tmpl.Spec.Registration).To(Equal([]addonv1alpha1.RegistrationSpec{{
			Type: addonv1alpha1.RegistrationTypeKubeClient,
			KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{HubPermissions: []addonv1alpha1.HubPermissionConfig{{
				Type: addonv1alpha1.HubPermissionsBindingCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "reader"},
			}}},
		}}))
		Expect(string(tmpl.Spec.AgentSpec.Workload.Manifests[0].Raw)).To(ContainSubstring(`"data":{"k":"v"}`))

		adc := &addonv1alpha1.AddOnDeploymentConfig{}
		get(ctx, "v1alpha1", "addondeploymentconfigs", workNamespace, "from-beta", adc)
		Expect(adc.Spec.CustomizedVariables).To(Equal([]addonv1alpha1.CustomizedVariable{{Name: "LOG_LEVEL", Value: "4"}}))
		Expect(adc.Spec.ReplicaConfigs).To(Equal([]addonv1alpha1.ReplicaConfig{{WorkloadID: "deployments:*", Replicas: 2}}))
	})

	It("keeps what v1beta1 cannot express through an update at v1beta1", func(ctx SpecContext) {
		u := get(ctx, "v1beta1", "clustermanagementaddons", "", "application-manager", nil)
		Expect(unstructured.SetNestedField(u.Object, "Renamed", "spec", "addOnMeta", "displayName")).To(Succeed())
		_, err := dyn.Resource(resource("v1beta1", "clustermanagementaddons")).Update(ctx, u, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		get(ctx, "v1alpha1", "clustermanagementaddons", "", "application-manager", cma)
		Expect(cma.Spec.AddOnMeta.DisplayName).To(Equal("Renamed"))
		Expect(cma.Spec.AddOnConfiguration.CRDName).To(Equal("legacy.example.io"))
		Expect(cma.Spec.SupportedConfigs).To(HaveLen(2))
		Expect(cma.Spec.SupportedConfigs[1].DefaultConfig).To(BeNil())
		Expect(cma.Annotations).To(BeEmpty())

		By("a v1alpha1 status field v1beta1 has no place for, through a status update at v1beta1")
		typed := &addonv1alpha1.ManagedClusterAddOn{}
		get(ctx, "v1alpha1", "managedclusteraddons", workNamespace, "application-manager", typed)
		typed.Status.Registrations[0].Subject.OrganizationUnits = []string{"kube-ou"}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
		Expect(err).NotTo(HaveOccurred())
		_, err = dyn.Resource(resource("v1alpha1", "managedclusteraddons")).Namespace(workNamespace).UpdateStatus(ctx, &unstructured.Unstructured{Object: content}, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())

		beta := get(ctx, "v1beta1", "managedclusteraddons", workNamespace, "application-manager", nil)
		Expect(beta.GetAnnotations()).To(HaveKey(addonv1beta1.V1alpha1RegistrationsAnnotation))
		Expect(unstructured.SetNestedField(beta.Object, "Customized", "status", "healthCheck", "mode")).To(Succeed())
		_, err = dyn.Resource(resource("v1beta1", "managedclusteraddons")).Namespace(workNamespace).UpdateStatus(ctx, beta, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		get(ctx, "v1alpha1", "managedclusteraddons", workNamespace, "application-manager", typed)
		Expect(typed.Status.HealthCheck.Mode).To(Equal(addonv1alpha1.HealthCheckModeCustomized))
		Expect(typed.Status.Registrations[0].Subject.OrganizationUnits).To(Equal([]string{"kube-ou"}))
		Expect(typed.Status.KubeClientDriver).To(Equal(addonv1alpha1.KubeClientDriverToken))
		Expect(typed.Annotations).To(BeEmpty())
	})

	It("restores a spec.conversion changed by someone else", func(ctx SpecContext) {
		name := addonconversion.CRDs[0]
		_, err := apiext.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, name, types.MergePatchType,
			[]byte(`{"spec":{"conversion":{"strategy":"None","webhook":null}}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(configured).WithContext(ctx).WithTimeout(20 * time.Second).Should(Succeed())
	})

	It("shows the objects at v1beta1 as OCM's YAML does", func(ctx SpecContext) {
		u := get(ctx, "v1beta1", "managedclusteraddons", workNamespace, "from-beta", nil)
		out, err := yaml.Marshal(u.Object["status"])
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("registrations:\n- kubeClient:\n    driver: csr\n    subject:\n      user: beta-agent\n  type: kubeClient\n"))
	})

	AfterAll(func(ctx SpecContext) {
		for _, plural := range []string{"managedclusteraddons", "addondeploymentconfigs"} {
			err := dyn.Resource(resource("v1alpha1", plural)).Namespace(workNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		}
		for _, plural := range []string{"clustermanagementaddons", "addontemplates"} {
			err := dyn.Resource(resource("v1alpha1", plural)).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		}
	})
})
