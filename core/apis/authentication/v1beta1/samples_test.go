package v1beta1_test

import (
	"path/filepath"
	"testing"
	"time"

	authenticationv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
)

// newValidator checks documents of both versions. CompareDefaulted is off: rotation.validity
// is a struct in Go (metav1.Duration), so an object built in Go sends "0s" where the CRD
// would default it (see the package documentation).
func newValidator(t *testing.T) *seedcheck.Validator {
	t.Helper()
	return seedcheck.ForTest(t, crdFile, authenticationv1beta1.AddToScheme)
}

// TestSamplesDecodeStrictly validates every sample (upstream's README and kustomize
// samples, and one with every field) against the generated CRD as the API server would, and
// decodes it strictly into the Go types, which must keep every value.
func TestSamplesDecodeStrictly(t *testing.T) {
	kinds := seedcheck.CheckSeeds(t, newValidator(t), filepath.Join("testdata", "*.yaml"), authenticationv1beta1.GroupVersion)
	if kinds["ManagedServiceAccount"] < 3 {
		t.Errorf("checked %v, want the three ManagedServiceAccount samples", kinds)
	}
}

// TestSampleShapes pins decoded values.
func TestSampleShapes(t *testing.T) {
	msa := seedcheck.DecodeSeed(t, "testdata", "reported-managedserviceaccount.yaml", &authenticationv1beta1.ManagedServiceAccount{})
	if !msa.Spec.Rotation.Enabled || msa.Spec.Rotation.Validity.Duration != 4320*time.Hour ||
		msa.Spec.TTLSecondsAfterCreation == nil || *msa.Spec.TTLSecondsAfterCreation != 3600 {
		t.Errorf("spec: %+v", msa.Spec)
	}
	st := msa.Status
	if len(st.Conditions) != 2 || st.Conditions[1].Type != authenticationv1beta1.ConditionTypeTokenReported ||
		st.Conditions[1].Reason != authenticationv1beta1.ReasonTokenReported || st.ExpirationTimestamp == nil ||
		st.ExpirationTimestamp.UTC().Format(time.RFC3339) != "2027-05-26T06:00:00Z" || st.TokenSecretRef == nil ||
		st.TokenSecretRef.Name != "cluster-gateway" || st.TokenSecretRef.LastRefreshTimestamp.IsZero() {
		t.Errorf("status: %+v", st)
	}
}

// TestCRDDefaults: an empty rotation gets upstream's defaults, enabled and 360 days.
func TestCRDDefaults(t *testing.T) {
	u, err := newValidator(t).Defaulted([]byte("apiVersion: authentication.open-cluster-management.io/v1beta1\n" +
		"kind: ManagedServiceAccount\nmetadata: {name: my-sample, namespace: cluster1}\nspec: {rotation: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rotation := u["spec"].(map[string]any)["rotation"].(map[string]any)
	if rotation["enabled"] != true || rotation["validity"] != "8640h0m0s" {
		t.Errorf("rotation defaults to %v, want enabled true, validity 8640h0m0s", rotation)
	}
	if d, err := time.ParseDuration(rotation["validity"].(string)); err != nil || d != authenticationv1beta1.DefaultValidity {
		t.Errorf("DefaultValidity %s differs from the CRD's default %v", authenticationv1beta1.DefaultValidity, rotation["validity"])
	}
}

// TestValidatorRejects: what upstream's schema refuses is refused, naming the field,
// including upstream's outdated v1alpha1 sample (spec.projected).
func TestValidatorRejects(t *testing.T) {
	const msa = "apiVersion: authentication.open-cluster-management.io/v1beta1\nkind: ManagedServiceAccount\nmetadata: {name: m, namespace: cluster1}\n"
	seedcheck.ExpectRejected(t, newValidator(t), []seedcheck.Rejection{
		{Name: "no rotation", Doc: msa + "spec: {}", Want: "spec.rotation: Required value"},
		{Name: "ttl 0", Doc: msa + "spec: {rotation: {}, ttlSecondsAfterCreation: 0}", Want: "spec.ttlSecondsAfterCreation"},
		{Name: "ttl negative", Doc: msa + "spec: {rotation: {}, ttlSecondsAfterCreation: -1}", Want: "spec.ttlSecondsAfterCreation"},
		{Name: "validity a number", Doc: msa + "spec: {rotation: {validity: 3600}}", Want: "spec.rotation.validity"},
		{Name: "no namespace", Doc: "apiVersion: authentication.open-cluster-management.io/v1beta1\nkind: ManagedServiceAccount\nmetadata: {name: m}\nspec: {rotation: {}}", Want: "metadata.namespace"},
		{Name: "upstream's outdated spec.projected", Doc: msa + "spec: {rotation: {}, projected: {type: Secret}}", Want: "fields unknown to the CRD: spec.projected"},
		{Name: "tokenSecretRef without lastRefreshTimestamp", Doc: msa + "spec: {rotation: {}}\nstatus: {tokenSecretRef: {name: m}}", Want: "status.tokenSecretRef.lastRefreshTimestamp: Required value"},
		{Name: "condition without reason", Doc: msa + "spec: {rotation: {}}\nstatus: {conditions: [{type: TokenReported, status: 'False', message: '', lastTransitionTime: '2026-11-27T06:00:00Z'}]}", Want: "status.conditions[0].reason: Required value"},
	})
}
