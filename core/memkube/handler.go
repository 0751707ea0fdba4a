package memkube

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
)

// maxBody caps a request body, as kube-apiserver's 3 MiB object limit does.
const maxBody = 3 << 20

func (c *Cluster) serve(req *http.Request) *http.Response {
	if req.Body != nil {
		defer req.Body.Close()
	}
	resp, err := c.route(req)
	if err != nil {
		resp = errorResponse(err)
	}
	resp.Request = req
	return resp
}

func respond(code int, body []byte) *http.Response {
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}
}

func respondJSON(code int, v any) (*http.Response, error) {
	b, err := jsonMarshal(v)
	if err != nil {
		return nil, err
	}
	return respond(code, b), nil
}

// errorResponse is a metav1.Status, so that apierrors.IsNotFound and friends work.
func errorResponse(err error) *http.Response {
	var status metav1.Status
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s.Status()
	} else {
		status = apierrors.NewInternalError(err).Status()
	}
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	status.Status = metav1.StatusFailure
	b, _ := jsonMarshal(&status)
	code := int(status.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	return respond(code, b)
}

func notFoundPath() error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "the server could not find the requested resource", 0, false)
}

// request is a parsed resource request.
type request struct {
	r             *resource
	ns, name, sub string
}

func (c *Cluster) route(req *http.Request) (*http.Response, error) {
	path := strings.TrimSuffix(req.URL.Path, "/")
	switch path {
	case "/version":
		return respond(http.StatusOK, c.version), nil
	case "/healthz", "/readyz", "/livez":
		resp := respond(http.StatusOK, []byte("ok"))
		resp.Header.Set("Content-Type", "text/plain")
		return resp, nil
	case "/api":
		return respondJSON(http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: c.host}}})
	case "/apis":
		return respondJSON(http.StatusOK, c.groupList())
	}
	var gv schema.GroupVersion
	var rest []string
	switch {
	case strings.HasPrefix(path, "/api/"):
		segs := strings.Split(path[len("/api/"):], "/")
		gv, rest = schema.GroupVersion{Version: segs[0]}, segs[1:]
	case strings.HasPrefix(path, "/apis/"):
		segs := strings.Split(path[len("/apis/"):], "/")
		if len(segs) == 1 {
			for _, g := range c.groupList().Groups {
				if g.Name == segs[0] {
					g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
					return respondJSON(http.StatusOK, &g)
				}
			}
			return nil, notFoundPath()
		}
		gv, rest = schema.GroupVersion{Group: segs[0], Version: segs[1]}, segs[2:]
	default:
		return nil, notFoundPath()
	}
	if len(rest) == 0 {
		if req.Method != http.MethodGet {
			return nil, apierrors.NewMethodNotSupported(schema.GroupResource{}, req.Method)
		}
		list := c.resourceList(gv)
		if list == nil {
			return nil, notFoundPath()
		}
		return respondJSON(http.StatusOK, list)
	}
	var rq request
	var res string
	if rest[0] == "namespaces" && len(rest) >= 3 && !(len(rest) == 3 && (rest[2] == "status" || rest[2] == "finalize")) {
		rq.ns, res, rest = rest[1], rest[2], rest[3:]
	} else {
		res, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		rq.name = rest[0]
	}
	if len(rest) > 1 {
		rq.sub = rest[1]
	}
	if len(rest) > 2 {
		return nil, notFoundPath()
	}
	rq.r = c.lookup(gv.WithResource(res))
	if rq.r == nil || rq.r.namespaced != (rq.ns != "") && !(rq.r.namespaced && rq.name == "") {
		return nil, notFoundPath()
	}
	switch rq.sub {
	case "":
	case "status":
		if !rq.r.status {
			return nil, notFoundPath()
		}
	case "token":
		if rq.r.gr() != (schema.GroupResource{Resource: "serviceaccounts"}) || req.Method != http.MethodPost {
			return nil, notFoundPath()
		}
		return c.tokenRequest(req, rq)
	default:
		return nil, notFoundPath()
	}
	if rq.r.review {
		if req.Method != http.MethodPost || rq.name != "" {
			return nil, apierrors.NewMethodNotSupported(rq.r.gr(), req.Method)
		}
		return c.review(req, rq)
	}
	q := req.URL.Query()
	o := writeOpts{manager: q.Get("fieldManager"), dryRun: len(q["dryRun"]) > 0, force: q.Get("force") == "true"}
	if o.manager == "" {
		// kube-apiserver's default: the user agent up to its first "/".
		o.manager, _, _ = strings.Cut(req.UserAgent(), "/")
	}
	key := objKey{ns: rq.ns, name: rq.name}
	switch req.Method {
	case http.MethodGet:
		if rq.name != "" {
			return c.get(req, rq)
		}
		if w := q.Get("watch"); w == "true" || w == "1" {
			return c.watch(req, rq)
		}
		return c.listResponse(req, rq)
	case http.MethodPost:
		if rq.name != "" {
			return nil, apierrors.NewMethodNotSupported(rq.r.gr(), "create with a name in the URL")
		}
		obj, err := readObject(req)
		if err != nil {
			return nil, err
		}
		return c.write(http.StatusCreated, func() ([]byte, error) { return c.create(rq.r, rq.ns, obj, o, false) })
	case http.MethodPut:
		if rq.name == "" {
			return nil, apierrors.NewMethodNotSupported(rq.r.gr(), "update without a name")
		}
		obj, err := readObject(req)
		if err != nil {
			return nil, err
		}
		return c.write(http.StatusOK, func() ([]byte, error) { return c.update(rq.r, key, rq.sub, obj, o) })
	case http.MethodPatch:
		if rq.name == "" {
			return nil, apierrors.NewMethodNotSupported(rq.r.gr(), "patch without a name")
		}
		body, err := readBody(req)
		if err != nil {
			return nil, err
		}
		pt, _, _ := strings.Cut(req.Header.Get("Content-Type"), ";")
		return c.write(http.StatusOK, func() ([]byte, error) { return c.patch(rq.r, key, rq.sub, types.PatchType(pt), body, o) })
	case http.MethodDelete:
		return c.delete(req, rq, o.dryRun)
	}
	return nil, apierrors.NewMethodNotSupported(rq.r.gr(), req.Method)
}

