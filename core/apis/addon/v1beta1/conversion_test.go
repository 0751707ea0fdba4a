package v1beta1_test

import (
	"encoding/json"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/addon/v1beta1"
)

const kubeSigner = certificatesv1.KubeAPIServerClientSignerName

func mustEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s:\n%s", what, diff.Diff(want, got))
	}
}

func TestClusterManagementAddOnMappings(t *testing.T) {
	alpha := &v1alpha1.ClusterManagementAddOn{
		TypeMeta:   metav1.TypeMeta{APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ClusterManagementAddOn"},
		ObjectMeta: metav1.ObjectMeta{Name: "application-manager", Annotations: map[string]string{"keep": "me"}},
		Spec: v1alpha1.ClusterManagementAddOnSpec{
			AddOnMeta: v1alpha1.AddOnMeta{DisplayName: "Application Manager"},
			SupportedConfigs: []v1alpha1.ConfigMeta{
				{ConfigGroupResource: v1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
					DefaultConfig: &v1alpha1.ConfigReferent{Namespace: "open-cluster-management", Name: "default-deploy-config"}},
				{ConfigGroupResource: v1alpha1.ConfigGroupResource{Group: "example.io", Resource: "exampleconfigs"}},
			},
			InstallStrategy: v1alpha1.InstallStrategy{Type: v1alpha1.AddonInstallStrategyPlacements, Placements: []v1alpha1.PlacementStrategy{
				{PlacementRef: v1alpha1.PlacementRef{Namespace: "default", Name: "all"}},
			}},
		},
		Status: v1alpha1.ClusterManagementAddOnStatus{DefaultConfigReferences: []v1alpha1.DefaultConfigReference{{
			ConfigGroupResource: v1alpha1.ConfigGroupResource{Resource: "addondeploymentconfigs"},
			DesiredConfig:       &v1alpha1.ConfigSpecHash{ConfigReferent: v1alpha1.ConfigReferent{Name: "a"}, SpecHash: "h"},
		}}},
	}
	beta, err := v1beta1.ClusterManagementAddOnFromV1alpha1(alpha)
	if err != nil {
		t.Fatal(err)
	}
	if beta.APIVersion != "addon.open-cluster-management.io/v1beta1" || beta.Kind != "ClusterManagementAddOn" {
		t.Errorf("type meta %+v", beta.TypeMeta)
	}
	// supportedConfigs become defaultConfigs; a kind without a default gets the reserved name.
	mustEqual(t, "defaultConfigs", beta.Spec.DefaultConfigs, []v1beta1.AddOnConfig{
		{ConfigGroupResource: v1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
			ConfigReferent: v1beta1.ConfigReferent{Namespace: "open-cluster-management", Name: "default-deploy-config"}},
		{ConfigGroupResource: v1beta1.ConfigGroupResource{Group: "example.io", Resource: "exampleconfigs"},
			ConfigReferent: v1beta1.ConfigReferent{Name: v1beta1.ReservedNoDefaultConfigName}},
	})
	mustEqual(t, "annotations", beta.Annotations, map[string]string{"keep": "me"})
	mustEqual(t, "placements", beta.Spec.InstallStrategy.Placements[0].PlacementRef, v1beta1.PlacementRef{Namespace: "default", Name: "all"})
	data, err := json.Marshal(beta.Status)
	if err != nil || !strings.Contains(string(data), `"defaultConfigReferences":[`) {
		t.Errorf("v1beta1 status is spelled defaultConfigReferences: %s (%v)", data, err)
	}
	back, err := v1beta1.ClusterManagementAddOnToV1alpha1(beta)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "round trip", back, alpha)

	// The deprecated addOnConfiguration has no place in v1beta1: it travels in an annotation.
	alpha.Spec.AddOnConfiguration = v1alpha1.ConfigCoordinates{CRDName: "configs.example.io", CRName: "cfg", LastObservedGeneration: 3}
	beta, err = v1beta1.ClusterManagementAddOnFromV1alpha1(alpha)
	if err != nil {
		t.Fatal(err)
	}
	if v := beta.Annotations[v1beta1.AddOnConfigurationAnnotation]; !strings.Contains(v, `"crdName":"configs.example.io"`) {
		t.Errorf("addOnConfiguration annotation %q", v)
	}
	back, err = v1beta1.ClusterManagementAddOnToV1alpha1(beta)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "round trip with addOnConfiguration", back, alpha)
}

