package v1beta1_test

import (
	"encoding/json"
	"math/rand"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/randfill"

	"github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/addon/v1beta1"
)

// fuzzIterations is how many random objects of each kind go through each round trip.
const fuzzIterations = 3000

func oneOf[T any](c randfill.Continue, values ...T) T { return values[c.Intn(len(values))] }

// addonFuzzFuncs steer the random objects towards the values the conversion treats
// specially (the kube-apiserver-client signer, drivers, the reserved default-config name,
// the install-namespace annotation), besides the random ones.
func addonFuzzFuncs(serializer.CodecFactory) []any {
	return []any{
		// A manifest of an AddOnTemplate: some object as JSON.
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw, _ = json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": c.String(0)}})
		},
		func(r *v1alpha1.RegistrationConfig, c randfill.Continue) {
			c.FillNoCustom(r)
			if c.Bool() {
				r.SignerName = certificatesv1.KubeAPIServerClientSignerName
			}
			if c.Bool() {
				r.Subject.OrganizationUnits = nil
			}
		},
		func(s *v1alpha1.ManagedClusterAddOnStatus, c randfill.Continue) {
			c.FillNoCustom(s)
			s.KubeClientDriver = oneOf(c, "", v1alpha1.KubeClientDriverCSR, v1alpha1.KubeClientDriverToken, s.KubeClientDriver)
		},
		func(r *v1alpha1.ConfigReference, c randfill.Continue) {
			c.FillNoCustom(r)
			if r.DesiredConfig != nil && c.Intn(3) > 0 {
				r.ConfigReferent = r.DesiredConfig.ConfigReferent
			}
		},
		func(m *v1alpha1.ConfigMeta, c randfill.Continue) {
			c.FillNoCustom(m)
			if c.Intn(8) == 0 {
				m.DefaultConfig = &v1alpha1.ConfigReferent{Name: v1beta1.ReservedNoDefaultConfigName}
			}
		},
		func(r *v1beta1.RegistrationConfig, c randfill.Continue) {
			c.FillNoCustom(r)
			switch c.Intn(5) {
			case 0, 1:
				r.Type, r.CustomSigner = v1beta1.KubeClient, nil
				if r.KubeClient == nil && c.Bool() {
					r.KubeClient = &v1beta1.KubeClientConfig{}
				}
			case 2, 3:
				r.Type, r.KubeClient = v1beta1.CustomSigner, nil
				if c.Bool() && r.CustomSigner != nil {
					r.CustomSigner.SignerName = certificatesv1.KubeAPIServerClientSignerName
				}
			}
		},
		func(k *v1beta1.KubeClientConfig, c randfill.Continue) {
			c.FillNoCustom(k)
			k.Driver = oneOf(c, "", "csr", "token", k.Driver)
		},
		func(a *v1beta1.AddOnConfig, c randfill.Continue) {
			c.FillNoCustom(a)
			if c.Intn(3) == 0 {
				a.Name = v1beta1.ReservedNoDefaultConfigName
				if c.Bool() {
					a.Namespace = ""
				}
			}
		},
		func(m *v1beta1.ManagedClusterAddOn, c randfill.Continue) {
			c.FillNoCustom(m)
			if c.Bool() {
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[v1beta1.InstallNamespaceAnnotation] = oneOf(c, "", "agent-ns", c.String(0))
			}
		},
	}
}

func newFuzzer(seed int64) *randfill.Filler {
	scheme := runtime.NewScheme()
	codecs := serializer.NewCodecFactory(scheme)
	return fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, addonFuzzFuncs), rand.NewSource(seed), codecs).
		NilChance(0.3).NumElements(0, 3)
}

// roundTrip fills n random objects from newObj, converts each to the other version and
// back, and fails on any difference.
func roundTrip(t *testing.T, seed int64, newObj func() runtime.Object) {
	t.Helper()
	f := newFuzzer(seed)
	for i := range fuzzIterations {
		orig := newObj()
		f.Fill(orig)
		in := orig.DeepCopyObject()
		there, err := v1beta1.Convert(in)
		if err != nil {
			t.Fatalf("object %d: converting %T: %v", i, orig, err)
		}
		if !equality.Semantic.DeepEqual(in, orig) {
			t.Fatalf("object %d: converting modified its input:\n%s", i, diff.Diff(orig, in))
		}
		back, err := v1beta1.Convert(there)
		if err != nil {
			t.Fatalf("object %d: converting %T back: %v", i, there, err)
		}
		if !equality.Semantic.DeepEqual(back, orig) {
			t.Fatalf("object %d: %T changed in a round trip through %T:\n%s", i, orig, there, diff.Diff(orig, back))
		}
	}
}

func TestFuzzRoundTripFromV1alpha1(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  func() runtime.Object
	}{
		{"ClusterManagementAddOn", func() runtime.Object { return &v1alpha1.ClusterManagementAddOn{} }},
		{"ManagedClusterAddOn", func() runtime.Object { return &v1alpha1.ManagedClusterAddOn{} }},
		{"AddOnDeploymentConfig", func() runtime.Object { return &v1alpha1.AddOnDeploymentConfig{} }},
		{"AddOnTemplate", func() runtime.Object { return &v1alpha1.AddOnTemplate{} }},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, 1, tc.obj) })
	}
}

