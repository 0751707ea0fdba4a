package render

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// Health probe modes of Availability, named after OCM's add-on health probers.
const (
	// ModeDeploymentAvailability: every Deployment of the add-on (except those with
	// spec.replicas 0) has a ready replica, or wants none.
	ModeDeploymentAvailability = "DeploymentAvailability"
	// ModeWorkloadAvailability: as DeploymentAvailability, and every DaemonSet has
	// all its scheduled pods ready. OCM's template add-ons use this one.
	ModeWorkloadAvailability = "WorkloadAvailability"
	// ModeWorkField: OCM's Work prober with the resources of the works'
	// manifestConfigs as probe fields and FeedbackHealthCheck as the check.
	ModeWorkField = "WorkField"
)

// Availability computes the Available condition of an add-on from its
// ManifestWorks (works of one add-on on one cluster; the pre-delete hook work is
// ignored), as OCM's add-on manager does for the health prober mode:
//
//   - no deploy work: Unknown, WorkNotFound;
//   - a deploy work without an Available condition: Unknown, WorkNotApplied; with
//     Available=False: False, WorkNotApplied and the work's message;
//   - the probed resources reported no feedback at all: Unknown, NoProbeResult;
//   - a probed resource fails its check: False, ProbeUnavailable;
//   - otherwise True, ProbeAvailable, "<addon> add-on is available.".
//
// DeploymentAvailability and WorkloadAvailability probe the Deployments (and
// DaemonSets) of the works' manifests with OCM's checks (ReadyReplicas ≥ 1 or
// Replicas = 0; NumberReady = DesiredNumberScheduled). WorkField probes each
// resource named by a manifestConfig with feedback rules, checked by
// FeedbackHealthCheck. An unknown mode is Unknown, NoProbeResult.
func Availability(mode string, works []workv1.ManifestWork) (status metav1.ConditionStatus, reason, message string) {
	addonName, deploy := deployWorks(works)
	var fields []workv1.ResourceIdentifier
	var check func(workv1.ResourceIdentifier, workv1.StatusFeedbackResult) error
	switch mode {
	case ModeDeploymentAvailability, ModeWorkloadAvailability:
		for _, w := range deploy {
			for _, m := range w.Spec.Workload.Manifests {
				o, err := decodeObject(m.Raw)
				if err != nil || o.group() != "apps" {
					continue
				}
				switch {
				case o.kind() == "Deployment":
					if r, ok := replicas(o); ok && r == 0 {
						continue // OCM does not probe Deployments scaled to zero
					}
				case o.kind() == "DaemonSet" && mode == ModeWorkloadAvailability:
				default:
					continue
				}
				fields = append(fields, o.identifier())
			}
		}
		check = WorkloadHealthCheck
	case ModeWorkField:
		seen := map[workv1.ResourceIdentifier]bool{}
		for _, w := range deploy {
			for _, mc := range w.Spec.ManifestConfigs {
				if len(mc.FeedbackRules) > 0 && !seen[mc.ResourceIdentifier] {
					seen[mc.ResourceIdentifier] = true
					fields = append(fields, mc.ResourceIdentifier)
				}
			}
		}
		check = FeedbackHealthCheck
	default:
		return metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonNoProbeResult,
			fmt.Sprintf("health probe mode %q is not computed from ManifestWorks", mode)
	}
	return probe(addonName, deploy, fields, check)
}

// ProbeWorks is OCM's Work health prober for arbitrary probe fields and check
// (AddonHealthCheckFunc): the same conditions as Availability, with check called
// on each field's feedback. fields may use "*" in namespace and name.
func ProbeWorks(works []workv1.ManifestWork, fields []workv1.ResourceIdentifier,
	check func(workv1.ResourceIdentifier, workv1.StatusFeedbackResult) error) (status metav1.ConditionStatus, reason, message string) {
	addonName, deploy := deployWorks(works)
	return probe(addonName, deploy, fields, check)
}

