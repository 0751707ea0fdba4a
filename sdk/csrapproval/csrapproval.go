// Package csrapproval is the SDK for CSRApproval plugins: rules that approve,
// deny or abstain on a pending CertificateSigningRequest of a managed cluster's
// agent (bootstrap or renewal). The host approves a CSR when some plugin approves
// and none denies; Deny wins over Approve.
//
//	type rule struct{}
//
//	func (rule) ReviewCSR(_ sdk.Host, r *abi.CSRReview) (abi.CSRDecision, error) {
//		if r.Renewal && r.ClusterAccepted {
//			return abi.CSRDecision{Decision: abi.CSRApprove}, nil
//		}
//		return abi.CSRDecision{Decision: abi.CSRAbstain}, nil
//	}
//
//	func init() { csrapproval.Register(rule{}) }
//	func main() {}
package csrapproval

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Approver is the plugin's logic.
type Approver interface {
	ReviewCSR(h sdk.Host, req *abi.CSRReview) (abi.CSRDecision, error)
}

var registered Approver

// Register makes p the plugin served by this module's exports. Call it from init.
func Register(p Approver) { registered = p }

// Registered returns the registered plugin, or nil.
func Registered() Approver { return registered }

// Review runs the review_csr export's logic: decode the JSON input, call p, validate
// the answer and encode it as JSON.
func Review(p Approver, h sdk.Host, input []byte) ([]byte, error) {
	var req abi.CSRReview
	if err := req.DecodeJSON(input); err != nil {
		return nil, err
	}
	res, err := p.ReviewCSR(h, &req)
	if err != nil {
		return nil, err
	}
	if err := res.Validate(); err != nil {
		return nil, err
	}
	return res.AppendJSON(nil), nil
}
