package memkube

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// resource is one served resource: a built-in kind of client-go's scheme, or a version of a
// CustomResourceDefinition.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	// status: the resource has a status subresource (writes to the main resource keep the
	// stored status; writes to /status change only the status).
	status bool
	// builtin: decoded through client-go's typed struct (normalised, strategic merge).
	builtin bool
	// review: a create-only virtual resource (SubjectAccessReview and friends), never stored.
	review bool
	// generation: metadata.generation is kept (set on create, bumped on spec changes).
	generation bool
	// crd names the CustomResourceDefinition serving it.
	crd        string
	shortNames []string
	categories []string
	// fm and statusFM track managedFields and do server-side apply (shared: a FieldManager
	// keeps no per-object state).
	fm, statusFM *managedfields.FieldManager
}

func (r *resource) gr() schema.GroupResource { return r.gvr.GroupResource() }

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

// clusterScoped are the kinds of client-go's scheme that are not namespaced.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"APIService": true, "StorageClass": true, "CSIDriver": true, "CSINode": true,
	"VolumeAttachment": true, "PriorityClass": true, "RuntimeClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true,
	"CertificateSigningRequest": true, "ClusterTrustBundle": true, "FlowSchema": true,
	"PriorityLevelConfiguration": true, "IngressClass": true, "DeviceClass": true,
	"ResourceSlice": true, "IPAddress": true, "ServiceCIDR": true, "StorageVersion": true,
	"StorageVersionMigration": true, "VolumeAttributesClass": true, "DeviceTaintRule": true,
	"PodSecurityPolicy": true, "SubjectAccessReview": true, "SelfSubjectAccessReview": true,
	"SelfSubjectRulesReview": true, "TokenReview": true, "SelfSubjectReview": true,
}

// resourceNames are the plurals UnsafeGuessKindToResource gets wrong.
var resourceNames = map[string]string{"Endpoints": "endpoints"}

// builtinTable is what every Cluster serves besides its CRDs. It is immutable once built and
// shared by all clusters of the process (5,000 clusters must not hold 5,000 copies).
type builtinTable struct {
	scheme    *runtime.Scheme
	byGVR     map[schema.GroupVersionResource]*resource
	byGR      map[schema.GroupResource]*resource
	groups    []string // sorted, "" first
	converter managedfields.TypeConverter
}

var builtins = sync.OnceValues(buildBuiltins)

func buildBuiltins() (*builtinTable, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	t := &builtinTable{scheme: s, byGVR: map[schema.GroupVersionResource]*resource{},
		byGR: map[schema.GroupResource]*resource{}, converter: applyconfigurations.NewTypeConverter(s)}
	objectMeta := reflect.TypeFor[metav1.Object]()
	known := s.AllKnownTypes()
	for gvk, typ := range known {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if _, ok := known[gvk.GroupVersion().WithKind(gvk.Kind+"List")]; !ok {
			continue
		}
		if !reflect.PointerTo(typ).Implements(objectMeta) {
			continue
		}
		name, ok := resourceNames[gvk.Kind]
		if !ok {
			plural, _ := apimeta.UnsafeGuessKindToResource(gvk)
			name = plural.Resource
		}
		gr := schema.GroupResource{Group: gvk.Group, Resource: name}
		if prev := t.byGR[gr]; prev != nil && version.CompareKubeAwareVersionStrings(prev.gvr.Version, gvk.Version) >= 0 {
			continue // an older version of a resource already served in a newer one
		}
		_, hasStatus := typ.FieldByName("Status")
		_, hasSpec := typ.FieldByName("Spec")
		t.byGR[gr] = &resource{gvr: gr.WithVersion(gvk.Version), kind: gvk.Kind, namespaced: !clusterScoped[gvk.Kind],
			status: hasStatus, builtin: true, generation: hasSpec && hasStatus}
	}
	for _, r := range []*resource{
		{gvr: schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}, kind: "SubjectAccessReview"},
		{gvr: schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}, kind: "SelfSubjectAccessReview"},
		{gvr: schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "localsubjectaccessreviews"}, kind: "LocalSubjectAccessReview", namespaced: true},
	} {
		r.review, r.builtin = true, true
		t.byGR[r.gr()] = r
	}
	groups := map[string]bool{}
	for gr, r := range t.byGR {
		t.byGVR[r.gvr] = r
		groups[gr.Group] = true
		if r.review {
			continue
		}
		tc := t.converter
		if gr.Group == apiextensionsv1.GroupName {
			// client-go's apply schemas do not cover apiextensions.
			tc = managedfields.NewDeducedTypeConverter()
		}
		var err error
		if r.fm, r.statusFM, err = fieldManagers(tc, r, s); err != nil {
			return nil, fmt.Errorf("memkube: field manager of %s: %w", r.gvr, err)
		}
	}
	for g := range groups {
		t.groups = append(t.groups, g)
	}
	sort.Strings(t.groups)
	return t, nil
}

// fieldManagers builds the FieldManagers of r and of its status subresource. The objects
// they see are always *unstructured.Unstructured of r's one version.
func fieldManagers(tc managedfields.TypeConverter, r *resource, _ *runtime.Scheme) (*managedfields.FieldManager, *managedfields.FieldManager, error) {
	gv := r.gvr.GroupVersion()
	var mainReset, statusReset map[fieldpath.APIVersion]*fieldpath.Set
	if r.status {
		mainReset = map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(gv.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}
		statusReset = map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(gv.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))}
	}
	newFM := func(sub string, reset map[fieldpath.APIVersion]*fieldpath.Set) (*managedfields.FieldManager, error) {
		var filters map[fieldpath.APIVersion]fieldpath.Filter
		if reset != nil {
			filters = map[fieldpath.APIVersion]fieldpath.Filter{}
			for v, set := range reset {
				filters[v] = fieldpath.NewExcludeSetFilter(set)
			}
		}
		if r.crd != "" {
			return managedfields.NewDefaultCRDFieldManager(tc, unstructuredConverter{}, nopDefaulter{}, unstructuredCreater{}, r.gvk(), gv, sub, filters)
		}
		return managedfields.NewDefaultFieldManager(tc, unstructuredConverter{}, nopDefaulter{}, unstructuredCreater{}, r.gvk(), gv, sub, filters)
	}
	fm, err := newFM("", mainReset)
	if err != nil {
		return nil, nil, err
	}
	if !r.status {
		return fm, nil, nil
	}
	sfm, err := newFM("status", statusReset)
	return fm, sfm, err
}

// unstructuredConverter is the ObjectConvertor of the FieldManagers: every resource is
// served in one version, so conversion only checks it (CRD versions differ by apiVersion
// only, as with conversion strategy None).
type unstructuredConverter struct{}

func (unstructuredConverter) Convert(in, out, _ any) error {
	return fmt.Errorf("memkube: conversion from %T to %T is not supported", in, out)
}

func (unstructuredConverter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("memkube: cannot convert %T", in)
	}
	gvk := u.GroupVersionKind()
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk})
	if !ok {
		return nil, fmt.Errorf("memkube: %s cannot be converted to %v", gvk, gv)
	}
	if target != gvk {
		u = u.DeepCopy()
		u.SetGroupVersionKind(target)
	}
	return u, nil
}

func (unstructuredConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

type nopDefaulter struct{}

func (nopDefaulter) Default(runtime.Object) {}

type unstructuredCreater struct{}

func (unstructuredCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// crdFMs caches the FieldManagers of custom resources by kind, across clusters.
var crdFMs sync.Map

type crdFMKey struct {
	gvk    schema.GroupVersionKind
	status bool
}