// deployWorks returns the add-on's name (its label, else from the work name) and
// its deploy works sorted by name.
func deployWorks(works []workv1.ManifestWork) (string, []workv1.ManifestWork) {
	var addonName string
	for _, w := range works {
		if n := w.Labels[addonv1alpha1.AddonLabelKey]; n != "" {
			addonName = n
			break
		}
	}
	var out []workv1.ManifestWork
	for _, w := range works {
		name := addonName
		if name == "" {
			if rest, ok := strings.CutPrefix(w.Name, "addon-"); ok {
				if i := strings.LastIndex(rest, "-deploy-"); i > 0 {
					name = rest[:i]
				}
			}
		}
		if name != "" && strings.HasPrefix(w.Name, DeployWorkNamePrefix(name)) {
			addonName = name
			out = append(out, w)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return addonName, out
}

func probe(addonName string, deploy []workv1.ManifestWork, fields []workv1.ResourceIdentifier,
	check func(workv1.ResourceIdentifier, workv1.StatusFeedbackResult) error) (metav1.ConditionStatus, string, string) {
	if len(deploy) == 0 {
		return metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonWorkNotFound, "Addon manifestWork is not found"
	}
	var conditions []workv1.ManifestCondition
	for _, w := range deploy {
		c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
		switch {
		case c == nil:
			return metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonWorkNotApply, "Addon manifestWork is not applied yet"
		case c.Status == metav1.ConditionFalse:
			return metav1.ConditionFalse, addonv1alpha1.AddonAvailableReasonWorkNotApply, c.Message
		}
		conditions = append(conditions, w.Status.ResourceStatus.Manifests...)
	}

	var empty []workv1.ResourceIdentifier
	for _, f := range fields {
		found := false
		for _, mc := range conditions {
			rm := mc.ResourceMeta
			got := workv1.ResourceIdentifier{Group: rm.Group, Resource: rm.Resource, Namespace: rm.Namespace, Name: rm.Name}
			if !identifierMatches(got, f) || len(mc.StatusFeedbacks.Values) == 0 {
				continue
			}
			found = true
			if err := check(got, mc.StatusFeedbacks); err != nil {
				return metav1.ConditionFalse, addonv1alpha1.AddonAvailableReasonProbeUnavailable,
					fmt.Sprintf("Probe addon unavailable with err %v", err)
			}
		}
		if !found {
			empty = append(empty, f)
		}
	}
	if len(fields) > 0 && len(empty) == len(fields) {
		msg := fmt.Sprintf("Probe results are not returned for %d probe fields", len(empty))
		if len(empty) == 1 {
			e := empty[0]
			msg = fmt.Sprintf("Probe results are not returned for %s/%s: %s/%s", e.Group, e.Resource, e.Namespace, e.Name)
		}
		return metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonNoProbeResult, msg
	}
	return metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonProbeAvailable, fmt.Sprintf("%s add-on is available.", addonName)
}

func replicas(o object) (int64, bool) {
	spec, _ := o["spec"].(map[string]any)
	switch v := spec["replicas"].(type) {
	case interface{ Int64() (int64, error) }:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}

func intValue(result workv1.StatusFeedbackResult, name string) (int64, bool) {
	for _, v := range result.Values {
		if v.Name == name && v.Value.Integer != nil {
			return *v.Value.Integer, true
		}
	}
	return 0, false
}

func stringValue(result workv1.StatusFeedbackResult, name string) (string, bool) {
	for _, v := range result.Values {
		if v.Name == name && v.Value.String != nil {
			return *v.Value.String, true
		}
	}
	return "", false
}

// WorkloadHealthCheck is OCM's WorkloadAvailabilityHealthCheck on WellKnownStatus
// feedback: a Deployment is available with ReadyReplicas ≥ 1 or Replicas = 0, a
// DaemonSet when NumberReady = DesiredNumberScheduled; other resources fail.
func WorkloadHealthCheck(id workv1.ResourceIdentifier, result workv1.StatusFeedbackResult) error {
	if id.Resource != "deployments" && id.Resource != "daemonsets" {
		return fmt.Errorf("unsupported resource type %s", id.Resource)
	}
	if id.Group != "apps" {
		return fmt.Errorf("unsupported resource group %s", id.Group)
	}
	if len(result.Values) == 0 {
		return fmt.Errorf("no values are probed for %s %s/%s", id.Resource, id.Namespace, id.Name)
	}
	readyName, desiredName := workv1.WellKnownReadyReplicas, workv1.WellKnownReplicas
	if id.Resource == "daemonsets" {
		readyName, desiredName = workv1.WellKnownNumberReady, workv1.WellKnownDesiredNumberScheduled
	}
	ready, ok := intValue(result, readyName)
	if !ok {
		return fmt.Errorf("readyReplica is not probed")
	}
	desired, ok := intValue(result, desiredName)
	if !ok {
		return fmt.Errorf("desiredNumberReplicas is not probed")
	}
	switch id.Resource {
	case "deployments":
		if desired == 0 || ready >= 1 {
			return nil
		}
	case "daemonsets":
		if ready == desired {
			return nil
		}
	}
	return fmt.Errorf("desiredNumberReplicas is %d but readyReplica is %d for %s %s/%s", desired, ready, id.Resource, id.Namespace, id.Name)
}

// FeedbackHealthCheck is the check of ModeWorkField: Deployments and DaemonSets as
// WorkloadHealthCheck, StatefulSets with ReadyReplicas ≥ 1 or Replicas = 0, Jobs
// with JobComplete "True", Pods with PodReady "True"; for any resource, a Boolean
// feedback value false fails. A resource with no value it can judge is available.
func FeedbackHealthCheck(id workv1.ResourceIdentifier, result workv1.StatusFeedbackResult) error {
	for _, v := range result.Values {
		if v.Value.Type == workv1.Boolean && v.Value.Boolean != nil && !*v.Value.Boolean {
			return fmt.Errorf("%s is false for %s %s/%s", v.Name, id.Resource, id.Namespace, id.Name)
		}
	}
	if id.Group == "apps" && (id.Resource == "deployments" || id.Resource == "daemonsets") {
		return WorkloadHealthCheck(id, result)
	}
	switch id.Group + "/" + id.Resource {
	case "apps/statefulsets":
		ready, rok := intValue(result, workv1.WellKnownReadyReplicas)
		desired, dok := intValue(result, workv1.WellKnownReplicas)
		if rok && dok && desired != 0 && ready < 1 {
			return fmt.Errorf("desiredNumberReplicas is %d but readyReplica is %d for %s %s/%s", desired, ready, id.Resource, id.Namespace, id.Name)
		}
	case "batch/jobs":
		if s, ok := stringValue(result, workv1.WellKnownJobComplete); ok && s != "True" {
			return fmt.Errorf("%s is %q for %s %s/%s", workv1.WellKnownJobComplete, s, id.Resource, id.Namespace, id.Name)
		}
	case "/pods":
		if s, ok := stringValue(result, workv1.WellKnownPodReady); ok && s != "True" {
			return fmt.Errorf("%s is %q for %s %s/%s", workv1.WellKnownPodReady, s, id.Resource, id.Namespace, id.Name)
		}
	}
	return nil
}
