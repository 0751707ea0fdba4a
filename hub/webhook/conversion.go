package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	sjson "sigs.k8s.io/json"
)

// Converter converts the custom resources of some CustomResourceDefinitions between
// their versions: a conversion webhook. The Server serves it at Conversion().Path and keeps
// spec.conversion of each CRD in Conversion().CRDs pointing there.
type Converter interface {
	// Conversion says where the converter is served and which CRDs it converts. It is read
	// once, by RegisterConversion.
	Conversion() Conversion
	// Convert converts obj, one object as the API server sent it, to apiVersion (another
	// version of its group; the kind stays). It may change obj and return it. The Server
	// checks the result and answers the API server; an error fails the whole review with
	// its message, so it should name the field at fault. A panic is an error too.
	Convert(ctx context.Context, obj *unstructured.Unstructured, apiVersion string) (*unstructured.Unstructured, error)
}

// Conversion is where a Converter is served and what it converts.
type Conversion struct {
	// Path is the URL path it is served at, e.g. /convert/addon.open-cluster-management.io.
	Path string
	// CRDs are the names of the CustomResourceDefinitions it converts, e.g.
	// managedclusteraddons.addon.open-cluster-management.io. A CRD that does not exist
	// yet is configured once it is created.
	CRDs []string
}

// maxConversionRequestBytes bounds a ConversionReview read (a list of many objects).
const maxConversionRequestBytes = 64 << 20

type registeredConversion struct {
	converter Converter
	path      string
	crds      []string
}

// RegisterConversion adds a conversion webhook. It may be called before or after Start; the
// CRDs get their spec.conversion within moments.
func (s *Server) RegisterConversion(c Converter) error {
	conv := c.Conversion()
	if !strings.HasPrefix(conv.Path, "/") || conv.Path == "/" || conv.Path == probePath {
		return fmt.Errorf("conversion webhook: path %q must start with / and not be / or %s", conv.Path, probePath)
	}
	if len(conv.CRDs) == 0 {
		return fmt.Errorf("conversion webhook %s: no CRDs", conv.Path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.paths[conv.Path]; dup {
		return fmt.Errorf("conversion webhook %s: path is already served", conv.Path)
	}
	crds := slices.Clone(conv.CRDs)
	slices.Sort(crds)
	for i, name := range crds {
		if i > 0 && crds[i-1] == name {
			return fmt.Errorf("conversion webhook %s: CRD %s listed twice", conv.Path, name)
		}
		for _, other := range s.conversions {
			if slices.Contains(other.crds, name) {
				return fmt.Errorf("conversion webhook %s: CRD %s is already converted by %s", conv.Path, name, other.path)
			}
		}
	}
	s.conversions = append(s.conversions, &registeredConversion{converter: c, path: conv.Path, crds: crds})
	s.paths[conv.Path] = s.conversionHandler(c, s.log.WithValues("conversion", conv.Path))
	s.startCRDWatchLocked()
	s.Resync()
	return nil
}

// conversionCRD reports whether name is a CRD the Server configures.
func (s *Server) conversionCRD(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, c := range s.conversions {
		if slices.Contains(c.crds, name) {
			return true
		}
	}
	return false
}

// startCRDWatchLocked starts watching CustomResourceDefinitions, so that a CRD created
// later or a spec.conversion changed by someone else is configured again within moments:
// once the Server runs and has a conversion. s.mu is held.
func (s *Server) startCRDWatchLocked() {
	if s.watchCtx == nil || s.watchCtx.Err() != nil || s.crdInformers != nil || len(s.conversions) == 0 {
		return
	}
	factory := apiextensionsinformers.NewSharedInformerFactory(s.apiext, 0)
	onEvent := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && s.conversionCRD(crd.Name) {
			s.Resync()
		}
	}
	_, _ = factory.Apiextensions().V1().CustomResourceDefinitions().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    onEvent,
		UpdateFunc: func(_, obj any) { onEvent(obj) },
		DeleteFunc: onEvent,
	})
	factory.Start(s.watchCtx.Done())
	s.crdInformers = factory
}

// conversionApply is what the Server applies to the CRD name for caBundle: spec.conversion
// and nothing else (a typed CustomResourceDefinition would also send, and so claim, an
// empty group, names, scope and versions).
func (s *Server) conversionApply(name, path string, caBundle []byte) map[string]any {
	cc := &apiextensionsv1.WebhookClientConfig{CABundle: caBundle}
	if svc := s.opts.Service; svc != nil {
		cc.Service = &apiextensionsv1.ServiceReference{Namespace: svc.Namespace, Name: svc.Name, Path: &path, Port: &svc.Port}
	} else {
		url := s.baseURL() + path
		cc.URL = &url
	}
	return map[string]any{
		"apiVersion": apiextensionsv1.SchemeGroupVersion.String(),
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{"conversion": &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: cc, ConversionReviewVersions: []string{"v1"}},
		}},
	}
}

