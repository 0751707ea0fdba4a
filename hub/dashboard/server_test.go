package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	name string
	data string
}

// sseReader reads events from a stream, each read bounded by the test's deadline.
type sseReader struct {
	t      failer
	events chan sseEvent
	errs   chan error
}

// failer is what sseReader needs of a *testing.T or GinkgoT().
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

func readSSE(t failer, body *bufio.Reader) *sseReader {
	r := &sseReader{t: t, events: make(chan sseEvent, 100), errs: make(chan error, 1)}
	go func() {
		var ev sseEvent
		for {
			line, err := body.ReadString('\n')
			if err != nil {
				r.errs <- err
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if ev.name != "" {
					r.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				r.events <- sseEvent{name: "comment", data: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				if ev.data != "" {
					r.errs <- fmt.Errorf("event %s has more than one data line", ev.name)
					return
				}
				ev.data = line[len("data: "):]
			}
		}
	}()
	return r
}

// next is the next event named name, skipping others; it fails the test after 10 s.
func (r *sseReader) next(name string) sseEvent { return r.nextWithin(name, 10*time.Second) }

func (r *sseReader) nextWithin(name string, d time.Duration) sseEvent {
	r.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-r.events:
			if ev.name == name {
				return ev
			}
		case err := <-r.errs:
			r.t.Fatalf("stream ended while waiting for a %q event: %v", name, err)
		case <-deadline:
			r.t.Fatalf("no %q event within %s", name, d)
		}
	}
}

type wireSnapshot struct {
	Rev     uint64                       `json:"rev"`
	Objects map[string][]json.RawMessage `json:"objects"`
	Access  map[string]Access            `json:"access"`
}

type wireDelta struct {
	Rev    uint64                       `json:"rev"`
	Upsert map[string][]json.RawMessage `json:"upsert"`
	Delete map[string][]string          `json:"delete"`
}

func keysOf(t failer, objs []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		var k struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(o, &k); err != nil {
			t.Fatalf("object %s: %v", o, err)
		}
		out = append(out, k.Key)
	}
	return out
}

func newTestServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Config == nil {
		opts.Config = &rest.Config{Host: "https://127.0.0.1:1"} // never contacted: no Start
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.access = kindAccess(map[string]resAccess{})
	close(s.synced)
	return s
}

func TestStoreSendsOnlyChanges(t *testing.T) {
	st := newStore()
	sub, snap := st.subscribe()
	if snap.rev != 0 || len(snap.objects[KindClusters]) != 0 {
		t.Fatalf("empty store's snapshot: rev %d, %d clusters", snap.rev, len(snap.objects[KindClusters]))
	}
	gr := kindGR(KindClusters)
	st.set(KindClusters, "c1", "", gr, Cluster{Key: "c1", Available: "True"})
	st.set(KindClusters, "c2", "", gr, Cluster{Key: "c2"})
	st.flush()
	b := <-sub.ch
	if b.rev != 1 || len(b.changes[KindClusters]) != 2 {
		t.Fatalf("first batch: rev %d, %d cluster changes; want rev 1 with 2", b.rev, len(b.changes[KindClusters]))
	}
	// The same object again is not a change; nothing to send, no new revision.
	st.set(KindClusters, "c1", "", gr, Cluster{Key: "c1", Available: "True"})
	st.flush()
	select {
	case b := <-sub.ch:
		t.Fatalf("an unchanged object was sent again: %+v", b)
	default:
	}
	st.set(KindClusters, "c1", "", gr, Cluster{Key: "c1", Available: "False"})
	st.del(KindClusters, "c2")
	st.del(KindClusters, "never-set")
	st.flush()
	b = <-sub.ch
	data, ok := encodeDelta(b, nil)
	if !ok {
		t.Fatal("a batch with changes encoded as empty")
	}
	var d wireDelta
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("delta %s: %v", data, err)
	}
	if d.Rev != 2 || len(d.Upsert[KindClusters]) != 1 || strings.Join(d.Delete[KindClusters], ",") != "c2" {
		t.Fatalf("second delta %s: want rev 2, c1 upserted, c2 deleted", data)
	}
}