// write runs a mutation under the cluster's lock and serves its result.
func (c *Cluster) write(code int, f func() ([]byte, error)) (*http.Response, error) {
	c.mu.Lock()
	data, err := f()
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return respond(code, data), nil
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	if len(b) > maxBody {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBody))
	}
	return b, nil
}

func readObject(req *http.Request) (map[string]any, error) {
	if ct := req.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, req.Method, schema.GroupResource{}, "",
			fmt.Sprintf("memkube serves JSON only, not %s", ct), 0, false)
	}
	b, err := readBody(req)
	if err != nil {
		return nil, err
	}
	obj, err := decode(b)
	if err != nil || obj == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the request body: %v", err))
	}
	return obj, nil
}

// view renders a stored object as the request asks for it: in the requested version of a
// CRD, or as PartialObjectMetadata.
type view func([]byte) ([]byte, error)

func (c *Cluster) viewFor(req *http.Request, r *resource) (view, bool) {
	accept := req.Header.Get("Accept")
	if strings.Contains(accept, "as=PartialObjectMetadata") {
		return func(data []byte) ([]byte, error) {
			obj, err := decode(data)
			if err != nil {
				return nil, err
			}
			return jsonMarshal(map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj["metadata"]})
		}, true
	}
	if r.crd == "" {
		return nil, false
	}
	prefix := []byte(`{"apiVersion":"` + r.gvr.GroupVersion().String() + `"`)
	return func(data []byte) ([]byte, error) {
		if bytes.HasPrefix(data, prefix) {
			return data, nil
		}
		obj, err := decode(data)
		if err != nil {
			return nil, err
		}
		inVersion(r, obj)
		return jsonMarshal(obj)
	}, false
}

func (c *Cluster) get(req *http.Request, rq request) (*http.Response, error) {
	c.mu.Lock()
	_, e, err := c.getLocked(rq.r, objKey{ns: rq.ns, name: rq.name})
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	data := e.data
	if v, _ := c.viewFor(req, rq.r); v != nil {
		if data, err = v(data); err != nil {
			return nil, err
		}
	}
	return respond(http.StatusOK, data), nil
}

func parseSelector(req *http.Request, ns string) (selector, error) {
	q := req.URL.Query()
	sel := selector{ns: ns}
	var err error
	if sel.labels, err = labels.Parse(q.Get("labelSelector")); err != nil {
		return sel, apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err))
	}
	if sel.fields, err = fields.ParseSelector(q.Get("fieldSelector")); err != nil {
		return sel, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector: %v", err))
	}
	return sel, nil
}

