package managedcluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

// mutate runs the handler on a create of raw and returns the object its patches make.
func mutate(t *testing.T, d *Defaults, raw string) clusterv1.ManagedCluster {
	t.Helper()
	resp := d.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}})
	if !resp.Allowed {
		t.Fatalf("create refused: %v", resp.Result)
	}
	out := []byte(raw)
	if len(resp.Patches) > 0 {
		p, err := json.Marshal(resp.Patches)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := jsonpatch.DecodePatch(p)
		if err != nil {
			t.Fatal(err)
		}
		if out, err = patch.Apply(out); err != nil {
			t.Fatalf("patches %s do not apply to %s: %v", p, raw, err)
		}
	}
	var mc clusterv1.ManagedCluster
	if err := json.Unmarshal(out, &mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

func TestDefaults(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	d := NewDefaults()
	d.now = func() time.Time { return now }

	// An object without spec or labels gets the finalizer and the unreachable taint, and no
	// cluster set label (the controller's: see Defaults).
	mc := mutate(t, d, `{"apiVersion":"cluster.open-cluster-management.io/v1","kind":"ManagedCluster","metadata":{"name":"c1"}}`)
	if _, ok := mc.Labels[clusterv1beta2.ClusterSetLabel]; ok {
		t.Errorf("labels %v: a cluster set label in the create", mc.Labels)
	}
	if len(mc.Finalizers) != 1 || mc.Finalizers[0] != clusterv1.ManagedClusterFinalizer {
		t.Errorf("finalizers %v", mc.Finalizers)
	}
	if len(mc.Spec.Taints) != 1 || mc.Spec.Taints[0].Key != clusterv1.ManagedClusterTaintUnreachable || !mc.Spec.Taints[0].TimeAdded.Time.Equal(now) {
		t.Errorf("taints %+v, want the unreachable taint added now", mc.Spec.Taints)
	}

	// A spec and other finalizers stay; a taint's timeAdded is the creation time.
	mc = mutate(t, d, `{"metadata":{"name":"c2","finalizers":["example.com/keep"]},"spec":{"hubAcceptsClient":true,"taints":[{"key":"example.com/t","effect":"NoSelect","timeAdded":"2001-01-01T00:00:00Z"}]}}`)
	if !mc.Spec.HubAcceptsClient || len(mc.Finalizers) != 2 || mc.Finalizers[0] != "example.com/keep" {
		t.Errorf("spec %+v, finalizers %v", mc.Spec, mc.Finalizers)
	}
	if len(mc.Spec.Taints) != 2 || !mc.Spec.Taints[0].TimeAdded.Time.Equal(now) {
		t.Errorf("taints %+v", mc.Spec.Taints)
	}
}
