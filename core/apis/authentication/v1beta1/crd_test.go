package v1beta1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdFile is the generated ManagedServiceAccount CRD, relative to this package.
var crdFile = filepath.Join("..", "..", "..", "crds", "bases", "authentication.open-cluster-management.io_managedserviceaccounts.yaml")

const deprecationWarning = "authentication.open-cluster-management.io/v1alpha1 ManagedServiceAccount is deprecated; " +
	"use authentication.open-cluster-management.io/v1beta1 ManagedServiceAccount; version v1alpha1 will be removed in the next release"

func readCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatalf("reading generated CRD (run make generate): %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// TestCRDMatchesManagedServiceAccount checks the CRD against managed-serviceaccount's:
// namespaced, no short names or printer columns, v1alpha1 served but not stored and
// deprecated with upstream's warning, v1beta1 served and stored, a status subresource on
// both, and no conversion webhook (the schemas are equal; see
// TestVersionsShareOneSchema).
func TestCRDMatchesManagedServiceAccount(t *testing.T) {
	crd := readCRD(t)
	n := crd.Spec.Names
	if crd.Name != "managedserviceaccounts.authentication.open-cluster-management.io" || n.Kind != "ManagedServiceAccount" ||
		n.ListKind != "ManagedServiceAccountList" || n.Singular != "managedserviceaccount" || len(n.ShortNames) != 0 || len(n.Categories) != 0 {
		t.Errorf("name %s, names %+v", crd.Name, n)
	}
	if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("scope %s, want Namespaced", crd.Spec.Scope)
	}
	if c := crd.Spec.Conversion; c != nil && c.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("conversion %+v, want None", c)
	}
	if len(crd.Spec.Versions) != 2 {
		t.Fatalf("versions %+v, want v1alpha1 and v1beta1", crd.Spec.Versions)
	}
	for i, want := range []struct {
		name       string
		storage    bool
		deprecated bool
	}{{"v1alpha1", false, true}, {"v1beta1", true, false}} {
		v := crd.Spec.Versions[i]
		if v.Name != want.name || !v.Served || v.Storage != want.storage {
			t.Errorf("version %d: %s served %v storage %v, want %s served, storage %v", i, v.Name, v.Served, v.Storage, want.name, want.storage)
		}
		if v.Deprecated != want.deprecated {
			t.Errorf("%s: deprecated %v, want %v", v.Name, v.Deprecated, want.deprecated)
		}
		if want.deprecated && (v.DeprecationWarning == nil || *v.DeprecationWarning != deprecationWarning) {
			t.Errorf("%s: deprecation warning %v, want %q", v.Name, v.DeprecationWarning, deprecationWarning)
		}
		if v.Subresources == nil || v.Subresources.Status == nil || v.Subresources.Scale != nil {
			t.Errorf("%s: subresources %+v, want status only", v.Name, v.Subresources)
		}
		if len(v.AdditionalPrinterColumns) != 0 {
			t.Errorf("%s: printer columns %+v, want none", v.Name, v.AdditionalPrinterColumns)
		}
	}
}

// TestVersionsShareOneSchema: v1alpha1 and v1beta1 have the same schema (descriptions
// aside), which is what makes conversion None lossless: the API server only rewrites
// apiVersion.
func TestVersionsShareOneSchema(t *testing.T) {
	crd := readCRD(t)
	var schemas []string
	for _, v := range crd.Spec.Versions {
		s := v.Schema.OpenAPIV3Schema.DeepCopy()
		stripDescriptions(s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		schemas = append(schemas, string(b))
	}
	if schemas[0] != schemas[1] {
		t.Errorf("schemas differ:\nv1alpha1 %s\nv1beta1  %s", schemas[0], schemas[1])
	}
}

func stripDescriptions(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	for k, p := range s.Properties {
		stripDescriptions(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		stripDescriptions(s.Items.Schema)
	}
}
