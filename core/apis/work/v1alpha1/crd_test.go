package v1alpha1_test

import (
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
