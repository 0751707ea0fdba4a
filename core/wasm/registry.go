package wasm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Event tells subscribers that the plugin set of their type changed, so they re-evaluate
// (re-score placements, re-review pending CSRs, re-extract feedback, re-render add-ons).
type Event struct {
	Type abi.PluginType
	Name string
	// Digest of the module now serving; empty when the plugin was removed.
	Digest  string
	Removed bool
	// Reason is set when the plugin is still configured but failed to load (see
	// MarkUnavailable); users apply its failure policy.
	Reason LoadReason
}

// Unavailable is a plugin that is configured (a WasmPlugin exists) but has no module
// serving it. Users honour FailurePolicy for it: Fail blocks what the plugin decides,
// Ignore skips it.
type Unavailable struct {
	Name          string
	Type          abi.PluginType
	FailurePolicy FailurePolicy
	Reason        LoadReason
	Message       string
}

// Registry maps WasmPlugin names to the module currently serving them. Swaps are atomic:
// a caller sees either the old or the new module, never neither, and the old module is
// closed only after its in-flight calls return. Safe for concurrent use.
type Registry struct {
	mu          sync.RWMutex
	modules     map[string]*Module
	unavailable map[string]Unavailable
	subs        map[*subscriber]struct{}
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{modules: map[string]*Module{}, unavailable: map[string]Unavailable{}, subs: map[*subscriber]struct{}{}}
}

// ErrNotLoaded is returned (wrapped) by Acquire and Call when no module serves a name.
var ErrNotLoaded = errors.New("wasm plugin is not loaded")

// Get returns the module serving name. The module may be closed by a concurrent swap
// before it is used; callers that must not see KindClosed use Acquire or Call.
func (r *Registry) Get(name string) (*Module, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m, ok := r.modules[name]
	return m, ok
}