func TestSlowSubscriberGetsSnapshot(t *testing.T) {
	st := newStore()
	sub, _ := st.subscribe()
	gr := kindGR(KindClusters)
	for i := 0; i <= subscriberQueue; i++ {
		st.set(KindClusters, "c1", "", gr, Cluster{Key: "c1", Version: fmt.Sprint(i)})
		st.flush()
	}
	select {
	case <-sub.stale:
	default:
		t.Fatalf("a subscriber %d batches behind is not marked stale", subscriberQueue+1)
	}
	if len(sub.ch) != subscriberQueue {
		t.Fatalf("queue holds %d batches, want it bounded at %d", len(sub.ch), subscriberQueue)
	}
	sub2, snap := st.resubscribe(sub)
	var c Cluster
	if err := json.Unmarshal(snap.objects[KindClusters]["c1"].raw, &c); err != nil {
		t.Fatal(err)
	}
	if c.Version != fmt.Sprint(subscriberQueue) || snap.rev != uint64(subscriberQueue+1) {
		t.Fatalf("fresh snapshot has version %q at rev %d, want the latest (%d at rev %d)", c.Version, snap.rev, subscriberQueue, subscriberQueue+1)
	}
	st.mu.Lock()
	_, oldThere := st.subs[sub]
	_, newThere := st.subs[sub2]
	st.mu.Unlock()
	if oldThere || !newThere {
		t.Fatalf("after resubscribe: old subscriber registered %v, new %v", oldThere, newThere)
	}
}

func TestSSEFraming(t *testing.T) {
	rec := httptest.NewRecorder()
	sw := sseWriter{w: rec, rc: http.NewResponseController(rec)}
	if err := sw.event("delta", []byte(`{"rev":3}`)); err != nil {
		t.Fatal(err)
	}
	if err := sw.comment("ping"); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.Body.String(), "event: delta\ndata: {\"rev\":3}\n\n: ping\n\n"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	if !rec.Flushed {
		t.Fatal("events are not flushed")
	}
	snap := snapshot{rev: 7, objects: map[string]map[string]*entry{KindClusters: {
		"b": {raw: json.RawMessage(`{"key":"b"}`)}, "a": {raw: json.RawMessage(`{"key":"a"}`)},
	}}}
	data := encodeSnapshot(snap, map[string]Access{KindClusters: {AllNamespaces: true}}, nil)
	if strings.Contains(string(data), "\n") {
		t.Fatalf("snapshot has a newline (would split the data line): %s", data)
	}
	var ws wireSnapshot
	if err := json.Unmarshal(data, &ws); err != nil {
		t.Fatalf("snapshot %s: %v", data, err)
	}
	if ws.Rev != 7 || strings.Join(keysOf(t, ws.Objects[KindClusters]), ",") != "a,b" || !ws.Access[KindClusters].AllNamespaces {
		t.Fatalf("snapshot %s: want rev 7, clusters a,b in order, clusters access all", data)
	}
	for _, k := range Kinds {
		if ws.Objects[k] == nil {
			t.Fatalf("snapshot %s has no list for %s (the page expects every kind)", data, k)
		}
	}
}

// TestLocalGuardBoundIP: a server bound to a non-loopback IP accepts that IP as Host (the
// token still guards), and no other name.
func TestLocalGuardBoundIP(t *testing.T) {
	s := newTestServer(t, Options{Token: "s3cret", HostIPs: []string{"192.0.2.7"}})
	for host, want := range map[string]int{
		"192.0.2.7:8001": http.StatusUnauthorized, // served, but no token yet
		"192.0.2.8:8001": http.StatusForbidden,
		"evil.example":   http.StatusForbidden,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
	r := httptest.NewRequest("GET", "/?token=s3cret", nil)
	r.Host = "192.0.2.7:8001"
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, r)
	if rec.Code != http.StatusFound {
		t.Fatalf("the token at the bound IP: %d, want 302", rec.Code)
	}
}