func TestDefaultConfigsToV1alpha1(t *testing.T) {
	beta := &v1beta1.ClusterManagementAddOn{Spec: v1beta1.ClusterManagementAddOnSpec{DefaultConfigs: []v1beta1.AddOnConfig{
		{ConfigGroupResource: v1beta1.ConfigGroupResource{Resource: "addontemplates"}, ConfigReferent: v1beta1.ConfigReferent{Name: "hello-template"}},
		{ConfigGroupResource: v1beta1.ConfigGroupResource{Resource: "addondeploymentconfigs"}, ConfigReferent: v1beta1.ConfigReferent{Name: v1beta1.ReservedNoDefaultConfigName}},
	}}}
	alpha, err := v1beta1.ClusterManagementAddOnToV1alpha1(beta)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "supportedConfigs", alpha.Spec.SupportedConfigs, []v1alpha1.ConfigMeta{
		{ConfigGroupResource: v1alpha1.ConfigGroupResource{Resource: "addontemplates"}, DefaultConfig: &v1alpha1.ConfigReferent{Name: "hello-template"}},
		{ConfigGroupResource: v1alpha1.ConfigGroupResource{Resource: "addondeploymentconfigs"}},
	})
	if len(alpha.Annotations) != 0 {
		t.Errorf("annotations %v", alpha.Annotations)
	}
}

