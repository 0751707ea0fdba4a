// Package transformer is the SDK for ManifestTransformer plugins: a transform rule of a
// ManifestWorkReplicaSetOverride hands the plugin one manifest of the replica set's template
// for one cluster (its name, labels, claims, Kubernetes version, capacity, allocatable and
// cluster sets, the placement and decision group, the rule's params) and the plugin returns
// the manifest it makes: the whole object (Manifest) or RFC 6902 operations against the input
// (Patch). The host then checks that the manifest keeps its apiVersion, kind, namespace and
// name and stays within the size limits.
//
// The output is hashed and rolled out per cluster, so it must depend on the request alone:
// the host runs these modules without wall clock, monotonic clock or host entropy (each
// instance sees the same fake clocks and seeded random numbers), and a render whose output
// changes between two calls with the same request is a bug the SDK's tests catch
// (sdktest.Transform, wasmrun.Transform). Iterate maps in sorted order (SortedKeys).
package transformer

import (
	"slices"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Transformer is the plugin's logic.
type Transformer interface {
	TransformManifest(h sdk.Host, req *abi.TransformRequest) (abi.TransformResult, error)
}

var registered Transformer

// Register makes p the plugin served by this module's exports. Call it from init.
func Register(p Transformer) { registered = p }

// Registered returns the registered plugin, or nil.
func Registered() Transformer { return registered }

// Transform runs the transform_manifest export's logic: decode the JSON input, call p,
// validate the answer and encode it as JSON.
func Transform(p Transformer, h sdk.Host, input []byte) ([]byte, error) {
	var req abi.TransformRequest
	if err := req.DecodeJSON(input); err != nil {
		return nil, err
	}
	res, err := p.TransformManifest(h, &req)
	if err != nil {
		return nil, err
	}
	if err := res.Validate(); err != nil {
		return nil, err
	}
	return res.AppendJSON(nil), nil
}

// Manifest answers the whole transformed object (JSON).
func Manifest(raw []byte) abi.TransformResult { return abi.TransformResult{Manifest: abi.RawJSON(raw)} }

// Patch answers RFC 6902 operations against the request's manifest; no operations change
// nothing.
func Patch(ops ...abi.PatchOp) abi.TransformResult {
	if ops == nil {
		ops = []abi.PatchOp{}
	}
	return abi.TransformResult{Patch: ops}
}

// Add is an "add" operation; value is JSON text.
func Add(path string, value []byte) abi.PatchOp {
	return abi.PatchOp{Op: "add", Path: path, Value: abi.RawJSON(value)}
}

// Replace is a "replace" operation; value is JSON text.
func Replace(path string, value []byte) abi.PatchOp {
	return abi.PatchOp{Op: "replace", Path: path, Value: abi.RawJSON(value)}
}

// Remove is a "remove" operation.
func Remove(path string) abi.PatchOp { return abi.PatchOp{Op: "remove", Path: path} }

// EscapePointer escapes one JSON pointer token (RFC 6901): "~" → "~0", "/" → "~1", so a
// label key like example.com/name can be a path element.
func EscapePointer(token string) string {
	out := make([]byte, 0, len(token))
	for i := 0; i < len(token); i++ {
		switch token[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, token[i])
		}
	}
	return string(out)
}

// SortedKeys returns m's keys in order: iterate maps through it so the output does not
// depend on map order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