func (c *Cluster) listResponse(req *http.Request, rq request) (*http.Response, error) {
	sel, err := parseSelector(req, rq.ns)
	if err != nil {
		return nil, err
	}
	entries, rv := c.list(rq.r, sel)
	v, partial := c.viewFor(req, rq.r)
	apiVersion, kind := rq.r.gvr.GroupVersion().String(), rq.r.kind+"List"
	if partial {
		apiVersion, kind = "meta.k8s.io/v1", "PartialObjectMetadataList"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":%q,"kind":%q,"metadata":{"resourceVersion":"%d"},"items":[`, apiVersion, kind, rv)
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		data := e.data
		if v != nil {
			if data, err = v(data); err != nil {
				return nil, err
			}
		}
		b.Write(data)
	}
	b.WriteString("]}")
	return respond(http.StatusOK, b.Bytes()), nil
}

func (c *Cluster) watch(req *http.Request, rq request) (*http.Response, error) {
	sel, err := parseSelector(req, rq.ns)
	if err != nil {
		return nil, err
	}
	q := req.URL.Query()
	opts := watchOptions{sel: sel, resourceVersion: q.Get("resourceVersion"), sendInitialEvents: q.Get("sendInitialEvents") == "true"}
	if s := q.Get("timeoutSeconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("timeoutSeconds: %v", err))
		}
		opts.timeout = time.Duration(n) * time.Second
	}
	v, partial := c.viewFor(req, rq.r)
	opts.frame = v
	apiVersion, kind := rq.r.gvr.GroupVersion().String(), rq.r.kind
	if partial {
		apiVersion, kind = "meta.k8s.io/v1", "PartialObjectMetadata"
	}
	opts.bookmark = func(rv uint64) []byte {
		return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"resourceVersion":"%d","annotations":{%q:"true"}}}`,
			apiVersion, kind, rv, metav1.InitialEventsAnnotationKey))
	}
	if partial {
		// The bookmark is already PartialObjectMetadata.
		inner := opts.frame
		opts.frame = func(data []byte) ([]byte, error) {
			if bytes.Contains(data[:min(len(data), 64)], []byte(`"meta.k8s.io/v1"`)) {
				return data, nil
			}
			return inner(data)
		}
	}
	w, err := c.openWatch(req.Context(), rq.r, opts)
	if err != nil {
		return nil, err
	}
	resp := respond(http.StatusOK, nil)
	resp.Body, resp.ContentLength = w, -1
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set("Transfer-Encoding", "chunked")
	return resp, nil
}

func (c *Cluster) delete(req *http.Request, rq request, dryRun bool) (*http.Response, error) {
	var opts metav1.DeleteOptions
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := jsonUnmarshal(body, &opts); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding DeleteOptions: %v", err))
		}
	}
	q := req.URL.Query()
	if p := q.Get("propagationPolicy"); p != "" {
		opts.PropagationPolicy = ptrTo(metav1.DeletionPropagation(p))
	}
	dryRun = dryRun || len(opts.DryRun) > 0
	policy := metav1.DeletePropagationBackground
	if opts.PropagationPolicy != nil {
		policy = *opts.PropagationPolicy
	}
	if opts.OrphanDependents != nil && *opts.OrphanDependents {
		policy = metav1.DeletePropagationOrphan
	}
	if rq.name != "" {
		return c.write(http.StatusOK, func() ([]byte, error) {
			return c.deleteLocked(rq.r, objKey{ns: rq.ns, name: rq.name}, policy, opts.Preconditions, dryRun)
		})
	}
	sel, err := parseSelector(req, rq.ns)
	if err != nil {
		return nil, err
	}
	entries, _ := c.list(rq.r, sel)
	var keys []objKey
	for _, e := range entries {
		obj, err := decode(e.data)
		if err != nil {
			return nil, err
		}
		keys = append(keys, objKey{ns: str(meta(obj), "namespace"), name: str(meta(obj), "name")})
	}
	c.mu.Lock()
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":%q,"kind":%q,"metadata":{},"items":[`, rq.r.gvr.GroupVersion().String(), rq.r.kind+"List")
	n := 0
	for _, k := range keys {
		data, err := c.deleteLocked(rq.r, k, policy, nil, dryRun)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(data)
		n++
	}
	c.mu.Unlock()
	b.WriteString("]}")
	return respond(http.StatusOK, b.Bytes()), nil
}

