package dashboard

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
)

// resAccess is where the dashboard's identity may list and watch a resource.
type resAccess struct {
	all        bool
	namespaces []string // with !all: namespaces allowed
	denied     []string // with !all: candidate namespaces denied
	err        string
}

func (a resAccess) none() bool { return !a.all && len(a.namespaces) == 0 }

// probeAccess asks, with SelfSubjectAccessReviews, where Config may list and watch each
// resource: cluster-wide, else in which of its candidate namespaces.
func probeAccess(ctx context.Context, kube kubernetes.Interface, candidates func(resource string) []string) map[string]resAccess {
	out := map[string]resAccess{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // bound concurrent reviews
	for name, r := range resources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			a := probeOne(ctx, kube, r, candidates(name))
			mu.Lock()
			out[name] = a
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func probeOne(ctx context.Context, kube kubernetes.Interface, r watched, candidates []string) resAccess {
	ok, err := mayListWatch(ctx, kube, r.gr, "")
	if err != nil {
		return resAccess{err: err.Error()}
	}
	if ok {
		return resAccess{all: true}
	}
	if !r.namespaced {
		return resAccess{err: fmt.Sprintf("forbidden: cannot list and watch %s", r.gr)}
	}
	a := resAccess{}
	for _, ns := range candidates {
		ok, err := mayListWatch(ctx, kube, r.gr, ns)
		if err != nil {
			a.err = err.Error()
			continue
		}
		if ok {
			a.namespaces = append(a.namespaces, ns)
		} else {
			a.denied = append(a.denied, ns)
		}
	}
	if a.none() && a.err == "" {
		if len(candidates) == 0 {
			a.err = fmt.Sprintf("forbidden: cannot list and watch %s in all namespaces, and no namespace was given to try (--namespace)", r.gr)
		} else {
			a.err = fmt.Sprintf("forbidden: cannot list and watch %s in all namespaces nor in %s", r.gr, strings.Join(candidates, ", "))
		}
	}
	return a
}

func mayListWatch(ctx context.Context, kube kubernetes.Interface, gr schema.GroupResource, ns string) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		r, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: gr.Group, Resource: gr.Resource, Namespace: ns,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("reviewing %s on %s in namespace %q: %w", verb, gr, ns, err)
		}
		if !r.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// kindAccess is the access the page is told about for each kind, from resource access.
func kindAccess(res map[string]resAccess) map[string]Access {
	out := map[string]Access{}
	for _, kind := range Kinds {
		rs := kindResources[kind]
		p := res[rs[0]]
		a := Access{AllNamespaces: p.all, Namespaces: nonNil(p.namespaces), Denied: nonNil(p.denied), Error: p.err}
		for _, aux := range rs[1:] {
			if res[aux].none() {
				a.Notes = append(a.Notes, "no access to "+auxNote[aux])
			}
		}
		out[kind] = a
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// viewer answers, for one SSE connection in hub mode, which objects its user may see,
// caching the Authorizer's answers until reset (every 30 s).
type viewer struct {
	authz Authorizer
	user  user.Info
	mu    sync.Mutex
	memo  map[string]bool
	errs  map[string]string
}

func newViewer(a Authorizer, u user.Info) *viewer {
	return &viewer{authz: a, user: u, memo: map[string]bool{}, errs: map[string]string{}}
}

func (v *viewer) reset() {
	v.mu.Lock()
	v.memo, v.errs = map[string]bool{}, map[string]string{}
	v.mu.Unlock()
}

// allowed says whether the viewer may list gr in ns ("" = cluster-wide). An error counts as
// denied and is remembered for the access report.
func (v *viewer) allowed(ctx context.Context, gr schema.GroupResource, ns string) bool {
	k := gr.String() + "|" + ns
	v.mu.Lock()
	ok, seen := v.memo[k]
	v.mu.Unlock()
	if seen {
		return ok
	}
	ok, err := v.authz.Allowed(ctx, v.user, "list", gr, ns)
	v.mu.Lock()
	v.memo[k] = ok && err == nil
	if err != nil {
		v.errs[gr.String()] = err.Error()
	}
	v.mu.Unlock()
	return ok && err == nil
}

// sees says whether the viewer may see an object of gr in ns.
func (v *viewer) sees(ctx context.Context, gr schema.GroupResource, ns string) bool {
	if v.allowed(ctx, gr, "") {
		return true
	}
	return ns != "" && v.allowed(ctx, gr, ns)
}

// namespacesGR is what a viewer must list cluster-wide to be told which namespaces it is
// denied: otherwise the denied names would enumerate the hub's namespaces.
var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// access reports per kind what the viewer may see, given the namespaces the model has
// objects of that kind in. Denied namespaces are named only to a viewer who may list
// namespaces; others are told the view is partial.
func (v *viewer) access(ctx context.Context, namespaces map[string]map[string]bool) map[string]Access {
	out := map[string]Access{}
	mayListNamespaces := v.allowed(ctx, namespacesGR, "")
	for _, kind := range Kinds {
		gr := kindGR(kind)
		a := Access{Namespaces: []string{}, Denied: []string{}}
		if v.allowed(ctx, gr, "") {
			a.AllNamespaces = true
		} else if !resources[kindResources[kind][0]].namespaced {
			a.Error = fmt.Sprintf("forbidden: %s may not list %s", v.user.GetName(), gr)
		} else {
			for ns := range namespaces[kind] {
				if v.allowed(ctx, gr, ns) {
					a.Namespaces = append(a.Namespaces, ns)
				} else {
					a.Denied = append(a.Denied, ns)
				}
			}
			sort.Strings(a.Namespaces)
			sort.Strings(a.Denied)
			if !mayListNamespaces && len(a.Denied) > 0 {
				a.Denied, a.Partial = []string{}, true
			}
		}
		if kind == KindRollouts {
			// Rollouts are gated beyond their own resource (recomputeRollouts): say so.
			if !v.allowed(ctx, resources[resWorks].gr, "") {
				a.Notes = append(a.Notes, "no access to manifestworks in all namespaces: replica set rollouts are not shown")
			}
			if !v.allowed(ctx, resources[resAddons].gr, "") {
				a.Notes = append(a.Notes, "no access to managedclusteraddons in all namespaces: add-on rollouts are not shown")
			}
		}
		v.mu.Lock()
		if e := v.errs[gr.String()]; e != "" {
			a.Error = e
		}
		v.mu.Unlock()
		out[kind] = a
	}
	return out
}
