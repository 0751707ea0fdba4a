package seedcheck

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
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