func TestLocalGuard(t *testing.T) {
	s := newTestServer(t, Options{Token: "s3cret"})
	h := s.Handler()
	do := func(method, target, host string, cookie *http.Cookie) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		r.Host = host
		if cookie != nil {
			r.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	if rec := do("GET", "/?token=s3cret", "evil.example:8001", nil); rec.Code != http.StatusForbidden {
		t.Fatalf("a foreign Host (DNS rebinding) got %d, want 403", rec.Code)
	}
	if rec := do("GET", "/", "127.0.0.1:8001", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("no token, no cookie: %d, want 401", rec.Code)
	}
	if rec := do("GET", "/api/stream", "localhost:8001", &http.Cookie{Name: s.cookieName(), Value: "guess"}); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a wrong cookie: %d, want 401", rec.Code)
	}
	if rec := do("GET", "/?token=wrong", "127.0.0.1:8001", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d, want 401", rec.Code)
	}
	rec := do("GET", "/?token=s3cret", "[::1]:8001", nil)
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "./" {
		t.Fatalf("the right token: %d to %q, want 302 to ./", rec.Code, rec.Header().Get("Location"))
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Value != "s3cret" {
		t.Fatalf("cookie set: %+v, want one HttpOnly SameSite=Strict token cookie", cookies)
	}
	// Per instance: named after the token, not the host-wide fixed name; and no Path, so it
	// covers the directory the page is served from, not every path of the host.
	if c := cookies[0]; !strings.HasPrefix(c.Name, cookiePrefix) || c.Name == cookiePrefix+"token" || c.Path != "" || strings.Contains(rec.Header().Get("Set-Cookie"), "Path=") {
		t.Fatalf("cookie %q (Path %q): want %s<hash of the token> without a Path", c.Name, c.Path, cookiePrefix)
	}
	other := newTestServer(t, Options{Token: "another"})
	if other.cookieName() == s.cookieName() {
		t.Fatalf("two dashboards with different tokens share the cookie name %q", s.cookieName())
	}
	// Another instance's cookie (same host, other port) does not open this one.
	if rec := do("GET", "/", "127.0.0.1:8001", &http.Cookie{Name: other.cookieName(), Value: "another"}); rec.Code != http.StatusUnauthorized {
		t.Fatalf("another dashboard's cookie: %d, want 401", rec.Code)
	}
	rec = do("GET", "/", "127.0.0.1:8001", cookies[0])
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "<html") || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("index with the cookie: %d %q (Cache-Control %q)", rec.Code, rec.Body.String(), rec.Header().Get("Cache-Control"))
	}
	rec = do("GET", "/assets/app.js", "localhost", cookies[0])
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-cache" || !strings.Contains(rec.Header().Get("Content-Type"), "javascript") {
		t.Fatalf("asset: %d, Cache-Control %q, Content-Type %q", rec.Code, rec.Header().Get("Cache-Control"), rec.Header().Get("Content-Type"))
	}
	if rec := do("GET", "/assets/../server.go", "localhost", cookies[0]); rec.Code == http.StatusOK {
		t.Fatalf("an asset path out of ui/ was served")
	}
	if rec := do("POST", "/", "127.0.0.1", cookies[0]); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d, want 405", rec.Code)
	}
	if rec := do("GET", "/api/works/bad_ns/w", "127.0.0.1", cookies[0]); rec.Code != http.StatusBadRequest {
		t.Fatalf("an invalid namespace: %d, want 400", rec.Code)
	}
}

// fakeAuthorizer allows list of the given group-resources in the given namespaces ("" = cluster-wide).
type fakeAuthorizer struct {
	mu    sync.Mutex
	allow map[string]bool // "user|verb|gr|ns"
	calls int
}

func (f *fakeAuthorizer) Allowed(_ context.Context, u user.Info, verb string, gr schema.GroupResource, ns string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.allow[u.GetName()+"|"+verb+"|"+gr.String()+"|"+ns], nil
}