// review answers a SubjectAccessReview, SelfSubjectAccessReview or LocalSubjectAccessReview
// with Options.Authorize.
func (c *Cluster) review(req *http.Request, rq request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	var spec authorizationv1.SubjectAccessReviewSpec
	var out any
	var status *authorizationv1.SubjectAccessReviewStatus
	switch rq.r.kind {
	case "SelfSubjectAccessReview":
		sar := &authorizationv1.SelfSubjectAccessReview{}
		if err := jsonUnmarshal(body, sar); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		spec = authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: sar.Spec.ResourceAttributes,
			NonResourceAttributes: sar.Spec.NonResourceAttributes, User: "memkube:admin", Groups: []string{"system:masters"}}
		out, status = sar, &sar.Status
	default:
		sar := &authorizationv1.SubjectAccessReview{}
		if err := jsonUnmarshal(body, sar); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if rq.r.kind == "LocalSubjectAccessReview" {
			if sar.Spec.ResourceAttributes == nil || sar.Spec.ResourceAttributes.Namespace != rq.ns {
				return nil, apierrors.NewBadRequest("spec.resourceAttributes.namespace must match the namespace of the request")
			}
		}
		spec = sar.Spec
		out, status = sar, &sar.Status
	}
	status.Allowed, status.Reason = true, ""
	if c.auth != nil {
		status.Allowed, status.Reason = c.auth(spec)
	}
	status.Denied = false
	return respondJSON(http.StatusCreated, out)
}

// tokenRequest issues a token for an existing ServiceAccount (memkube does not check it).
func (c *Cluster) tokenRequest(req *http.Request, rq request) (*http.Response, error) {
	c.mu.Lock()
	_, e, err := c.getLocked(rq.r, objKey{ns: rq.ns, name: rq.name})
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	tr := &authenticationv1.TokenRequest{}
	if err := jsonUnmarshal(body, tr); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	secs := int64(3600)
	if tr.Spec.ExpirationSeconds != nil {
		secs = *tr.Spec.ExpirationSeconds
	}
	tr.TypeMeta = metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"}
	tr.Name, tr.Namespace, tr.CreationTimestamp = rq.name, rq.ns, metav1.NewTime(c.now())
	tr.Spec.ExpirationSeconds = &secs
	tr.Status = authenticationv1.TokenRequestStatus{Token: "memkube." + rq.ns + "." + rq.name + "." + string(e.uid) + "." + string(newUID()),
		ExpirationTimestamp: metav1.NewTime(c.now().Add(time.Duration(secs) * time.Second))}
	return respondJSON(http.StatusCreated, tr)
}

// groupList is /apis: the built-in groups and those of the CRDs.
func (c *Cluster) groupList() *metav1.APIGroupList {
	versions := map[string]map[string]bool{}
	add := func(gv schema.GroupVersion) {
		if gv.Group == "" {
			return
		}
		if versions[gv.Group] == nil {
			versions[gv.Group] = map[string]bool{}
		}
		versions[gv.Group][gv.Version] = true
	}
	for gvr := range c.builtin.byGVR {
		add(gvr.GroupVersion())
	}
	c.mu.Lock()
	for gvr := range c.crds {
		add(gvr.GroupVersion())
	}
	c.mu.Unlock()
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for g, vs := range versions {
		group := metav1.APIGroup{Name: g}
		for v := range vs {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
		}
		sort.Slice(group.Versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(group.Versions[i].Version, group.Versions[j].Version) > 0
		})
		group.PreferredVersion = group.Versions[0]
		list.Groups = append(list.Groups, group)
	}
	sort.Slice(list.Groups, func(i, j int) bool { return list.Groups[i].Name < list.Groups[j].Name })
	return list
}

var (
	allVerbs    = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs = metav1.Verbs{"get", "patch", "update"}
)

// resourceList is /api/v1 or /apis/<group>/<version>, nil when not served.
func (c *Cluster) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	var rs []*resource
	for gvr, r := range c.builtin.byGVR {
		if gvr.GroupVersion() == gv {
			rs = append(rs, r)
		}
	}
	c.mu.Lock()
	for gvr, r := range c.crds {
		if gvr.GroupVersion() == gv {
			rs = append(rs, r)
		}
	}
	c.mu.Unlock()
	if len(rs) == 0 {
		return nil
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].gvr.Resource < rs[j].gvr.Resource })
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, r := range rs {
		verbs := allVerbs
		if r.review {
			verbs = metav1.Verbs{"create"}
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.gvr.Resource, SingularName: strings.ToLower(r.kind),
			Namespaced: r.namespaced, Kind: r.kind, Verbs: verbs, ShortNames: r.shortNames, Categories: r.categories})
		if r.status {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.gvr.Resource + "/status", Namespaced: r.namespaced, Kind: r.kind, Verbs: statusVerbs})
		}
		if r.gvr.Resource == "serviceaccounts" && gv.Group == "" {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: "serviceaccounts/token", Namespaced: true,
				Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: metav1.Verbs{"create"}})
		}
	}
	return list
}

func ptrTo[T any](v T) *T { return &v }
