package v1alpha1_test

import (
	"encoding/json"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestCRDMatchesOCM checks names, scope, subresources and printer columns of the
// ManifestWorkReplicaSet CRD against OCM's, so kubectl output is the same.
func TestCRDMatchesOCM(t *testing.T) {
	data, err := os.ReadFile("../../../crds/bases/work.open-cluster-management.io_manifestworkreplicasets.yaml")
	if err != nil {
		t.Fatalf("reading generated CRD (run make generate): %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	n := crd.Spec.Names
	if n.Plural != "manifestworkreplicasets" || n.Kind != "ManifestWorkReplicaSet" || len(n.ShortNames) != 1 || n.ShortNames[0] != "mwrs" ||
		crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("names %+v, scope %s", n, crd.Spec.Scope)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1alpha1" || crd.Spec.Versions[0].Subresources == nil ||
		crd.Spec.Versions[0].Subresources.Status == nil {
		t.Fatalf("versions: %+v", crd.Spec.Versions)
	}
	want := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Placement", Type: "string", Description: "Reason", JSONPath: `.status.conditions[?(@.type=="PlacementVerified")].reason`},
		{Name: "Found", Type: "string", Description: "Configured", JSONPath: `.status.conditions[?(@.type=="PlacementVerified")].status`},
		{Name: "ManifestWorks", Type: "string", Description: "Reason", JSONPath: `.status.conditions[?(@.type=="ManifestworkApplied")].reason`},
		{Name: "Applied", Type: "string", Description: "Applied", JSONPath: `.status.conditions[?(@.type=="ManifestworkApplied")].status`},
	}
	got := crd.Spec.Versions[0].AdditionalPrinterColumns
	if len(got) != len(want) {
		t.Fatalf("printer columns: got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("printer column %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestTemplateSchemaIsManifestWorkSpec: the replica set's manifestWorkTemplate is
// generated from the very type of a ManifestWork's spec, so the two schemas agree
// field for field.
func TestTemplateSchemaIsManifestWorkSpec(t *testing.T) {
	read := func(name string) *apiextensionsv1.JSONSchemaProps {
		data, err := os.ReadFile("../../../crds/bases/" + name)
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
	tmpl := read("work.open-cluster-management.io_manifestworkreplicasets.yaml").Properties["spec"].Properties["manifestWorkTemplate"]
	want, err := json.Marshal(spec.Properties)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(tmpl.Properties)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("spec.manifestWorkTemplate of ManifestWorkReplicaSet differs from spec of ManifestWork:\n got %s\nwant %s", got, want)
	}
}

// TestRequiredAsInOCM: OCM's work/v1alpha1 package is optional by default, so only
// placementRefs is required in the spec and nothing in the status.
func TestRequiredAsInOCM(t *testing.T) {
	data, err := os.ReadFile("../../../crds/bases/work.open-cluster-management.io_manifestworkreplicasets.yaml")
	if err != nil {
		t.Fatalf("reading generated CRD (run make generate): %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	if got := root.Properties["spec"].Required; len(got) != 1 || got[0] != "placementRefs" {
		t.Errorf("spec required: got %v, want [placementRefs]", got)
	}
	status := root.Properties["status"]
	for path, s := range map[string]apiextensionsv1.JSONSchemaProps{
		"status":                    status,
		"status.summary":            status.Properties["summary"],
		"status.placementSummary[]": *status.Properties["placementSummary"].Items.Schema,
	} {
		if len(s.Required) != 0 {
			t.Errorf("%s required: got %v, want none", path, s.Required)
		}
	}
}
