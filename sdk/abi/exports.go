// Package abi holds the contract between the Flotilla Wasm host and guest plugins:
// plugin types, export names and the wire formats of every extension point.
// It is plain Go with no reflection so both the host and wasip1 guests import it.
package abi

// Version is the ABI version this package speaks. A plugin reports the version it was
// built against through the optional ExportABIVersion export.
const Version = 1

// PluginType names an extension point. The values are the WasmPlugin spec.type enum.
type PluginType string

const (
	TypePrioritizer       PluginType = "Prioritizer"
	TypeCSRApproval       PluginType = "CSRApproval"
	TypeFeedbackExtractor PluginType = "FeedbackExtractor"
	TypeAddOnTemplate     PluginType = "AddOnTemplate"
	// TypeManifestTransformer transforms one ManifestWorkReplicaSet manifest for one cluster.
	TypeManifestTransformer PluginType = "ManifestTransformer"
)

// Exports every plugin may define.
const (
	// ExportABIVersion returns the ABI version as decimal text, e.g. "1". Optional; absent means 1.
	ExportABIVersion = "flotilla_abi_version"
	// ExportValidateConfig is called once at load time with pluginConfig as input.
	// A non-zero return (or an Extism error) rejects the configuration. Optional.
	ExportValidateConfig = "validate_config"
)

// Exports required per plugin type.
const (
	// ExportDeclareInputs (Prioritizer) returns which cluster attributes the plugin reads.
	ExportDeclareInputs = "declare_inputs"
	// ExportScore (Prioritizer) scores all candidate clusters of one scheduling cycle.
	ExportScore = "score"
	// ExportReviewCSR (CSRApproval) decides on one pending CertificateSigningRequest.
	ExportReviewCSR = "review_csr"
	// ExportDeclareResources (FeedbackExtractor) returns the group/kinds the plugin serves.
	ExportDeclareResources = "declare_resources"
	// ExportExtractFeedback (FeedbackExtractor) extracts status feedback values from a resource.
	ExportExtractFeedback = "extract_feedback"
	// ExportRenderAddOn (AddOnTemplate) renders the manifests of an add-on for one cluster.
	ExportRenderAddOn = "render_addon"
	// ExportTransformManifest (ManifestTransformer) transforms one manifest for one cluster.
	ExportTransformManifest = "transform_manifest"
)

// RequiredExports lists the exports a module of the given type must define.
func RequiredExports(t PluginType) []string {
	switch t {
	case TypePrioritizer:
		return []string{ExportDeclareInputs, ExportScore}
	case TypeCSRApproval:
		return []string{ExportReviewCSR}
	case TypeFeedbackExtractor:
		return []string{ExportDeclareResources, ExportExtractFeedback}
	case TypeAddOnTemplate:
		return []string{ExportRenderAddOn}
	case TypeManifestTransformer:
		return []string{ExportTransformManifest}
	}
	return nil
}

// ConfigKey is the Extism config key under which the host exposes spec.pluginConfig
// (as JSON text) to the guest; every stock PDK reads it with its config-get call.
const ConfigKey = "pluginConfig"

// Bulk transport. The Extism kernel moves data 8 bytes per host call, which dominates
// the cost of a large input (a 5,000-cluster score input is thousands of calls). A
// module that exports ExportStdio opts into moving the bytes through WASI instead:
//
//   - the host writes the call's input to the guest's stdin (fd 0) and passes as the
//     Extism input only a StdioHeaderSize-byte header: StdioMagic, then the input length
//     as a little-endian u64. The guest reads exactly that many bytes from fd 0 (one
//     fd_read moves them all).
//   - the guest may answer the same way: write the output to stdout (fd 1) and set as the
//     Extism output a header with the output's length. The host takes the last that many
//     bytes written to stdout during the call; earlier bytes (stray prints) are dropped.
//     An output set through the kernel as usual is accepted too.
//
// A guest tells the two kinds of call apart by the header, so a module built with this
// SDK also works under a host that does not know the transport.
const (
	// ExportStdio marks a module that accepts the bulk transport; its result is ignored.
	ExportStdio = "flotilla_stdio"
	// StdioMagic opens the header of a bulk-transport input or output.
	StdioMagic = "FLSTDIO1"
	// StdioHeaderSize is the size of that header.
	StdioHeaderSize = 16
)

// AppendStdioHeader appends the bulk-transport header for n bytes to dst.
func AppendStdioHeader(dst []byte, n int) []byte {
	dst = append(dst, StdioMagic...)
	var b [8]byte
	putU64(b[:], uint64(n))
	return append(dst, b[:]...)
}

// ParseStdioHeader returns the length a bulk-transport header announces, and whether b is
// such a header.
func ParseStdioHeader(b []byte) (uint64, bool) {
	if len(b) != StdioHeaderSize || string(b[:8]) != StdioMagic {
		return 0, false
	}
	return u64(b[8:]), true
}

// Deterministic reports whether the host runs plugins of type t without wall clock,
// monotonic clock or host entropy, because their outputs are hashed and rolled out: the
// same request must give the same bytes wherever and whenever it runs.
func Deterministic(t PluginType) bool { return t == TypeManifestTransformer }
