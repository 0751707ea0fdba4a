package dashboard

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/hash"
	"github.com/flotilla-dev/flotilla/hub/admin"
)

// cookiePrefix begins the name of the cookie that holds the local-mode access token once the
// first visit presented it. The name ends with a short hash of the token, so that two
// dashboards on one host (browsers ignore ports) keep their own cookies.
const cookiePrefix = "flotilla-dashboard-"

// cookieName is this instance's token cookie.
func (s *Server) cookieName() string {
	return cookiePrefix + hash.Short(hash.Bytes([]byte(s.opts.Token)))
}

// Handler serves the UI and the API; every path is relative to where it is mounted.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", serveIndex)
	mux.Handle("GET /assets/", assetHandler())
	mux.HandleFunc("GET /api/stream", s.serveStream)
	mux.HandleFunc("GET /api/works/{namespace}/{name}", s.serveWork)
	mux.HandleFunc("GET /api/placements/{namespace}/{name}/explain", s.serveExplain)
	var h http.Handler = mux
	if !s.hubMode() {
		h = s.localGuard(h)
	}
	return onlyGet(rooted(h))
}

// rooted gives the mux a rooted path whatever prefix was stripped before it.
func rooted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/") {
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + r.URL.Path
			r2.URL.RawPath = ""
			r = r2
		}
		h.ServeHTTP(w, r)
	})
}

func onlyGet(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "the dashboard only serves GET")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// localHost says whether a Host header names this machine's loopback, or one of the extra
// IPs the server was told it is bound to: anything else may be a DNS-rebinding page reaching
// the local server through the browser (an IP literal cannot be rebound).
func localHost(host string, extra []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" || host == "127.0.0.1" || host == "::1" {
		return true
	}
	ip := net.ParseIP(host)
	for _, e := range extra {
		if ip != nil && ip.Equal(net.ParseIP(e)) {
			return true
		}
	}
	return false
}

// localGuard is local mode's security: loopback Host only, and the token — presented once
// as ?token= on the page's URL, then carried by an HttpOnly SameSite=Strict cookie.
func (s *Server) localGuard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host, s.opts.HostIPs) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("host %q is not served: open the dashboard at 127.0.0.1 or localhost", r.Host))
			return
		}
		if s.opts.Token == "" {
			h.ServeHTTP(w, r)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.URL.Path == "/" {
			if !s.tokenOK(t) {
				writeError(w, http.StatusUnauthorized, "wrong token: open the URL flotilla dashboard printed")
				return
			}
			// No Path: it defaults to the directory of this URL, where the handler is mounted,
			// not every path of the host.
			http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: s.opts.Token, HttpOnly: true, SameSite: http.SameSiteStrictMode})
			// Relative, so it lands on the page wherever the handler is mounted, without the token.
			// (http.Redirect would make it absolute.)
			w.Header().Set("Location", "./")
			w.WriteHeader(http.StatusFound)
			return
		}
		c, err := r.Cookie(s.cookieName())
		if err != nil || !s.tokenOK(c.Value) {
			writeError(w, http.StatusUnauthorized, "no dashboard token: open the URL flotilla dashboard printed (with ?token=)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.opts.Token)) == 1
}

// validName rejects path values that cannot name an object before anything is read.
func validName(what, v string, check func(string) []string) error {
	if errs := check(v); len(errs) > 0 {
		if len(v) > 64 {
			v = v[:64] + "..."
		}
		return fmt.Errorf("%s %q: %s", what, v, strings.Join(errs, "; "))
	}
	return nil
}

func pathRef(w http.ResponseWriter, r *http.Request) (namespace, name string, ok bool) {
	namespace, name = r.PathValue("namespace"), r.PathValue("name")
	for _, err := range []error{validName("namespace", namespace, validation.IsDNS1123Label), validName("name", name, validation.IsDNS1123Subdomain)} {
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return "", "", false
		}
	}
	return namespace, name, true
}

// authorize checks, in hub mode, that the viewer may verb gr in namespace; it writes the
// refusal and returns false otherwise. Local mode reads with the user's own rights.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, verb string, gr schema.GroupResource, namespace string) bool {
	if !s.hubMode() {
		return true
	}
	u, ok := request.UserFrom(r.Context())
	if !ok {
		writeError(w, http.StatusUnauthorized, "no authenticated user")
		return false
	}
	allowed, err := s.opts.Authorizer.Allowed(r.Context(), u, verb, gr, namespace)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("checking whether %s may %s %s in %s: %v", u.GetName(), verb, gr, namespace, err))
		return false
	}
	if !allowed {
		where := "in namespace " + namespace
		if namespace == "" {
			where = "cluster-wide"
		}
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s may not %s %s %s", u.GetName(), verb, gr, where))
		return false
	}
	return true
}