func TestHubModeFiltersByViewer(t *testing.T) {
	pl := kindGR(KindPlacements)
	authz := &fakeAuthorizer{allow: map[string]bool{
		"alice|list|" + pl.String() + "|team-a":             true,
		"alice|list|" + kindGR(KindClusters).String() + "|": true,
	}}
	s := newTestServer(t, Options{Authorizer: authz})
	s.st.set(KindPlacements, "team-a/p", "team-a", pl, Placement{Key: "team-a/p", Namespace: "team-a", Name: "p"})
	s.st.set(KindPlacements, "team-b/p", "team-b", pl, Placement{Key: "team-b/p", Namespace: "team-b", Name: "p"})
	s.st.set(KindClusters, "c1", "", kindGR(KindClusters), Cluster{Key: "c1"})
	s.st.set(KindPlugins, "wp", "", kindGR(KindPlugins), Plugin{Key: "wp"})
	s.st.flush()

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: "alice"}))
		s.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := readSSE(t, bufio.NewReader(resp.Body))
	var h hello
	if err := json.Unmarshal([]byte(r.next("hello").data), &h); err != nil || h.Mode != "hub" || h.User != "alice" {
		t.Fatalf("hello %+v (%v), want mode hub for alice", h, err)
	}
	var ws wireSnapshot
	if err := json.Unmarshal([]byte(r.next("snapshot").data), &ws); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keysOf(t, ws.Objects[KindPlacements]), ","); got != "team-a/p" {
		t.Fatalf("alice sees placements %q, want only team-a/p", got)
	}
	if got := strings.Join(keysOf(t, ws.Objects[KindClusters]), ","); got != "c1" {
		t.Fatalf("alice sees clusters %q, want c1", got)
	}
	if len(ws.Objects[KindPlugins]) != 0 {
		t.Fatalf("alice, who may not list wasmplugins, sees %s", ws.Objects[KindPlugins])
	}
	a := ws.Access[KindPlacements]
	// alice may not list namespaces: she is told the view is partial, not which namespaces.
	if a.AllNamespaces || strings.Join(a.Namespaces, ",") != "team-a" || len(a.Denied) != 0 || !a.Partial {
		t.Fatalf("placements access %+v, want team-a allowed, partial, and no denied namespace named", a)
	}
	if ws.Access[KindPlugins].Error == "" || !ws.Access[KindClusters].AllNamespaces {
		t.Fatalf("access %+v: want plugins denied with a reason, clusters all", ws.Access)
	}
	// A change in team-b is not sent to alice; one in team-a is.
	s.st.set(KindPlacements, "team-b/p", "team-b", pl, Placement{Key: "team-b/p", Namespace: "team-b", Name: "p", Selected: 3})
	s.st.flush()
	s.st.set(KindPlacements, "team-a/p", "team-a", pl, Placement{Key: "team-a/p", Namespace: "team-a", Name: "p", Selected: 2})
	s.st.del(KindPlacements, "team-b/p")
	s.st.flush()
	var d wireDelta
	if err := json.Unmarshal([]byte(r.next("delta").data), &d); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keysOf(t, d.Upsert[KindPlacements]), ","); got != "team-a/p" || len(d.Delete) != 0 {
		t.Fatalf("alice's first delta %+v: want only team-a/p upserted, nothing of team-b", d)
	}
}

func TestStreamCap(t *testing.T) {
	s := newTestServer(t, Options{MaxStreams: 1})
	s.streams <- struct{}{} // one stream open
	r := httptest.NewRequest("GET", "/api/stream", nil)
	r.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, r)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("a stream beyond the cap got %d, want 503", rec.Code)
	}
}

// viewerSnapshot is the first snapshot a hub-mode stream sends the viewer u.
func viewerSnapshot(t *testing.T, s *Server, authz Authorizer, u string) wireSnapshot {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		_ = s.stream(ctx, sseWriter{w: pw}, hello{Mode: "hub"}, newViewer(authz, &user.DefaultInfo{Name: u}))
		pw.Close()
	}()
	var ws wireSnapshot
	if err := json.Unmarshal([]byte(readSSE(t, bufio.NewReader(pr)).next("snapshot").data), &ws); err != nil {
		t.Fatalf("%s's snapshot: %v", u, err)
	}
	return ws
}

// TestHubModeNamesDeniedNamespacesOnlyToNamespaceListers: a viewer who may list namespaces
// learns nothing new from the denied names, so they are given; one who may not is told
// "partial" only (the names would enumerate the hub's namespaces).
func TestHubModeNamesDeniedNamespacesOnlyToNamespaceListers(t *testing.T) {
	pl := kindGR(KindPlacements)
	authz := &fakeAuthorizer{allow: map[string]bool{
		"alice|list|" + pl.String() + "|team-a":   true,
		"bob|list|" + pl.String() + "|team-a":     true,
		"bob|list|" + namespacesGR.String() + "|": true,
	}}
	s := newTestServer(t, Options{Authorizer: authz})
	s.st.set(KindPlacements, "team-a/p", "team-a", pl, Placement{Key: "team-a/p"})
	s.st.set(KindPlacements, "team-b/p", "team-b", pl, Placement{Key: "team-b/p"})
	s.st.set(KindPlacements, "team-c/p", "team-c", pl, Placement{Key: "team-c/p"})
	s.st.flush()
	if a := viewerSnapshot(t, s, authz, "bob").Access[KindPlacements]; strings.Join(a.Denied, ",") != "team-b,team-c" || a.Partial {
		t.Fatalf("bob (lists namespaces): placements access %+v, want denied team-b,team-c", a)
	}
	if a := viewerSnapshot(t, s, authz, "alice").Access[KindPlacements]; len(a.Denied) != 0 || !a.Partial || strings.Join(a.Namespaces, ",") != "team-a" {
		t.Fatalf("alice (may not list namespaces): placements access %+v, want team-a, partial, no denied names", a)
	}
}

