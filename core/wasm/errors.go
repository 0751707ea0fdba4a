package wasm

import (
	"errors"
	"fmt"
)

// LoadReason says why a module did or did not load. The values double as the reasons
// of the WasmPlugin Ready condition, so the controller copies them verbatim.
type LoadReason string

const (
	// ReasonLoaded: the module compiled, has every required export and accepted its config.
	ReasonLoaded LoadReason = "Loaded"
	// ReasonSourceNotFound: the referenced source (ConfigMap or key) does not exist.
	ReasonSourceNotFound LoadReason = "SourceNotFound"
	// ReasonDigestMismatch: spec.sha256 differs from the digest of the uncompressed module.
	ReasonDigestMismatch LoadReason = "DigestMismatch"
	// ReasonInvalidModule: the bytes are not a valid Wasm module for this host (bad
	// binary, unknown imports, unsupported ABI version, cannot be instantiated).
	ReasonInvalidModule LoadReason = "InvalidModule"
	// ReasonMissingExport: an export required by the plugin type is absent.
	ReasonMissingExport LoadReason = "MissingExport"
	// ReasonConfigRejected: the optional validate_config export refused pluginConfig.
	ReasonConfigRejected LoadReason = "ConfigRejected"
	// ReasonTooLarge: the module (after decompression) exceeds the host's size cap.
	ReasonTooLarge LoadReason = "TooLarge"
	// ReasonInvalidSpec: the request itself is unusable (unknown type, pluginConfig
	// that is not JSON). API validation normally stops these before they reach the host.
	ReasonInvalidSpec LoadReason = "InvalidSpec"
)

// LoadError is returned by Engine.Load and the source helpers.
type LoadError struct {
	Plugin  string
	Reason  LoadReason
	Message string
	Err     error // underlying cause, if any
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("wasm plugin %q: %s: %s", e.Plugin, e.Reason, e.Message)
}

func (e *LoadError) Unwrap() error { return e.Err }

func loadErr(plugin string, reason LoadReason, err error, format string, args ...any) *LoadError {
	return &LoadError{Plugin: plugin, Reason: reason, Message: fmt.Sprintf(format, args...), Err: err}
}

// LoadReasonOf returns the reason carried by err, or "" when err is not a *LoadError.
func LoadReasonOf(err error) LoadReason {
	var le *LoadError
	if errors.As(err, &le) {
		return le.Reason
	}
	return ""
}

// CallErrorKind classifies a failed call so callers can apply spec.failurePolicy and
// metrics without parsing messages.
type CallErrorKind string

const (
	// KindTimeout: the call exceeded the plugin's per-call timeout.
	KindTimeout CallErrorKind = "Timeout"
	// KindCanceled: the caller's context ended before the call finished.
	KindCanceled CallErrorKind = "Canceled"
	// KindTrap: the guest trapped, panicked or exited.
	KindTrap CallErrorKind = "Trap"
	// KindMemoryLimit: the guest tried to grow its memory past the plugin's memory limit.
	KindMemoryLimit CallErrorKind = "MemoryLimit"
	// KindGuestError: the guest returned a non-zero code or set an Extism error.
	KindGuestError CallErrorKind = "GuestError"
	// KindInvalidOutput: the guest returned, but its output does not decode.
	KindInvalidOutput CallErrorKind = "InvalidOutput"
	// KindUnknownExport: the requested export does not exist in the module.
	KindUnknownExport CallErrorKind = "UnknownExport"
	// KindClosed: the module was closed (replaced or removed) before the call started.
	KindClosed CallErrorKind = "Closed"
	// KindInstance: a fresh instance could not be created.
	KindInstance CallErrorKind = "Instance"
)

// CallError is returned by Module.Call and the output helpers.
type CallError struct {
	Plugin  string
	Export  string
	Kind    CallErrorKind
	Message string
	Err     error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("wasm plugin %q: export %s: %s: %s", e.Plugin, e.Export, e.Kind, e.Message)
}

func (e *CallError) Unwrap() error { return e.Err }

// CallErrorKindOf returns the kind carried by err, or "" when err is not a *CallError.
func CallErrorKindOf(err error) CallErrorKind {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce.Kind
	}
	return ""
}

// InvalidOutput builds the error a decoder returns when a guest's output is malformed,
// so every extension point reports garbage output the same way.
func InvalidOutput(plugin, export string, err error, format string, args ...any) *CallError {
	return &CallError{Plugin: plugin, Export: export, Kind: KindInvalidOutput, Message: fmt.Sprintf(format, args...), Err: err}
}
