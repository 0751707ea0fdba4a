package render

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

func ints(kv ...any) workv1.StatusFeedbackResult {
	var r workv1.StatusFeedbackResult
	for i := 0; i < len(kv); i += 2 {
		v := workv1.FieldValue{}
		switch x := kv[i+1].(type) {
		case int:
			n := int64(x)
			v = workv1.FieldValue{Type: workv1.Integer, Integer: &n}
		case string:
			v = workv1.FieldValue{Type: workv1.String, String: &x}
		case bool:
			v = workv1.FieldValue{Type: workv1.Boolean, Boolean: &x}
		}
		r.Values = append(r.Values, workv1.FeedbackValue{Name: kv[i].(string), Value: v})
	}
	return r
}

type feedback struct {
	group, resource, name string
	result                workv1.StatusFeedbackResult
}

// appliedWorks renders manifests into works and reports them available with the
// given feedback.
func appliedWorks(t *testing.T, manifests []string, configs []workv1.ManifestConfigOption, fb ...feedback) []workv1.ManifestWork {
	t.Helper()
	var r Rendered
	for _, m := range manifests {
		r.Manifests = append(r.Manifests, raw(m))
	}
	r.ManifestConfigs = configs
	works, err := Works("obs", "cluster1", r, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range works {
		works[i].Status.Conditions = []metav1.Condition{{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue}}
		for _, f := range fb {
			works[i].Status.ResourceStatus.Manifests = append(works[i].Status.ResourceStatus.Manifests, workv1.ManifestCondition{
				ResourceMeta:    workv1.ManifestResourceMeta{Group: f.group, Resource: f.resource, Namespace: "agents", Name: f.name},
				StatusFeedbacks: f.result,
			})
		}
	}
	return works
}

const zeroDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"zero","namespace":"agents"},"spec":{"replicas":0}}`

func TestAvailability(t *testing.T) {
	two := []string{deploymentA, deploymentB}
	type want struct {
		status          metav1.ConditionStatus
		reason, message string
	}
	for _, tc := range []struct {
		name  string
		mode  string
		works func() []workv1.ManifestWork
		want  want
	}{
		{"no works", ModeDeploymentAvailability, func() []workv1.ManifestWork { return nil },
			want{metav1.ConditionUnknown, "WorkNotFound", "Addon manifestWork is not found"}},
		{"only the hook work", ModeDeploymentAvailability, func() []workv1.ManifestWork { return appliedWorks(t, []string{hookJob}, nil) },
			want{metav1.ConditionUnknown, "WorkNotFound", "Addon manifestWork is not found"}},
		{"not applied yet", ModeDeploymentAvailability, func() []workv1.ManifestWork {
			w := appliedWorks(t, two, nil)
			w[0].Status.Conditions = nil
			return w
		}, want{metav1.ConditionUnknown, "WorkNotApplied", "Addon manifestWork is not applied yet"}},
		{"work unavailable", ModeDeploymentAvailability, func() []workv1.ManifestWork {
			w := appliedWorks(t, two, nil)
			w[0].Status.Conditions[0].Status, w[0].Status.Conditions[0].Message = metav1.ConditionFalse, "1 of 2 resources are not available"
			return w
		}, want{metav1.ConditionFalse, "WorkNotApplied", "1 of 2 resources are not available"}},
		{"no feedback for one", ModeDeploymentAvailability, func() []workv1.ManifestWork { return appliedWorks(t, []string{deploymentA}, nil) },
			want{metav1.ConditionUnknown, "NoProbeResult", "Probe results are not returned for apps/deployments: agents/a"}},
		{"no feedback for two", ModeDeploymentAvailability, func() []workv1.ManifestWork { return appliedWorks(t, two, nil) },
			want{metav1.ConditionUnknown, "NoProbeResult", "Probe results are not returned for 2 probe fields"}},
		{"not ready", ModeDeploymentAvailability, func() []workv1.ManifestWork {
			return appliedWorks(t, two, nil, feedback{"apps", "deployments", "a", ints("ReadyReplicas", 1, "Replicas", 1)},
				feedback{"apps", "deployments", "b", ints("ReadyReplicas", 0, "Replicas", 2, "AvailableReplicas", 0)})
		}, want{metav1.ConditionFalse, "ProbeUnavailable", "Probe addon unavailable with err desiredNumberReplicas is 2 but readyReplica is 0 for deployments agents/b"}},
		{"ready", ModeDeploymentAvailability, func() []workv1.ManifestWork {
			return appliedWorks(t, two, nil, feedback{"apps", "deployments", "a", ints("ReadyReplicas", 1, "Replicas", 3)},
				feedback{"apps", "deployments", "b", ints("ReadyReplicas", 0, "Replicas", 0)})
		}, want{metav1.ConditionTrue, "ProbeAvailable", "obs add-on is available."}},
		{"partial feedback is judged on what came", ModeDeploymentAvailability, func() []workv1.ManifestWork {
			return appliedWorks(t, two, nil, feedback{"apps", "deployments", "a", ints("ReadyReplicas", 1, "Replicas", 1)})
		}, want{metav1.ConditionTrue, "ProbeAvailable", "obs add-on is available."}},
		{"ready replicas not reported", ModeDeploymentAvailability, func() []workv1.ManifestWork {
			return appliedWorks(t, []string{deploymentA}, nil, feedback{"apps", "deployments", "a", ints("Replicas", 1)})
		}, want{metav1.ConditionFalse, "ProbeUnavailable", "Probe addon unavailable with err readyReplica is not probed"}},
		{"scaled to zero is not probed", ModeDeploymentAvailability, func() []workv1.ManifestWork { return appliedWorks(t, []string{zeroDeployment}, nil) },
			want{metav1.ConditionTrue, "ProbeAvailable", "obs add-on is available."}},
		{"daemonset ignored by DeploymentAvailability", ModeDeploymentAvailability, func() []workv1.ManifestWork {
			return appliedWorks(t, []string{deploymentA, daemonSet}, nil, feedback{"apps", "deployments", "a", ints("ReadyReplicas", 1, "Replicas", 1)},
				feedback{"apps", "daemonsets", "ds", ints("NumberReady", 1, "DesiredNumberScheduled", 2)})
		}, want{metav1.ConditionTrue, "ProbeAvailable", "obs add-on is available."}},
		{"daemonset probed by WorkloadAvailability", ModeWorkloadAvailability, func() []workv1.ManifestWork {
			return appliedWorks(t, []string{deploymentA, daemonSet}, nil, feedback{"apps", "deployments", "a", ints("ReadyReplicas", 1, "Replicas", 1)},
				feedback{"apps", "daemonsets", "ds", ints("NumberReady", 1, "DesiredNumberScheduled", 2)})
		}, want{metav1.ConditionFalse, "ProbeUnavailable", "Probe addon unavailable with err desiredNumberReplicas is 2 but readyReplica is 1 for daemonsets agents/ds"}},
		{"daemonset ready", ModeWorkloadAvailability, func() []workv1.ManifestWork {
			return appliedWorks(t, []string{daemonSet}, nil, feedback{"apps", "daemonsets", "ds", ints("NumberReady", 2, "DesiredNumberScheduled", 2)})
		}, want{metav1.ConditionTrue, "ProbeAvailable", "obs add-on is available."}},
		{"work field: boolean false", ModeWorkField, func() []workv1.ManifestWork {
			return appliedWorks(t, []string{notHook}, []workv1.ManifestConfigOption{{ResourceIdentifier: id("", "configmaps", "agents", "c"),
				FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "healthy", Path: ".data.ok"}}}}}},
				feedback{"", "configmaps", "c", ints("healthy", false)})
		}, want{metav1.ConditionFalse, "ProbeUnavailable", "Probe addon unavailable with err healthy is false for configmaps agents/c"}},
		{"work field: deployments use the generated rules", ModeWorkField, func() []workv1.ManifestWork {
			return appliedWorks(t, []string{deploymentA}, nil, feedback{"apps", "deployments", "a", ints("ReadyReplicas", 0, "Replicas", 1)})
		}, want{metav1.ConditionFalse, "ProbeUnavailable", "Probe addon unavailable with err desiredNumberReplicas is 1 but readyReplica is 0 for deployments agents/a"}},
		{"work field: no feedback", ModeWorkField, func() []workv1.ManifestWork {
			return appliedWorks(t, []string{deploymentA}, nil)
		}, want{metav1.ConditionUnknown, "NoProbeResult", "Probe results are not returned for apps/deployments: agents/a"}},
		{"work field: wildcard and a string value", ModeWorkField, func() []workv1.ManifestWork {
			return appliedWorks(t, []string{notHook}, []workv1.ManifestConfigOption{{ResourceIdentifier: id("", "configmaps", "*", "*"),
				FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "v", Path: ".data.v"}}}}}},
				feedback{"", "configmaps", "c", ints("v", "anything")})
		}, want{metav1.ConditionTrue, "ProbeAvailable", "obs add-on is available."}},
		{"unknown mode", "Lease", func() []workv1.ManifestWork { return appliedWorks(t, two, nil) },
			want{metav1.ConditionUnknown, "NoProbeResult", `health probe mode "Lease" is not computed from ManifestWorks`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r, m := Availability(tc.mode, tc.works())
			if (want{s, r, m}) != tc.want {
				t.Errorf("got %s %s %q\nwant %s %s %q", s, r, m, tc.want.status, tc.want.reason, tc.want.message)
			}
		})
	}
}

func TestAvailabilityAcrossWorks(t *testing.T) {
	// Two deploy works (b in the second); the feedback sits in the work holding b.
	r := Rendered{Manifests: []workv1.Manifest{raw(deploymentA), raw(deploymentB)}}
	works, err := Works("obs", "cluster1", r, len(deploymentB))
	if err != nil || len(works) != 2 {
		t.Fatalf("%d works, %v", len(works), err)
	}
	for i := range works {
		works[i].Status.Conditions = []metav1.Condition{{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue}}
	}
	works[1].Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "apps", Resource: "deployments", Namespace: "agents", Name: "b"},
		StatusFeedbacks: ints("ReadyReplicas", 0, "Replicas", 1)}}
	// Works given in any order, unlabelled: found by name.
	works[0].Labels, works[1].Labels = nil, nil
	s, reason, msg := Availability(ModeDeploymentAvailability, []workv1.ManifestWork{works[1], works[0]})
	if s != metav1.ConditionFalse || reason != "ProbeUnavailable" || msg != "Probe addon unavailable with err desiredNumberReplicas is 1 but readyReplica is 0 for deployments agents/b" {
		t.Errorf("%s %s %q", s, reason, msg)
	}
}

func TestProbeWorks(t *testing.T) {
	works := appliedWorks(t, []string{deploymentA}, nil, feedback{"apps", "deployments", "a", ints("ReadyReplicas", 1)})
	var seen []workv1.ResourceIdentifier
	check := func(id workv1.ResourceIdentifier, r workv1.StatusFeedbackResult) error {
		seen = append(seen, id)
		return errors.New("custom says no")
	}
	s, reason, msg := ProbeWorks(works, []workv1.ResourceIdentifier{id("apps", "deployments", "*", "*")}, check)
	if s != metav1.ConditionFalse || reason != "ProbeUnavailable" || msg != "Probe addon unavailable with err custom says no" ||
		len(seen) != 1 || seen[0] != id("apps", "deployments", "agents", "a") {
		t.Errorf("%s %s %q %v", s, reason, msg, seen)
	}
}

func TestFeedbackHealthCheck(t *testing.T) {
	for _, tc := range []struct {
		id     workv1.ResourceIdentifier
		result workv1.StatusFeedbackResult
		ok     bool
	}{
		{id("batch", "jobs", "n", "j"), ints("JobComplete", "True", "JobSucceeded", 1), true},
		{id("batch", "jobs", "n", "j"), ints("JobComplete", "False"), false},
		{id("", "pods", "n", "p"), ints("PodReady", "True", "PodPhase", "Running"), true},
		{id("", "pods", "n", "p"), ints("PodReady", "False"), false},
		{id("apps", "statefulsets", "n", "s"), ints("ReadyReplicas", 0, "Replicas", 2), false},
		{id("apps", "statefulsets", "n", "s"), ints("ReadyReplicas", 1, "Replicas", 2), true},
		{id("apps", "statefulsets", "n", "s"), ints("ReadyReplicas", 0, "Replicas", 0), true},
		{id("example.io", "things", "n", "t"), ints("phase", "Whatever"), true},
		{id("example.io", "things", "n", "t"), ints("ready", true, "synced", false), false},
	} {
		if err := FeedbackHealthCheck(tc.id, tc.result); (err == nil) != tc.ok {
			t.Errorf("%v %v: %v", tc.id, tc.result, err)
		}
	}
	if err := WorkloadHealthCheck(id("", "pods", "n", "p"), ints("PodReady", "True")); err == nil {
		t.Error("WorkloadHealthCheck accepted a pod")
	}
}