// TestHubModeRechecksRights: a viewer granted a namespace while connected gets a new
// snapshot with its objects at the next recheck.
func TestHubModeRechecksRights(t *testing.T) {
	pl := kindGR(KindPlacements)
	authz := &fakeAuthorizer{allow: map[string]bool{"alice|list|" + pl.String() + "|team-a": true}}
	s := newTestServer(t, Options{Authorizer: authz})
	s.recheckEvery = 100 * time.Millisecond
	s.st.set(KindPlacements, "team-a/p", "team-a", pl, Placement{Key: "team-a/p"})
	s.st.set(KindPlacements, "team-b/p", "team-b", pl, Placement{Key: "team-b/p"})
	s.st.flush()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		_ = s.stream(ctx, sseWriter{w: pw}, hello{Mode: "hub"}, newViewer(authz, &user.DefaultInfo{Name: "alice"}))
		pw.Close()
	}()
	r := readSSE(t, bufio.NewReader(pr))
	var ws wireSnapshot
	_ = json.Unmarshal([]byte(r.next("snapshot").data), &ws)
	if got := strings.Join(keysOf(t, ws.Objects[KindPlacements]), ","); got != "team-a/p" {
		t.Fatalf("first snapshot: placements %q, want team-a/p", got)
	}
	authz.mu.Lock()
	authz.allow["alice|list|"+pl.String()+"|team-b"] = true
	authz.mu.Unlock()
	_ = json.Unmarshal([]byte(r.next("snapshot").data), &ws)
	if got := strings.Join(keysOf(t, ws.Objects[KindPlacements]), ","); got != "team-a/p,team-b/p" {
		t.Fatalf("snapshot after alice was granted team-b: placements %q, want team-a/p,team-b/p", got)
	}
	if a := ws.Access[KindPlacements]; len(a.Denied) != 0 {
		t.Fatalf("access after the grant %+v: nothing should be denied", a)
	}
}

// TestSlowStreamGetsSnapshot: a stream whose reader stops reading while more than
// subscriberQueue batches are sent gets a fresh snapshot with the latest state, not every
// batch it missed.
func TestSlowStreamGetsSnapshot(t *testing.T) {
	s := newTestServer(t, Options{})
	gr := kindGR(KindClusters)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		_ = s.stream(ctx, sseWriter{w: pw}, hello{Mode: "local"}, nil)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	r := readSSE(t, br)
	r.next("snapshot")
	// readSSE's goroutine buffers up to 100 events; block the writer by not consuming them:
	// flush enough batches that the writer stalls on the pipe and the queue overflows.
	const n = 100 + subscriberQueue + 20
	for i := range n {
		s.st.set(KindClusters, "c1", "", gr, Cluster{Key: "c1", Version: fmt.Sprint(i)})
		s.st.flush()
	}
	// The client's state: a fresh snapshot, then the deltas after it, reach the latest version.
	deadline := time.After(10 * time.Second)
	fresh, version := false, ""
	for !fresh || version != fmt.Sprint(n-1) {
		select {
		case ev := <-r.events:
			var objs []json.RawMessage
			switch ev.name {
			case "snapshot":
				var ws wireSnapshot
				if err := json.Unmarshal([]byte(ev.data), &ws); err != nil {
					t.Fatal(err)
				}
				fresh, objs = true, ws.Objects[KindClusters]
			case "delta":
				var d wireDelta
				if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
					t.Fatal(err)
				}
				objs = d.Upsert[KindClusters]
			}
			for _, o := range objs {
				var c Cluster
				_ = json.Unmarshal(o, &c)
				version = c.Version
			}
		case err := <-r.errs:
			t.Fatalf("stream ended before a fresh snapshot and the latest version: %v", err)
		case <-deadline:
			t.Fatalf("within 10s: fresh snapshot %v, version %q; want a fresh snapshot and then version %d", fresh, version, n-1)
		}
	}
}

