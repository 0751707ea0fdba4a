package work

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// DefaultMaxFeedbackWatch caps the resources watched for feedbackScrapeType Watch (OCM's
// --max-feedback-watch); manifests past it are polled.
const DefaultMaxFeedbackWatch = 500

// resourceKey names one watched resource.
type resourceKey struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

// feedbackWatches runs one informer per resource that a manifest with feedbackScrapeType
// Watch names, shared by the works naming it, and wakes those works when it changes. The
// number of watched resources is capped; beyond the cap manifests are polled.
type feedbackWatches struct {
	dyn    dynamic.Interface
	max    int
	events chan<- event.GenericEvent
	log    logr.Logger

	mu sync.Mutex
	// watches by resource, each with the works that want it.
	watches map[resourceKey]*resourceWatch
	// byWork is the set of resources each work watches.
	byWork map[types.NamespacedName]map[resourceKey]bool
	ctx    context.Context
}

type resourceWatch struct {
	stop  chan struct{}
	works map[types.NamespacedName]bool
}

func newFeedbackWatches(dyn dynamic.Interface, max int, events chan<- event.GenericEvent, log logr.Logger) *feedbackWatches {
	return &feedbackWatches{dyn: dyn, max: max, events: events, log: log,
		watches: map[resourceKey]*resourceWatch{}, byWork: map[types.NamespacedName]map[resourceKey]bool{}}
}

// Start implements manager.Runnable: watches live until the agent stops.
func (f *feedbackWatches) Start(ctx context.Context) error {
	f.mu.Lock()
	f.ctx = ctx
	f.mu.Unlock()
	<-ctx.Done()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, w := range f.watches {
		close(w.stop)
		delete(f.watches, k)
	}
	return nil
}

// track sets the resources work watches to want (nil when the work is gone) and reports,
// per wanted resource, whether it is watched (false: over the cap, polled instead).
func (f *feedbackWatches) track(work types.NamespacedName, want []resourceKey) map[resourceKey]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	wanted := map[resourceKey]bool{}
	for _, k := range want {
		wanted[k] = true
	}
	for k := range f.byWork[work] {
		if !wanted[k] {
			f.release(work, k)
		}
	}
	got := map[resourceKey]bool{}
	for k := range wanted {
		w, ok := f.watches[k]
		if !ok {
			if len(f.watches) >= f.max || f.ctx == nil {
				got[k] = false
				continue
			}
			w = &resourceWatch{stop: make(chan struct{}), works: map[types.NamespacedName]bool{}}
			f.watches[k] = w
			f.run(k, w)
		}
		w.works[work] = true
		if f.byWork[work] == nil {
			f.byWork[work] = map[resourceKey]bool{}
		}
		f.byWork[work][k] = true
		got[k] = true
	}
	if len(f.byWork[work]) == 0 {
		delete(f.byWork, work)
	}
	return got
}

func (f *feedbackWatches) release(work types.NamespacedName, k resourceKey) {
	delete(f.byWork[work], k)
	w, ok := f.watches[k]
	if !ok {
		return
	}
	delete(w.works, work)
	if len(w.works) == 0 {
		close(w.stop)
		delete(f.watches, k)
	}
}

// watching reports how many resources are watched.
func (f *feedbackWatches) watching() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watches)
}

func (f *feedbackWatches) run(k resourceKey, w *resourceWatch) {
	inf := dynamicinformer.NewFilteredDynamicInformer(f.dyn, k.gvr, k.namespace, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", k.name).String()
		})
	wake := func() {
		f.mu.Lock()
		works := make([]types.NamespacedName, 0, len(w.works))
		for n := range w.works {
			works = append(works, n)
		}
		f.mu.Unlock()
		for _, n := range works {
			select {
			case f.events <- event.GenericEvent{Object: &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name}}}:
			case <-w.stop:
				return
			case <-time.After(time.Minute):
				f.log.Info("dropped a feedback watch event; the periodic sync catches up", "work", n.String())
			}
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { wake() },
		UpdateFunc: func(any, any) { wake() },
		DeleteFunc: func(any) { wake() },
	})
	go inf.Informer().Run(w.stop)
}
