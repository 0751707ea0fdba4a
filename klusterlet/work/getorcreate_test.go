package work

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// The requests getOrCreate sends: a resource the AppliedManifestWork does not list yet is
// created without being read first (a new work's path to Applied), one that exists already
// is read after the create fails, and a recorded one is read first. The fake client only
// records the requests; what the API server decides is tested in e2e/work.
func TestGetOrCreateReadsOnlyWhatMayExist(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("default")
		u.SetName(name)
		return u
	}
	verbs := func(actions []clienttesting.Action) []string {
		var out []string
		for _, a := range actions {
			out = append(out, a.GetVerb())
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		existing bool
		recorded bool
		want     []string
		created  bool
		// forbidden: the API server refuses this agent every request.
		forbidden bool
	}{
		{name: "new", want: []string{"create"}, created: true},
		{name: "exists-unrecorded", existing: true, want: []string{"create", "get"}},
		{name: "recorded", existing: true, recorded: true, want: []string{"get"}},
		{name: "recorded-gone", recorded: true, want: []string{"get", "create"}, created: true},
		// Without permission to create, the read comes next and its error is the one reported.
		{name: "forbidden", forbidden: true, want: []string{"create", "get"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.existing {
				objs = append(objs, cm(tc.name))
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, objs...)
			if tc.forbidden {
				dyn.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(gvr.GroupResource(), tc.name,
						fmt.Errorf("cannot %s resource %q", a.GetVerb(), gvr.Resource))
				})
			}
			obj, created, err := getOrCreate(context.Background(), dyn.Resource(gvr).Namespace("default"), cm(tc.name), owner{}, tc.recorded)
			switch {
			case tc.forbidden:
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot get resource "configmaps"`) {
					t.Errorf("error %v, want the read's Forbidden", err)
				}
			case err != nil || obj == nil:
				t.Fatalf("getOrCreate: %v, %v", obj, err)
			}
			if got := verbs(dyn.Actions()); !slices.Equal(got, tc.want) || created != tc.created {
				t.Errorf("requests %v created %v, want %v created %v", got, created, tc.want, tc.created)
			}
		})
	}
}
