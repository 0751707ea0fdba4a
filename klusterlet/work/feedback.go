package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// feedbackReader reads the values a manifest's feedback rules ask for from its live object:
// JSONPaths itself, WellKnownStatus with the FeedbackExtractor plugins loaded on the managed
// cluster (extractors.go).
type feedbackReader struct {
	// rawJSON allows JsonRaw values (the RawFeedbackJsonString feature gate).
	rawJSON bool
	// extractors returns where WellKnownStatus finds its plugins; nil (or a nil result)
	// when no plugin loader runs for the cluster.
	extractors func() ExtractorSource
}

// values returns the feedback of obj under option's rules, sorted as the rules list them.
// Values read before an error are returned with it.
func (f *feedbackReader) values(ctx context.Context, obj *unstructured.Unstructured, m workv1.ManifestResourceMeta, option *workv1.ManifestConfigOption) ([]workv1.FeedbackValue, error) {
	if option == nil {
		return nil, nil
	}
	var out []workv1.FeedbackValue
	var errs []error
	for _, rule := range option.FeedbackRules {
		switch rule.Type {
		case workv1.JSONPathsType:
			for _, p := range rule.JsonPaths {
				if p.Version != "" && p.Version != m.Version {
					continue
				}
				v, ok, err := f.jsonPath(obj, p)
				switch {
				case err != nil:
					errs = append(errs, fmt.Errorf("jsonPaths %s (%s): %w", p.Name, p.Path, err))
				case ok:
					out = append(out, v)
				}
			}
		case workv1.WellKnownStatusType:
			values, err := f.wellKnown(ctx, obj, m)
			out = append(out, values...)
			if err != nil {
				errs = append(errs, err)
			}
		default:
			errs = append(errs, fmt.Errorf("unknown feedback rule type %q", rule.Type))
		}
	}
	return out, errors.Join(errs...)
}

func groupOrCore(g string) string {
	if g == "" {
		return "(core group)"
	}
	return "(group " + g + ")"
}

// jsonPath reads one Kubernetes JSONPath from obj. A path that matches nothing reports no
// value; a scalar becomes Integer, String or Boolean; a structure is JsonRaw (at most
// abi.MaxJsonRawLength bytes) when raw JSON is allowed and an error otherwise.
func (f *feedbackReader) jsonPath(obj *unstructured.Unstructured, p workv1.JsonPath) (workv1.FeedbackValue, bool, error) {
	jp := jsonpath.New(p.Name).AllowMissingKeys(true)
	if err := jp.Parse(fmt.Sprintf("{%s}", p.Path)); err != nil {
		return workv1.FeedbackValue{}, false, fmt.Errorf("invalid path: %w", err)
	}
	results, err := jp.FindResults(obj.UnstructuredContent())
	if err != nil {
		return workv1.FeedbackValue{}, false, err
	}
	var found []reflect.Value
	for _, r := range results {
		found = append(found, r...)
	}
	switch len(found) {
	case 0:
		return workv1.FeedbackValue{}, false, nil
	case 1:
	default:
		return workv1.FeedbackValue{}, false, fmt.Errorf("the path matches %d values, want one", len(found))
	}
	v := found[0].Interface()
	fv := workv1.FeedbackValue{Name: p.Name}
	switch t := v.(type) {
	case int64:
		fv.Value = workv1.FieldValue{Type: workv1.Integer, Integer: &t}
	case int:
		i := int64(t)
		fv.Value = workv1.FieldValue{Type: workv1.Integer, Integer: &i}
	case float64:
		if t != float64(int64(t)) {
			return fv, false, fmt.Errorf("value %v is not an integer", t)
		}
		i := int64(t)
		fv.Value = workv1.FieldValue{Type: workv1.Integer, Integer: &i}
	case string:
		fv.Value = workv1.FieldValue{Type: workv1.String, String: &t}
	case bool:
		fv.Value = workv1.FieldValue{Type: workv1.Boolean, Boolean: &t}
	default:
		if !f.rawJSON {
			return fv, false, fmt.Errorf("the value is a %s, not a scalar (JsonRaw needs the RawFeedbackJsonString feature gate)", kindOf(v))
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return fv, false, err
		}
		if len(raw) > abi.MaxJsonRawLength {
			return fv, false, fmt.Errorf("the JSON value is %d bytes, over the limit of %d", len(raw), abi.MaxJsonRawLength)
		}
		s := string(raw)
		fv.Value = workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &s}
	}
	return fv, true, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "map"
	case []any:
		return "list"
	case nil:
		return "null"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}
