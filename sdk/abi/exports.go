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
	}
	return nil
}

// ConfigKey is the Extism config key under which the host exposes spec.pluginConfig
// (as JSON text) to the guest; every stock PDK reads it with its config-get call.
const ConfigKey = "pluginConfig"
