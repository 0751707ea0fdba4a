package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
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
// kubernetes.Interface.AuthorizationV1().SubjectAccessReviews() satisfies it.
type SubjectAccessReviewer interface {
	Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Defaults of CachingAuthorizer, as the API server's webhook authorizer caches but shorter:
// a grant takes effect within DefaultDeniedTTL, a revocation within DefaultAllowedTTL.
const (
	DefaultAllowedTTL = 10 * time.Second
	DefaultDeniedTTL  = 2 * time.Second
	DefaultCacheSize  = 10000
)

// CachingAuthorizer answers with SubjectAccessReviews, each answer cached briefly; concurrent
// identical questions share one review. The zero TTLs and size take the defaults.
type CachingAuthorizer struct {
	Reviews               SubjectAccessReviewer
	AllowedTTL, DeniedTTL time.Duration
	Size                  int
	Clock                 clock.PassiveClock

	mu       sync.Mutex
	entries  map[string]cacheEntry
	inflight map[string]*call
}

type cacheEntry struct {
	allowed bool
	expires time.Time
}

type call struct {
	done    chan struct{}
	allowed bool
	err     error
}

// Authorized asks the API server, or the cache.
func (c *CachingAuthorizer) Authorized(ctx context.Context, user UserInfo, attrs Attributes) (bool, error) {
	keyBytes, err := json.Marshal(struct {
		U UserInfo
		A Attributes
	}{user, attrs})
	if err != nil {
		return false, err
	}
	key := string(keyBytes)
	now := c.now()
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && now.Before(e.expires) {
		c.mu.Unlock()
		return e.allowed, nil
	}
	if cl, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		select {
		case <-cl.done:
			return cl.allowed, cl.err
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	cl := &call{done: make(chan struct{})}
	if c.inflight == nil {
		c.inflight = map[string]*call{}
	}
	c.inflight[key] = cl
	c.mu.Unlock()

	cl.allowed, cl.err = c.review(ctx, user, attrs)
	c.mu.Lock()
	delete(c.inflight, key)
	if cl.err == nil {
		c.store(key, cl.allowed, c.now())
	}
	c.mu.Unlock()
	close(cl.done)
	return cl.allowed, cl.err
}

func (c *CachingAuthorizer) now() time.Time {
	if c.Clock != nil {
		return c.Clock.Now()
	}
	return time.Now()
}

// store caches an answer; at capacity expired entries go first, then everything (a burst of
// distinct questions costs reviews, never memory).
func (c *CachingAuthorizer) store(key string, allowed bool, now time.Time) {
	size, ttl := c.Size, c.AllowedTTL
	if size <= 0 {
		size = DefaultCacheSize
	}
	if ttl <= 0 {
		ttl = DefaultAllowedTTL
	}
	if !allowed {
		if ttl = c.DeniedTTL; ttl <= 0 {
			ttl = DefaultDeniedTTL
		}
	}
	if c.entries == nil {
		c.entries = map[string]cacheEntry{}
	}
	if len(c.entries) >= size {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= size {
			clear(c.entries)
		}
	}
	c.entries[key] = cacheEntry{allowed: allowed, expires: now.Add(ttl)}
}

func (c *CachingAuthorizer) review(ctx context.Context, user UserInfo, attrs Attributes) (bool, error) {
	return Review(ctx, c.Reviews, user, attrs)
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
