// Command misbehave is a CSRApproval plugin for the SDK's own tests: the request's
// username selects a misbehaviour, so tests can check how the SDK reports each.
package main

import (
	"errors"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/csrapproval"
)

type misbehave struct{ calls int }

func init() { csrapproval.Register(&misbehave{}) }

func main() {}

func (m *misbehave) ValidateConfig(raw []byte) error {
	if string(raw) == `{"reject":true}` {
		return errors.New("pluginConfig.reject: rejected as asked")
	}
	return nil
}

func (m *misbehave) ReviewCSR(h sdk.Host, r *abi.CSRReview) (abi.CSRDecision, error) {
	m.calls++
	switch r.Username {
	case "panic":
		panic("boom")
	case "nil-map":
		var mp map[string]int
		mp["x"] = 1
	case "error":
		return abi.CSRDecision{}, errors.New("refusing " + r.Name)
	case "invalid":
		return abi.CSRDecision{Decision: "Maybe"}, nil
	case "config":
		return abi.CSRDecision{Decision: abi.CSRAbstain, Message: string(h.Config())}, nil
	case "log":
		h.Log(sdk.LogWarn, "reviewing "+r.Name)
	case "count":
		// Reports how many calls this instance served, to observe instance reuse.
		return abi.CSRDecision{Decision: abi.CSRAbstain, Message: string(rune('0' + m.calls))}, nil
	}
	return abi.CSRDecision{Decision: abi.CSRApprove, Message: "ok"}, nil
}
