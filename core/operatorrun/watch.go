package operatorrun

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncTimeout bounds how long NewWatch waits for the object before the component's first
// start: an API server without the CRD yet (a hub that installs it) or an identity that may
// not read it does not hold the component up.
const syncTimeout = 30 * time.Second

// Notifier says when something may have changed.
type Notifier interface {
	// Subscribe returns a channel that receives (coalesced) a value after every change, and a
	// function to stop.
	Subscribe() (<-chan struct{}, func())
}

// Source is where a Runner reads its object from: a Watch, or a fake in tests.
type Source[T client.Object] interface {
	Notifier
	// Name is the object's name.
	Name() string
	// Get returns the object as last seen; found is false when there is none, or when it is
	// not followed (yet).
	Get(ctx context.Context) (obj T, found bool, err error)
}

// Kind is the kind of T (a pointer to an API type), for messages: "ClusterManager".
func Kind[T client.Object]() string {
	return reflect.TypeFor[T]().Elem().Name()
}

// newObject returns a new, empty T.
func newObject[T client.Object]() T {
	return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
}

// Watch follows the cluster-scoped object of type T named name and the process's own
// Deployment from a cache of just those two objects, outside any manager, so that every
// replica sees a change, leader or not. Every change wakes the subscribers.
type Watch[T client.Object] struct {
	cache      cache.Cache
	name       string
	deployment types.NamespacedName
	log        logr.Logger

	objReady, deploymentReady atomic.Bool

	subscribers
}

// NewWatch starts the cache until ctx ends and waits (up to 30 s) for the object named name;
// the Deployment (zero: none), and the object if it was not there in time, are followed as
// soon as they can be. scheme must know T and, with a Deployment, apps/v1.
func NewWatch[T client.Object](ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, name string,
	deployment types.NamespacedName, log logr.Logger) (*Watch[T], error) {
	kind := Kind[T]()
	byObject := map[client.Object]cache.ByObject{
		newObject[T](): {Field: fields.OneTermEqualSelector("metadata.name", name)},
	}
	if deployment.Name != "" {
		byObject[&appsv1.Deployment{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{deployment.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", deployment.Name),
		}
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: byObject})
	if err != nil {
		return nil, fmt.Errorf("watching %s %s: cache: %w", kind, name, err)
	}
	w := &Watch[T]{cache: c, name: name, deployment: deployment, log: log}
	go func() {
		if err := c.Start(ctx); err != nil {
			log.Error(err, kind+" cache stopped")
		}
	}()
	// Informers got before the cache runs would not be waited for.
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("watching %s %s: cache: %w", kind, name, context.Cause(ctx))
	}
	if err := w.follow(ctx, newObject[T](), &w.objReady); err != nil {
		log.Info("Not following the "+kind+" yet; starting from the flags and following it once it can be",
			lowerFirst(kind), name, "error", err.Error())
		go w.followRetrying(ctx, newObject[T](), &w.objReady)
	}
	if deployment.Name != "" {
		go w.followRetrying(ctx, &appsv1.Deployment{}, &w.deploymentReady)
	}
	return w, nil
}

// Name is the object's name.
func (w *Watch[T]) Name() string { return w.name }

// Deployment is the process's own Deployment; zero when it runs in none.
func (w *Watch[T]) Deployment() types.NamespacedName { return w.deployment }

// Get returns the object as last seen; found is false when there is none or it is not
// followed (yet).
func (w *Watch[T]) Get(ctx context.Context) (T, bool, error) {
	var zero T
	if !w.objReady.Load() {
		return zero, false, nil
	}
	obj := newObject[T]()
	if err := w.cache.Get(ctx, client.ObjectKey{Name: w.name}, obj); err != nil {
		return zero, false, client.IgnoreNotFound(err)
	}
	return obj, true, nil
}

// subscribers is a Notifier: notify wakes every subscriber.
type subscribers struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// Subscribe returns a channel that receives (coalesced) a value after every notify, and a
// function to stop.
func (s *subscribers) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[chan struct{}]struct{}{}
	}
	s.subs[ch] = struct{}{}
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}

func (s *subscribers) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// follow gets the informer of obj's kind, waiting for its sync, and wakes the subscribers on
// every event from then on.
func (w *Watch[T]) follow(ctx context.Context, obj client.Object, ready *atomic.Bool) error {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	inf, err := w.cache.GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.notify() },
		UpdateFunc: func(any, any) { w.notify() },
		DeleteFunc: func(any) { w.notify() },
	}); err != nil {
		return err
	}
	ready.Store(true)
	w.notify()
	return nil
}

// followRetrying calls follow, waiting 1 s doubling to 30 s between tries, until it succeeds
// (the CRD appears, the informer syncs) or ctx ends. (wait.ExponentialBackoff would give up
// once at the cap; a DelayFunc stays there.)
func (w *Watch[T]) followRetrying(ctx context.Context, obj client.Object, ready *atomic.Bool) {
	_ = newBackoff(time.Second, 30*time.Second).DelayFunc().Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		if err := w.follow(ctx, obj, ready); err != nil {
			w.log.V(1).Info("Cannot follow object yet; retrying", "kind", fmt.Sprintf("%T", obj), "error", err.Error())
			return false, nil
		}
		return true, nil
	})
}
