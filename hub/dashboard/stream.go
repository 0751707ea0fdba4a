package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// hello is the first event of a stream.
type hello struct {
	Mode string `json:"mode"`
	User string `json:"user"`
	Hub  string `json:"hub"`
}

// sseWriter writes Server-Sent Events, each bounded by writeTimeout.
type sseWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (sw sseWriter) event(name string, data []byte) error {
	var b bytes.Buffer
	b.Grow(len(data) + len(name) + 16)
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteString("\ndata: ")
	b.Write(data) // JSON without newlines: one data line
	b.WriteString("\n\n")
	return sw.write(b.Bytes())
}

func (sw sseWriter) comment(text string) error { return sw.write([]byte(": " + text + "\n\n")) }

func (sw sseWriter) write(p []byte) error {
	if sw.rc != nil {
		if err := sw.rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	if _, err := sw.w.Write(p); err != nil {
		return err
	}
	if sw.rc != nil {
		if err := sw.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	return nil
}

// filter decides which entries a stream's viewer sees (nil: all, local mode).
type filter func(e *entry) bool

// encodeSnapshot writes {"rev":N,"objects":{KIND:[...]},"access":{...}}, objects sorted by key.
func encodeSnapshot(snap snapshot, access map[string]Access, see filter) []byte {
	var b bytes.Buffer
	b.WriteString(`{"rev":`)
	b.WriteString(strconv.FormatUint(snap.rev, 10))
	b.WriteString(`,"objects":{`)
	for i, kind := range Kinds {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(kind))
		b.WriteString(":[")
		first := true
		m := snap.objects[kind]
		for _, k := range sortedKeys(m) {
			e := m[k]
			if see != nil && !see(e) {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.Write(e.raw)
		}
		b.WriteByte(']')
	}
	b.WriteString(`},"access":`)
	a, _ := json.Marshal(access) // plain data
	b.Write(a)
	b.WriteByte('}')
	return b.Bytes()
}

// encodeDelta writes {"rev":N,"upsert":{KIND:[...]},"delete":{KIND:[key...]}}; ok is false
// when nothing in it is for this viewer.
func encodeDelta(bt batch, see filter) ([]byte, bool) {
	var up, del bytes.Buffer
	nUp, nDel := 0, 0
	for _, kind := range Kinds {
		m := bt.changes[kind]
		if len(m) == 0 {
			continue
		}
		kUp, kDel := 0, 0
		for _, k := range sortedKeys(m) {
			e := m[k]
			if see != nil && !see(e) {
				continue
			}
			if e.raw == nil {
				if kDel == 0 {
					if nDel > 0 {
						del.WriteByte(',')
					}
					del.WriteString(strconv.Quote(kind) + ":[")
				} else {
					del.WriteByte(',')
				}
				del.WriteString(strconv.Quote(k))
				kDel++
				continue
			}
			if kUp == 0 {
				if nUp > 0 {
					up.WriteByte(',')
				}
				up.WriteString(strconv.Quote(kind) + ":[")
			} else {
				up.WriteByte(',')
			}
			up.Write(e.raw)
			kUp++
		}
		if kUp > 0 {
			up.WriteByte(']')
			nUp++
		}
		if kDel > 0 {
			del.WriteByte(']')
			nDel++
		}
	}
	if nUp == 0 && nDel == 0 {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteString(`{"rev":` + strconv.FormatUint(bt.rev, 10) + `,"upsert":{`)
	b.Write(up.Bytes())
	b.WriteString(`},"delete":{`)
	b.Write(del.Bytes())
	b.WriteString(`}}`)
	return b.Bytes(), true
}

// namespacesByKind are the namespaces each kind has objects in (hub-mode access reports).
func namespacesByKind(snap snapshot) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for kind, m := range snap.objects {
		out[kind] = map[string]bool{}
		for _, e := range m {
			if e.namespace != "" && e.gr == kindGR(kind) {
				out[kind][e.namespace] = true
			}
		}
	}
	return out
}

// serveStream is GET api/stream: hello, a snapshot, then batched deltas, with pings.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		// HEAD would hold a stream slot for nothing.
		w.Header().Set("Allow", "GET")
		writeError(w, http.StatusMethodNotAllowed, "api/stream only serves GET")
		return
	}
	ctx := r.Context()
	h := hello{Mode: "local", User: s.user, Hub: s.opts.Config.Host}
	var v *viewer
	if s.hubMode() {
		u, ok := request.UserFrom(ctx)
		if !ok {
			writeError(w, http.StatusUnauthorized, "no authenticated user")
			return
		}
		// One viewer may not take the whole pool.
		if !s.takeUserStream(u.GetName()) {
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("too many dashboard streams for %s (at most %d per user)", u.GetName(), maxUserStreams))
			return
		}
		defer s.releaseUserStream(u.GetName())
		v = newViewer(s.opts.Authorizer, u)
		h.Mode, h.User = "hub", u.GetName()
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("too many dashboard streams (at most %d)", s.opts.MaxStreams))
		return
	}
	select {
	case <-s.synced:
	case <-s.failed:
	case <-ctx.Done():
		return
	}
	select {
	case <-s.failed: // also after a sync: the model is frozen
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("the dashboard's watches failed: %v", s.startErr))
		return
	default:
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := sseWriter{w: w, rc: http.NewResponseController(w)}
	if err := s.stream(ctx, sw, h, v); err != nil && ctx.Err() == nil {
		s.log.V(1).Info("dashboard stream ended", "user", h.User, "error", err.Error())
	}
}

