package wasmplugin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/hash"
	"github.com/flotilla-dev/flotilla/core/wasm"
)

// Serving reports whether registry serves the current spec of WasmPlugin name, of type t:
// its Ready condition is for its generation and the loaded module is the one its status
// names (a call during a reload would otherwise record the new spec's hash for the old
// module's output). false with no error means "loading, try again". A plugin of another type,
// or one that failed to load for its current spec, is an error naming it.
func Serving(ctx context.Context, reader client.Reader, registry *wasm.Registry, name string, t flotillav1alpha1.WasmPluginType) (bool, error) {
	_, ok, err := ServedDigest(ctx, reader, registry, name, t)
	return ok, err
}

// ServedDigest is Serving that also returns what a render that called the plugin depends on
// ("" while not serving): the digest of the module served (the one the WasmPlugin's status
// names), and of its pluginConfig when it has one (the module's output depends on both).
func ServedDigest(ctx context.Context, reader client.Reader, registry *wasm.Registry, name string, t flotillav1alpha1.WasmPluginType) (string, bool, error) {
	wp := &flotillav1alpha1.WasmPlugin{}
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		return "", false, fmt.Errorf("reading WasmPlugin %s: %w", name, err)
	}
	if wp.Spec.Type != t {
		return "", false, fmt.Errorf("WasmPlugin %s: spec.type is %s, not %s", name, wp.Spec.Type, t)
	}
	c := meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady)
	if c == nil || c.ObservedGeneration != wp.Generation {
		return "", false, nil // loading
	}
	if c.Status != metav1.ConditionTrue {
		return "", false, fmt.Errorf("WasmPlugin %s is not ready: %s: %s", name, c.Reason, c.Message)
	}
	if m, ok := registry.Get(name); ok && m.Digest() == wp.Status.Digest {
		return servedFingerprint(wp), true, nil
	}
	return "", false, nil
}

// servedFingerprint is ServedDigest's answer for a plugin that serves its current spec.
func servedFingerprint(wp *flotillav1alpha1.WasmPlugin) string {
	if wp.Spec.PluginConfig == nil || len(wp.Spec.PluginConfig.Raw) == 0 {
		return wp.Status.Digest
	}
	return wp.Status.Digest + "+config:" + hash.Short(hash.Bytes(wp.Spec.PluginConfig.Raw))
}