func TestManagedClusterAddOnMappings(t *testing.T) {
	alpha := &v1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "helloworld", Namespace: "cluster1"},
		Spec: v1alpha1.ManagedClusterAddOnSpec{
			InstallNamespace: "helloworld",
			Configs:          []v1alpha1.AddOnConfig{{ConfigGroupResource: v1alpha1.ConfigGroupResource{Resource: "addondeploymentconfigs"}, ConfigReferent: v1alpha1.ConfigReferent{Namespace: "cluster1", Name: "cfg"}}},
		},
		Status: v1alpha1.ManagedClusterAddOnStatus{
			Namespace: "open-cluster-management-agent-addon",
			Registrations: []v1alpha1.RegistrationConfig{
				{SignerName: kubeSigner, Subject: v1alpha1.Subject{User: "agent", Groups: []string{"g"}}},
				{SignerName: "example.com/signer", Subject: v1alpha1.Subject{User: "agent", Groups: []string{"g"}, OrganizationUnits: []string{"ou"}}},
			},
			KubeClientDriver: v1alpha1.KubeClientDriverToken,
			ConfigReferences: []v1alpha1.ConfigReference{{
				ConfigGroupResource:    v1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
				ConfigReferent:         v1alpha1.ConfigReferent{Name: "managed-serviceaccount-2.10"},
				LastObservedGeneration: 1,
				DesiredConfig:          &v1alpha1.ConfigSpecHash{ConfigReferent: v1alpha1.ConfigReferent{Name: "managed-serviceaccount-2.10"}, SpecHash: "649d"},
			}},
			HealthCheck: v1alpha1.HealthCheck{Mode: v1alpha1.HealthCheckModeCustomized},
		},
	}
	beta, err := v1beta1.ManagedClusterAddOnFromV1alpha1(alpha)
	if err != nil {
		t.Fatal(err)
	}
	// installNamespace is OCM's annotation; nothing else needs one.
	mustEqual(t, "annotations", beta.Annotations, map[string]string{v1beta1.InstallNamespaceAnnotation: "helloworld"})
	mustEqual(t, "registrations", beta.Status.Registrations, []v1beta1.RegistrationConfig{
		{Type: v1beta1.KubeClient, KubeClient: &v1beta1.KubeClientConfig{
			Subject: v1beta1.KubeClientSubject{BaseSubject: v1beta1.BaseSubject{User: "agent", Groups: []string{"g"}}}, Driver: "token"}},
		{Type: v1beta1.CustomSigner, CustomSigner: &v1beta1.CustomSignerConfig{SignerName: "example.com/signer",
			Subject: v1beta1.Subject{BaseSubject: v1beta1.BaseSubject{User: "agent", Groups: []string{"g"}}, OrganizationUnits: []string{"ou"}}}},
	})
	mustEqual(t, "configReferences", beta.Status.ConfigReferences, []v1beta1.ConfigReference{{
		ConfigGroupResource:    v1beta1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
		LastObservedGeneration: 1,
		DesiredConfig:          &v1beta1.ConfigSpecHash{ConfigReferent: v1beta1.ConfigReferent{Name: "managed-serviceaccount-2.10"}, SpecHash: "649d"},
	}})
	data, err := json.Marshal(beta.Status.Registrations)
	if err != nil || !strings.Contains(string(data), `"type":"kubeClient","kubeClient":{"subject":{"user":"agent","groups":["g"]},"driver":"token"}`) ||
		!strings.Contains(string(data), `"organizationUnits":["ou"]`) {
		t.Errorf("registrations as JSON: %s (%v)", data, err)
	}
	back, err := v1beta1.ManagedClusterAddOnToV1alpha1(beta)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "round trip", back, alpha)
	if back.Annotations != nil {
		t.Errorf("annotations left on v1alpha1: %v", back.Annotations)
	}

	// What v1beta1 cannot say travels in annotations and comes back.
	lossy := alpha.DeepCopy()
	lossy.Status.Registrations[0].Subject.OrganizationUnits = []string{"kube-ou"}
	lossy.Status.ConfigReferences[0].ConfigReferent = v1alpha1.ConfigReferent{Name: "older"}
	lossy.Status.AddOnConfiguration = v1alpha1.ConfigCoordinates{CRName: "x"}
	beta, err = v1beta1.ManagedClusterAddOnFromV1alpha1(lossy)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{v1beta1.V1alpha1RegistrationsAnnotation, v1beta1.V1alpha1ConfigReferencesAnnotation, v1beta1.AddOnConfigurationAnnotation} {
		if _, ok := beta.Annotations[k]; !ok {
			t.Errorf("no annotation %s: %v", k, beta.Annotations)
		}
	}
	back, err = v1beta1.ManagedClusterAddOnToV1alpha1(beta)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "round trip of what v1beta1 cannot express", back, lossy)

	// A change made in v1beta1 wins over what the annotation carried.
	changed := beta.DeepCopy()
	changed.Status.Registrations[0].KubeClient.Subject.User = "someone-else"
	back, err = v1beta1.ManagedClusterAddOnToV1alpha1(changed)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Status.Registrations[0]; got.Subject.User != "someone-else" || len(got.Subject.OrganizationUnits) != 0 {
		t.Errorf("registration changed in v1beta1 came back as %+v", got)
	}
	if _, ok := back.Annotations[v1beta1.V1alpha1RegistrationsAnnotation]; ok {
		t.Errorf("stale annotation kept: %v", back.Annotations)
	}
	mustEqual(t, "configReferences still restored", back.Status.ConfigReferences, lossy.Status.ConfigReferences)
}

