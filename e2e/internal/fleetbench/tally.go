package fleetbench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tally counts the objects of one kind for which done holds, kept current by one list and
// watch: at 5,000 clusters and 50,000 works, listing them every second would load the API
// server more than the hub does and skew what the bench measures.
type tally struct {
	mu     sync.Mutex
	ok     map[string]bool
	synced func() bool
}

// startTally runs a tally of the objects newList lists until ctx ends.
func startTally[T client.Object, L client.ObjectList](ctx context.Context, c client.WithWatch, newList func() L, done func(T) bool) *tally {
	t := &tally{ok: map[string]bool{}}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l := newList()
			return l, c.List(ctx, l, &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, newList(), &client.ListOptions{Raw: &opts})
		},
	}
	var zero T
	_, inf := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: lw, ObjectType: zero,
		// The verdict is taken here, as each object comes in; the store keeps only its
		// metadata, not its body.
		Transform: func(obj any) (any, error) {
			o, ok := obj.(T)
			if !ok {
				return obj, nil
			}
			d := done(o)
			t.mu.Lock()
			t.ok[o.GetNamespace()+"/"+o.GetName()] = d
			t.mu.Unlock()
			return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName(),
				ResourceVersion: o.GetResourceVersion(), UID: o.GetUID()}}, nil
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if o, ok := obj.(metav1.Object); ok {
					t.mu.Lock()
					delete(t.ok, o.GetNamespace()+"/"+o.GetName())
					t.mu.Unlock()
				}
			},
		},
	})
	t.synced = inf.HasSynced
	go inf.RunWithContext(ctx)
	return t
}

// count is how many objects done holds for, once the first list is in.
func (t *tally) count() (int, bool) {
	if !t.synced() {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, d := range t.ok {
		if d {
			n++
		}
	}
	return n, true
}

// wait waits until want objects are done, printing progress on stderr every 15 s; what
// names them in the progress and in the error when ctx ends first.
func (t *tally) wait(ctx context.Context, what string, want int, start time.Time) error {
	last := time.Now()
	for {
		n, _ := t.count()
		if n >= want {
			return nil
		}
		if time.Since(last) > 15*time.Second {
			fmt.Fprintf(os.Stderr, "%s: %d/%d after %s\n", what, n, want, time.Since(start).Round(time.Second))
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %d of %d after %s: %w", what, n, want, time.Since(start).Round(time.Second), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
