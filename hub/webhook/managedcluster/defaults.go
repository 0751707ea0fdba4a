// Package managedcluster holds the hub's mutating webhook for ManagedClusters.
package managedcluster

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/hub/registration/taint"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// DefaultsName is the mutating webhook's name in the configuration.
const DefaultsName = "managedclusters.defaults.flotilla.dev"

// DefaultsPath is where the Server serves it.
const DefaultsPath = "/mutate/cluster.open-cluster-management.io/v1/managedclusters"

// Defaults gives a ManagedCluster at its creation what the hub's controllers would otherwise
// write to it in three updates right after: the cleanup finalizer, the default cluster set
// label (with the DefaultClusterSet gate, as OCM's webhook does) and the built-in unreachable
// taint, and, as OCM's webhook does, the creation time as timeAdded of every taint. A fleet
// joining thousands of clusters saves those writes, their admission and their watch events.
// It is only a shortcut: its failure policy is Ignore, and the controllers still add what is
// missing.
type Defaults struct {
	defaultClusterSet bool
	now               func() time.Time
}

var _ webhook.Validating = (*Defaults)(nil)

// NewDefaults returns the handler; defaultClusterSet says the DefaultClusterSet gate is on.
func NewDefaults(defaultClusterSet bool) *Defaults {
	return &Defaults{defaultClusterSet: defaultClusterSet, now: time.Now}
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
	if d.defaultClusterSet && mc.Labels[clusterv1beta2.ClusterSetLabel] == "" {
		if len(mc.Labels) == 0 {
			ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels",
				map[string]string{clusterv1beta2.ClusterSetLabel: clusterv1beta2.DefaultClusterSetName}))
		} else {
			ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels/"+escape(clusterv1beta2.ClusterSetLabel),
				clusterv1beta2.DefaultClusterSetName))
		}
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

// escape makes a map key a JSON Pointer token (RFC 6901).
func escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// hasSpec says the object sent has a spec member.
func hasSpec(raw []byte) bool {
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	return json.Unmarshal(raw, &obj) == nil && len(obj.Spec) > 0 && string(obj.Spec) != "null"
}