func TestManagedClusterAddOnToV1alpha1(t *testing.T) {
	beta := &v1beta1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "cluster1", Annotations: map[string]string{v1beta1.InstallNamespaceAnnotation: "agent-ns"}},
		Status: v1beta1.ManagedClusterAddOnStatus{Registrations: []v1beta1.RegistrationConfig{
			{Type: v1beta1.KubeClient, KubeClient: &v1beta1.KubeClientConfig{Driver: "csr"}},
			{Type: v1beta1.CustomSigner, CustomSigner: &v1beta1.CustomSignerConfig{SignerName: "example.com/s", Subject: v1beta1.Subject{OrganizationUnits: []string{"o"}}}},
		}},
	}
	alpha, err := v1beta1.ManagedClusterAddOnToV1alpha1(beta)
	if err != nil {
		t.Fatal(err)
	}
	if alpha.Spec.InstallNamespace != "agent-ns" || alpha.Annotations != nil {
		t.Errorf("installNamespace %q, annotations %v", alpha.Spec.InstallNamespace, alpha.Annotations)
	}
	mustEqual(t, "registrations", alpha.Status.Registrations, []v1alpha1.RegistrationConfig{
		{SignerName: kubeSigner},
		{SignerName: "example.com/s", Subject: v1alpha1.Subject{OrganizationUnits: []string{"o"}}},
	})
	if alpha.Status.KubeClientDriver != "csr" {
		t.Errorf("kubeClientDriver %q", alpha.Status.KubeClientDriver)
	}

	// A registration without its configuration has no v1alpha1 form: it comes back as it was.
	beta.Status.Registrations = append(beta.Status.Registrations, v1beta1.RegistrationConfig{Type: v1beta1.CustomSigner})
	alpha, err = v1beta1.ManagedClusterAddOnToV1alpha1(beta)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := alpha.Annotations[v1beta1.V1beta1RegistrationsAnnotation]; !ok {
		t.Errorf("no %s: %v", v1beta1.V1beta1RegistrationsAnnotation, alpha.Annotations)
	}
	again, err := v1beta1.ManagedClusterAddOnFromV1alpha1(alpha)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, "round trip", again, beta)
}

func TestSameShapedKinds(t *testing.T) {
	adc := &v1alpha1.AddOnDeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "cluster1"},
		Spec: v1alpha1.AddOnDeploymentConfigSpec{
			CustomizedVariables:   []v1alpha1.CustomizedVariable{{Name: "LOG_LEVEL", Value: "4"}},
			AgentInstallNamespace: "agents",
			ProxyConfig:           v1alpha1.ProxyConfig{HTTPSProxy: "https://proxy", CABundle: []byte("ca")},
			ReplicaConfigs:        []v1alpha1.ReplicaConfig{{WorkloadID: "deployments:*", Replicas: 2}},
		},
	}
	b := v1beta1.AddOnDeploymentConfigFromV1alpha1(adc)
	if b.Spec.AgentInstallNamespace != "agents" || string(b.Spec.ProxyConfig.CABundle) != "ca" || b.Spec.ReplicaConfigs[0].Replicas != 2 {
		t.Errorf("AddOnDeploymentConfig spec %+v", b.Spec)
	}
	mustEqual(t, "AddOnDeploymentConfig round trip", v1beta1.AddOnDeploymentConfigToV1alpha1(b), adc)

	tmpl := &v1alpha1.AddOnTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "t"},
		Spec: v1alpha1.AddOnTemplateSpec{AddonName: "hello", Registration: []v1alpha1.RegistrationSpec{{
			Type: v1alpha1.RegistrationTypeCustomSigner,
			CustomSigner: &v1alpha1.CustomSignerRegistrationConfig{SignerName: "example.com/s",
				SigningCA: v1alpha1.SigningCARef{Name: "ca", Namespace: "signers"}},
		}}},
	}
	bt := v1beta1.AddOnTemplateFromV1alpha1(tmpl)
	if ca := bt.Spec.Registration[0].CustomSigner.SigningCA; ca.Namespace != "signers" || ca.Name != "ca" {
		t.Errorf("signingCA %+v", ca)
	}
	mustEqual(t, "AddOnTemplate round trip", v1beta1.AddOnTemplateToV1alpha1(bt), tmpl)
}

func TestConvertRejectsOtherTypes(t *testing.T) {
	if _, err := v1beta1.Convert(&metav1.Status{}); err == nil {
		t.Error("converting a Status succeeded")
	}
}