// takeUserStream counts one more stream of user, unless they have maxUserStreams open.
func (s *Server) takeUserStream(user string) bool {
	s.userStreamsMu.Lock()
	defer s.userStreamsMu.Unlock()
	if s.userStreams[user] >= maxUserStreams {
		return false
	}
	s.userStreams[user]++
	return true
}

func (s *Server) releaseUserStream(user string) {
	s.userStreamsMu.Lock()
	defer s.userStreamsMu.Unlock()
	if s.userStreams[user]--; s.userStreams[user] <= 0 {
		delete(s.userStreams, user)
	}
}

func (s *Server) stream(ctx context.Context, sw sseWriter, h hello, v *viewer) error {
	hb, _ := json.Marshal(h)
	if err := sw.event("hello", hb); err != nil {
		return err
	}
	var see filter
	if v != nil {
		see = func(e *entry) bool {
			return v.sees(ctx, e.gr, e.namespace) && (e.also.Empty() || v.allowed(ctx, e.also, ""))
		}
	}
	var lastAccess []byte
	sendSnapshot := func(snap snapshot) error {
		access := s.access
		if v != nil {
			access = v.access(ctx, namespacesByKind(snap))
		}
		lastAccess, _ = json.Marshal(access)
		return sw.event("snapshot", encodeSnapshot(snap, access, see))
	}
	sub, snap := s.st.subscribe()
	defer func() { s.st.unsubscribe(sub) }()
	if err := sendSnapshot(snap); err != nil {
		return err
	}
	ping := time.NewTicker(pingInterval)
	defer ping.Stop()
	var recheck <-chan time.Time
	if v != nil {
		t := time.NewTicker(s.recheckEvery)
		defer t.Stop()
		recheck = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.failed:
			// The watches stopped after the sync: end the stream; the page reconnects and is
			// told why (503).
			return fmt.Errorf("the dashboard's watches failed: %w", s.startErr)
		case <-ping.C:
			if err := sw.comment("ping"); err != nil {
				return err
			}
		case <-recheck:
			// Rights change: ask again, and if what the viewer may see changed, start over.
			v.reset()
			cur := s.st.current()
			a, _ := json.Marshal(v.access(ctx, namespacesByKind(cur)))
			if !bytes.Equal(a, lastAccess) {
				sub, snap = s.st.resubscribe(sub)
				if err := sendSnapshot(snap); err != nil {
					return err
				}
			}
		case <-sub.stale:
			sub, snap = s.st.resubscribe(sub)
			if err := sendSnapshot(snap); err != nil {
				return err
			}
		case b := <-sub.ch:
			if data, ok := encodeDelta(b, see); ok {
				if err := sw.event("delta", data); err != nil {
					return err
				}
			}
		}
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]string{"error": msg})
	_, _ = w.Write(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}
