package dashboard

import (
	"bytes"
	"encoding/json"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// entry is one encoded view object with what decides who may see it.
type entry struct {
	namespace string
	gr        schema.GroupResource
	// also, when set, must be listable cluster-wide as well for a viewer to see the entry
	// (hub mode): e.g. a replica set's rollout shows its works in cluster namespaces.
	also schema.GroupResource
	raw  json.RawMessage
}

// batch is what changed between two revisions; an entry without raw is a deletion.
type batch struct {
	rev     uint64
	changes map[string]map[string]*entry // kind → key →
}

// subscriber is one event stream's queue. A stream that falls subscriberQueue batches behind
// is marked stale and sent a fresh snapshot rather than buffering without bound.
type subscriber struct {
	ch    chan batch
	stale chan struct{} // closed once when the queue overflowed
	once  sync.Once
}

func (sub *subscriber) overflow() { sub.once.Do(func() { close(sub.stale) }) }

// store holds the encoded view model, the changes not yet sent, and the streams.
type store struct {
	mu      sync.Mutex
	rev     uint64
	objects map[string]map[string]*entry
	pending map[string]map[string]*entry
	subs    map[*subscriber]struct{}
}

func newStore() *store {
	st := &store{objects: map[string]map[string]*entry{}, pending: map[string]map[string]*entry{}, subs: map[*subscriber]struct{}{}}
	for _, k := range Kinds {
		st.objects[k] = map[string]*entry{}
	}
	return st
}

// set records the view object v of kind under key; an object encoding to the same bytes as
// the one already sent is not sent again.
func (st *store) set(kind, key, namespace string, gr schema.GroupResource, v any) {
	st.setGated(kind, key, namespace, gr, schema.GroupResource{}, v)
}

// setGated is set for an object a viewer sees only if they may also list also cluster-wide.
func (st *store) setGated(kind, key, namespace string, gr, also schema.GroupResource, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		// The view types are plain data; this cannot fail short of a programming error.
		panic("dashboard: encoding " + kind + " " + key + ": " + err.Error())
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if old := st.objects[kind][key]; old != nil && bytes.Equal(old.raw, raw) && old.namespace == namespace && old.gr == gr && old.also == also {
		return
	}
	e := &entry{namespace: namespace, gr: gr, also: also, raw: raw}
	st.objects[kind][key] = e
	st.stage(kind, key, e)
}

func (st *store) del(kind, key string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	old, ok := st.objects[kind][key]
	if !ok {
		return
	}
	delete(st.objects[kind], key)
	st.stage(kind, key, &entry{namespace: old.namespace, gr: old.gr, also: old.also}) // raw nil: deleted
}

func (st *store) stage(kind, key string, e *entry) {
	if st.pending[kind] == nil {
		st.pending[kind] = map[string]*entry{}
	}
	st.pending[kind][key] = e
}

func (st *store) keys(kind string) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]string, 0, len(st.objects[kind]))
	for k := range st.objects[kind] {
		out = append(out, k)
	}
	return out
}

// flush sends the pending changes, as one new revision, to every stream.
func (st *store) flush() {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for _, m := range st.pending {
		n += len(m)
	}
	if n == 0 {
		return
	}
	st.rev++
	b := batch{rev: st.rev, changes: st.pending}
	st.pending = map[string]map[string]*entry{}
	for sub := range st.subs {
		select {
		case sub.ch <- b:
		default:
			sub.overflow()
		}
	}
}

// snapshot is the whole model at a revision.
type snapshot struct {
	rev     uint64
	objects map[string]map[string]*entry
}

// subscribe registers a stream and returns the model it starts from, atomically, so every
// later change reaches the stream as a batch.
func (st *store) subscribe() (*subscriber, snapshot) {
	sub := &subscriber{ch: make(chan batch, subscriberQueue), stale: make(chan struct{})}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.subs[sub] = struct{}{}
	return sub, st.snapshotLocked()
}

// resubscribe replaces an overflowed stream's queue with a new one and a fresh snapshot.
func (st *store) resubscribe(old *subscriber) (*subscriber, snapshot) {
	st.mu.Lock()
	delete(st.subs, old)
	st.mu.Unlock()
	return st.subscribe()
}

func (st *store) unsubscribe(sub *subscriber) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.subs, sub)
}

func (st *store) snapshotLocked() snapshot {
	s := snapshot{rev: st.rev, objects: make(map[string]map[string]*entry, len(st.objects))}
	for kind, m := range st.objects {
		c := make(map[string]*entry, len(m))
		for k, e := range m {
			c[k] = e
		}
		s.objects[kind] = c
	}
	return s
}

func (st *store) current() snapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.snapshotLocked()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
