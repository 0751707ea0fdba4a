package v1beta1_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/addon/v1beta1"
	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
)

// seedDir holds the documented example objects (v1alpha1), relative to this package.
const seedDir = "../../../../e2e/testdata/seeds"

// TestSeedsConvertToValidV1beta1 converts every add-on seed, as the API server stores it
// (CRD defaults applied), to v1beta1: the result must be valid against the v1beta1 CRD,
// decode strictly, carry no conversion annotation but OCM's install namespace, and
// convert back to the same object.
func TestSeedsConvertToValidV1beta1(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(seedDir, "addon-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no add-on seeds")
	}
	v := seedcheck.ForTest(t, "../../../crds/bases/addon.open-cluster-management.io_*.yaml", v1alpha1.AddToScheme, v1beta1.AddToScheme)
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := v.Defaulted(data)
			if err != nil {
				t.Fatal(err)
			}
			apiVersion, _ := stored["apiVersion"].(string)
			kind, _ := stored["kind"].(string)
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil {
				t.Fatal(err)
			}
			alpha, err := scheme.New(gv.WithKind(kind))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(stored)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, alpha); err != nil {
				t.Fatal(err)
			}
			beta, err := v1beta1.Convert(alpha)
			if err != nil {
				t.Fatal(err)
			}
			betaJSON, err := json.Marshal(beta)
			if err != nil {
				t.Fatal(err)
			}
			// The API server drops the nulls of fields that are not nullable (pointers and
			// slices without omitempty) from what a conversion returns.
			if betaJSON, err = dropNulls(betaJSON); err != nil {
				t.Fatal(err)
			}
			if _, err := v.Check(betaJSON); err != nil {
				t.Fatalf("converted to v1beta1: %v\n%s", err, betaJSON)
			}
			for k := range beta.(interface{ GetAnnotations() map[string]string }).GetAnnotations() {
				if strings.HasPrefix(k, v1beta1.ConversionAnnotationPrefix) {
					t.Errorf("conversion annotation %s on a plain object", k)
				}
			}
			back, err := v1beta1.Convert(beta)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(back, alpha) {
				t.Errorf("round trip changed the seed:\n%s", diff.Diff(alpha, back))
			}
		})
	}
}

func dropNulls(data []byte) ([]byte, error) {
	var u any
	if err := json.Unmarshal(data, &u); err != nil {
		return nil, err
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				if v == nil {
					delete(x, k)
				} else {
					walk(v)
				}
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(u)
	return json.Marshal(u)
}
