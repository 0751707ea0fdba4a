package dashboard

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
)

// recordedReviews answers SubjectAccessReviews as a tiny RBAC: alice may list placements in
// team-a only. It records every review it is asked.
type recordedReviews struct {
	mu   sync.Mutex
	got  []authorizationv1.SubjectAccessReviewSpec
	deny bool
}

func (r *recordedReviews) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	r.mu.Lock()
	r.got = append(r.got, *sar.Spec.DeepCopy())
	r.mu.Unlock()
	a := sar.Spec.ResourceAttributes
	out := sar.DeepCopy()
	out.Status.Allowed = sar.Spec.User == "alice" && a != nil && a.Verb == "list" &&
		a.Group == "cluster.open-cluster-management.io" && a.Resource == "placements" && a.Namespace == "team-a"
	return out, nil
}

func (r *recordedReviews) specs() []authorizationv1.SubjectAccessReviewSpec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]authorizationv1.SubjectAccessReviewSpec(nil), r.got...)
}

// TestSARAuthorizerAsksForTheViewer: the review names the viewer exactly as the API server
// authenticated them (uid, groups, extra too: an impersonated or OIDC user's rights may hang
// on them), the verb, group, resource and namespace; answers are cached per question.
func TestSARAuthorizerAsksForTheViewer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	reviews := &recordedReviews{}
	authz, watch, err := NewSARAuthorizer(reviews)
	if err != nil {
		t.Fatal(err)
	}
	if watch == nil || watch.Cache == nil {
		t.Fatal("NewSARAuthorizer returned no RBACWatch over its cache")
	}
	alice := &user.DefaultInfo{Name: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"view"}}}
	placements := schema.GroupResource{Group: "cluster.open-cluster-management.io", Resource: "placements"}
	for _, tc := range []struct {
		ns   string
		want bool
	}{{"team-a", true}, {"team-b", false}, {"", false}, {"team-a", true}} {
		ok, err := authz.Allowed(ctx, alice, "list", placements, tc.ns)
		if err != nil {
			t.Fatalf("alice list placements in %q: %v", tc.ns, err)
		}
		if ok != tc.want {
			t.Errorf("alice list placements in %q: %v, want %v", tc.ns, ok, tc.want)
		}
	}
	specs := reviews.specs()
	if len(specs) != 3 {
		t.Fatalf("%d SubjectAccessReviews for 3 distinct questions (one asked twice), want 3: %+v", len(specs), specs)
	}
	want := authorizationv1.SubjectAccessReviewSpec{User: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
		Extra:              map[string]authorizationv1.ExtraValue{"scopes": {"view"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Group: placements.Group, Resource: "placements", Namespace: "team-a"}}
	if !reflect.DeepEqual(specs[0], want) {
		t.Errorf("first review %+v (attributes %+v), want %+v (attributes %+v)", specs[0], specs[0].ResourceAttributes, want, want.ResourceAttributes)
	}
	if specs[2].ResourceAttributes.Namespace != "" {
		t.Errorf("cluster-wide question reviewed in namespace %q, want none", specs[2].ResourceAttributes.Namespace)
	}

	// Bob gets his own answer, not alice's cached one.
	ok, err := authz.Allowed(ctx, &user.DefaultInfo{Name: "bob", Groups: []string{"team-a"}}, "list", placements, "team-a")
	if err != nil || ok {
		t.Errorf("bob list placements in team-a: %v, %v; want denied", ok, err)
	}

	// A request without a user (not through the API server) is an error, never a review.
	before := len(reviews.specs())
	if _, err := authz.Allowed(ctx, nil, "list", placements, "team-a"); err == nil || !strings.Contains(err.Error(), "no user") {
		t.Errorf("Allowed without a user: %v, want an error saying there is none", err)
	}
	if _, err := authz.Allowed(ctx, &user.DefaultInfo{}, "list", placements, "team-a"); err == nil {
		t.Error("Allowed for a user without a name: no error")
	}
	if n := len(reviews.specs()); n != before {
		t.Errorf("%d reviews made for requests without a user", n-before)
	}
}
