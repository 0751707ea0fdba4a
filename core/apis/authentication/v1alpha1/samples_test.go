package v1alpha1_test

import (
	"path/filepath"
	"testing"
	"time"

	authenticationv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
)

// TestSamplesDecodeStrictly validates the deprecated version's samples (the object
// cluster-gateway's add-on manager writes) against the generated CRD and decodes them
// strictly into the Go types.
func TestSamplesDecodeStrictly(t *testing.T) {
	v := seedcheck.ForTest(t, filepath.Join("..", "..", "..", "crds", "bases", "authentication.open-cluster-management.io_managedserviceaccounts.yaml"),
		authenticationv1alpha1.AddToScheme)
	kinds := seedcheck.CheckSeeds(t, v, filepath.Join("testdata", "*.yaml"), authenticationv1alpha1.GroupVersion)
	if kinds["ManagedServiceAccount"] == 0 {
		t.Errorf("no ManagedServiceAccount sample checked")
	}
	msa := seedcheck.DecodeSeed(t, "testdata", "addonmanager-managedserviceaccount.yaml", &authenticationv1alpha1.ManagedServiceAccount{})
	if !msa.Spec.Rotation.Enabled || msa.Spec.Rotation.Validity.Duration != 180*24*time.Hour {
		t.Errorf("rotation: %+v", msa.Spec.Rotation)
	}
}
