package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// APIService is an aggregated API served by the Server: the hub API server proxies every
// request for /apis/<Group>/<Version>/... to it (kube-aggregator), through an APIService
// <Version>.<Group> the Server keeps pointing at itself.
type APIService struct {
	// Group and Version name the API, e.g. cluster.core.oam.dev and v1alpha1.
	Group, Version string
	// Handler gets every request under /apis/<Group>/<Version> (the full path, unchanged),
	// including /apis/<Group>/<Version> itself, which it answers with the APIResourceList
	// of the version (the API server checks it answers 2xx there before it marks the
	// APIService Available, and reads it for discovery). Requests reach it only once
	// authenticated as coming from the API server's front proxy; the calling user (name,
	// groups, extra, as the hub API server authenticated them) is in the request context:
	// k8s.io/apiserver/pkg/endpoints/request.UserFrom. The API server has authorized the
	// request by then (RBAC on the API's resources). Upgrade requests may be hijacked, and the
	// server sets no timeout on a request once its headers are read: a long-running stream
	// ends when the handler returns or its request context ends (when the Server stops).
	Handler http.Handler
}

// Name is the APIService object's name, <Version>.<Group>.
func (a APIService) Name() string { return a.Version + "." + a.Group }

// The APIService objects the Server writes.
const (
	// APIServiceGroupPriorityMinimum and APIServiceVersionPriority order the aggregated
	// groups in discovery after the built-in ones, as add-on API servers do.
	APIServiceGroupPriorityMinimum = 5000
	APIServiceVersionPriority      = 10
	// APIServiceSuffix: in URL mode (no Options.Service) the APIServices reach the Server
	// through a Service of type ExternalName named <ConfigurationName>-apiservice in
	// Options.Namespace, pointing at Hosts[0].
	APIServiceSuffix = "-apiservice"
	// MaxConcurrentStreams is the Server's HTTP/2 limit of concurrent streams per connection:
	// the aggregator sends every request for an aggregated API, watches included, over few
	// connections.
	MaxConcurrentStreams = 1000
)

// The front proxy's (kube-aggregator's) credentials are described by the API server in this
// ConfigMap (the requestheader-* flags of kube-apiserver), as every aggregated API server reads them.
const (
	authenticationConfigMapNamespace = metav1.NamespaceSystem
	authenticationConfigMapName      = "extension-apiserver-authentication"
)

var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

type registeredAPI struct{ APIService }

// RegisterAPIService serves a and keeps the APIService <Version>.<Group> pointing at the
// Server, with the Server's CA bundle. It may be called before or after Start; the
// APIService is applied within moments. See APIService and the package documentation.
func (s *Server) RegisterAPIService(a APIService) error {
	if errs := validation.IsDNS1123Subdomain(a.Group); len(errs) > 0 || !strings.Contains(a.Group, ".") {
		return fmt.Errorf("APIService group %q must be a DNS subdomain with at least two labels", a.Group)
	}
	if errs := validation.IsDNS1035Label(a.Version); len(errs) > 0 {
		return fmt.Errorf("APIService %s: version %q must be a DNS label starting with a letter: %s", a.Name(), a.Version, strings.Join(errs, "; "))
	}
	if a.Handler == nil {
		return fmt.Errorf("APIService %s: no handler", a.Name())
	}
	if s.opts.Service == nil {
		// An ExternalName Service names a host, not an address: validation takes a DNS
		// subdomain, which an IPv4 address is as well (the aggregator dials it as written).
		if errs := validation.IsDNS1123Subdomain(s.opts.Hosts[0]); len(errs) > 0 {
			return fmt.Errorf("APIService %s: the API server reaches the server at %q, which an ExternalName Service cannot name (a DNS name or IPv4 address is needed; or set a Service)", a.Name(), s.opts.Hosts[0])
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apis == nil {
		s.apis = map[string]*registeredAPI{}
	}
	if _, dup := s.apis[a.Name()]; dup {
		return fmt.Errorf("APIService %s is already registered", a.Name())
	}
	if s.frontProxy == nil {
		fp, err := newFrontProxy(s.kube)
		if err != nil {
			return fmt.Errorf("APIService %s: %w", a.Name(), err)
		}
		s.frontProxy = fp
	}
	s.apis[a.Name()] = &registeredAPI{APIService: a}
	s.startAPIWatchLocked()
	s.Resync()
	return nil
}

// apiHandlerLocked is the handler for path on an APIService path, or nil: the registered version
// for a path under /apis/<group>/<version>, and the group's discovery document for
// /apis/<group>. s.mu is held (read).
func (s *Server) apiHandlerLocked(path string) http.Handler {
	rest, ok := strings.CutPrefix(path, "/apis/")
	if !ok || len(s.apis) == 0 {
		return nil
	}
	group, rest, _ := strings.Cut(rest, "/")
	ver, _, _ := strings.Cut(rest, "/")
	if ver == "" {
		var versions []string
		for _, a := range s.apis {
			if a.Group == group {
				versions = append(versions, a.Version)
			}
		}
		if len(versions) == 0 {
			return nil
		}
		return groupDiscovery(group, versions)
	}
	if a := s.apis[ver+"."+group]; a != nil {
		return a.Handler
	}
	return nil
}

// serveAPI authenticates r as a request from the front proxy and passes it to h with the
// user it names in the context; anything else is 401.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, h http.Handler) {
	s.mu.RLock()
	fp := s.frontProxy
	s.mu.RUnlock()
	resp, ok, err := fp.authn.AuthenticateRequest(r)
	if err != nil || !ok {
		reason := "no front-proxy client certificate and user header"
		if err != nil {
			reason = err.Error()
		}
		s.log.V(1).Info("Refused an unauthenticated request for an aggregated API", "path", r.URL.Path, "remote", r.RemoteAddr, "reason", reason)
		WriteStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
		return
	}
	h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), resp.User)))
}

