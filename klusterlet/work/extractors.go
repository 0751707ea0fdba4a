package work

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// ExtractorSource is where WellKnownStatus rules find their FeedbackExtractor plugins: the
// klusterlet's plugin loader for the managed cluster (*plugins.Loader).
type ExtractorSource interface {
	// Registry holds the loaded FeedbackExtractor modules and the configured but unavailable ones.
	Registry() *wasm.Registry
	// Builtin reports the klusterlet's own plugins, which others take precedence over.
	Builtin(name string) bool
}

// newFeedbackReader reads WellKnownStatus feedback with the FeedbackExtractors of src (none
// when nil) and allows JsonRaw values when rawJSON is set.
func newFeedbackReader(src ExtractorSource, rawJSON bool) *feedbackReader {
	f := &feedbackReader{rawJSON: rawJSON}
	if src != nil {
		f.extractors = func() ExtractorSource { return src }
	}
	return f
}

// wellKnown reads the WellKnownStatus feedback of obj with a FeedbackExtractor plugin that
// declared its group and kind. When several did, one an admin installed wins over the
// klusterlet's own (feedback-wellknown), then the first by name. The call is bounded by
// the plugin's limits (timeout, memory); a failing plugin with failurePolicy Ignore is
// skipped for the next candidate, any other failure is the error. Plugins that are
// configured but not Ready cannot say which kinds they serve: with failurePolicy Fail, they
// are named when no loaded plugin serves the kind.
func (f *feedbackReader) wellKnown(ctx context.Context, obj *unstructured.Unstructured, m workv1.ManifestResourceMeta) ([]workv1.FeedbackValue, error) {
	kind := m.Kind + " " + groupOrCore(m.Group)
	var src ExtractorSource
	if f.extractors != nil {
		src = f.extractors()
	}
	if src == nil {
		return nil, fmt.Errorf("WellKnownStatus: no FeedbackExtractor plugins are loaded on this cluster (the klusterlet's plugin loader is not running), so none serves %s", kind)
	}
	reg := src.Registry()
	var skipped []string
choose:
	for attempt := 0; attempt < 2; attempt++ {
		candidates := reg.FeedbackExtractors(m.Group, m.Kind) // by name
		sort.SliceStable(candidates, func(i, j int) bool {
			return !src.Builtin(candidates[i].Name()) && src.Builtin(candidates[j].Name())
		})
		skipped = skipped[:0]
		for _, mod := range candidates {
			values, err := f.extract(ctx, mod, obj, m)
			switch {
			case err == nil:
				return values, nil
			case wasm.CallErrorKindOf(err) == wasm.KindClosed && attempt == 0:
				// Replaced or removed while we chose it: choose again among what serves now.
				continue choose
			case mod.FailurePolicy() == wasm.FailurePolicyIgnore:
				skipped = append(skipped, fmt.Sprintf("%s (%v)", mod.Name(), err))
			default:
				return nil, fmt.Errorf("WellKnownStatus of %s: %w", kind, err)
			}
		}
		break
	}
	msg := "WellKnownStatus: no FeedbackExtractor plugin serves " + kind
	if len(skipped) > 0 {
		msg += "; skipped with failurePolicy Ignore: " + strings.Join(skipped, ", ")
	}
	var notReady []string
	for _, u := range reg.Unavailable(abi.TypeFeedbackExtractor) {
		if u.FailurePolicy != wasm.FailurePolicyIgnore {
			notReady = append(notReady, fmt.Sprintf("%s (%s: %s)", u.Name, u.Reason, u.Message))
		}
	}
	if len(notReady) > 0 {
		msg += "; FeedbackExtractor plugins not Ready: " + strings.Join(notReady, ", ")
	}
	return nil, errors.New(msg)
}

// extract calls mod's extract_feedback with obj and converts its validated answer.
func (f *feedbackReader) extract(ctx context.Context, mod *wasm.Module, obj *unstructured.Unstructured, m workv1.ManifestResourceMeta) ([]workv1.FeedbackValue, error) {
	raw, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s for FeedbackExtractor %s: %w", m.Kind, m.Name, mod.Name(), err)
	}
	req := abi.FeedbackRequest{Resource: raw, Identifier: abi.ResourceIdentifier{
		Group: m.Group, Version: m.Version, Kind: m.Kind, Resource: m.Resource, Name: m.Name, Namespace: m.Namespace}}
	// The call itself stops at the plugin's timeout; waiting for a free instance is bounded
	// too, so a saturated plugin delays the work's status by at most twice its timeout.
	cctx, cancel := context.WithTimeout(ctx, 2*mod.Limits().CallTimeout)
	defer cancel()
	export := abi.ExportExtractFeedback
	out, err := mod.Call(cctx, export, req.AppendJSON(nil))
	if err != nil {
		return nil, err
	}
	var res abi.FeedbackResult
	if err := res.DecodeJSON(out); err != nil { // DecodeJSON validates
		return nil, wasm.InvalidOutput(mod.Name(), export, err, "%v", err)
	}
	values := make([]workv1.FeedbackValue, 0, len(res.Values))
	for _, v := range res.Values {
		fv := workv1.FeedbackValue{Name: v.Name}
		switch x := v.FieldValue; x.Type {
		case abi.ValueInteger:
			fv.Value = workv1.FieldValue{Type: workv1.Integer, Integer: x.Integer}
		case abi.ValueString:
			fv.Value = workv1.FieldValue{Type: workv1.String, String: x.String}
		case abi.ValueBoolean:
			fv.Value = workv1.FieldValue{Type: workv1.Boolean, Boolean: x.Boolean}
		case abi.ValueJsonRaw:
			if !f.rawJSON {
				return nil, wasm.InvalidOutput(mod.Name(), export, nil,
					"value %q is JsonRaw, which needs the RawFeedbackJsonString feature gate", v.Name)
			}
			fv.Value = workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: x.JsonRaw}
		}
		values = append(values, fv)
	}
	return values, nil
}