func TestFuzzRoundTripFromV1beta1(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  func() runtime.Object
	}{
		{"ClusterManagementAddOn", func() runtime.Object { return &v1beta1.ClusterManagementAddOn{} }},
		{"ManagedClusterAddOn", func() runtime.Object { return &v1beta1.ManagedClusterAddOn{} }},
		{"AddOnDeploymentConfig", func() runtime.Object { return &v1beta1.AddOnDeploymentConfig{} }},
		{"AddOnTemplate", func() runtime.Object { return &v1beta1.AddOnTemplate{} }},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, 2, tc.obj) })
	}
}

// TestFuzzCoversTheSpecialCases makes sure the random objects reach the annotations, so
// that the round trips above exercise them. (Every v1beta1 defaultConfigs survives
// v1alpha1 as it is, so DefaultConfigsAnnotation is never needed.)
func TestFuzzCoversTheSpecialCases(t *testing.T) {
	f := newFuzzer(3)
	seen := map[string]int{}
	for range fuzzIterations {
		a := &v1alpha1.ManagedClusterAddOn{}
		f.Fill(a)
		b, err := v1beta1.ManagedClusterAddOnFromV1alpha1(a)
		if err != nil {
			t.Fatal(err)
		}
		for k := range b.Annotations {
			seen["v1beta1 "+k]++
		}
		// The plain mappings carry what they can: an annotation only for what they cannot.
		_, regsCarried := b.Annotations[v1beta1.V1alpha1RegistrationsAnnotation]
		if want := registrationsNeedAnnotation(&a.Status); regsCarried != want {
			t.Fatalf("registrations %+v (driver %q): annotation %v, want %v", a.Status.Registrations, a.Status.KubeClientDriver, regsCarried, want)
		}
		_, refsCarried := b.Annotations[v1beta1.V1alpha1ConfigReferencesAnnotation]
		if want := configReferencesNeedAnnotation(a.Status.ConfigReferences); refsCarried != want {
			t.Fatalf("configReferences %+v: annotation %v, want %v", a.Status.ConfigReferences, refsCarried, want)
		}
		for _, r := range b.Status.Registrations {
			seen["v1beta1 registration "+string(r.Type)]++
		}
		bb := &v1beta1.ManagedClusterAddOn{}
		f.Fill(bb)
		aa, err := v1beta1.ManagedClusterAddOnToV1alpha1(bb)
		if err != nil {
			t.Fatal(err)
		}
		for k := range aa.Annotations {
			seen["v1alpha1 "+k]++
		}
		c := &v1alpha1.ClusterManagementAddOn{}
		f.Fill(c)
		cb, err := v1beta1.ClusterManagementAddOnFromV1alpha1(c)
		if err != nil {
			t.Fatal(err)
		}
		for k := range cb.Annotations {
			seen["v1beta1 "+k]++
		}
		cc := &v1beta1.ClusterManagementAddOn{}
		f.Fill(cc)
		ca, err := v1beta1.ClusterManagementAddOnToV1alpha1(cc)
		if err != nil {
			t.Fatal(err)
		}
		for k := range ca.Annotations {
			seen["v1alpha1 "+k]++
		}
	}
	for _, want := range []string{
		"v1beta1 " + v1beta1.InstallNamespaceAnnotation,
		"v1beta1 " + v1beta1.AddOnConfigurationAnnotation,
		"v1beta1 " + v1beta1.SupportedConfigsAnnotation,
		"v1beta1 " + v1beta1.V1alpha1ConfigReferencesAnnotation,
		"v1beta1 " + v1beta1.V1alpha1RegistrationsAnnotation,
		"v1alpha1 " + v1beta1.V1beta1RegistrationsAnnotation,
		"v1beta1 registration kubeClient",
		"v1beta1 registration customSigner",
	} {
		if seen[want] < fuzzIterations/50 {
			t.Errorf("%q seen %d times in %d objects: the fuzzer does not exercise it", want, seen[want], fuzzIterations)
		}
	}
}

// registrationsNeedAnnotation: v1beta1 has no organization units for a kube-apiserver
// client and keeps the driver only in kubeClient registrations.
func registrationsNeedAnnotation(s *v1alpha1.ManagedClusterAddOnStatus) bool {
	kube := false
	for _, r := range s.Registrations {
		if r.SignerName == certificatesv1.KubeAPIServerClientSignerName {
			kube = true
			if len(r.Subject.OrganizationUnits) > 0 {
				return true
			}
		}
	}
	return !kube && s.KubeClientDriver != ""
}

// configReferencesNeedAnnotation: v1beta1 derives the deprecated name and namespace from
// desiredConfig.
func configReferencesNeedAnnotation(refs []v1alpha1.ConfigReference) bool {
	for _, r := range refs {
		var want v1alpha1.ConfigReferent
		if r.DesiredConfig != nil {
			want = r.DesiredConfig.ConfigReferent
		}
		if r.ConfigReferent != want {
			return true
		}
	}
	return false
}