// WriteStatus answers with a metav1.Status, as an API server does: what the aggregated APIs
// served here (and their clients, kubectl among them) expect of an error.
func WriteStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	data, _ := json.Marshal(&metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Message: message, Reason: reason, Code: int32(code),
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// groupDiscovery serves the APIGroup of group with versions, the highest (Kubernetes
// version order) preferred.
func groupDiscovery(group string, versions []string) http.Handler {
	slices.SortFunc(versions, func(a, b string) int { return -version.CompareKubeAwareVersionStrings(a, b) })
	g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "APIGroup"}, Name: group}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	data, _ := json.Marshal(&g)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			WriteStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "only GET is served at /apis/"+group)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	})
}

// frontProxy authenticates requests from the API server's front proxy: a client certificate
// signed by the requestheader CA with one of the allowed names, and the user in the headers
// the ConfigMap kube-system/extension-apiserver-authentication names; both followed as they
// change.
type frontProxy struct {
	ca      *dynamiccertificates.ConfigMapCAController
	headers *headerrequest.RequestHeaderAuthRequestController
	authn   authenticator.Request
}

func newFrontProxy(kube kubernetes.Interface) (*frontProxy, error) {
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("requestheader-client-ca",
		authenticationConfigMapNamespace, authenticationConfigMapName, "requestheader-client-ca-file", kube)
	if err != nil {
		return nil, fmt.Errorf("front-proxy CA: %w", err)
	}
	headers := headerrequest.NewRequestHeaderAuthRequestController(authenticationConfigMapName, authenticationConfigMapNamespace, kube,
		"requestheader-username-headers", "requestheader-uid-headers", "requestheader-group-headers",
		"requestheader-extra-headers-prefix", "requestheader-allowed-names")
	provider := func(f func() []string) headerrequest.StringSliceProvider {
		return headerrequest.StringSliceProviderFunc(f)
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		RequestHeaderConfig: &authenticatorfactory.RequestHeaderConfig{
			CAContentProvider:   ca,
			UsernameHeaders:     provider(headers.UsernameHeaders),
			UIDHeaders:          provider(headers.UIDHeaders),
			GroupHeaders:        provider(headers.GroupHeaders),
			ExtraHeaderPrefixes: provider(headers.ExtraHeaderPrefixes),
			AllowedClientNames:  provider(headers.AllowedClientNames),
		},
	}.New()
	if err != nil {
		return nil, fmt.Errorf("front-proxy authenticator: %w", err)
	}
	return &frontProxy{ca: ca, headers: headers, authn: authn}, nil
}

// run follows the ConfigMap until ctx ends. Until it has been read, every request is refused.
func (f *frontProxy) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { f.ca.Run(ctx, 1) })
	wg.Go(func() { f.headers.Run(ctx, 1) })
	wg.Wait()
}

// apiServiceService is the Service the APIServices name: Options.Service, or in URL mode the
// ExternalName Service <ConfigurationName>-apiservice on the bound port.
func (s *Server) apiServiceService() ServiceReference {
	if svc := s.opts.Service; svc != nil {
		return *svc
	}
	port := 0
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	return ServiceReference{Namespace: s.opts.Namespace, Name: s.opts.ConfigurationName + APIServiceSuffix, Port: int32(port)}
}

