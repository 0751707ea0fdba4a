// Package feedback is the SDK for FeedbackExtractor plugins: they turn a
// resource applied by a ManifestWork into named status feedback values (OCM's
// statusFeedback shape). Use jsonlite.Lookup to read fields of the resource
// without encoding/json:
//
//	func (x) ExtractFeedback(_ sdk.Host, r *abi.FeedbackRequest) (abi.FeedbackResult, error) {
//		raw, ok, err := jsonlite.Lookup(r.Resource, "status", "readyReplicas")
//		if err != nil || !ok {
//			return abi.FeedbackResult{}, err
//		}
//		n, err := jsonlite.NewReader(raw).Int()
//		return abi.FeedbackResult{Values: []abi.FeedbackValue{abi.IntegerValue("readyReplicas", n)}}, err
//	}
package feedback

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Extractor is the plugin's logic.
type Extractor interface {
	ExtractFeedback(h sdk.Host, req *abi.FeedbackRequest) (abi.FeedbackResult, error)
}

var registered Extractor

// Register makes p the plugin served by this module's exports. Call it from init.
func Register(p Extractor) { registered = p }

// Registered returns the registered plugin, or nil.
func Registered() Extractor { return registered }

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
