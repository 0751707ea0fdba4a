// Package sdk is the Go guest SDK for Flotilla Wasm plugins.
//
// A plugin is a main package built with the standard toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o plugin.wasm .
//
// It registers its logic in an init function with the package of its extension
// point — prioritizer.Register, csrapproval.Register, feedback.Register,
// addontemplate.Register or transformer.Register — and has an empty main. Those
// packages define the Wasm exports the host calls, speak the wire formats of package abi, and keep
// encoding/json, fmt and reflect out of the module. Each export runs the plugin's
// method with a Host, turns a returned error or a panic into an Extism error, and
// validates the answer before handing it back.
//
// Plugin logic can be tested on the host, without Wasm, with package sdktest.
package sdk

// LogLevel is the level of a plugin log line. The host gates and rate-limits logs.
type LogLevel int

const (
	LogDebug LogLevel = iota
	LogInfo
	LogWarn
	LogError
)

// Host is what a plugin may ask of the host during a call.
type Host interface {
	// Config returns the plugin's spec.pluginConfig as JSON text, or nil if unset.
	Config() []byte
	// Log writes a line to the host's log, tagged with the plugin's name.
	Log(level LogLevel, msg string)
}

// ConfigValidator is implemented by plugins that check their pluginConfig when
// the host loads them (the validate_config export). A returned error rejects the
// configuration: the WasmPlugin reports Ready=False, reason ConfigRejected, with
// the error's text.
type ConfigValidator interface {
	ValidateConfig(config []byte) error
}

// ValidateConfig runs p's ValidateConfig if it has one.
func ValidateConfig(p any, config []byte) error {
	if v, ok := p.(ConfigValidator); ok {
		return v.ValidateConfig(config)
	}
	return nil
}
