package memkube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// writeOpts are a write request's options.
type writeOpts struct {
	manager string
	dryRun  bool
	force   bool
}

var (
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
	crdsGR       = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
)

const foregroundFinalizer = metav1.FinalizerDeleteDependents

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// decode parses an object's JSON with integers as int64, as unstructured objects hold them.
func decode(data []byte) (map[string]any, error) {
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func toMap(obj runtime.Object) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

func meta(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		obj["metadata"] = m
	}
	return m
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// seed creates obj as the cluster's own installer would (no field manager).
func (c *Cluster) seed(obj map[string]any) ([]byte, error) {
	gv, err := schema.ParseGroupVersion(str(obj, "apiVersion"))
	if err != nil {
		return nil, err
	}
	r := c.resourceForKind(gv.WithKind(str(obj, "kind")))
	if r == nil {
		return nil, fmt.Errorf("no resource serves %s", gv.WithKind(str(obj, "kind")))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.create(r, str(meta(obj), "namespace"), obj, writeOpts{manager: "memkube"}, false)
}

func (c *Cluster) resourceForKind(gvk schema.GroupVersionKind) *resource {
	for _, r := range c.builtin.byGVR {
		if r.gvk() == gvk {
			return r
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.crds {
		if r.gvk() == gvk {
			return r
		}
	}
	return nil
}

// lookup returns the resource served at gvr, or nil.
func (c *Cluster) lookup(gvr schema.GroupVersionResource) *resource {
	if r := c.builtin.byGVR[gvr]; r != nil {
		return r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crds[gvr]
}

// inVersion rewrites a stored object's apiVersion to r's (versions of a CRD differ by
// apiVersion only).
func inVersion(r *resource, obj map[string]any) {
	obj["apiVersion"] = r.gvr.GroupVersion().String()
	obj["kind"] = r.kind
}

// normalize round-trips a built-in kind through its typed struct, as a real API server
// stores it: unknown fields dropped, quantities and times in their canonical form.
func (c *Cluster) normalize(r *resource, obj map[string]any) (map[string]any, error) {
	if !r.builtin {
		return obj, nil
	}
	typed, err := c.builtin.scheme.New(r.gvk())
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, typed); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", r.kind, err))
	}
	out, err := toMap(typed)
	if err != nil {
		return nil, err
	}
	inVersion(r, out)
	return out, nil
}

func invalid(r *resource, name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(r.gvk().GroupKind(), name, field.ErrorList(errs))
}

// checkTarget checks the object's kind, namespace and name against the request's and sets
// what the request implies.
func (c *Cluster) checkTarget(r *resource, ns, name string, obj map[string]any) error {
	if av, k := str(obj, "apiVersion"), str(obj, "kind"); av != "" && av != r.gvr.GroupVersion().String() || k != "" && k != r.kind {
		return apierrors.NewBadRequest(fmt.Sprintf("%s %s sent to %s (%s)", k, av, r.gvr.Resource, r.gvk()))
	}
	inVersion(r, obj)
	m := meta(obj)
	if r.namespaced {
		switch got := str(m, "namespace"); {
		case got == "":
			m["namespace"] = ns
		case got != ns:
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		delete(m, "namespace")
	}
	if name != "" {
		switch got := str(m, "name"); {
		case got == "":
			m["name"] = name
		case got != name:
			return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", got, name))
		}
	}
	return nil
}

// namespaceReady reports why content cannot be created in ns, if it cannot.
func (c *Cluster) namespaceReady(ns string) error {
	t := c.tables[namespacesGR]
	var e *entry
	if t != nil {
		e = t.objs[objKey{name: ns}]
	}
	if e == nil {
		return apierrors.NewNotFound(namespacesGR, ns)
	}
	if e.deleting {
		return apierrors.NewForbidden(namespacesGR, ns, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	}
	return nil
}

const nameChars = "bcdfghjklmnpqrstvwxz2456789"

func (c *Cluster) generateName(prefix string) string {
	b := []byte(prefix)
	u := newUID()
	for i := 0; i < 5; i++ {
		b = append(b, nameChars[int(u[i])%len(nameChars)])
	}
	return string(b)
}

// create stores a new object. Called with c.mu held; applied says obj is a server-side
// apply's result (its managedFields are already tracked).
func (c *Cluster) create(r *resource, ns string, obj map[string]any, o writeOpts, applied bool) ([]byte, error) {
	if err := c.checkTarget(r, ns, "", obj); err != nil {
		return nil, err
	}
	m := meta(obj)
	name := str(m, "name")
	if name == "" && str(m, "generateName") != "" {
		name = c.generateName(str(m, "generateName"))
		m["name"] = name
	}
	if name == "" {
		return nil, invalid(r, "", field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	}
	if r.namespaced {
		if err := c.namespaceReady(ns); err != nil {
			return nil, err
		}
	}
	t := c.tableOf(r)
	key := objKey{ns: str(m, "namespace"), name: name}
	if t.objs[key] != nil {
		return nil, apierrors.NewAlreadyExists(r.gr(), name)
	}
	for _, k := range []string{"uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "selfLink"} {
		delete(m, k)
	}
	m["uid"] = string(newUID())
	m["creationTimestamp"] = c.now().UTC().Format(time.RFC3339)
	if r.generation {
		m["generation"] = int64(1)
	}
	if r.status && !(r.builtin && r.kind == "Node") {
		delete(obj, "status")
	}
	if r.gr() == namespacesGR {
		obj["spec"] = map[string]any{"finalizers": []any{"kubernetes"}}
		obj["status"] = map[string]any{"phase": "Active"}
	}
	obj, err := c.normalize(r, obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	if !applied {
		empty, _ := unstructuredCreater{}.New(r.gvk())
		merged, err := r.fm.Update(empty, u, o.manager)
		if err != nil {
			return nil, err
		}
		u = merged.(*unstructured.Unstructured)
	}
	if r.gr() == crdsGR {
		if err := establish(u.Object); err != nil {
			return nil, invalid(r, name, field.Invalid(field.NewPath("spec"), "", err.Error()))
		}
	}
	if o.dryRun {
		return jsonMarshal(u.Object)
	}
	e, err := c.put(t, key, u.Object, nil)
	if err != nil {
		return nil, err
	}
	if r.gr() == crdsGR {
		c.serveCRD(u.Object)
	}
	return e.data, nil
}

// get returns the entry at key, or NotFound.
func (c *Cluster) getLocked(r *resource, key objKey) (*table, *entry, error) {
	t := c.tables[r.gr()]
	if t != nil {
		if e := t.objs[key]; e != nil {
			return t, e, nil
		}
	}
	return t, nil, apierrors.NewNotFound(r.gr(), key.name)
}

func conflict(r *resource, name string) error {
	return apierrors.NewConflict(r.gr(), name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// checkRV is optimistic concurrency: a resourceVersion in the request must be the stored one.
func checkRV(r *resource, name string, obj map[string]any, e *entry) error {
	rv := str(meta(obj), "resourceVersion")
	if rv != "" && rv != strconv.FormatUint(e.rv, 10) {
		return conflict(r, name)
	}
	return nil
}

// update replaces the object (or its status, sub "status"). Called with c.mu held.
func (c *Cluster) update(r *resource, key objKey, sub string, obj map[string]any, o writeOpts) ([]byte, error) {
	t, e, err := c.getLocked(r, key)
	if err != nil {
		return nil, err
	}
	if err := c.checkTarget(r, key.ns, key.name, obj); err != nil {
		return nil, err
	}
	if err := checkRV(r, key.name, obj, e); err != nil {
		return nil, err
	}
	return c.replace(t, r, key, e, sub, obj, o, nil)
}

// replace finishes an update, patch or apply of e: new is the object asked for (applied,
// when server-side apply made it, with managedFields tracked already).
func (c *Cluster) replace(t *table, r *resource, key objKey, e *entry, sub string, obj map[string]any, o writeOpts, applied *unstructured.Unstructured) ([]byte, error) {
	old, err := decode(e.data)
	if err != nil {
		return nil, err
	}
	inVersion(r, old)
	if applied != nil {
		obj = applied.Object
	}
	obj = prepareUpdate(r, sub, old, obj)
	if obj, err = c.normalize(r, obj); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	if applied == nil {
		fm := r.fm
		if sub == "status" {
			fm = r.statusFM
		}
		merged, err := fm.Update(&unstructured.Unstructured{Object: old}, u, o.manager)
		if err != nil {
			return nil, err
		}
		u = merged.(*unstructured.Unstructured)
	}
	obj = u.Object
	m := meta(obj)
	if r.generation && specChanged(old, obj) {
		g, _ := meta(old)["generation"].(int64)
		m["generation"] = g + 1
	}
	if r.gr() == crdsGR {
		if err := establish(obj); err != nil {
			return nil, invalid(r, key.name, field.Invalid(field.NewPath("spec"), "", err.Error()))
		}
	}
	if o.dryRun {
		return jsonMarshal(obj)
	}
	if e.deleting && len(finalizersOf(obj)) == 0 {
		m["resourceVersion"] = strconv.FormatUint(e.rv, 10)
		data, err := jsonMarshal(obj)
		if err != nil {
			return nil, err
		}
		e.data = data
		return c.remove(t, key, e), nil
	}
	// A write that changes nothing is not stored (no new resourceVersion, no event).
	m["resourceVersion"] = strconv.FormatUint(e.rv, 10)
	if data, err := jsonMarshal(obj); err == nil && bytes.Equal(data, e.data) {
		return e.data, nil
	}
	ne, err := c.put(t, key, obj, e)
	if err != nil {
		return nil, err
	}
	if r.gr() == crdsGR {
		c.serveCRD(obj)
	}
	return ne.data, nil
}

// prepareUpdate keeps what a write cannot change: the identity and lifecycle metadata, and the
// status (main resource) or everything but the status (status subresource).
func prepareUpdate(r *resource, sub string, old, obj map[string]any) map[string]any {
	if sub == "status" {
		out := old
		if s, ok := obj["status"]; ok {
			out["status"] = s
		} else {
			delete(out, "status")
		}
		if mf, ok := meta(obj)["managedFields"]; ok {
			meta(out)["managedFields"] = mf
		}
		return out
	}
	m, om := meta(obj), meta(old)
	for _, k := range []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace", "name"} {
		if v, ok := om[k]; ok {
			m[k] = v
		} else {
			delete(m, k)
		}
	}
	delete(m, "selfLink")
	if r.status {
		if s, ok := old["status"]; ok {
			obj["status"] = s
		} else {
			delete(obj, "status")
		}
	}
	return obj
}

func specChanged(old, obj map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			if k != "metadata" && k != "status" {
				out[k] = v
			}
		}
		return out
	}
	return !equality.Semantic.DeepEqual(strip(old), strip(obj))
}

func finalizersOf(obj map[string]any) []string {
	fs, _ := meta(obj)["finalizers"].([]any)
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func ownersOf(obj map[string]any) []types.UID {
	refs, _ := meta(obj)["ownerReferences"].([]any)
	var out []types.UID
	for _, ref := range refs {
		if m, ok := ref.(map[string]any); ok {
			out = append(out, types.UID(str(m, "uid")))
		}
	}
	return out
}

// put stores obj at key with the next resourceVersion and records the event. Called with
// c.mu held.
func (c *Cluster) put(t *table, key objKey, obj map[string]any, old *entry) (*entry, error) {
	c.rv++
	m := meta(obj)
	m["resourceVersion"] = strconv.FormatUint(c.rv, 10)
	data, err := jsonMarshal(obj)
	if err != nil {
		c.rv--
		return nil, err
	}
	lbls := map[string]string(nil)
	if l, ok := m["labels"].(map[string]any); ok && len(l) > 0 {
		lbls = make(map[string]string, len(l))
		for k, v := range l {
			lbls[k], _ = v.(string)
		}
	}
	_, deleting := m["deletionTimestamp"]
	e := &entry{data: data, rv: c.rv, uid: types.UID(str(m, "uid")), labels: lbls, owners: ownersOf(obj),
		finalizers: len(finalizersOf(obj)) > 0, deleting: deleting}
	t.objs[key] = e
	ev := event{typ: watch.Added, key: key, rv: c.rv, data: data, labels: lbls}
	if old != nil {
		ev.typ, ev.prevLabels = watch.Modified, old.labels
	}
	c.record(t, ev)
	return e, nil
}

// remove deletes e from the store, records the event and does what follows: dependents are
// collected, a terminating namespace or foreground owner that waited for it may go, a CRD's
// resources stop being served. Called with c.mu held; returns the deleted object.
func (c *Cluster) remove(t *table, key objKey, e *entry) []byte {
	c.rv++
	data := e.data
	if obj, err := decode(e.data); err == nil {
		meta(obj)["resourceVersion"] = strconv.FormatUint(c.rv, 10)
		if d, err := jsonMarshal(obj); err == nil {
			data = d
		}
	}
	delete(t.objs, key)
	c.record(t, event{typ: watch.Deleted, key: key, rv: c.rv, data: data, labels: e.labels})
	if t.res.gr() == crdsGR {
		c.unserveCRD(key.name)
	}
	c.collectDependents(e.uid)
	for _, owner := range e.owners {
		c.settleForeground(owner)
	}
	if key.ns != "" {
		c.settleNamespace(key.ns)
	}
	return data
}

// find returns the object with uid.
func (c *Cluster) find(uid types.UID) (*table, objKey, *entry) {
	for _, t := range c.tables {
		for k, e := range t.objs {
			if e.uid == uid {
				return t, k, e
			}
		}
	}
	return nil, objKey{}, nil
}

type ref struct {
	t   *table
	key objKey
}

func (c *Cluster) dependents(uid types.UID) []ref {
	var out []ref
	for _, t := range c.tables {
		for k, e := range t.objs {
			if slices.Contains(e.owners, uid) {
				out = append(out, ref{t, k})
			}
		}
	}
	return out
}

// collectDependents is the garbage collector for a removed owner: a dependent with another
// live owner loses the reference, any other one is deleted (background).
func (c *Cluster) collectDependents(uid types.UID) {
	for _, d := range c.dependents(uid) {
		e := d.t.objs[d.key]
		if e == nil {
			continue
		}
		live := false
		for _, o := range e.owners {
			if o != uid {
				if _, _, oe := c.find(o); oe != nil {
					live = true
				}
			}
		}
		if live {
			c.dropOwnerRef(d.t, d.key, e, uid)
			continue
		}
		_, _ = c.deleteLocked(d.t.res, d.key, metav1.DeletePropagationBackground, nil, false)
	}
}

func (c *Cluster) dropOwnerRef(t *table, key objKey, e *entry, uid types.UID) {
	obj, err := decode(e.data)
	if err != nil {
		return
	}
	refs, _ := meta(obj)["ownerReferences"].([]any)
	refs = slices.DeleteFunc(refs, func(r any) bool {
		m, _ := r.(map[string]any)
		return str(m, "uid") == string(uid)
	})
	if len(refs) == 0 {
		delete(meta(obj), "ownerReferences")
	} else {
		meta(obj)["ownerReferences"] = refs
	}
	_, _ = c.put(t, key, obj, e)
}

// settleForeground drops the foregroundDeletion finalizer of a deleting owner whose
// dependents are gone.
func (c *Cluster) settleForeground(owner types.UID) {
	t, key, e := c.find(owner)
	if e == nil || !e.deleting || len(c.dependents(owner)) > 0 {
		return
	}
	obj, err := decode(e.data)
	if err != nil {
		return
	}
	fs := finalizersOf(obj)
	if !slices.Contains(fs, foregroundFinalizer) {
		return
	}
	c.setFinalizers(t, key, e, obj, slices.DeleteFunc(fs, func(f string) bool { return f == foregroundFinalizer }))
}

func (c *Cluster) setFinalizers(t *table, key objKey, e *entry, obj map[string]any, fs []string) {
	if len(fs) == 0 {
		delete(meta(obj), "finalizers")
		meta(obj)["resourceVersion"] = strconv.FormatUint(e.rv, 10)
		if data, err := jsonMarshal(obj); err == nil {
			e.data = data
		}
		c.remove(t, key, e)
		return
	}
	list := make([]any, len(fs))
	for i, f := range fs {
		list[i] = f
	}
	meta(obj)["finalizers"] = list
	_, _ = c.put(t, key, obj, e)
}

// settleNamespace removes a terminating namespace once it is empty.
func (c *Cluster) settleNamespace(ns string) {
	nt := c.tables[namespacesGR]
	if nt == nil {
		return
	}
	key := objKey{name: ns}
	e := nt.objs[key]
	if e == nil || !e.deleting || e.finalizers {
		return
	}
	for _, t := range c.tables {
		if !t.res.namespaced {
			continue
		}
		for k := range t.objs {
			if k.ns == ns {
				return
			}
		}
	}
	c.remove(nt, key, e)
}

// deleteLocked deletes the object at key: with finalizers it gets its deletionTimestamp and
// waits for them, without it is removed. Called with c.mu held.
func (c *Cluster) deleteLocked(r *resource, key objKey, policy metav1.DeletionPropagation, pre *metav1.Preconditions, dryRun bool) ([]byte, error) {
	t, e, err := c.getLocked(r, key)
	if err != nil {
		return nil, err
	}
	if pre != nil {
		if pre.UID != nil && *pre.UID != e.uid {
			return nil, apierrors.NewConflict(r.gr(), key.name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, e.uid))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != strconv.FormatUint(e.rv, 10) {
			return nil, apierrors.NewConflict(r.gr(), key.name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, e.rv))
		}
	}
	if dryRun {
		return e.data, nil
	}
	obj, err := decode(e.data)
	if err != nil {
		return nil, err
	}
	if r.gr() == namespacesGR {
		return c.deleteNamespace(t, key, e, obj), nil
	}
	if policy == metav1.DeletePropagationOrphan {
		for _, d := range c.dependents(e.uid) {
			if de := d.t.objs[d.key]; de != nil {
				c.dropOwnerRef(d.t, d.key, de, e.uid)
			}
		}
	}
	fs := finalizersOf(obj)
	deps := c.dependents(e.uid)
	if policy == metav1.DeletePropagationForeground && len(deps) > 0 && !slices.Contains(fs, foregroundFinalizer) {
		fs = append(fs, foregroundFinalizer)
	}
	if len(fs) == 0 {
		return c.remove(t, key, e), nil
	}
	if !e.deleting || !slices.Equal(fs, finalizersOf(obj)) {
		m := meta(obj)
		if !e.deleting {
			m["deletionTimestamp"] = c.now().UTC().Format(time.RFC3339)
			m["deletionGracePeriodSeconds"] = int64(0)
		}
		list := make([]any, len(fs))
		for i, f := range fs {
			list[i] = f
		}
		m["finalizers"] = list
		if e, err = c.put(t, key, obj, e); err != nil {
			return nil, err
		}
	}
	data := e.data
	if slices.Contains(fs, foregroundFinalizer) {
		for _, d := range deps {
			_, _ = c.deleteLocked(d.t.res, d.key, metav1.DeletePropagationForeground, nil, false)
		}
		c.settleForeground(e.uid)
	}
	return data, nil
}

// deleteNamespace marks the namespace Terminating, deletes its content and removes it once
// it is empty.
func (c *Cluster) deleteNamespace(t *table, key objKey, e *entry, obj map[string]any) []byte {
	if !e.deleting {
		m := meta(obj)
		m["deletionTimestamp"] = c.now().UTC().Format(time.RFC3339)
		m["deletionGracePeriodSeconds"] = int64(0)
		obj["status"] = map[string]any{"phase": "Terminating"}
		ne, err := c.put(t, key, obj, e)
		if err != nil {
			return e.data
		}
		e = ne
	}
	data := e.data
	for _, ct := range c.tables {
		if !ct.res.namespaced {
			continue
		}
		var keys []objKey
		for k := range ct.objs {
			if k.ns == key.name {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			_, _ = c.deleteLocked(ct.res, k, metav1.DeletePropagationBackground, nil, false)
		}
	}
	c.settleNamespace(key.name)
	return data
}

// establish fills a CustomResourceDefinition's status as the apiextensions controllers do
// once its names are accepted, after checking it names what it serves.
func establish(obj map[string]any) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, crd); err != nil {
		return err
	}
	n := crd.Spec.Names
	if crd.Spec.Group == "" || n.Plural == "" || n.Kind == "" || crd.Name != n.Plural+"."+crd.Spec.Group {
		return fmt.Errorf("metadata.name must be spec.names.plural+\".\"+spec.group, with group, plural and kind set")
	}
	storage := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if storage == "" {
		return fmt.Errorf("one version must be the storage version")
	}
	now := metav1.Now()
	crd.Status.AcceptedNames = n
	if crd.Status.AcceptedNames.ListKind == "" {
		crd.Status.AcceptedNames.ListKind = n.Kind + "List"
	}
	if crd.Status.AcceptedNames.Singular == "" {
		crd.Status.AcceptedNames.Singular = strings.ToLower(n.Kind)
	}
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found", LastTransitionTime: now},
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted", LastTransitionTime: now},
	}
	if !slices.Contains(crd.Status.StoredVersions, storage) {
		crd.Status.StoredVersions = append(crd.Status.StoredVersions, storage)
	}
	status, err := toMap(crd)
	if err != nil {
		return err
	}
	obj["status"] = status["status"]
	return nil
}

// serveCRD serves the versions of a stored CustomResourceDefinition. Called with c.mu held.
func (c *Cluster) serveCRD(obj map[string]any) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, crd); err != nil {
		return
	}
	c.unserveVersions(crd.Name)
	gr := schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		r := &resource{gvr: gr.WithVersion(v.Name), kind: crd.Spec.Names.Kind,
			namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			status:     v.Subresources != nil && v.Subresources.Status != nil, generation: true, crd: crd.Name,
			shortNames: crd.Spec.Names.ShortNames, categories: crd.Spec.Names.Categories}
		var err error
		if r.fm, r.statusFM, err = crdFieldManagers(r); err != nil {
			continue
		}
		c.crds[r.gvr] = r
		if t := c.tables[gr]; t != nil {
			t.res = r
		}
	}
}

func (c *Cluster) unserveVersions(crd string) {
	for gvr, r := range c.crds {
		if r.crd == crd {
			delete(c.crds, gvr)
		}
	}
}

// unserveCRD removes a deleted CRD's resources and their objects.
func (c *Cluster) unserveCRD(crd string) {
	var gr schema.GroupResource
	found := false
	for _, r := range c.crds {
		if r.crd == crd {
			gr, found = r.gr(), true
		}
	}
	c.unserveVersions(crd)
	if !found {
		return
	}
	if t := c.tables[gr]; t != nil {
		for k, e := range t.objs {
			c.remove(t, k, e)
		}
		delete(c.tables, gr)
	}
}

// crdFieldManagers are shared by every cluster serving the same kind: custom resources are
// merged with the deduced (schema-less) type converter.
func crdFieldManagers(r *resource) (*managedfields.FieldManager, *managedfields.FieldManager, error) {
	key := crdFMKey{gvk: r.gvk(), status: r.status}
	if v, ok := crdFMs.Load(key); ok {
		fms := v.([2]*managedfields.FieldManager)
		return fms[0], fms[1], nil
	}
	fm, sfm, err := fieldManagers(managedfields.NewDeducedTypeConverter(), r, nil)
	if err != nil {
		return nil, nil, err
	}
	crdFMs.Store(key, [2]*managedfields.FieldManager{fm, sfm})
	return fm, sfm, nil
}

// jsonUnmarshal decodes a typed request body.
func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
