// Package sdktest runs plugin logic on the host, from plain `go test`, through the
// same wire formats the Wasm host uses: inputs are encoded the way the host
// encodes them, decoded by the SDK code that runs inside the module, and answers
// are decoded and validated by the host-side decoders. Only the Extism memory
// transfer is skipped. To run a built .wasm through the real host, see package
// sdktest/wasmrun.
package sdktest

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/addontemplate"
	"github.com/flotilla-dev/flotilla/sdk/csrapproval"
	"github.com/flotilla-dev/flotilla/sdk/feedback"
	"github.com/flotilla-dev/flotilla/sdk/prioritizer"
	"github.com/flotilla-dev/flotilla/sdk/transformer"
)

// LogLine is one line a plugin logged.
type LogLine struct {
	Level   sdk.LogLevel
	Message string
}

// Host is an sdk.Host with a fixed pluginConfig that records log lines.
type Host struct {
	// PluginConfig is returned by Config (nil: no pluginConfig).
	PluginConfig []byte

	mu   sync.Mutex
	logs []LogLine
}

// NewHost returns a Host whose pluginConfig is config (a JSON string, "" for none).
func NewHost(config string) *Host {
	h := &Host{}
	if config != "" {
		h.PluginConfig = []byte(config)
	}
	return h
}

func (h *Host) Config() []byte { return h.PluginConfig }

func (h *Host) Log(level sdk.LogLevel, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, LogLine{Level: level, Message: msg})
}

// Logs returns the lines logged so far.
func (h *Host) Logs() []LogLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LogLine(nil), h.logs...)
}

// ValidateConfig runs the plugin's validate_config logic on the Host's pluginConfig.
func ValidateConfig(p any, h *Host) error { return sdk.ValidateConfig(p, h.PluginConfig) }

// DeclareInputs runs declare_inputs and decodes its JSON answer as the host does.
func DeclareInputs(p prioritizer.Plugin, h sdk.Host) (abi.PrioritizerInputs, error) {
	out, err := prioritizer.DeclareInputs(p, h)
	if err != nil {
		return abi.PrioritizerInputs{}, err
	}
	var decl abi.PrioritizerInputs
	if err := decl.DecodeJSON(out); err != nil {
		return decl, err
	}
	return decl, decl.Validate()
}

// Score runs a scheduling cycle over clusters: declare_inputs, the binary score
// input, the plugin's Score, and the host's decoding (which clamps to [-100, 100]).
func Score(p prioritizer.Plugin, h sdk.Host, clusters abi.ClusterSource) ([]int64, error) {
	decl, err := DeclareInputs(p, h)
	if err != nil {
		return nil, err
	}
	input, err := abi.EncodeScoreInput(nil, &decl, clusters)
	if err != nil {
		return nil, err
	}
	s := prioritizer.Scorer{P: p}
	scores, err := s.Score(h, input)
	if err != nil {
		return nil, err
	}
	return abi.DecodeScores(prioritizer.EncodeAnswer(nil, scores), clusters.Len(), nil)
}

// ReviewCSR runs review_csr: the request is encoded with encoding/json, as the hub
// does, and the answer decoded and validated with the ABI decoder.
func ReviewCSR(a csrapproval.Approver, h sdk.Host, req abi.CSRReview) (abi.CSRDecision, error) {
	var d abi.CSRDecision
	err := roundTrip(req, func(in []byte) ([]byte, error) { return csrapproval.Review(a, h, in) }, d.DecodeJSON)
	return d, err
}

// DeclareResources runs declare_resources and decodes and validates its JSON answer as the
// host does when it loads the module.
func DeclareResources(e feedback.Extractor, h sdk.Host) (abi.FeedbackResources, error) {
	out, err := feedback.Declare(e, h)
	if err != nil {
		return abi.FeedbackResources{}, err
	}
	var decl abi.FeedbackResources
	if err := decl.DecodeJSON(out); err != nil {
		return decl, err
	}
	return decl, decl.Validate()
}

// ExtractFeedback runs extract_feedback after checking, as the work agent does, that the
// plugin's declaration (declare_resources) covers the request's group and kind.
func ExtractFeedback(e feedback.Extractor, h sdk.Host, req abi.FeedbackRequest) (abi.FeedbackResult, error) {
	decl, err := DeclareResources(e, h)
	if err != nil {
		return abi.FeedbackResult{}, err
	}
	if id := req.Identifier; !decl.Serves(id.Group, id.Kind) {
		gk := abi.GroupKind{Group: id.Group, Kind: id.Kind}
		return abi.FeedbackResult{}, fmt.Errorf("the host would not call this plugin for a %s: it declares %v", gk, decl.Resources)
	}
	var r abi.FeedbackResult
	err = roundTrip(req, func(in []byte) ([]byte, error) { return feedback.Extract(e, h, in) }, r.DecodeJSON)
	return r, err
}

// RenderAddOn runs render_addon.
func RenderAddOn(t addontemplate.Template, h sdk.Host, req abi.AddOnRequest) (abi.AddOnResult, error) {
	var r abi.AddOnResult
	err := roundTrip(req, func(in []byte) ([]byte, error) { return addontemplate.Render(t, h, in) }, r.DecodeJSON)
	return r, err
}

// Transform runs transform_manifest twice with req and fails when the two answers differ
// (the hub hashes and rolls out what a transform returns, so it must depend on the request
// alone).
func Transform(t transformer.Transformer, h sdk.Host, req abi.TransformRequest) (abi.TransformResult, error) {
	var r abi.TransformResult
	in := req.AppendJSON(nil)
	first, err := transformer.Transform(t, h, in)
	if err != nil {
		return r, err
	}
	second, err := transformer.Transform(t, h, in)
	if err != nil {
		return r, err
	}
	if string(first) != string(second) {
		return r, fmt.Errorf("transform_manifest answered the same request differently:\n%s\n%s", first, second)
	}
	return r, r.DecodeJSON(first)
}

func roundTrip(req any, call func([]byte) ([]byte, error), decode func([]byte) error) error {
	in, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	out, err := call(in)
	if err != nil {
		return err
	}
	return decode(out)
}
