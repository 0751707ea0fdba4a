package v1alpha1_test

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdDir holds the generated CRDs, relative to this package.
const crdDir = "../../../crds/bases"

// readCRD reads the generated CRD of plural in proxy.open-cluster-management.io.
func readCRD(t *testing.T, plural string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(crdDir, "proxy.open-cluster-management.io_"+plural+".yaml"))
	if err != nil {
		t.Fatalf("reading generated CRD (run make generate): %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// TestCRDsMatchClusterProxy checks names, scope, versions, subresources, printer columns and
// deprecation of both CRDs against cluster-proxy's, so that kubectl and upstream clients
// behave the same: cluster-scoped, no short names, no printer columns, one served and stored
// version v1alpha1 with a status subresource, and the resolver deprecated with upstream's
// warning.
func TestCRDsMatchClusterProxy(t *testing.T) {
	for _, tc := range []struct {
		plural, kind string
		warning      *string
	}{
		{plural: "managedproxyconfigurations", kind: "ManagedProxyConfiguration"},
		{plural: "managedproxyserviceresolvers", kind: "ManagedProxyServiceResolver",
			warning: ptr("ManagedProxyServiceResolver is deprecated and will be removed in the next release")},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			crd := readCRD(t, tc.plural)
			n := crd.Spec.Names
			if crd.Name != tc.plural+".proxy.open-cluster-management.io" || n.Kind != tc.kind || n.ListKind != tc.kind+"List" ||
				n.Plural != tc.plural || len(n.ShortNames) != 0 || len(n.Categories) != 0 {
				t.Errorf("name %s, names %+v", crd.Name, n)
			}
			if crd.Spec.Scope != apiextensionsv1.ClusterScoped {
				t.Errorf("scope %s, want Cluster", crd.Spec.Scope)
			}
			if len(crd.Spec.Versions) != 1 {
				t.Fatalf("versions %+v, want v1alpha1 only", crd.Spec.Versions)
			}
			v := crd.Spec.Versions[0]
			if v.Name != "v1alpha1" || !v.Served || !v.Storage {
				t.Errorf("version %s served %v storage %v, want v1alpha1 served and stored", v.Name, v.Served, v.Storage)
			}
			if v.Subresources == nil || v.Subresources.Status == nil || v.Subresources.Scale != nil {
				t.Errorf("subresources %+v, want status only", v.Subresources)
			}
			if len(v.AdditionalPrinterColumns) != 0 {
				t.Errorf("printer columns %+v, want none", v.AdditionalPrinterColumns)
			}
			if v.Deprecated != (tc.warning != nil) || !equalPtr(v.DeprecationWarning, tc.warning) {
				t.Errorf("deprecated %v, warning %v; want warning %v", v.Deprecated, deref(v.DeprecationWarning), deref(tc.warning))
			}
		})
	}
}

// TestResolverStatusRequiresConditions: upstream's schema requires status.conditions, so a
// status write without them is refused.
func TestResolverStatusRequiresConditions(t *testing.T) {
	status := readCRD(t, "managedproxyserviceresolvers").Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	if len(status.Required) != 1 || status.Required[0] != "conditions" {
		t.Errorf("status.required = %v, want [conditions]", status.Required)
	}
}

func ptr[T any](v T) *T { return &v }

func equalPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
