package memkube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Retention of events for watches: at least minEvents, and those younger than eventTTL, up
// to maxEvents.
const (
	minEvents = 64
	maxEvents = 4096
	eventTTL  = 10 * time.Second
	// defaultWatchTimeout ends a watch that asked for no timeout, as kube-apiserver's
	// --min-request-timeout does.
	defaultWatchTimeout = 30 * time.Minute
)

type objKey struct{ ns, name string }

// entry is one stored object: its JSON (shared, never modified, by gets, lists and events)
// and what selection and garbage collection need without decoding it.
type entry struct {
	data       []byte
	rv         uint64
	uid        types.UID
	labels     map[string]string
	owners     []types.UID
	finalizers bool
	deleting   bool
}

// table holds a resource's objects and its open watches.
type table struct {
	res      *resource
	objs     map[objKey]*entry
	watchers map[*watcher]struct{}
}

type event struct {
	typ        watch.EventType
	gr         string // the table's resource, group/resource
	key        objKey
	rv         uint64
	at         time.Time
	data       []byte
	labels     map[string]string
	prevLabels map[string]string // MODIFIED: the labels before
}

func grKey(r *resource) string { return r.gvr.Group + "/" + r.gvr.Resource }

// tableOf returns r's table, creating it.
func (c *Cluster) tableOf(r *resource) *table {
	t := c.tables[r.gr()]
	if t == nil {
		t = &table{res: r, objs: map[objKey]*entry{}}
		c.tables[r.gr()] = t
	}
	return t
}

// record appends an event and wakes the watches of its resource. Called with c.mu held.
func (c *Cluster) record(t *table, ev event) {
	ev.gr, ev.at = grKey(t.res), c.now()
	c.events = append(c.events, ev)
	drop := 0
	for n := len(c.events); n-drop > minEvents && (n-drop > maxEvents || ev.at.Sub(c.events[drop].at) > eventTTL); {
		drop++
	}
	if drop > 0 {
		c.floor = c.events[drop-1].rv
		clear(c.events[:drop])
		c.events = c.events[drop:]
	}
	for w := range t.watchers {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// selector is what a list or watch selects.
type selector struct {
	ns     string
	labels labels.Selector
	fields fields.Selector
}

func (s selector) matches(key objKey, lbls map[string]string, data []byte) bool {
	if s.ns != "" && key.ns != s.ns {
		return false
	}
	if s.labels != nil && !s.labels.Empty() && !s.labels.Matches(labels.Set(lbls)) {
		return false
	}
	if s.fields == nil || s.fields.Empty() {
		return true
	}
	return s.fields.Matches(fieldSet{key: key, data: data})
}

// fieldSet answers field selectors: metadata.name and metadata.namespace from the key, any
// other path from the object, compared as a string.
type fieldSet struct {
	key  objKey
	data []byte
	obj  map[string]any
}

func (f fieldSet) Has(field string) bool { _, ok := f.lookup(field); return ok }
func (f fieldSet) Get(field string) string {
	v, _ := f.lookup(field)
	return v
}

func (f fieldSet) lookup(field string) (string, bool) {
	switch field {
	case "metadata.name":
		return f.key.name, true
	case "metadata.namespace":
		return f.key.ns, true
	}
	obj, err := decode(f.data)
	if err != nil {
		return "", false
	}
	var cur any = obj
	for _, p := range strings.Split(field, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[p]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case nil:
		return "", true
	default:
		b, _ := jsonMarshal(v)
		return string(b), true
	}
}

// list returns the matching entries in key order and the cluster's resourceVersion.
func (c *Cluster) list(r *resource, sel selector) ([]*entry, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tables[r.gr()]
	if t == nil {
		return nil, c.rv
	}
	keys := make([]objKey, 0, len(t.objs))
	for k, e := range t.objs {
		if sel.matches(k, e.labels, e.data) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].ns != keys[j].ns {
			return keys[i].ns < keys[j].ns
		}
		return keys[i].name < keys[j].name
	})
	out := make([]*entry, len(keys))
	for i, k := range keys {
		out[i] = t.objs[k]
	}
	return out, c.rv
}

// watchOptions are a watch request's parameters.
type watchOptions struct {
	sel               selector
	resourceVersion   string
	sendInitialEvents bool
	timeout           time.Duration
	// frame rewrites an object's JSON for this watch (another version of a CRD, or
	// PartialObjectMetadata); nil serves it as stored.
	frame func([]byte) ([]byte, error)
	// bookmark is the JSON of an object of the resource's kind with only metadata, for the
	// initial-events-end bookmark.
	bookmark func(rv uint64) []byte
}