// startAPIWatchLocked starts, once the Server runs and has an APIService, the front-proxy
// authenticator and the watches that trigger a sync when an APIService or the ExternalName
// Service is changed or deleted by someone else. s.mu is held.
func (s *Server) startAPIWatchLocked() {
	if s.watchCtx == nil || s.watchCtx.Err() != nil || s.apiWatching || len(s.apis) == 0 {
		return
	}
	s.apiWatching = true
	ctx := s.watchCtx
	fp := s.frontProxy
	s.apiWatchers.Go(func() { fp.run(ctx) })

	ours := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		switch o := obj.(type) {
		case *unstructured.Unstructured:
			s.mu.RLock()
			_, ok := s.apis[o.GetName()]
			s.mu.RUnlock()
			if ok {
				s.Resync()
			}
		case *corev1.Service:
			s.Resync()
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{AddFunc: ours, UpdateFunc: func(_, o any) { ours(o) }, DeleteFunc: ours}
	apis := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.dyn, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = labels.Set{ManagedByLabel: managedBy}.String()
	})
	_, _ = apis.ForResource(apiServicesResource).Informer().AddEventHandler(handler)
	apis.Start(ctx.Done())
	factories := []interface{ Shutdown() }{apis}
	if s.opts.Service == nil {
		svcs := informers.NewSharedInformerFactoryWithOptions(s.kube, 0, informers.WithNamespace(s.opts.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.opts.ConfigurationName+APIServiceSuffix).String()
			}))
		_, _ = svcs.Core().V1().Services().Informer().AddEventHandler(handler)
		svcs.Start(ctx.Done())
		factories = append(factories, svcs)
	}
	s.apiWatchers.Go(func() {
		<-ctx.Done()
		for _, f := range factories {
			f.Shutdown()
		}
	})
}

// apiServiceApply is the APIService the Server applies for a.
func (s *Server) apiServiceApply(a *registeredAPI, svc ServiceReference, caBundle []byte) map[string]any {
	return map[string]any{
		"apiVersion": apiServicesResource.GroupVersion().String(),
		"kind":       "APIService",
		"metadata": map[string]any{
			"name":   a.Name(),
			"labels": map[string]any{ManagedByLabel: managedBy},
		},
		"spec": map[string]any{
			"group":                a.Group,
			"version":              a.Version,
			"groupPriorityMinimum": int64(APIServiceGroupPriorityMinimum),
			"versionPriority":      int64(APIServiceVersionPriority),
			"service":              map[string]any{"namespace": svc.Namespace, "name": svc.Name, "port": int64(svc.Port)},
			"caBundle":             caBundle,
			// Owned too, so that the aggregator verifies the server (and an apply over an
			// APIService someone set to skip verification is not refused for having both).
			"insecureSkipTLSVerify": false,
		},
	}
}

// syncAPIServices server-side-applies the ExternalName Service (URL mode) and every
// registered APIService, each guarded by the resourceVersion read just before, so that a
// write by another replica in between is seen (and retried) rather than overwritten.
func (s *Server) syncAPIServices(ctx context.Context) error {
	s.mu.RLock()
	apis := make([]*registeredAPI, 0, len(s.apis))
	for _, a := range s.apis {
		apis = append(apis, a)
	}
	s.mu.RUnlock()
	if len(apis) == 0 {
		return nil
	}
	slices.SortFunc(apis, func(a, b *registeredAPI) int { return strings.Compare(a.Name(), b.Name()) })
	svc := s.apiServiceService()
	if s.opts.Service == nil {
		if err := s.syncExternalName(ctx, svc); err != nil {
			return err
		}
	}
	bundle := s.material.bundlePEM()
	client := s.dyn.Resource(apiServicesResource)
	var errs []error
	for _, a := range apis {
		obj := s.apiServiceApply(a, svc, bundle)
		live, err := client.Get(ctx, a.Name(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("reading APIService %s: %w", a.Name(), err))
			continue
		default:
			obj["metadata"].(map[string]any)["resourceVersion"] = live.GetResourceVersion()
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		force := true
		_, err = client.Patch(ctx, a.Name(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
		switch {
		case apierrors.IsConflict(err):
			errs = append(errs, &errWaiting{what: "APIService " + a.Name() + " to stop changing (written by another replica)"})
		case err != nil:
			errs = append(errs, fmt.Errorf("applying APIService %s: %w", a.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// syncExternalName applies the ExternalName Service svc, pointing at Hosts[0]: the
// aggregator resolves such a Service to https://<externalName>:<APIService port>, without
// the Endpoints a ClusterIP Service would need (and which cannot hold a loopback address).
func (s *Server) syncExternalName(ctx context.Context, svc ServiceReference) error {
	data, err := json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata": map[string]any{
			"name": svc.Name, "namespace": svc.Namespace,
			"labels": map[string]any{ManagedByLabel: managedBy},
		},
		"spec": map[string]any{"type": string(corev1.ServiceTypeExternalName), "externalName": s.opts.Hosts[0]},
	})
	if err != nil {
		return err
	}
	force := true
	if _, err := s.kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
		return fmt.Errorf("applying Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}
