package override

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// ErrPluginNotServing is a transform whose WasmPlugin is still loading its current spec; the
// render fails (and is retried) rather than use an older module's output.
var ErrPluginNotServing = errors.New("is not serving its current spec yet")

// WasmTransformer is the Transformer over the hub's WasmPlugins of type ManifestTransformer.
type WasmTransformer struct {
	Registry *wasm.Registry
	// Reader reads WasmPlugins for wasmplugin.Serving; nil skips that check (local renders
	// that loaded the modules themselves).
	Reader client.Reader
}

var _ Transformer = (*WasmTransformer)(nil)

// Transform calls the plugin's transform_manifest for req and returns the manifest it made:
// the returned one, or the input with the returned patch applied. Outputs that do not decode,
// exceed abi.MaxTransformOutputBytes or MaxManifestBytes, carry a failing patch or change the
// manifest's identity are wasm.KindInvalidOutput errors naming the plugin.
func (w *WasmTransformer) Transform(ctx context.Context, req TransformRequest) (json.RawMessage, error) {
	if w.Registry == nil {
		return nil, errors.New("no Wasm plugin registry")
	}
	if w.Reader != nil {
		ok, err := wasmplugin.Serving(ctx, w.Reader, w.Registry, req.Plugin, flotillav1alpha1.PluginTypeManifestTransformer)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("WasmPlugin %s %w", req.Plugin, ErrPluginNotServing)
		}
	}
	m, ok := w.Registry.Get(req.Plugin)
	if !ok {
		return nil, fmt.Errorf("WasmPlugin %s is not loaded", req.Plugin)
	}
	if m.Type() != abi.TypeManifestTransformer {
		return nil, fmt.Errorf("WasmPlugin %s is of type %s, not %s", req.Plugin, m.Type(), abi.TypeManifestTransformer)
	}
	in := transformInput(req)
	out, err := w.Registry.Call(ctx, req.Plugin, abi.ExportTransformManifest, in.AppendJSON(nil))
	if err != nil {
		return nil, err
	}
	return ApplyTransformOutput(req.Plugin, req.Manifest, out)
}

// ApplyTransformOutput checks a transform_manifest output of plugin against the manifest it
// was given and returns the manifest it makes (the hub's checks, shared with
// `flotilla plugin test`).
func ApplyTransformOutput(plugin string, manifest, out []byte) (json.RawMessage, error) {
	invalid := func(err error, format string, args ...any) error {
		return wasm.InvalidOutput(plugin, abi.ExportTransformManifest, err, "transform output: "+format, args...)
	}
	if len(out) > abi.MaxTransformOutputBytes {
		return nil, invalid(nil, "%d bytes, at most %d", len(out), abi.MaxTransformOutputBytes)
	}
	var res abi.TransformResult
	if err := res.DecodeJSON(out); err != nil {
		return nil, invalid(err, "%v", err)
	}
	made := []byte(res.Manifest)
	if res.Patch != nil {
		ops, err := json.Marshal(res.Patch)
		if err != nil {
			return nil, invalid(err, "patch: %v", err)
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err == nil {
			made, err = patch.ApplyWithOptions(manifest, patchOptions())
		}
		if err != nil {
			return nil, invalid(err, "patch: %v", err)
		}
	}
	if len(made) > MaxManifestBytes {
		return nil, invalid(nil, "manifest: %d bytes, at most %d", len(made), MaxManifestBytes)
	}
	was, err := decode(manifest)
	if err != nil {
		return nil, err
	}
	is, err := decode(made)
	if err != nil {
		return nil, invalid(err, "manifest: %v", err)
	}
	if a, b := identityOf(was), identityOf(is); a != b {
		return nil, invalid(nil, "manifest: changes the manifest's identity: %s", a.diff(b))
	}
	return made, nil
}

// transformInput is the plugin's view of req: the cluster facts come from the render's
// template values (read, never written: they are shared by the render).
func transformInput(req TransformRequest) *abi.TransformRequest {
	v := req.Values
	cl, _ := v["cluster"].(map[string]any)
	grp, _ := v["group"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	strMap := func(k string) map[string]string {
		m, _ := cl[k].(map[string]any)
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, x := range m {
			out[k], _ = x.(string)
		}
		return out
	}
	intMap := func(k string) map[string]int64 {
		m, _ := cl[k].(map[string]any)
		if len(m) == 0 {
			return nil
		}
		out := make(map[string]int64, len(m))
		for k, x := range m {
			out[k], _ = x.(int64)
		}
		return out
	}
	var sets []string
	if l, _ := cl["clusterSets"].([]any); len(l) > 0 {
		sets = make([]string, len(l))
		for i, s := range l {
			sets[i], _ = s.(string)
		}
	}
	index, _ := grp["index"].(int64)
	return &abi.TransformRequest{
		ReplicaSet: abi.ObjectRef{Namespace: req.ReplicaSet.Namespace, Name: req.ReplicaSet.Name},
		// An override lives in its replica sets' namespace.
		Override: abi.TransformOverride{Namespace: req.ReplicaSet.Namespace, Name: req.Override, Rule: req.Rule},
		Cluster: abi.TransformCluster{
			Name: str(cl, "name"), Labels: strMap("labels"), Claims: strMap("claims"),
			KubernetesVersion: str(cl, "kubernetesVersion"), Capacity: intMap("capacity"), Allocatable: intMap("allocatable"),
			ClusterSets: sets,
		},
		Placement:     str(v, "placement"),
		DecisionGroup: abi.DecisionGroup{Index: index, Name: str(grp, "name")},
		Params:        abi.RawJSON(req.Params),
		Manifest:      abi.RawJSON(req.Manifest),
	}
}
