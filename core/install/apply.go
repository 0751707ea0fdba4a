package install

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
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
// REST mapper that is reset after CRDs are applied).
func Apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
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
		if _, err := res.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
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

// Delete deletes objects in reverse order (ignoring NotFound), skipping CRDs unless
// withCRDs, and waits until they are gone (bounded by ctx).
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
			return fmt.Errorf("waiting for %s to be deleted: %w", describe(o), err)
		}
	}
	return nil
}

type clients struct {
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

func newClients(cfg *rest.Config) (*clients, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building discovery client: %w", err)
	}
	return &clients{dynamic: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
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
