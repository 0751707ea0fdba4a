// Command extractor is a FeedbackExtractor test plugin for the work e2e suite. Its
// pluginConfig names the kind it serves and how it behaves:
//
//	{"group": "cert-manager.io", "kind": "Certificate"}                  reports Ready (status of the
//	                                                                      Ready condition) and NotAfter
//	{"group": "", "kind": "ServiceAccount", "mode": "trap"}              crashes the module (a fatal Go
//	                                                                      runtime error) on every call
package main

import (
	"errors"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/feedback"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

type extractor struct{}

func init() { feedback.Register(extractor{}) }

func main() {}

func field(config []byte, key string) string {
	raw, ok, err := jsonlite.Lookup(config, key)
	if err != nil || !ok {
		return ""
	}
	s, _ := jsonlite.NewReader(raw).String()
	return s
}

func (extractor) ValidateConfig(config []byte) error {
	if field(config, "kind") == "" {
		return errors.New(`pluginConfig must name a kind: {"group": "...", "kind": "...", "mode": "trap"?}`)
	}
	return nil
}

func (extractor) Resources(h sdk.Host) (abi.FeedbackResources, error) {
	gk := abi.GroupKind{Group: field(h.Config(), "group"), Kind: field(h.Config(), "kind")}
	return abi.FeedbackResources{Resources: []abi.GroupKind{gk}}, nil
}

func (extractor) ExtractFeedback(h sdk.Host, r *abi.FeedbackRequest) (abi.FeedbackResult, error) {
	if field(h.Config(), "mode") == "trap" {
		// Every goroutine asleep is a fatal runtime error, not a recoverable panic: the
		// module dies mid-call, as a buggy plugin would.
		select {}
	}
	var res abi.FeedbackResult
	err := feedback.Condition(&res, r.Resource, "Ready", "Ready")
	if err == nil {
		err = feedback.String(&res, r.Resource, "NotAfter", "status", "notAfter")
	}
	return res, err
}
