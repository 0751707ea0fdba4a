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

// TestCRDsMatchOCM checks names, scope, short names, status subresource and
// printer columns of the add-on CRDs against OCM's, so kubectl behaves the same.
func TestCRDsMatchOCM(t *testing.T) {
	for _, tc := range []struct {
		plural, kind string
		scope        apiextensionsv1.ResourceScope
		shortNames   []string
		status       bool
		columns      []column
	}{
		{"clustermanagementaddons", "ClusterManagementAddOn", apiextensionsv1.ClusterScoped, []string{"cma", "cmas"}, true,
			[]column{{"DISPLAY NAME", ".spec.addOnMeta.displayName"}, {"CRD NAME", ".spec.addOnConfiguration.crdName"}}},
		{"managedclusteraddons", "ManagedClusterAddOn", apiextensionsv1.NamespaceScoped, []string{"mca", "mcas"}, true,
			[]column{
				{"Available", `.status.conditions[?(@.type=="Available")].status`},
				{"Degraded", `.status.conditions[?(@.type=="Degraded")].status`},
				{"Progressing", `.status.conditions[?(@.type=="Progressing")].status`},
			}},
		{"addondeploymentconfigs", "AddOnDeploymentConfig", apiextensionsv1.NamespaceScoped, nil, false, nil},
		{"addontemplates", "AddOnTemplate", apiextensionsv1.ClusterScoped, nil, false,
			[]column{{"ADDON NAME", ".spec.addonName"}}},
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
			if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" {
				t.Fatalf("versions: %+v", crd.Spec.Versions)
			}
			ver := crd.Spec.Versions[0]
			if hasStatus := ver.Subresources != nil && ver.Subresources.Status != nil; hasStatus != tc.status {
				t.Errorf("status subresource: got %v, want %v", hasStatus, tc.status)
			}
			var got []column
			for _, c := range ver.AdditionalPrinterColumns {
				if c.Type != "string" {
					t.Errorf("printer column %s has type %s, want string", c.Name, c.Type)
				}
				got = append(got, column{c.Name, c.JSONPath})
			}
			if !slices.Equal(got, tc.columns) {
				t.Errorf("printer columns: got %v, want %v", got, tc.columns)
			}
		})
	}
}

// TestAgentSpecSchemaIsManifestWorkSpec: an AddOnTemplate's agentSpec is
// generated from the very type of a ManifestWork's spec, so the two schemas agree
// field for field.
func TestAgentSpecSchemaIsManifestWorkSpec(t *testing.T) {
	read := func(name string) *apiextensionsv1.JSONSchemaProps {
		data, err := os.ReadFile(filepath.Join("../../../crds/bases", name))
		if err != nil {
			t.Fatalf("reading generated CRD (run make generate): %v", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatal(err)
		}
		return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	}
	spec := read("work.open-cluster-management.io_manifestworks.yaml").Properties["spec"]
	agent := read("addon.open-cluster-management.io_addontemplates.yaml").Properties["spec"].Properties["agentSpec"]
	want, err := json.Marshal(spec.Properties)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(agent.Properties)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("spec.agentSpec of AddOnTemplate differs from spec of ManifestWork:\n got %s\nwant %s", got, want)
	}
}