// TestStartFailsOnUnreachableHub: a hub that does not answer fails Start and WaitForSync
// with an error naming it, instead of serving a page of errors.
func TestStartFailsOnUnreachableHub(t *testing.T) {
	s, err := New(Options{Config: &rest.Config{Host: "https://127.0.0.1:1", Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	err = s.WaitForSync(ctx)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || ctx.Err() != nil {
		t.Fatalf("WaitForSync with an unreachable hub: %v; want Start's error naming the hub, before the 30s deadline", err)
	}
}

// hubRequest serves one request through s as user u (as the hub API server would pass it on).
func hubRequest(s *Server, u, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: u}))
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, r)
	return rec
}

// TestHubModeEndpointsRefuseWithoutRights: api/works needs get manifestworks in the work's
// namespace; explain needs get placements in its namespace and list managedclusters
// cluster-wide (it covers the whole fleet).
func TestHubModeEndpointsRefuseWithoutRights(t *testing.T) {
	works, pl, mc := resources[resWorks].gr, resources[resPlacements].gr, resources[resClusters].gr
	authz := &fakeAuthorizer{allow: map[string]bool{
		"alice|get|" + works.String() + "|other": true,
		"alice|get|" + pl.String() + "|team-a":   true,
		"carol|get|" + pl.String() + "|team-a":   true,
		"carol|list|" + mc.String() + "|":        true,
		"dave|list|" + mc.String() + "|":         true,
	}}
	s := newTestServer(t, Options{Authorizer: authz})
	for _, c := range []struct{ user, path, want string }{
		{"alice", "/api/works/c1/w", "alice may not get manifestworks.work.open-cluster-management.io in namespace c1"},
		{"alice", "/api/placements/team-a/p/explain", "alice may not list managedclusters.cluster.open-cluster-management.io cluster-wide"},
		{"dave", "/api/placements/team-a/p/explain", "dave may not get placements.cluster.open-cluster-management.io in namespace team-a"},
	} {
		rec := hubRequest(s, c.user, c.path)
		var body map[string]string
		if rec.Code != http.StatusForbidden || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body["error"] != c.want {
			t.Errorf("GET %s as %s: %d %s, want 403 {\"error\":%q}", c.path, c.user, rec.Code, rec.Body, c.want)
		}
	}
	// carol has both rights: she passes the checks, and while two explanations run she is
	// told to retry (429), not queued.
	s.explains <- struct{}{}
	s.explains <- struct{}{}
	rec := hubRequest(s, "carol", "/api/placements/team-a/p/explain")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), `"error"`) || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("explain while %d run: %d %s (Retry-After %q), want 429 JSON with Retry-After", maxExplains, rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
}

// TestHubModeGatesRollouts: a replica set's rollout (works and conditions from cluster
// namespaces) is shown to who may list it in its namespace and ManifestWorks cluster-wide;
// an add-on's (every cluster's add-on state) to who may list ManagedClusterAddOns
// cluster-wide — listing ClusterManagementAddOns is not enough. Deletions follow the same rule.
func TestHubModeGatesRollouts(t *testing.T) {
	mwrs, works, mca, cma := resources[resMWRS].gr, resources[resWorks].gr, resources[resAddons].gr, resources[resAddonDefs].gr
	authz := &fakeAuthorizer{allow: map[string]bool{
		"alice|list|" + mwrs.String() + "|apps": true,
		"alice|list|" + cma.String() + "|":      true,
		"carol|list|" + mwrs.String() + "|apps": true,
		"carol|list|" + works.String() + "|":    true,
		"carol|list|" + mca.String() + "|":      true,
	}}
	s := newTestServer(t, Options{Authorizer: authz})
	s.st.setGated(KindRollouts, "apps/web", "apps", mwrs, works, Rollout{Key: "apps/web", Kind: RolloutKindMWRS, Namespace: "apps", Name: "web"})
	s.st.set(KindRollouts, AddonRolloutKey("foo"), "", mca, Rollout{Key: AddonRolloutKey("foo"), Kind: RolloutKindAddOn, Name: "foo"})
	s.st.flush()
	if got := keysOf(t, viewerSnapshot(t, s, authz, "alice").Objects[KindRollouts]); len(got) != 0 {
		t.Fatalf("alice (replica sets in apps, CMAs; no works, no MCAs cluster-wide) sees rollouts %q, want none", got)
	}
	ws := viewerSnapshot(t, s, authz, "carol")
	if got := strings.Join(keysOf(t, ws.Objects[KindRollouts]), ","); got != "ClusterManagementAddOn:foo,apps/web" {
		t.Fatalf("carol sees rollouts %q, want ClusterManagementAddOn:foo,apps/web", got)
	}
	see := func(u string) filter {
		v := newViewer(authz, &user.DefaultInfo{Name: u})
		return func(e *entry) bool {
			return v.sees(t.Context(), e.gr, e.namespace) && (e.also.Empty() || v.allowed(t.Context(), e.also, ""))
		}
	}
	sub, _ := s.st.subscribe()
	defer s.st.unsubscribe(sub)
	s.st.del(KindRollouts, "apps/web")
	s.st.flush()
	b := <-sub.ch
	if _, ok := encodeDelta(b, see("alice")); ok {
		t.Fatalf("alice was sent the deletion of a rollout she may not see")
	}
	if d, ok := encodeDelta(b, see("carol")); !ok || !strings.Contains(string(d), `"apps/web"`) {
		t.Fatalf("carol's delta %s (%v): want the deletion of apps/web", d, ok)
	}
}

