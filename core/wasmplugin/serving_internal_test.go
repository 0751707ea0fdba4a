package wasmplugin

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
)

// TestServedFingerprintCoversPluginConfig: a config-only change keeps the module's digest, but
// the plugin's output (and so a render's inputs, hub/mwrs) may change with it.
func TestServedFingerprintCoversPluginConfig(t *testing.T) {
	wp := func(config string) *flotillav1alpha1.WasmPlugin {
		p := &flotillav1alpha1.WasmPlugin{}
		p.Status.Digest = "abc"
		if config != "" {
			p.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: []byte(config)}
		}
		return p
	}
	if got := servedFingerprint(wp("")); got != "abc" {
		t.Errorf("without a config the fingerprint is the module's digest, got %q", got)
	}
	a, b := servedFingerprint(wp(`{"registry":"eu"}`)), servedFingerprint(wp(`{"registry":"us"}`))
	if a == b || a == "abc" {
		t.Errorf("configs eu and us give %q and %q, want two fingerprints other than the digest", a, b)
	}
	if again := servedFingerprint(wp(`{"registry":"eu"}`)); again != a {
		t.Errorf("the same config gives %q, then %q", a, again)
	}
}
