package memkube_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/memkube"
)

func newCluster(t *testing.T, crdNames ...string) *memkube.Cluster {
	t.Helper()
	var install []*apiextensionsv1.CustomResourceDefinition
	if len(crdNames) > 0 {
		all, err := crds.Objects()
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range all {
			for _, n := range crdNames {
				if crd.Name == n {
					install = append(install, crd)
				}
			}
		}
	}
	c, err := memkube.New(memkube.Options{Name: "t-" + t.Name(), CRDs: install})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTypedClientRoundTripAndErrors(t *testing.T) {
	ctx := ctxFor(t)
	kube := kubernetes.NewForConfigOrDie(newCluster(t).Config())
	v, err := kube.Discovery().ServerVersion()
	if err != nil || v.GitVersion == "" {
		t.Fatalf("ServerVersion: %v %v", v, err)
	}
	if _, err := kube.CoreV1().ConfigMaps("missing").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("create in a missing namespace: want NotFound, got %v", err)
	}
	cm, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-", Labels: map[string]string{"a": "1"}},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Name == "cm-" || cm.UID == "" || cm.ResourceVersion == "" || cm.CreationTimestamp.IsZero() {
		t.Fatalf("create did not set name, uid, resourceVersion, creationTimestamp: %+v", cm.ObjectMeta)
	}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}
	stale := cm.DeepCopy()
	cm.Data["k"] = "w"
	if cm, err = kube.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Data["k"] = "x"
	if _, err := kube.CoreV1().ConfigMaps("default").Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update with a stale resourceVersion: want Conflict, got %v", err)
	}
	list, err := kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: "a=1", FieldSelector: "metadata.name=" + cm.Name})
	if err != nil || len(list.Items) != 1 || list.Items[0].Data["k"] != "w" {
		t.Fatalf("list by label and field: %v %v", list, err)
	}
	if list, _ := kube.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "a=2"}); len(list.Items) != 0 {
		t.Fatalf("label selector a=2 matched %d", len(list.Items))
	}
	if _, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing object: want NotFound, got %v", err)
	}
}

func TestPatches(t *testing.T) {
	ctx := ctxFor(t)
	kube := kubernetes.NewForConfigOrDie(newCluster(t).Config())
	cms := kube.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "p", types.MergePatchType, []byte(`{"data":{"b":"2"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "p", types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/a"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{"data":{"c":"3"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] != "" || cm.Data["b"] != "2" || cm.Data["c"] != "3" {
		t.Fatalf("patched data = %v, want b=2 c=3", cm.Data)
	}
	if _, err := cms.Patch(ctx, "p", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1"},"data":{"d":"4"}}`), metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("patch with a stale resourceVersion: want Conflict, got %v", err)
	}
	// Strategic merge on a Deployment merges containers by name.
	deps := kube.AppsV1().Deployments("default")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:1"}}}}}}
	if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := deps.Patch(ctx, "d", types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"b:2"}]}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Spec.Template.Spec.Containers; len(c) != 2 || c[1].Image != "b:2" || c[0].Image != "a:1" {
		t.Fatalf("strategic merge of containers: %+v", c)
	}
	if got.Generation != 2 {
		t.Fatalf("generation after a spec change = %d, want 2", got.Generation)
	}
}

func TestServerSideApplyTwoManagersAndConflict(t *testing.T) {
	ctx := ctxFor(t)
	kube := kubernetes.NewForConfigOrDie(newCluster(t).Config())
	cms := kube.CoreV1().ConfigMaps("default")
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("s", "default").WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("s", "default").WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "two"}); err != nil {
		t.Fatal(err)
	}
	_, err := cms.Apply(ctx, corev1ac.ConfigMap("s", "default").WithData(map[string]string{"a": "x"}), metav1.ApplyOptions{FieldManager: "two"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("applying a field another manager owns: want Conflict, got %v", err)
	}
	cm, err := cms.Apply(ctx, corev1ac.ConfigMap("s", "default").WithData(map[string]string{"a": "x", "b": "2"}), metav1.ApplyOptions{FieldManager: "two", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] != "x" || cm.Data["b"] != "2" {
		t.Fatalf("forced apply: data %v", cm.Data)
	}
	managers := map[string]bool{}
	for _, mf := range cm.ManagedFields {
		managers[mf.Manager] = true
	}
	if !managers["two"] || managers["one"] {
		t.Fatalf("after the forced apply the managers are %v, want two only (one lost its only field)", managers)
	}
	// Dropping a field from the applied configuration removes it.
	if cm, err = cms.Apply(ctx, corev1ac.ConfigMap("s", "default").WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "two"}); err != nil || cm.Data["a"] != "" {
		t.Fatalf("re-apply without a: %v %v", cm.Data, err)
	}
	rv := cm.ResourceVersion
	// A no-op apply writes nothing.
	if cm, err = cms.Apply(ctx, corev1ac.ConfigMap("s", "default").WithData(map[string]string{"b": "2"}), metav1.ApplyOptions{FieldManager: "two"}); err != nil || cm.ResourceVersion != rv {
		t.Fatalf("no-op apply changed resourceVersion %s -> %s (%v)", rv, cm.ResourceVersion, err)
	}
}

