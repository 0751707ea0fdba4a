package install

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/flowcontrol"
)

// FieldManager is the server-side-apply field manager of what Apply installs.
const FieldManager = "flotilla-install"

// pollInterval paces the waits for CRDs to be established, kinds to be served and objects
// to be gone.
const pollInterval = 200 * time.Millisecond

// establishTimeout bounds the wait for one CRD to be Established (names accepted, served).
const establishTimeout = time.Minute

// discoveryTimeout bounds how long a kind of a just-established CRD may stay missing from
// discovery before Apply gives up on it.
const discoveryTimeout = 30 * time.Second

// Apply server-side applies objects in order with field manager "flotilla-install" and force,
// waiting for each CRD to be Established before applying objects of later kinds; errors
// name the object (kind namespace/name). It needs only a rest.Config (dynamic client +
// REST mapper that is reset after CRDs are applied); without a rate limit there, its clients
// share one of applyQPS and applyBurst.
func Apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	return ApplyWith(ctx, cfg, objs, ApplyOptions{})
}

// ApplyOptions are what an operator adds to Apply: its own field manager, and the removal
// of what it applied before and renders no more (a component switched off).
type ApplyOptions struct {
	// FieldManager of the server-side apply; "" is FieldManager.
	FieldManager string
	// Labels are set on every object applied; with Prune they select what was applied
	// before. They must name the one applier (e.g. the operator and its custom resource).
	Labels map[string]string
	// Prune deletes, after the apply, the objects of these kinds labelled Labels that objs
	// does not hold. Nil prunes nothing.
	Prune *Prune
}

// Prune says where to look for objects to delete.
type Prune struct {
	// Kinds are listed with Labels as the label selector (apiVersion and kind).
	Kinds []schema.GroupVersionKind
	// Namespace limits the listing of namespaced kinds to one namespace (least privilege:
	// an operator may hold rights in its namespace only); "" lists every namespace.
	Namespace string
}

// ApplyWith is Apply with opts. Objects are modified: Labels are set on them. A prune
// needs non-empty Labels.
func ApplyWith(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, opts ApplyOptions) error {
	if opts.Prune != nil && len(opts.Labels) == 0 {
		return fmt.Errorf("pruning needs labels: without them every object of the kinds would match")
	}
	manager := opts.FieldManager
	if manager == "" {
		manager = FieldManager
	}
	for _, o := range objs {
		if len(opts.Labels) == 0 {
			break
		}
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, opts.Labels)
		o.SetLabels(l)
	}
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
	if err := c.apply(ctx, objs, manager); err != nil {
		return err
	}
	if opts.Prune != nil {
		return c.prune(ctx, objs, opts.Labels, *opts.Prune)
	}
	return nil
}

func (c *clients) apply(ctx context.Context, objs []*unstructured.Unstructured, manager string) error {
	var pending []*unstructured.Unstructured // CRDs applied, not yet seen Established
	for _, o := range objs {
		if len(pending) > 0 && !isCRD(o) {
			if err := c.waitEstablished(ctx, pending); err != nil {
				return err
			}
			pending = nil
			c.mapper.Reset()
		}
		res, err := c.resource(ctx, o, true)
		if err != nil {
			return fmt.Errorf("applying %s: %w", describe(o), err)
		}
		if _, err := res.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
			return fmt.Errorf("applying %s: %w", describe(o), err)
		}
		if isCRD(o) {
			pending = append(pending, o)
		}
	}
	if len(pending) > 0 {
		return c.waitEstablished(ctx, pending)
	}
	return nil
}

