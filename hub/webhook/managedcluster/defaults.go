// Package managedcluster holds the hub's mutating webhook for ManagedClusters.
package managedcluster

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/hub/registration/taint"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// DefaultsName is the mutating webhook's name in the configuration.
const DefaultsName = "managedclusters.defaults.flotilla.dev"

// DefaultsPath is where the Server serves it.
const DefaultsPath = "/mutate/cluster.open-cluster-management.io/v1/managedclusters"

// Defaults gives a ManagedCluster at its creation what the hub's controllers would otherwise
// write to it in two updates right after: the cleanup finalizer and the built-in unreachable
// taint, and, as OCM's webhook does, the creation time as timeAdded of every taint. A fleet
// joining thousands of clusters saves those writes, their admission and their watch events.
// It is only a shortcut: its failure policy is Ignore, and the controllers still add what is
// missing. The default cluster set label stays the controller's (OCM's webhook adds it here):
// added in the create, it would make the creator need "join" on the default set, which the
// hub's admission policy asks of whoever sets the label.
type Defaults struct {
	now func() time.Time
}

var _ webhook.Validating = (*Defaults)(nil)

// NewDefaults returns the handler.
func NewDefaults() *Defaults {
	return &Defaults{now: time.Now}
}

// Registration sends creates of managedclusters.
func (d *Defaults) Registration() webhook.Registration {
	cluster := admissionregistrationv1.ClusterScope
	return webhook.Registration{
		Name: DefaultsName,
		Path: DefaultsPath,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{clusterv1.GroupVersion.Group},
				APIVersions: []string{clusterv1.GroupVersion.Version},
				Resources:   []string{"managedclusters"},
				Scope:       &cluster,
			},
		}},
		// The controllers add the same: never fail a create for it.
		FailurePolicy:  admissionregistrationv1.Ignore,
		TimeoutSeconds: 2,
		Mutating:       true,
	}
}

// Handle answers one create with the patches that add the defaults.
func (d *Defaults) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var mc clusterv1.ManagedCluster
	if err := json.Unmarshal(req.Object.Raw, &mc); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var ops []jsonpatch.Operation
	switch {
	case len(mc.Finalizers) == 0:
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/finalizers", []string{clusterv1.ManagedClusterFinalizer}))
	case !slices.Contains(mc.Finalizers, clusterv1.ManagedClusterFinalizer):
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/finalizers/-", clusterv1.ManagedClusterFinalizer))
	}
	// A create's timeAdded values are ignored, as OCM's webhook does: a taint is added now.
	now := d.now().Truncate(time.Second)
	taints := make([]clusterv1.Taint, len(mc.Spec.Taints))
	for i, t := range mc.Spec.Taints {
		t.TimeAdded.Time = now
		taints[i] = t
	}
	// A new cluster has reported nothing yet: the built-in taint for that (unreachable).
	taints, _ = taint.Desired(taints, nil, now)
	if len(taints) > 0 {
		if req.Object.Raw != nil && !hasSpec(req.Object.Raw) {
			ops = append(ops, jsonpatch.NewOperation("add", "/spec", map[string]any{"taints": taints}))
		} else {
			ops = append(ops, jsonpatch.NewOperation("add", "/spec/taints", taints))
		}
	}
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", ops...)
}

// hasSpec says the object sent has a spec member.
func hasSpec(raw []byte) bool {
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	return json.Unmarshal(raw, &obj) == nil && len(obj.Spec) > 0 && string(obj.Spec) != "null"
}
