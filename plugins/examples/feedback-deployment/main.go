// Command feedback-deployment is an example FeedbackExtractor: from a Deployment
// applied by a ManifestWork it reports readyReplicas (Integer), the first
// container's image (String), whether it is Available (Boolean) and its
// conditions (JsonRaw), reading the object with jsonlite instead of encoding/json.
package main

import (
	"errors"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/feedback"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

type deployment struct{}

func init() { feedback.Register(deployment{}) }

func main() {}

// Resources declares what the work agent may send: Deployments (group apps) only.
func (deployment) Resources(sdk.Host) (abi.FeedbackResources, error) {
	return abi.FeedbackResources{Resources: []abi.GroupKind{{Group: "apps", Kind: "Deployment"}}}, nil
}

func (deployment) ExtractFeedback(_ sdk.Host, req *abi.FeedbackRequest) (abi.FeedbackResult, error) {
	// The host only sends declared kinds; the check guards direct calls (plugin tests).
	if req.Identifier.Kind != "Deployment" {
		return abi.FeedbackResult{}, errors.New("feedback-deployment handles Deployments, not " + req.Identifier.Kind)
	}
	var res abi.FeedbackResult
	if raw, ok, err := jsonlite.Lookup(req.Resource, "status", "readyReplicas"); err != nil {
		return res, err
	} else if ok {
		n, err := jsonlite.NewReader(raw).Int()
		if err != nil {
			return res, errors.New("status.readyReplicas: " + err.Error())
		}
		res.Values = append(res.Values, abi.IntegerValue("readyReplicas", n))
	}
	if raw, ok, err := jsonlite.Lookup(req.Resource, "spec", "template", "spec", "containers", "0", "image"); err != nil {
		return res, err
	} else if ok {
		s, err := jsonlite.NewReader(raw).String()
		if err != nil {
			return res, errors.New("spec.template.spec.containers[0].image: " + err.Error())
		}
		res.Values = append(res.Values, abi.StringValue("image", s))
	}
	conds, ok, err := jsonlite.Lookup(req.Resource, "status", "conditions")
	if err != nil || !ok {
		return res, err
	}
	available := false
	r := jsonlite.NewReader(conds)
	err = r.Array(func(int) error {
		var typ, status string
		err := r.Object(func(key string) error {
			var err error
			switch key {
			case "type":
				typ, err = r.String()
			case "status":
				status, err = r.String()
			}
			return err
		})
		available = available || (typ == "Available" && status == "True")
		return err
	})
	if err != nil {
		return res, errors.New("status.conditions: " + err.Error())
	}
	res.Values = append(res.Values, abi.BooleanValue("available", available))
	if len(conds) <= abi.MaxJsonRawLength {
		res.Values = append(res.Values, abi.JsonRawValue("conditions", conds))
	}
	return res, nil
}