// List returns the loaded modules of type t sorted by name.
func (r *Registry) List(t abi.PluginType) []*Module {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*Module
	for _, m := range r.modules {
		if m.typ == t {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Acquire pins the module serving name until release is called, so a sequence of calls
// (declare_inputs then score) runs against one module even across a hot reload: the
// replaced module keeps serving its lease holders and closes when the last releases.
// Holders must release promptly (Set and Remove wait for them).
func (r *Registry) Acquire(name string) (m *Module, release func(), err error) {
	for {
		r.mu.RLock()
		m, ok := r.modules[name]
		r.mu.RUnlock()
		if !ok {
			return nil, nil, fmt.Errorf("wasm plugin %q: %w", name, ErrNotLoaded)
		}
		if m.pin() {
			var once sync.Once
			return m, func() { once.Do(m.unpin) }, nil
		}
		if err := r.closedInPlace(name, m); err != nil {
			return nil, nil, err
		}
		// Close began after a swap or removal: the map already holds the successor.
	}
}

// Call calls export on the module currently serving name.
func (r *Registry) Call(ctx context.Context, name, export string, input []byte) ([]byte, error) {
	for {
		r.mu.RLock()
		m, ok := r.modules[name]
		r.mu.RUnlock()
		if !ok {
			return nil, fmt.Errorf("wasm plugin %q: %w", name, ErrNotLoaded)
		}
		if m.acquire() {
			defer m.release()
			return m.call(ctx, export, input)
		}
		if err := r.closedInPlace(name, m); err != nil {
			return nil, err
		}
	}
}

// closedInPlace reports a module that was closed while still registered (by its owner or
// Engine.Close) instead of retrying forever.
func (r *Registry) closedInPlace(name string, m *Module) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.modules[name] == m {
		return &CallError{Plugin: name, Kind: KindClosed, Message: "module was closed while still registered"}
	}
	return nil
}

// Set makes m serve its name, closes the module it replaces (after in-flight calls, or
// when ctx ends) and notifies subscribers of both types if the type changed.
func (r *Registry) Set(ctx context.Context, m *Module) error {
	r.mu.Lock()
	old := r.modules[m.name]
	r.modules[m.name] = m
	if u, ok := r.unavailable[m.name]; ok {
		delete(r.unavailable, m.name)
		if u.Type != m.typ {
			r.notifyLocked(Event{Type: u.Type, Name: m.name, Removed: true})
		}
	}
	if old == nil || old != m {
		if old != nil && old.typ != m.typ {
			r.notifyLocked(Event{Type: old.typ, Name: m.name, Removed: true})
		}
		r.notifyLocked(Event{Type: m.typ, Name: m.name, Digest: m.digest})
	}
	r.mu.Unlock()
	if old != nil && old != m {
		return old.Close(ctx)
	}
	return nil
}

// Remove forgets name entirely (its WasmPlugin is gone): the module, if any, stops
// serving and is closed after in-flight calls. It reports whether a module was removed.
func (r *Registry) Remove(ctx context.Context, name string) (bool, error) {
	r.mu.Lock()
	old, ok := r.modules[name]
	if ok {
		delete(r.modules, name)
		r.notifyLocked(Event{Type: old.typ, Name: name, Removed: true})
	}
	if u, had := r.unavailable[name]; had {
		delete(r.unavailable, name)
		if !ok || u.Type != old.typ {
			r.notifyLocked(Event{Type: u.Type, Name: name, Removed: true})
		}
	}
	r.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, old.Close(ctx)
}

// MarkUnavailable records that u.Name is configured but cannot be served: any module
// serving it stops (closed after in-flight calls) and subscribers of u.Type get an
// event carrying u.Reason, so users re-evaluate under u.FailurePolicy.
func (r *Registry) MarkUnavailable(ctx context.Context, u Unavailable) error {
	if u.FailurePolicy == "" {
		u.FailurePolicy = FailurePolicyFail
	}
	r.mu.Lock()
	old, ok := r.modules[u.Name]
	if ok {
		delete(r.modules, u.Name)
		if old.typ != u.Type {
			r.notifyLocked(Event{Type: old.typ, Name: u.Name, Removed: true})
		}
	}
	prev, had := r.unavailable[u.Name]
	r.unavailable[u.Name] = u
	if ok || !had || prev != u {
		if had && prev.Type != u.Type {
			r.notifyLocked(Event{Type: prev.Type, Name: u.Name, Removed: true})
		}
		r.notifyLocked(Event{Type: u.Type, Name: u.Name, Removed: true, Reason: u.Reason})
	}
	r.mu.Unlock()
	if ok {
		return old.Close(ctx)
	}
	return nil
}

// Unavailable lists the configured plugins of type t that have no module serving
// them, sorted by name.
func (r *Registry) Unavailable(t abi.PluginType) []Unavailable {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Unavailable
	for _, u := range r.unavailable {
		if u.Type == t {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Subscribe returns a channel of events for plugins of type t. Delivery never blocks the
// registry and never drops: each subscriber has its own queue. cancel must be called
// to release it; the channel is closed afterwards.
func (r *Registry) Subscribe(t abi.PluginType) (<-chan Event, func()) {
	s := &subscriber{typ: t, out: make(chan Event), wake: make(chan struct{}, 1), done: make(chan struct{})}
	r.mu.Lock()
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	go s.run()
	var once sync.Once
	return s.out, func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.subs, s)
			r.mu.Unlock()
			close(s.done)
		})
	}
}

func (r *Registry) notifyLocked(ev Event) {
	for s := range r.subs {
		if s.typ == ev.Type {
			s.push(ev)
		}
	}
}

type subscriber struct {
	typ  abi.PluginType
	out  chan Event
	wake chan struct{}
	done chan struct{}

	mu    sync.Mutex
	queue []Event
}

func (s *subscriber) push(ev Event) {
	s.mu.Lock()
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) run() {
	defer close(s.out)
	for {
		s.mu.Lock()
		var ev Event
		has := len(s.queue) > 0
		if has {
			ev = s.queue[0]
			s.queue = s.queue[1:]
		}
		s.mu.Unlock()
		if !has {
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			}
		}
		select {
		case s.out <- ev:
		case <-s.done:
			return
		}
	}
}
