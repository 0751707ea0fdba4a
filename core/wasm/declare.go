package wasm

import (
	"context"
	"slices"
	"sort"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// declare runs the load-time declaration of the module's type on in: a FeedbackExtractor's
// declare_resources answer is decoded, validated and kept, so users find the plugins serving
// a kind without calling them. A module whose declaration fails, does not decode or does not
// validate is refused (InvalidModule); a timeout keeps its kind, so the WasmPlugin controller
// retries it. The caller still owns in when declare returns nil.
func (m *Module) declare(ctx context.Context, in *instance) error {
	if m.typ != abi.TypeFeedbackExtractor {
		return nil
	}
	export := abi.ExportDeclareResources
	out, err := m.callOn(ctx, in, export, nil)
	if err != nil { // callOn closed the instance
		msg := err.Error()
		if ce, ok := err.(*CallError); ok {
			msg = string(ce.Kind) + ": " + ce.Message
		}
		return loadErr(m.name, ReasonInvalidModule, err, "%s failed: %s", export, msg)
	}
	var d abi.FeedbackResources
	if derr := d.DecodeJSON(out); derr != nil {
		in.close(context.WithoutCancel(ctx))
		return loadErr(m.name, ReasonInvalidModule, InvalidOutput(m.name, export, derr, "%v", derr),
			"%s returned an invalid declaration: %v (output starts %q)", export, derr, truncate(out, 80))
	}
	if verr := d.Validate(); verr != nil {
		in.close(context.WithoutCancel(ctx))
		return loadErr(m.name, ReasonInvalidModule, InvalidOutput(m.name, export, verr, "%v", verr),
			"%s returned an invalid declaration: %v", export, verr)
	}
	m.declared = &d
	return nil
}

// FeedbackResources returns the group/kinds a FeedbackExtractor declared when it was loaded
// (declare_resources); nil for modules of other types.
func (m *Module) FeedbackResources() []abi.GroupKind {
	if m.declared == nil {
		return nil
	}
	return slices.Clone(m.declared.Resources)
}

// Serves reports whether m is a FeedbackExtractor that declared group/kind.
func (m *Module) Serves(group, kind string) bool {
	return m.declared != nil && m.declared.Serves(group, kind)
}

// FeedbackExtractors returns the loaded FeedbackExtractor modules that declared group/kind,
// sorted by name. Choosing among several is the caller's business (the work agent prefers
// plugins an admin installed over its own).
func (r *Registry) FeedbackExtractors(group, kind string) []*Module {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*Module
	for _, m := range r.modules {
		if m.typ == abi.TypeFeedbackExtractor && m.Serves(group, kind) {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
