package v1alpha1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

type column struct{ name, path string }

// TestCRDsMatchOCM checks names, scope, short names, versions, status subresource and
// printer columns of the add-on CRDs against OCM's, so kubectl behaves the same. Both
// v1alpha1 (stored) and v1beta1 are served, as in OCM.
func TestCRDsMatchOCM(t *testing.T) {
	conditionColumns := []column{
		{"Available", `.status.conditions[?(@.type=="Available")].status`},
		{"Degraded", `.status.conditions[?(@.type=="Degraded")].status`},
		{"Progressing", `.status.conditions[?(@.type=="Progressing")].status`},
	}
	for _, tc := range []struct {
		plural, kind string
		scope        apiextensionsv1.ResourceScope
		shortNames   []string
		status       bool
		alpha, beta  []column // printer columns per version
	}{
		{"clustermanagementaddons", "ClusterManagementAddOn", apiextensionsv1.ClusterScoped, []string{"cma", "cmas"}, true,
			[]column{{"DISPLAY NAME", ".spec.addOnMeta.displayName"}, {"CRD NAME", ".spec.addOnConfiguration.crdName"}},
			[]column{{"DISPLAY NAME", ".spec.addOnMeta.displayName"}}},
		{"managedclusteraddons", "ManagedClusterAddOn", apiextensionsv1.NamespaceScoped, []string{"mca", "mcas"}, true,
			conditionColumns, conditionColumns},
		{"addondeploymentconfigs", "AddOnDeploymentConfig", apiextensionsv1.NamespaceScoped, nil, false, nil, nil},
		{"addontemplates", "AddOnTemplate", apiextensionsv1.ClusterScoped, nil, false,
			[]column{{"ADDON NAME", ".spec.addonName"}}, []column{{"ADDON NAME", ".spec.addonName"}}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("../../../crds/bases", "addon.open-cluster-management.io_"+tc.plural+".yaml"))
			if err != nil {
				t.Fatalf("reading generated CRD (run make generate): %v", err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(data, crd); err != nil {
				t.Fatal(err)
			}
			if crd.Spec.Names.Kind != tc.kind || crd.Spec.Scope != tc.scope || !slices.Equal(crd.Spec.Names.ShortNames, tc.shortNames) {
				t.Errorf("names %+v, scope %s", crd.Spec.Names, crd.Spec.Scope)
			}
			if crd.Spec.Conversion != nil {
				t.Errorf("spec.conversion %+v: the installer must not own it (the hub's webhook server sets it)", crd.Spec.Conversion)
			}
			if len(crd.Spec.Versions) != 2 || crd.Spec.Versions[0].Name != "v1alpha1" || crd.Spec.Versions[1].Name != "v1beta1" {
				t.Fatalf("versions: %+v", crd.Spec.Versions)
			}
			for i, want := range [][]column{tc.alpha, tc.beta} {
				ver := crd.Spec.Versions[i]
				if !ver.Served || ver.Storage != (i == 0) {
					t.Errorf("%s: served %v, storage %v; want served, stored only at v1alpha1", ver.Name, ver.Served, ver.Storage)
				}
				if hasStatus := ver.Subresources != nil && ver.Subresources.Status != nil; hasStatus != tc.status {
					t.Errorf("%s: status subresource: got %v, want %v", ver.Name, hasStatus, tc.status)
				}
				var got []column
				for _, c := range ver.AdditionalPrinterColumns {
					if c.Type != "string" {
						t.Errorf("%s: printer column %s has type %s, want string", ver.Name, c.Name, c.Type)
					}
					got = append(got, column{c.Name, c.JSONPath})
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: printer columns: got %v, want %v", ver.Name, got, want)
				}
			}
		})
	}
}

// TestAgentSpecSchemaIsManifestWorkSpec: an AddOnTemplate's agentSpec is
// generated from the very type of a ManifestWork's spec, so the two schemas agree
// field for field.
func TestAgentSpecSchemaIsManifestWorkSpec(t *testing.T) {
	read := func(name string) (schemas []*apiextensionsv1.JSONSchemaProps) {
		data, err := os.ReadFile(filepath.Join("../../../crds/bases", name))
		if err != nil {
			t.Fatalf("reading generated CRD (run make generate): %v", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			schemas = append(schemas, v.Schema.OpenAPIV3Schema)
		}
		return schemas
	}
	spec := read("work.open-cluster-management.io_manifestworks.yaml")[0].Properties["spec"]
	want, err := json.Marshal(spec.Properties)
	if err != nil {
		t.Fatal(err)
	}
	for _, ver := range read("addon.open-cluster-management.io_addontemplates.yaml") {
		agent := ver.Properties["spec"].Properties["agentSpec"]
		got, err := json.Marshal(agent.Properties)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("spec.agentSpec of AddOnTemplate differs from spec of ManifestWork:\n got %s\nwant %s", got, want)
		}
	}
}