// prune deletes the objects of p.Kinds labelled labels that objs does not hold, without
// waiting for them to go (their owner's controller, e.g. a Deployment's ReplicaSets, follows
// by garbage collection).
func (c *clients) prune(ctx context.Context, objs []*unstructured.Unstructured, labels map[string]string, p Prune) error {
	keep := map[string]bool{}
	for _, o := range objs {
		keep[pruneKey(o.GroupVersionKind().GroupKind(), o.GetNamespace(), o.GetName())] = true
	}
	selector := metav1.FormatLabelSelector(metav1.SetAsLabelSelector(labels))
	background := metav1.DeletePropagationBackground
	for _, gvk := range p.Kinds {
		mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("pruning %s: %w", gvk.Kind, err)
		}
		var res dynamic.ResourceInterface = c.dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace && p.Namespace != "" {
			res = c.dynamic.Resource(mapping.Resource).Namespace(p.Namespace)
		}
		list, err := res.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return fmt.Errorf("pruning %s labelled %s: %w", gvk.Kind, selector, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			if keep[pruneKey(gvk.GroupKind(), o.GetNamespace(), o.GetName())] || o.GetDeletionTimestamp() != nil {
				continue
			}
			r := c.dynamic.Resource(mapping.Resource)
			var del dynamic.ResourceInterface = r
			if o.GetNamespace() != "" {
				del = r.Namespace(o.GetNamespace())
			}
			// Preconditioned on the UID listed: an object re-created since is not ours to judge.
			uid := o.GetUID()
			err := del.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("pruning %s: %w", describe(o), err)
			}
		}
	}
	return nil
}

func pruneKey(gk schema.GroupKind, namespace, name string) string {
	return gk.String() + " " + namespace + "/" + name
}

// Delete deletes objects in reverse order (ignoring NotFound), skipping CRDs unless
// withCRDs, and waits until they are gone (bounded by ctx). An object still there when ctx
// ends is an error naming what holds it up (see holdUp).
func Delete(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, withCRDs bool) error {
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
	background := metav1.DeletePropagationBackground
	for _, o := range slices.Backward(objs) {
		if isCRD(o) && !withCRDs {
			continue
		}
		res, err := c.resource(ctx, o, false)
		if meta.IsNoMatchError(err) {
			continue // the kind is not served (its CRD is gone): nothing of it is left
		}
		if err != nil {
			return fmt.Errorf("deleting %s: %w", describe(o), err)
		}
		if isCRD(o) {
			if err := c.awaitInstanceCache(ctx, res, o); err != nil {
				return err
			}
		}
		err = res.Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting %s: %w", describe(o), err)
		}
		// One at a time: an object's finalizer may need what comes before it in the install
		// order (a Klusterlet's, its agent's Deployment).
		err = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
			_, err := res.Get(ctx, o.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			return fmt.Errorf("waiting for %s to be deleted: %w%s", describe(o), err, c.holdUp(res, o))
		}
	}
	return nil
}

// holdUpTimeout bounds the reads that explain a deletion that did not finish: the wait's
// context has usually run out by then.
const holdUpTimeout = 10 * time.Second

// holdUpInstances is how many of a deleted CRD's remaining instances an error names.
const holdUpInstances = 5

