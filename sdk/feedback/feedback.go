// Package feedback is the SDK for FeedbackExtractor plugins: they turn a resource applied by a
// ManifestWork into named status feedback values (OCM's statusFeedback shape) for the
// ManifestWork's WellKnownStatus feedback rules. A plugin declares the group/kinds it serves
// (Resources); the work agent calls it only for resources of those kinds. Read fields of the
// resource with the helpers below or jsonlite.Lookup, without encoding/json:
//
//	type certificate struct{}
//
//	func (certificate) Resources(sdk.Host) (abi.FeedbackResources, error) {
//		return abi.FeedbackResources{Resources: []abi.GroupKind{{Group: "cert-manager.io", Kind: "Certificate"}}}, nil
//	}
//
//	func (certificate) ExtractFeedback(_ sdk.Host, r *abi.FeedbackRequest) (abi.FeedbackResult, error) {
//		var res abi.FeedbackResult
//		err := feedback.Condition(&res, r.Resource, "Ready", "Ready") // status of the Ready condition
//		if err == nil {
//			err = feedback.String(&res, r.Resource, "NotAfter", "status", "notAfter")
//		}
//		return res, err
//	}
//
//	func init() { feedback.Register(certificate{}) }
//	func main() {}
package feedback

import (
	"errors"
	"strings"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

// Extractor is the plugin's logic.
type Extractor interface {
	// Resources declares the group/kinds ExtractFeedback serves. The host calls it once at
	// load and refuses the module if the declaration is invalid; it may depend on the
	// plugin's configuration but must return the same answer every time for a given one.
	Resources(h sdk.Host) (abi.FeedbackResources, error)
	// ExtractFeedback reads the feedback values of one resource of a declared kind. A field
	// the resource lacks should report no value (as OCM's JSONPath rules do), not an error.
	ExtractFeedback(h sdk.Host, req *abi.FeedbackRequest) (abi.FeedbackResult, error)
}

var registered Extractor

// Register makes p the plugin served by this module's exports. Call it from init.
func Register(p Extractor) { registered = p }

// Registered returns the registered plugin, or nil.
func Registered() Extractor { return registered }

// Declare runs the declare_resources export's logic: it validates p's declaration and
// returns it as JSON.
func Declare(p Extractor, h sdk.Host) ([]byte, error) {
	decl, err := p.Resources(h)
	if err != nil {
		return nil, err
	}
	if err := decl.Validate(); err != nil {
		return nil, err
	}
	return decl.AppendJSON(nil), nil
}

// Extract runs the extract_feedback export's logic: decode the JSON input, call p, validate
// the answer and encode it as JSON.
func Extract(p Extractor, h sdk.Host, input []byte) ([]byte, error) {
	var req abi.FeedbackRequest
	if err := req.DecodeJSON(input); err != nil {
		return nil, err
	}
	res, err := p.ExtractFeedback(h, &req)
	if err != nil {
		return nil, err
	}
	if err := res.Validate(); err != nil {
		return nil, err
	}
	return res.AppendJSON(nil), nil
}

// Integer appends the integer at path in resource to res as value name. An absent (or
// null) field appends nothing; anything but an integer is an error naming the path.
func Integer(res *abi.FeedbackResult, resource []byte, name string, path ...string) error {
	r, ok, err := lookup(resource, path)
	if err != nil || !ok {
		return err
	}
	n, err := r.Int()
	if err != nil {
		return pathErr(path, err)
	}
	res.Values = append(res.Values, abi.IntegerValue(name, n))
	return nil
}

// String is Integer for a string field.
func String(res *abi.FeedbackResult, resource []byte, name string, path ...string) error {
	r, ok, err := lookup(resource, path)
	if err != nil || !ok {
		return err
	}
	s, err := r.String()
	if err != nil {
		return pathErr(path, err)
	}
	res.Values = append(res.Values, abi.StringValue(name, s))
	return nil
}

// Condition appends the status ("True", "False" or "Unknown") of the condition of type
// condType in status.conditions to res as value name, as OCM's JSONPath
// .status.conditions[?(@.type=="<condType>")].status reads it. No such condition appends
// nothing.
func Condition(res *abi.FeedbackResult, resource []byte, name, condType string) error {
	status, ok, err := ConditionStatus(resource, condType)
	if err != nil || !ok {
		return err
	}
	res.Values = append(res.Values, abi.StringValue(name, status))
	return nil
}

// ConditionStatus returns the status of the condition of type condType in
// status.conditions, and whether there is one.
func ConditionStatus(resource []byte, condType string) (status string, found bool, err error) {
	conds, ok, err := jsonlite.Lookup(resource, "status", "conditions")
	if err != nil || !ok {
		return "", false, err
	}
	r := jsonlite.NewReader(conds)
	err = r.Array(func(int) error {
		var typ, st string
		var hasStatus bool
		err := r.Object(func(key string) error {
			var err error
			switch key {
			case "type":
				typ, err = r.String()
			case "status":
				hasStatus = !r.Null()
				if hasStatus {
					st, err = r.String()
				}
			}
			return err
		})
		if err == nil && !found && typ == condType && hasStatus {
			status, found = st, true
		}
		return err
	})
	if err != nil {
		return "", false, errors.New("status.conditions: " + err.Error())
	}
	return status, found, nil
}

func lookup(resource []byte, path []string) (*jsonlite.Reader, bool, error) {
	raw, ok, err := jsonlite.Lookup(resource, path...)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, nil
	}
	r := jsonlite.NewReader(raw)
	if r.Null() {
		return nil, false, nil
	}
	return r, true, nil
}

func pathErr(path []string, err error) error {
	return errors.New(strings.Join(path, ".") + ": " + err.Error())
}
