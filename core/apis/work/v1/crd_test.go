package v1_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdDir holds the CRDs generated from this package's markers.
const crdDir = "../../../crds/bases"

func readCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(crdDir, name))
	if err != nil {
		t.Fatalf("reading generated CRD (run make generate): %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%s: got %d versions, want 1", name, len(crd.Spec.Versions))
	}
	return crd
}

// TestCRDsMatchOCM checks names, scope, subresources and printer columns against
// what OCM's CRDs declare, so that kubectl output and clients behave the same.
func TestCRDsMatchOCM(t *testing.T) {
	for _, tc := range []struct {
		file, plural, kind string
		scope              apiextensionsv1.ResourceScope
	}{
		{"work.open-cluster-management.io_manifestworks.yaml", "manifestworks", "ManifestWork", apiextensionsv1.NamespaceScoped},
		{"work.open-cluster-management.io_appliedmanifestworks.yaml", "appliedmanifestworks", "AppliedManifestWork", apiextensionsv1.ClusterScoped},
	} {
		crd := readCRD(t, tc.file)
		if crd.Spec.Group != "work.open-cluster-management.io" || crd.Spec.Names.Plural != tc.plural ||
			crd.Spec.Names.Kind != tc.kind || crd.Spec.Scope != tc.scope {
			t.Errorf("%s: got group %s, names %+v, scope %s", tc.file, crd.Spec.Group, crd.Spec.Names, crd.Spec.Scope)
		}
		v := crd.Spec.Versions[0]
		if v.Name != "v1" || !v.Served || !v.Storage {
			t.Errorf("%s: version %s served=%v storage=%v", tc.file, v.Name, v.Served, v.Storage)
		}
		if v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s: no status subresource", tc.file)
		}
		if len(v.AdditionalPrinterColumns) != 0 || len(crd.Spec.Names.ShortNames) != 0 {
			t.Errorf("%s: OCM declares no printer columns or short names, got %v / %v",
				tc.file, v.AdditionalPrinterColumns, crd.Spec.Names.ShortNames)
		}
	}

	mw := readCRD(t, "work.open-cluster-management.io_manifestworks.yaml")
	spec := mw.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	item := spec.Properties["workload"].Properties["manifests"].Items.Schema
	if !item.XEmbeddedResource || item.XPreserveUnknownFields == nil || !*item.XPreserveUnknownFields {
		t.Errorf("spec.workload.manifests[]: want an embedded resource preserving unknown fields, got %+v", item)
	}
	policy := spec.Properties["deleteOption"].Properties["propagationPolicy"]
	if policy.Default == nil || string(policy.Default.Raw) != `"Foreground"` || len(policy.Enum) != 3 {
		t.Errorf("deleteOption.propagationPolicy: default %v, enum %v", policy.Default, policy.Enum)
	}
	strategy := spec.Properties["manifestConfigs"].Items.Schema.Properties["updateStrategy"].Properties["type"]
	if strategy.Default == nil || string(strategy.Default.Raw) != `"Update"` || len(strategy.Enum) != 4 {
		t.Errorf("updateStrategy.type: default %v, enum %v", strategy.Default, strategy.Enum)
	}
}

// TestManifestConfigSchemaMatchesOCM pins the manifestConfigs schema to OCM's
// current one: condition rule types and string CEL expressions, rules keyed by
// condition, feedbackScrapeType, and the three ignore-field selectors.
func TestManifestConfigSchemaMatchesOCM(t *testing.T) {
	mw := readCRD(t, "work.open-cluster-management.io_manifestworks.yaml")
	cfg := mw.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["manifestConfigs"].Items.Schema

	rules := cfg.Properties["conditionRules"]
	if rules.XListType == nil || *rules.XListType != "map" || !slices.Equal(rules.XListMapKeys, []string{"condition"}) {
		t.Errorf("conditionRules: list type %v, keys %v; want a map keyed by condition", rules.XListType, rules.XListMapKeys)
	}
	rule := rules.Items.Schema
	if got := enumOf(rule.Properties["type"]); !slices.Equal(got, []string{"WellKnownConditions", "CEL"}) {
		t.Errorf("conditionRules[].type enum: got %v", got)
	}
	if cel := rule.Properties["celExpressions"]; cel.Type != "array" || cel.Items.Schema.Type != "string" {
		t.Errorf("conditionRules[].celExpressions: got type %s of %s, want array of string", cel.Type, cel.Items.Schema.Type)
	}
	if !slices.Equal(rule.Required, []string{"condition", "type"}) {
		t.Errorf("conditionRules[] required: got %v", rule.Required)
	}
	if len(rule.XValidations) != 1 || rule.XValidations[0].Message != "Condition is required for CEL rules" {
		t.Errorf("conditionRules[] validations: got %+v", rule.XValidations)
	}

	scrape := cfg.Properties["feedbackScrapeType"]
	if scrape.Default == nil || string(scrape.Default.Raw) != `"Poll"` || !slices.Equal(enumOf(scrape), []string{"Poll", "Watch"}) {
		t.Errorf("feedbackScrapeType: default %v, enum %v", scrape.Default, enumOf(scrape))
	}

	ssa := cfg.Properties["updateStrategy"].Properties["serverSideApply"]
	ignore := ssa.Properties["ignoreFields"].Items.Schema
	for _, name := range []string{"jsonPaths", "jsonPointers", "jqPathExpressions"} {
		if p := ignore.Properties[name]; p.Type != "array" || p.Items.Schema.Type != "string" {
			t.Errorf("ignoreFields[].%s: got type %s, want array of string", name, p.Type)
		}
	}
	if !slices.Equal(ignore.Required, []string{"condition"}) || len(ignore.XValidations) != 1 {
		t.Errorf("ignoreFields[]: required %v, validations %+v; want only condition required and one rule", ignore.Required, ignore.XValidations)
	}

	// Optional in OCM's schema, which sets +kubebuilder:validation:Optional package-wide.
	spec := mw.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for path, s := range map[string]apiextensionsv1.JSONSchemaProps{
		"spec.deleteOption": spec.Properties["deleteOption"],
		"spec.executor":     spec.Properties["executor"],
	} {
		if len(s.Required) != 0 {
			t.Errorf("%s: required %v, want none", path, s.Required)
		}
	}
	amw := readCRD(t, "work.open-cluster-management.io_appliedmanifestworks.yaml")
	if got := amw.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Required; !slices.Equal(got, []string{"hubHash", "manifestWorkName"}) {
		t.Errorf("AppliedManifestWork spec required: got %v, want hubHash and manifestWorkName", got)
	}
}

func enumOf(s apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	for _, e := range s.Enum {
		out = append(out, strings.Trim(string(e.Raw), `"`))
	}
	return out
}