// TestRolloutKeysDoNotCollide: the replica set addon/foo and the add-on foo are two rollouts.
func TestRolloutKeysDoNotCollide(t *testing.T) {
	s := newTestServer(t, Options{})
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "addon", Name: "foo"}}
	s.st.set(KindRollouts, key(rs), "addon", resources[resMWRS].gr, Rollout{Key: key(rs), Kind: RolloutKindMWRS})
	s.st.set(KindRollouts, AddonRolloutKey("foo"), "", resources[resAddons].gr, Rollout{Key: AddonRolloutKey("foo"), Kind: RolloutKindAddOn})
	if got := s.st.keys(KindRollouts); len(got) != 2 {
		t.Fatalf("rollout keys %q: the replica set addon/foo and the add-on foo must not share one", got)
	}
}

// TestUserStreamCap: in hub mode one viewer may hold at most maxUserStreams streams; others
// are still served, and a closed stream frees its slot. HEAD api/stream is refused.
func TestUserStreamCap(t *testing.T) {
	authz := &fakeAuthorizer{allow: map[string]bool{}}
	s := newTestServer(t, Options{Authorizer: authz})
	for range maxUserStreams {
		if !s.takeUserStream("alice") {
			t.Fatalf("alice could not open %d streams", maxUserStreams)
		}
	}
	if rec := hubRequest(s, "alice", "/api/stream"); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "per user") {
		t.Fatalf("alice's stream %d: %d %s, want 503 naming the per-user cap", maxUserStreams+1, rec.Code, rec.Body)
	}
	// bob is served; his stream ends with its request.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/api/stream", nil)
	r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: "bob"}))
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, r)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "event: snapshot") {
		t.Fatalf("bob's stream while alice is at her cap: %d %s", rec.Code, rec.Body)
	}
	s.userStreamsMu.Lock()
	left := s.userStreams["bob"]
	s.userStreamsMu.Unlock()
	if left != 0 || len(s.streams) != 0 {
		t.Fatalf("after bob's stream ended: he holds %d streams, the pool %d; want 0", left, len(s.streams))
	}
	head := httptest.NewRequest("HEAD", "/api/stream", nil)
	head = head.WithContext(request.WithUser(head.Context(), &user.DefaultInfo{Name: "bob"}))
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, head)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET" {
		t.Fatalf("HEAD api/stream: %d (Allow %q), want 405 Allow: GET", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestFailureAfterSyncEndsStreams: when the watches fail after the first sync, open streams
// end (the page reconnects) and new ones, like the endpoints, are answered 503.
func TestFailureAfterSyncEndsStreams(t *testing.T) {
	s := newTestServer(t, Options{})
	pr, pw := io.Pipe()
	ended := make(chan error, 1)
	go func() {
		ended <- s.stream(t.Context(), sseWriter{w: pw}, hello{Mode: "local"}, nil)
		pw.Close()
	}()
	r := readSSE(t, bufio.NewReader(pr))
	r.next("snapshot")
	_ = s.fail(errors.New("watch of managedclusters ended"))
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "watch of managedclusters ended") {
			t.Fatalf("the stream ended with %v, want the watches' failure", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the open stream did not end within 10s of the watches' failure")
	}
	for _, path := range []string{"/api/stream", "/api/works/c1/w"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "watch of managedclusters ended") {
			t.Fatalf("GET %s after the failure: %d %s, want 503 naming it", path, rec.Code, rec.Body)
		}
	}
}

