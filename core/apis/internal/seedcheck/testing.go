package seedcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// ForTest loads the CRDs matching crdGlob into a Validator for the kinds that
// addToScheme registers; any failure fails t.
func ForTest(t testing.TB, crdGlob string, addToScheme ...func(*runtime.Scheme) error) *Validator {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range addToScheme {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	v, err := New(s, crdGlob)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Rejection is a broken document that Check must refuse with an error that
// mentions Want.
type Rejection struct {
	Name, Doc, Want string
}

// ExpectRejected runs each case as a subtest of t: Check must refuse the
// document, and its error must contain the case's Want.
func ExpectRejected(t *testing.T, v *Validator, cases []Rejection) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := v.Check([]byte(tc.Doc))
			if err == nil {
				t.Fatalf("document accepted, want an error mentioning %q", tc.Want)
			}
			if !strings.Contains(err.Error(), tc.Want) {
				t.Fatalf("error %q does not mention %q", err, tc.Want)
			}
		})
	}
}

// CheckSeed validates the seed document data, read from path, with v and checks
// that the file's name ends in -<kind>.yaml; any failure fails t. It returns the
// document's kind.
func CheckSeed(t *testing.T, v *Validator, path string, data []byte) string {
	t.Helper()
	obj, err := v.Check(data)
	if err != nil {
		t.Fatal(err)
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if want := "-" + strings.ToLower(kind) + ".yaml"; !strings.HasSuffix(path, want) {
		t.Errorf("file holds a %s; its name must end in %s", kind, want)
	}
	return kind
}

// DecodeSeed reads the seed document name from dir and decodes it strictly into
// obj, which it returns; any failure fails t.
func DecodeSeed[T any](t testing.TB, dir, name string, obj *T) *T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return obj
}

// CheckSeeds checks every seed document matching glob (a filepath pattern) of API version gv
// with CheckSeed, each as a subtest of t, and returns how many documents of each kind it
// checked. Documents of another version of gv's group are left to that version's package; a
// document of another group, or one without apiVersion/kind, fails t.
func CheckSeeds(t *testing.T, v *Validator, glob string, gv schema.GroupVersion) map[string]int {
	t.Helper()
	paths, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			t.Errorf("%s: reading apiVersion/kind: %v", path, err)
			continue
		}
		switch got := tm.GroupVersionKind(); {
		case got.Group != gv.Group:
			t.Errorf("%s: apiVersion %q is not in group %s", path, tm.APIVersion, gv.Group)
			continue
		case got.Version != gv.Version:
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			kinds[CheckSeed(t, v, path, data)]++
		})
	}
	return kinds
}
