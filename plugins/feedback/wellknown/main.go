// Command wellknown is feedback-wellknown, the FeedbackExtractor the klusterlet installs on
// its managed cluster to serve ManifestWork WellKnownStatus feedback rules. It reports OCM's
// well-known values for Deployment, Job and Pod, and values in the same style for DaemonSet
// and StatefulSet (which OCM's agent does not serve):
//
//	Deployment.apps   ReadyReplicas, Replicas, AvailableReplicas   .status.readyReplicas, .replicas, .availableReplicas
//	StatefulSet.apps  ReadyReplicas, Replicas, AvailableReplicas   the same fields
//	DaemonSet.apps    DesiredNumberScheduled, NumberReady,         .status.desiredNumberScheduled, .numberReady,
//	                  NumberAvailable                              .numberAvailable
//	Job.batch         JobComplete, JobSucceeded                    status of the Complete condition, .status.succeeded
//	Pod               PodReady, PodPhase                           status of the Ready condition, .status.phase
//
// Counts are Integers, the others Strings; a field the object lacks reports no value, as
// OCM's JSONPath reader does. One module serves the five kinds: each Go module carries its
// own ~2 MB runtime (≈ 540 KiB zstd), so five would cost five times the ConfigMap space,
// compile time and instance memory on every managed cluster for no isolation anyone needs
// (a plugin an admin installs for one of these kinds takes precedence over this one).
package main

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/feedback"
)

// field is one value: an Integer or String at path, or the status of a condition.
type field struct {
	name      string
	path      []string
	str       bool
	condition string
}

func integer(name string, path ...string) field { return field{name: name, path: path} }
func str(name string, path ...string) field     { return field{name: name, path: path, str: true} }
func condition(name, typ string) field          { return field{name: name, condition: typ} }

var replicas = []field{
	integer("ReadyReplicas", "status", "readyReplicas"),
	integer("Replicas", "status", "replicas"),
	integer("AvailableReplicas", "status", "availableReplicas"),
}

// rules lists the kinds served, in declaration order.
var rules = []struct {
	kind   abi.GroupKind
	fields []field
}{
	{abi.GroupKind{Group: "apps", Kind: "Deployment"}, replicas},
	{abi.GroupKind{Group: "batch", Kind: "Job"}, []field{
		condition("JobComplete", "Complete"),
		integer("JobSucceeded", "status", "succeeded"),
	}},
	{abi.GroupKind{Kind: "Pod"}, []field{
		condition("PodReady", "Ready"),
		str("PodPhase", "status", "phase"),
	}},
	{abi.GroupKind{Group: "apps", Kind: "DaemonSet"}, []field{
		integer("DesiredNumberScheduled", "status", "desiredNumberScheduled"),
		integer("NumberReady", "status", "numberReady"),
		integer("NumberAvailable", "status", "numberAvailable"),
	}},
	{abi.GroupKind{Group: "apps", Kind: "StatefulSet"}, replicas},
}

type wellKnown struct{}

func init() { feedback.Register(wellKnown{}) }

func main() {}

func (wellKnown) Resources(sdk.Host) (abi.FeedbackResources, error) {
	d := abi.FeedbackResources{Resources: make([]abi.GroupKind, 0, len(rules))}
	for _, r := range rules {
		d.Resources = append(d.Resources, r.kind)
	}
	return d, nil
}

func (wellKnown) ExtractFeedback(_ sdk.Host, req *abi.FeedbackRequest) (abi.FeedbackResult, error) {
	var res abi.FeedbackResult
	for _, r := range rules {
		if r.kind.Group != req.Identifier.Group || r.kind.Kind != req.Identifier.Kind {
			continue
		}
		for _, f := range r.fields {
			var err error
			switch {
			case f.condition != "":
				err = feedback.Condition(&res, req.Resource, f.name, f.condition)
			case f.str:
				err = feedback.String(&res, req.Resource, f.name, f.path...)
			default:
				err = feedback.Integer(&res, req.Resource, f.name, f.path...)
			}
			if err != nil {
				return res, err
			}
		}
		return res, nil
	}
	// The host only sends declared kinds.
	return res, errNotServed(req.Identifier)
}

type errNotServed abi.ResourceIdentifier

func (e errNotServed) Error() string {
	return "feedback-wellknown does not serve " + abi.GroupKind{Group: e.Group, Kind: e.Kind}.String()
}
