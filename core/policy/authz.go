package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/core/sarcache"
)

// UserInfo is a requester, as in input.user.
type UserInfo struct {
	Username string              `json:"username"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// Attributes are what a user wants to do, the second argument of flotilla.authorized.
type Attributes struct {
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
}

// Authorizer answers flotilla.authorized.
type Authorizer interface {
	Authorized(ctx context.Context, user UserInfo, attrs Attributes) (bool, error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, user UserInfo, attrs Attributes) (bool, error)

// Authorized calls f.
func (f AuthorizerFunc) Authorized(ctx context.Context, user UserInfo, attrs Attributes) (bool, error) {
	return f(ctx, user, attrs)
}

// errNoAuthorizer answers flotilla.authorized where nothing can: in a match rule, and in tests
// that do not mock it.
var errNoAuthorizer = errors.New(BuiltinAuthorized + " is not available here (in tests, mock it: with " + BuiltinAuthorized + " as <function>)")

// authorizedFunction implements flotilla.authorized with a.
func authorizedFunction(a Authorizer) func(*rego.Rego) {
	decl := &rego.Function{Name: authorizedDecl.Name, Decl: authorizedDecl.Decl, Nondeterministic: true}
	return rego.Function2(decl, func(bctx rego.BuiltinContext, userTerm, attrsTerm *ast.Term) (*ast.Term, error) {
		if a == nil {
			return nil, errNoAuthorizer
		}
		var user UserInfo
		if err := decodeTerm(userTerm, &user); err != nil || user.Username == "" {
			return nil, fmt.Errorf("%s: first argument must be a user {username, groups, ...} such as input.user", BuiltinAuthorized)
		}
		var attrs Attributes
		if err := decodeTerm(attrsTerm, &attrs); err != nil || attrs.Verb == "" {
			return nil, fmt.Errorf("%s: second argument must be {verb, group, resource, subresource, name, namespace} with a verb", BuiltinAuthorized)
		}
		ok, err := a.Authorized(bctx.Context, user, attrs)
		if err != nil {
			return nil, err
		}
		return ast.BooleanTerm(ok), nil
	})
}

func decodeTerm(t *ast.Term, into any) error {
	v, err := ast.JSON(t.Value)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// SubjectAccessReviewer creates SubjectAccessReviews:
// kubernetes.Interface.AuthorizationV1().SubjectAccessReviews() satisfies it, and so does a
// *sarcache.Cache over it.
type SubjectAccessReviewer = sarcache.Reviewer

// ReviewAuthorizer answers with a SubjectAccessReview from Reviews (a *sarcache.Cache keeps
// the answers for a while and shares concurrent identical reviews).
type ReviewAuthorizer struct {
	Reviews SubjectAccessReviewer
}

// Authorized asks Reviews.
func (a ReviewAuthorizer) Authorized(ctx context.Context, user UserInfo, attrs Attributes) (bool, error) {
	return Review(ctx, a.Reviews, user, attrs)
}

// Review makes one SubjectAccessReview.
func Review(ctx context.Context, reviews SubjectAccessReviewer, user UserInfo, attrs Attributes) (bool, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = v
	}
	res, err := reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: attrs.Verb, Group: attrs.Group, Resource: attrs.Resource, Subresource: attrs.Subresource,
			Name: attrs.Name, Namespace: attrs.Namespace,
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview for %s (%s %s): %w", user.Username, attrs.Verb, attrs.describe(), err)
	}
	return res.Status.Allowed, nil
}

// describe is resource[/subresource][.group] [name] [in namespace].
func (a Attributes) describe() string {
	s := a.Resource
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Group != "" {
		s += "." + a.Group
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Namespace != "" {
		s += " in " + a.Namespace
	}
	return s
}