// watcher is an open watch: a cursor into the cluster's events. Its Read runs on the
// client's goroutine; nothing runs for it between reads.
type watcher struct {
	c      *Cluster
	t      *table
	opts   watchOptions
	ctx    context.Context
	cursor uint64
	wake   chan struct{}
	done   chan struct{}
	once   sync.Once
	timer  *time.Timer
	buf    bytes.Buffer
	// pending are the initial events (a snapshot taken with the watch registered).
	pending []*pendingEvent
	ended   bool
}

type pendingEvent struct {
	typ  watch.EventType
	data []byte
}

// openWatch registers a watch of r. Called without c.mu.
func (c *Cluster) openWatch(ctx context.Context, r *resource, opts watchOptions) (*watcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tableOf(r)
	w := &watcher{c: c, t: t, opts: opts, ctx: ctx, wake: make(chan struct{}, 1), done: make(chan struct{})}
	rv := opts.resourceVersion
	initial := opts.sendInitialEvents || rv == "" || rv == "0"
	if initial {
		w.cursor = c.rv
		keys := make([]objKey, 0, len(t.objs))
		for k, e := range t.objs {
			if opts.sel.matches(k, e.labels, e.data) {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			return keys[i].ns < keys[j].ns || keys[i].ns == keys[j].ns && keys[i].name < keys[j].name
		})
		for _, k := range keys {
			w.pending = append(w.pending, &pendingEvent{typ: watch.Added, data: t.objs[k].data})
		}
		if opts.sendInitialEvents {
			w.pending = append(w.pending, &pendingEvent{typ: watch.Bookmark, data: opts.bookmark(c.rv)})
		}
	} else {
		n, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", rv))
		}
		w.cursor = min(n, c.rv)
	}
	if t.watchers == nil {
		t.watchers = map[*watcher]struct{}{}
	}
	t.watchers[w] = struct{}{}
	timeout := opts.timeout
	if timeout <= 0 {
		timeout = defaultWatchTimeout
	}
	w.timer = time.NewTimer(timeout)
	return w, nil
}

func (w *watcher) Close() error {
	w.once.Do(func() {
		close(w.done)
		w.timer.Stop()
		w.c.mu.Lock()
		delete(w.t.watchers, w)
		w.c.mu.Unlock()
	})
	return nil
}

// Read writes the watch's events as client-go's JSON watch stream, waiting for one when none
// is pending.
func (w *watcher) Read(p []byte) (int, error) {
	for w.buf.Len() == 0 {
		if w.ended {
			return 0, io.EOF
		}
		if len(w.pending) > 0 {
			ev := w.pending[0]
			w.pending[0] = nil
			w.pending = w.pending[1:]
			w.writeFrame(ev.typ, ev.data)
			continue
		}
		if w.collect() {
			continue
		}
		select {
		case <-w.wake:
		case <-w.done:
			return 0, io.EOF
		case <-w.ctx.Done():
			return 0, io.EOF
		case <-w.timer.C:
			w.ended = true
		}
	}
	return w.buf.Read(p)
}

// collect moves the events after the cursor that the watch selects into the buffer,
// reporting whether it wrote anything.
func (w *watcher) collect() bool {
	c := w.c
	c.mu.Lock()
	if w.cursor < c.floor {
		c.mu.Unlock()
		w.ended = true
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", w.cursor, c.floor+1)).Status()
		b, _ := jsonMarshal(&status)
		w.writeFrame(watch.Error, b)
		return true
	}
	i := sort.Search(len(c.events), func(i int) bool { return c.events[i].rv > w.cursor })
	var out []pendingEvent
	gr := grKey(w.t.res)
	for ; i < len(c.events); i++ {
		ev := &c.events[i]
		w.cursor = ev.rv
		if ev.gr != gr {
			continue
		}
		now := w.opts.sel.matches(ev.key, ev.labels, ev.data)
		typ := ev.typ
		if typ == watch.Modified {
			before := w.opts.sel.matches(ev.key, ev.prevLabels, ev.data)
			switch {
			case before && !now:
				typ, now = watch.Deleted, true
			case !before && now:
				typ = watch.Added
			}
		}
		if now {
			out = append(out, pendingEvent{typ: typ, data: ev.data})
		}
	}
	c.mu.Unlock()
	for _, ev := range out {
		w.writeFrame(ev.typ, ev.data)
	}
	return w.buf.Len() > 0
}

func (w *watcher) writeFrame(typ watch.EventType, data []byte) {
	if w.opts.frame != nil && typ != watch.Error {
		var err error
		if data, err = w.opts.frame(data); err != nil {
			status := apierrors.NewInternalError(err).Status()
			data, _ = jsonMarshal(&status)
			typ = watch.Error
		}
	}
	w.buf.WriteString(`{"type":"`)
	w.buf.WriteString(string(typ))
	w.buf.WriteString(`","object":`)
	w.buf.Write(data)
	w.buf.WriteString("}\n")
}
