// Package guest is the Wasm side of the SDK: the Extism host imports (declared
// with go:wasmimport, module "extism:host/env") and the plumbing shared by every
// extension point's exports. It only has content when built for wasip1.
package guest