// holdUp says what keeps o from going, for the error of a deletion that did not finish: its
// finalizers, the conditions in which the API server reports a deletion stuck (a CRD's
// Terminating, a Namespace's Namespace* that hold), and a CRD's first instances left with their
// finalizers — typically of a controller no longer running. Empty when o is gone or
// cannot be read.
func (c *clients) holdUp(res dynamic.ResourceInterface, o *unstructured.Unstructured) string {
	ctx, cancel := context.WithTimeout(context.Background(), holdUpTimeout)
	defer cancel()
	got, err := res.Get(ctx, o.GetName(), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	var parts []string
	if f := got.GetFinalizers(); len(f) > 0 {
		parts = append(parts, fmt.Sprintf("finalizers %v", f))
	}
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	for _, cond := range conds {
		m, _ := cond.(map[string]any)
		typ, _ := m["type"].(string)
		if typ == "Terminating" || (strings.HasPrefix(typ, "Namespace") && m["status"] == "True") {
			parts = append(parts, fmt.Sprintf("%s=%v %v: %v", typ, m["status"], m["reason"], m["message"]))
		}
	}
	if isCRD(o) {
		parts = append(parts, c.instancesLeft(ctx, got)...)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// instancesLeft names the first instances of crd with their finalizers.
func (c *clients) instancesLeft(ctx context.Context, crd *unstructured.Unstructured) []string {
	gvr, ok := storageResource(crd)
	if !ok {
		return nil
	}
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	list, err := c.metadata.Resource(gvr).List(ctx, metav1.ListOptions{Limit: holdUpInstances})
	if err != nil {
		return []string{fmt.Sprintf("listing its %s: %v", gvr.Resource, err)}
	}
	var out []string
	for _, item := range list.Items {
		name := item.GetName()
		if item.GetNamespace() != "" {
			name = item.GetNamespace() + "/" + name
		}
		out = append(out, fmt.Sprintf("%s %s left with finalizers %v", kind, name, item.GetFinalizers()))
	}
	if list.GetContinue() != "" {
		out = append(out, "more "+gvr.Resource+" left")
	}
	return out
}

type clients struct {
	dynamic  dynamic.Interface
	metadata metadata.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	// limiter is the one client-side rate limit of the three clients.
	limiter flowcontrol.RateLimiter
}

// applyQPS and applyBurst rate-limit Apply's and Delete's requests when the rest.Config sets
// no limit. client-go's default (5/s, burst 10) spread the hub operator's apply of some 50
// objects over about 9 s; the work is bounded by the objects given, and a chart's install
// fits in the burst.
const (
	applyQPS   = 50
	applyBurst = 100
)

// rateLimited is a copy of cfg whose clients share one rate limiter: cfg's, or one of its
// QPS and Burst, applyQPS and applyBurst where they are unset.
func rateLimited(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil {
		qps, burst := cfg.QPS, cfg.Burst
		if qps == 0 {
			qps = applyQPS
		}
		if burst == 0 {
			burst = applyBurst
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	}
	return cfg
}

func newClients(cfg *rest.Config) (*clients, error) {
	cfg = rateLimited(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building discovery client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building metadata client: %w", err)
	}
	return &clients{dynamic: dyn, metadata: meta, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), limiter: cfg.RateLimiter}, nil
}

// awaitInstanceCache waits until the API server lists the instances of CRD o from its watch
// cache, before o is deleted. The API server builds a CRD's storage on first use; until its
// watch cache has started, a list of all instances fails ("storage is (re)initializing").
// Its CRD finalizer makes such a list first thing, and when it fails the retry can be lost
// (a status conflict it ignores) until its informer resyncs five minutes later: the CRD
// stays Terminating for minutes. Listing here first, metadata only and from the cache
// (resourceVersion 0), builds the storage and waits for the cache.
func (c *clients) awaitInstanceCache(ctx context.Context, res dynamic.ResourceInterface, o *unstructured.Unstructured) error {
	live, err := res.Get(ctx, o.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s: %w", describe(o), err)
	}
	gvr, ok := storageResource(live)
	if !ok {
		return nil // no storage version: never served, nothing to list
	}
	err = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		_, err := c.metadata.Resource(gvr).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if apierrors.IsTooManyRequests(err) || apierrors.IsNotFound(err) {
			return false, nil // the cache is starting; NotFound: the kind is not served yet
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("deleting %s: waiting for the API server to list its instances: %w", describe(o), err)
	}
	return nil
}

// storageResource is the resource of crd's instances at its storage version.
func storageResource(crd *unstructured.Unstructured) (schema.GroupVersionResource, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if storage, _ := m["storage"].(bool); storage {
			name, _ := m["name"].(string)
			return schema.GroupVersionResource{Group: group, Version: name, Resource: plural}, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// resource is the dynamic client of o's resource, scoped to o's namespace when the resource
// is namespaced. With awaitKind, a kind not served yet is looked up again (discovery lags a
// CRD's Established condition briefly) for up to discoveryTimeout.
func (c *clients) resource(ctx context.Context, o *unstructured.Unstructured, awaitKind bool) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) && awaitKind {
		err = wait.PollUntilContextTimeout(ctx, pollInterval, discoveryTimeout, false, func(context.Context) (bool, error) {
			c.mapper.Reset()
			mapping, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return nil, fmt.Errorf("kind %s is not served: %w", gvk, err)
		}
	}
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return c.dynamic.Resource(mapping.Resource), nil
	}
	if o.GetNamespace() == "" {
		return nil, fmt.Errorf("namespaced %s has no namespace", gvk.Kind)
	}
	return c.dynamic.Resource(mapping.Resource).Namespace(o.GetNamespace()), nil
}

// waitEstablished waits until every CRD of crds has condition Established True.
func (c *clients) waitEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		res, err := c.resource(ctx, crd, true)
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, pollInterval, establishTimeout, true, func(ctx context.Context) (bool, error) {
			got, err := res.Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s to be established: %w", describe(crd), err)
		}
	}
	return nil
}

func isCRD(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}