// readError answers a failed read: 404, 403, or 500, naming what was read.
func readError(w http.ResponseWriter, what string, err error) {
	switch {
	case apierrors.IsNotFound(err):
		writeError(w, http.StatusNotFound, what+" not found")
	case apierrors.IsForbidden(err):
		writeError(w, http.StatusForbidden, fmt.Sprintf("reading %s: %v", what, err))
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, fmt.Sprintf("reading %s: %v", what, err))
	default:
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("reading %s: %v", what, err))
	}
}

// WorkDetail is one ManifestWork as api/works shows it.
type WorkDetail struct {
	Namespace  string           `json:"namespace"`
	Name       string           `json:"name"`
	Conditions []Cond           `json:"conditions"`
	Manifests  []ManifestDetail `json:"manifests"`
}

// ManifestDetail is one manifest of a work with its reported status.
type ManifestDetail struct {
	Group      string     `json:"group"`
	Version    string     `json:"version"`
	Kind       string     `json:"kind"`
	Resource   string     `json:"resource"`
	Namespace  string     `json:"namespace"`
	Name       string     `json:"name"`
	Conditions []Cond     `json:"conditions"`
	Feedback   []Feedback `json:"feedback"`
}

// Feedback is one status feedback value.
type Feedback struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

// WorkDetailOf describes a ManifestWork (admin.DetailOf, as `flotilla get works NAME`), with
// each manifest's resource from its status.
func WorkDetailOf(mw *workv1.ManifestWork) WorkDetail {
	d := admin.DetailOf(mw)
	resources := map[int32]string{}
	for _, m := range mw.Status.ResourceStatus.Manifests {
		resources[m.ResourceMeta.Ordinal] = m.ResourceMeta.Resource
	}
	out := WorkDetail{Namespace: mw.Namespace, Name: mw.Name, Conditions: Conds(d.Conditions), Manifests: []ManifestDetail{}}
	for _, m := range d.Manifests {
		gv, _ := schema.ParseGroupVersion(m.APIVersion)
		md := ManifestDetail{
			Group: gv.Group, Version: gv.Version, Kind: m.Kind, Resource: resources[m.Ordinal],
			Namespace: m.Namespace, Name: m.Name, Conditions: Conds(m.Conditions), Feedback: []Feedback{},
		}
		for _, f := range m.Feedback {
			md.Feedback = append(md.Feedback, Feedback{Name: f.Name, Type: string(f.Value.Type), Value: admin.FormatFieldValue(f.Value)})
		}
		out.Manifests = append(out.Manifests, md)
	}
	return out
}

// serveWork is GET api/works/{namespace}/{name}.
func (s *Server) serveWork(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := pathRef(w, r)
	if !ok {
		return
	}
	gr := resources[resWorks].gr
	if !s.authorize(w, r, "get", gr, ns) || !s.ready(w) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	// Local mode reads with the user's own rights, whether or not works are watched; hub
	// mode from the cache, after the check above.
	var reader client.Reader = s.direct
	if s.hubMode() {
		reader = s.cache
	}
	mw := &workv1.ManifestWork{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, mw); err != nil {
		readError(w, fmt.Sprintf("ManifestWork %s/%s", ns, name), err)
		return
	}
	writeJSON(w, WorkDetailOf(mw))
}

// serveExplain is GET api/placements/{namespace}/{name}/explain.
func (s *Server) serveExplain(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := pathRef(w, r)
	if !ok {
		return
	}
	// The explanation covers the whole fleet (every cluster's taints and scores): in hub mode
	// the viewer must list managed clusters cluster-wide, besides get the placement.
	if !s.authorize(w, r, "get", resources[resPlacements].gr, ns) || !s.authorize(w, r, "list", resources[resClusters].gr, "") {
		return
	}
	if !s.ready(w) {
		return
	}
	if !s.hubMode() && !s.watches(resPlacements, ns) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("no access to placements in namespace %s", ns))
		return
	}
	// Each explanation builds a Wasm engine and reads the fleet: a few at once, the rest
	// are told to retry.
	select {
	case s.explains <- struct{}{}:
		defer func() { <-s.explains }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("too many placement explanations at once (at most %d): retry shortly", maxExplains))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), explainTimeout)
	defer cancel()
	e, err := Explain(ctx, s.reader(), ns, name, s.opts.Clock.Now())
	if err != nil {
		readError(w, fmt.Sprintf("Placement %s/%s", ns, name), err)
		return
	}
	writeJSON(w, e)
}

// ready says whether the watches have synced (the cache and access are set); if not, it
// answers 503.
func (s *Server) ready(w http.ResponseWriter) bool {
	select {
	case <-s.failed: // first: a failure after the sync closes both
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("the dashboard's watches failed: %v", s.startErr))
		return false
	default:
	}
	select {
	case <-s.synced:
		return true
	default:
		writeError(w, http.StatusServiceUnavailable, "the dashboard's watches have not synced yet")
	}
	return false
}

// watches says whether the model covers resource name in namespace.
func (s *Server) watches(name, namespace string) bool {
	a := s.resAccess[name]
	if a.all {
		return true
	}
	for _, ns := range a.namespaces {
		if ns == namespace {
			return true
		}
	}
	return false
}