func TestFinalizersAndOwnerGC(t *testing.T) {
	ctx := ctxFor(t)
	kube := kubernetes.NewForConfigOrDie(newCluster(t).Config())
	cms := kube.CoreV1().ConfigMaps("default")
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Finalizers: []string{"test/hold"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}
	if _, err := kube.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dep", OwnerReferences: []metav1.OwnerReference{ref}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "owner", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("an object with a finalizer must stay, deleting: %v %v", got, err)
	}
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "dep", metav1.GetOptions{}); err != nil {
		t.Fatalf("the dependent must stay while its owner exists: %v", err)
	}
	got.Finalizers = nil
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "owner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("removing the last finalizer must remove the object: %v", err)
	}
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "dep", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the dependent of a removed owner must be collected: %v", err)
	}
	// A namespace's deletion removes its content.
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps("gone").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("an emptied namespace must be removed: %v", err)
	}
	if _, err := kube.CoreV1().ConfigMaps("gone").Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a namespace's content must be deleted with it: %v", err)
	}
}

func TestWatchResumeAndWatchList(t *testing.T) {
	ctx := ctxFor(t)
	kube := kubernetes.NewForConfigOrDie(newCluster(t).Config())
	cms := kube.CoreV1().ConfigMaps("default")
	a, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Resumed after a's creation: b ADDED, then a DELETED.
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []struct {
		typ  watch.EventType
		name string
	}{{watch.Added, "b"}, {watch.Deleted, "a"}}
	for _, ev := range want {
		select {
		case got := <-w.ResultChan():
			if got.Type != ev.typ || got.Object.(*corev1.ConfigMap).Name != ev.name {
				t.Fatalf("resumed watch: got %s %v, want %s %s", got.Type, got.Object, ev.typ, ev.name)
			}
		case <-ctx.Done():
			t.Fatalf("resumed watch: waiting for %s %s: %v", ev.typ, ev.name, ctx.Err())
		}
	}
	// A watch list: the current objects, then the initial-events-end bookmark.
	wl, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Stop()
	for _, typ := range []watch.EventType{watch.Added, watch.Bookmark} {
		select {
		case got := <-wl.ResultChan():
			if got.Type != typ {
				t.Fatalf("watch list: got %s, want %s", got.Type, typ)
			}
			if typ == watch.Bookmark && got.Object.(*corev1.ConfigMap).Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Fatalf("bookmark without %s: %v", metav1.InitialEventsAnnotationKey, got.Object)
			}
		case <-ctx.Done():
			t.Fatalf("watch list: waiting for %s: %v", typ, ctx.Err())
		}
	}
	// Label changes move objects in and out of a selected watch.
	sw, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "x=y", ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Stop()
	if _, err := cms.Patch(ctx, "b", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-sw.ResultChan():
		if got.Type != watch.Added {
			t.Fatalf("an object labelled into a selected watch: got %s, want ADDED", got.Type)
		}
	case <-ctx.Done():
		t.Fatalf("selected watch: waiting for ADDED: %v", ctx.Err())
	}
}

func TestCRDServedDynamicAndControllerRuntime(t *testing.T) {
	ctx := ctxFor(t)
	c := newCluster(t, "clusterclaims.cluster.open-cluster-management.io")
	cfg := c.Config()
	// A CRD created at run time is served and discovered.
	dyn := dynamic.NewForConfigOrDie(cfg)
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	rl, err := dc.ServerResourcesForGroupVersion("example.com/v1")
	if err != nil || len(rl.APIResources) == 0 || rl.APIResources[0].Kind != "Widget" {
		t.Fatalf("discovery of the new CRD: %v %v", rl, err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(1)}, "status": map[string]any{"ok": true}}}
	got, err := widgets.Create(ctx, w, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Object["status"]; ok {
		t.Fatalf("create must drop the status of a resource with a status subresource: %v", got.Object)
	}
	got.Object["status"] = map[string]any{"ok": true}
	if got, err = widgets.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil || got.Object["status"] == nil {
		t.Fatalf("status update: %v %v", got, err)
	}

	// controller-runtime: a client (REST mapping through discovery) and an informer cache.
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	claim := &unstructured.Unstructured{}
	claim.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1alpha1", Kind: "ClusterClaim"})
	claim.SetName("id.k8s.io")
	claim.Object["spec"] = map[string]any{"value": "abc"}
	if err := cl.Patch(ctx, claim, client.Apply, client.FieldOwner("test")); err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = informers.Start(cctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	var cms corev1.ConfigMapList
	if err := informers.List(ctx, &cms, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seen", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var cm corev1.ConfigMap
		err := informers.Get(ctx, client.ObjectKey{Namespace: "default", Name: "seen"}, &cm)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the informer cache did not see ConfigMap default/seen within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
