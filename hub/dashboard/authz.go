package dashboard

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/core/sarcache"
)

// SARCacheName names the hub-mode dashboard's SubjectAccessReview cache in the sarcache
// metrics (cache="dashboard").
const SARCacheName = "dashboard"

// SARAuthorizer is hub mode's Authorizer: it asks the hub API server with a
// SubjectAccessReview for the viewer as the API server authenticated them (name, uid, groups,
// extra), through Reviews — a *sarcache.Cache, so that the many questions a page's stream
// asks (every kind, every namespace, re-checked periodically) are answered from memory until
// their TTL ends or RBAC changes (sarcache.RBACWatch), as the cluster-gateway does for its
// callers.
type SARAuthorizer struct {
	Reviews sarcache.Reviewer
}

var _ Authorizer = (*SARAuthorizer)(nil)

// NewSARAuthorizer is a SARAuthorizer over a new sarcache.Cache of reviews (the hub's
// kubernetes.Interface AuthorizationV1().SubjectAccessReviews()), with the RBACWatch the
// caller adds to its manager so that a grant or revocation is seen at once.
func NewSARAuthorizer(reviews sarcache.Reviewer) (*SARAuthorizer, *sarcache.RBACWatch, error) {
	sars, err := sarcache.New(sarcache.Options{Reviews: reviews, Name: SARCacheName})
	if err != nil {
		return nil, nil, fmt.Errorf("dashboard: %w", err)
	}
	return &SARAuthorizer{Reviews: sars}, &sarcache.RBACWatch{Name: "dashboard-rbac", Cache: sars}, nil
}

// Allowed says whether u may verb gr in namespace ("" asks cluster-wide: every namespace, or
// a cluster-scoped kind).
func (a *SARAuthorizer) Allowed(ctx context.Context, u user.Info, verb string, gr schema.GroupResource, namespace string) (bool, error) {
	if u == nil || u.GetName() == "" {
		return false, errors.New("dashboard: no user to authorize (the request did not come through the hub API server)")
	}
	return policy.Review(ctx, a.Reviews, policy.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()},
		policy.Attributes{Verb: verb, Group: gr.Group, Resource: gr.Resource, Namespace: namespace})
}