// syncConversions server-side-applies spec.conversion, and nothing else, to every CRD of a
// registered conversion that exists. (The CRD installer, core/crds, applies CRDs without
// spec.conversion under its own field manager, so it leaves this field to the Server.)
func (s *Server) syncConversions(ctx context.Context) error {
	s.mu.RLock()
	type target struct{ crd, path string }
	var targets []target
	for _, c := range s.conversions {
		for _, crd := range c.crds {
			targets = append(targets, target{crd, c.path})
		}
	}
	s.mu.RUnlock()
	if len(targets) == 0 {
		return nil
	}
	bundle := s.material.bundlePEM()
	var errs []error
	for _, t := range targets {
		data, err := json.Marshal(s.conversionApply(t.crd, t.path, bundle))
		if err != nil {
			return err
		}
		// The apply leaves out everything the Server does not own, so it must not create
		// the CRD: check that it exists first (a create would fail validation anyway).
		crds := s.apiext.ApiextensionsV1().CustomResourceDefinitions()
		if _, err := crds.Get(ctx, t.crd, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			s.log.V(1).Info("CustomResourceDefinition not installed yet; its conversion webhook is set once it is", "crd", t.crd)
			continue
		} else if err != nil {
			errs = append(errs, fmt.Errorf("reading CustomResourceDefinition %s: %w", t.crd, err))
			continue
		}
		force := true
		applied, err := crds.Patch(ctx, t.crd, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("applying spec.conversion of CustomResourceDefinition %s: %w", t.crd, err))
			continue
		}
		if s.conversionRVs == nil {
			s.conversionRVs = map[string]string{}
		}
		if s.conversionRVs[t.crd] != applied.ResourceVersion {
			s.conversionRVs[t.crd] = applied.ResourceVersion
			s.log.V(1).Info("Applied conversion webhook", "crd", t.crd, "path", t.path)
		}
	}
	return errors.Join(errs...)
}

// conversionHandler serves ConversionReviews (apiextensions.k8s.io/v1) with c.
func (s *Server) conversionHandler(c Converter, log logr.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "conversion webhook: POST a ConversionReview", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConversionRequestBytes))
		if err != nil {
			http.Error(w, "conversion webhook: reading the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		review := &apiextensionsv1.ConversionReview{}
		if err := json.Unmarshal(body, review); err != nil {
			http.Error(w, "conversion webhook: decoding the ConversionReview: "+err.Error(), http.StatusBadRequest)
			return
		}
		if review.Request == nil {
			http.Error(w, "conversion webhook: the ConversionReview has no request", http.StatusBadRequest)
			return
		}
		resp := convertReview(r.Context(), c, review.Request)
		if resp.Result.Status != metav1.StatusSuccess {
			log.Error(errors.New(resp.Result.Message), "Conversion failed", "uid", review.Request.UID, "to", review.Request.DesiredAPIVersion)
		}
		out, err := json.Marshal(&apiextensionsv1.ConversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "ConversionReview"},
			Response: resp,
		})
		if err != nil {
			http.Error(w, "conversion webhook: encoding the response: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}

// convertReview converts every object of req; the first failure fails the review, naming
// the object.
func convertReview(ctx context.Context, c Converter, req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	for i, raw := range req.Objects {
		data, err := convertObject(ctx, c, raw.Raw, req.DesiredAPIVersion)
		if err != nil {
			resp.ConvertedObjects = nil
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: fmt.Sprintf("object %d of %d: %v", i+1, len(req.Objects), err)}
			return resp
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
	}
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

// convertObject converts one object, as JSON, to apiVersion.
func convertObject(ctx context.Context, c Converter, raw []byte, apiVersion string) (out []byte, err error) {
	what := "object"
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("converting %s to %s: panic: %v\n%s", what, apiVersion, r, debug.Stack())
		}
	}()
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, &obj.Object); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	what = describe(obj)
	if obj.GetAPIVersion() == apiVersion {
		return raw, nil
	}
	from, name, namespace, uid, kind := obj.GetAPIVersion(), obj.GetName(), obj.GetNamespace(), obj.GetUID(), obj.GetKind()
	converted, err := c.Convert(ctx, obj, apiVersion)
	if err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", what, apiVersion, err)
	}
	switch {
	case converted == nil:
		return nil, fmt.Errorf("converting %s to %s: the converter returned nothing", what, apiVersion)
	case converted.GetAPIVersion() != apiVersion || converted.GetKind() != kind:
		return nil, fmt.Errorf("converting %s to %s: the converter returned a %s %s", what, apiVersion, converted.GetAPIVersion(), converted.GetKind())
	case converted.GetName() != name || converted.GetNamespace() != namespace || converted.GetUID() != uid:
		return nil, fmt.Errorf("converting %s from %s to %s: the converter changed its name, namespace or uid", what, from, apiVersion)
	}
	data, err := json.Marshal(converted.Object)
	if err != nil {
		return nil, fmt.Errorf("converting %s to %s: encoding: %w", what, apiVersion, err)
	}
	return data, nil
}

// describe names an object for errors: its kind, namespace/name and apiVersion.
func describe(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	kind := obj.GetKind()
	if kind == "" {
		kind = "object"
	}
	return fmt.Sprintf("%s %s (%s)", kind, name, obj.GetAPIVersion())
}
