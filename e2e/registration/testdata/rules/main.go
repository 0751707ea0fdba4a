// Command rules is a CSRApproval test plugin for the registration e2e suite. Its behaviour is
// chosen by pluginConfig, a JSON string "<mode>:<cluster prefix>":
//
//	renewal       approve renewals of accepted clusters (the default rule's behaviour)
//	deny:<p>      deny every CSR for a cluster whose name starts with p
//	approve:<p>   approve first-time CSRs for clusters whose name starts with p
//	trap:<p>      crash the module (a fatal Go runtime error) for clusters starting with p
package main

import (
	"errors"
	"strings"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/csrapproval"
)

type rules struct{}

func (rules) ValidateConfig(config []byte) error {
	mode, _ := parse(config)
	switch mode {
	case "renewal", "deny", "approve", "trap":
		return nil
	}
	return errors.New(`pluginConfig must be a JSON string "<renewal|deny|approve|trap>:<cluster prefix>"`)
}

func parse(config []byte) (mode, prefix string) {
	s := strings.Trim(strings.TrimSpace(string(config)), `"`)
	mode, prefix, _ = strings.Cut(s, ":")
	return mode, prefix
}

func (rules) ReviewCSR(h sdk.Host, r *abi.CSRReview) (abi.CSRDecision, error) {
	mode, prefix := parse(h.Config())
	abstain := abi.CSRDecision{Decision: abi.CSRAbstain}
	switch mode {
	case "renewal":
		if r.Renewal && r.ClusterAccepted {
			return abi.CSRDecision{Decision: abi.CSRApprove, Message: "renewal of an accepted cluster"}, nil
		}
	case "deny":
		if strings.HasPrefix(r.ClusterName, prefix) {
			return abi.CSRDecision{Decision: abi.CSRDeny, Message: "cluster " + r.ClusterName + " is blocked"}, nil
		}
	case "approve":
		if !r.Renewal && strings.HasPrefix(r.ClusterName, prefix) {
			return abi.CSRDecision{Decision: abi.CSRApprove, Message: "auto-approved first registration"}, nil
		}
	case "trap":
		if strings.HasPrefix(r.ClusterName, prefix) {
			// Every goroutine asleep is a fatal runtime error, not a recoverable panic: the
			// module dies mid-call, as a buggy plugin would.
			select {}
		}
	}
	return abstain, nil
}

func init() { csrapproval.Register(rules{}) }

func main() {}