// TestRolloutsFollowTheirPlacements: a placement's change marks the rollouts that reference
// it, not every rollout; a rollout that stops referencing it is no longer marked.
func TestRolloutsFollowTheirPlacements(t *testing.T) {
	s := newTestServer(t, Options{})
	s.indexRollout("mwrs:apps/web", []string{"apps/p1"})
	s.indexRollout("mwrs:apps/db", []string{"apps/p2"})
	s.indexRollout("cma:foo", []string{"apps/p1", "ops/p3"})
	s.markRolloutsOf("apps/p1")
	s.rollMu.Lock()
	got, all := s.rollDirty, s.rollAll
	s.rollDirty = map[string]bool{}
	s.rollMu.Unlock()
	if all || len(got) != 2 || !got["mwrs:apps/web"] || !got["cma:foo"] {
		t.Fatalf("placement apps/p1 changed: marked %v (all %v), want mwrs:apps/web and cma:foo only", got, all)
	}
	s.indexRollout("cma:foo", []string{"ops/p3"})
	s.markRolloutsOf("apps/p1")
	s.rollMu.Lock()
	got = s.rollDirty
	s.rollMu.Unlock()
	if len(got) != 1 || !got["mwrs:apps/web"] {
		t.Fatalf("after cma:foo dropped apps/p1: marked %v, want mwrs:apps/web only", got)
	}
}

// TestRolloutMinInterval: a rollout is recomputed at most every max(2 s, 2 × its last
// computation).
func TestRolloutMinInterval(t *testing.T) {
	s := newTestServer(t, Options{})
	now := time.Now()
	if d := s.rolloutWait("mwrs:a/never", now); d != 0 {
		t.Fatalf("a rollout never computed waits %s, want 0", d)
	}
	for _, c := range []struct {
		ago, took, want time.Duration
	}{
		{time.Second, 100 * time.Millisecond, time.Second}, // 2 s floor
		{time.Second, 3 * time.Second, 5 * time.Second},    // twice a slow computation
		{3 * time.Second, 100 * time.Millisecond, -time.Second},
	} {
		s.rollLast["mwrs:a/b"] = rolloutTiming{at: now.Add(-c.ago), took: c.took}
		if d := s.rolloutWait("mwrs:a/b", now); d != c.want {
			t.Errorf("computed %s ago in %s: waits %s, want %s", c.ago, c.took, d, c.want)
		}
	}
}

// TestRolloutKeepsLastGoodView: a computation that failed (deadline passed, or nothing of a
// rollout with placements could be read) shows the last good view, saying why it is not current.
func TestRolloutKeepsLastGoodView(t *testing.T) {
	s := newTestServer(t, Options{})
	mwrs, works := resources[resMWRS].gr, resources[resWorks].gr
	stored := func() Rollout {
		t.Helper()
		var r Rollout
		if err := json.Unmarshal(s.st.current().objects[KindRollouts]["apps/web"].raw, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	good := Rollout{Key: "apps/web", Kind: RolloutKindMWRS, Phase: "Progressing", Placements: []RolloutPlacement{{Name: "p1"}}}
	s.setRollout(t.Context(), "mwrs:apps/web", "apps/web", "apps", mwrs, works, []string{"apps/p1"}, good)
	if r := stored(); r.Phase != "Progressing" || r.Message != "" {
		t.Fatalf("a good computation stored %+v", r)
	}
	timedOut, cancel := context.WithCancel(t.Context())
	cancel()
	s.setRollout(timedOut, "mwrs:apps/web", "apps/web", "apps", mwrs, works, []string{"apps/p1"}, Rollout{Key: "apps/web", Phase: RolloutPhaseUnknown})
	if r := stored(); r.Phase != "Progressing" || len(r.Placements) != 1 || !strings.Contains(r.Message, "longer than") {
		t.Fatalf("after a computation past its deadline: %+v, want the last good view with why", r)
	}
	s.setRollout(t.Context(), "mwrs:apps/web", "apps/web", "apps", mwrs, works, []string{"apps/p1"},
		Rollout{Key: "apps/web", Phase: RolloutPhaseUnknown, Message: "ManifestWorkReplicaSet apps/web: listing: boom"})
	if r := stored(); r.Phase != "Progressing" || !strings.Contains(r.Message, "boom") {
		t.Fatalf("after a failed read: %+v, want the last good view with the error", r)
	}
}
