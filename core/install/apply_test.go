package install_test

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// controlPlane starts a bare API server (no CRDs: the charts bring them) for one test and
// stops it when the test ends. Each test has its own: a test deleting the charts' CRDs
// must not meet what another left (a hub's ManagedCluster holds a finalizer only a running
// hub removes, so deleting its CRD waits for ever), nor take CRDs from under another.
func controlPlane(t *testing.T, name string) *environment.ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), environment.DefaultStartTimeout)
	defer cancel()
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: name})
	if err != nil {
		t.Fatalf("starting control plane %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping control plane %s: %v", name, err)
		}
	})
	return cp
}

var gvr = map[string]schema.GroupVersionResource{
	"Namespace":                {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":           {Version: "v1", Resource: "serviceaccounts"},
	"Service":                  {Version: "v1", Resource: "services"},
	"Secret":                   {Version: "v1", Resource: "secrets"},
	"ClusterRole":              {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding":       {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":                     {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":              {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"Deployment":               {Group: "apps", Version: "v1", Resource: "deployments"},
	"CustomResourceDefinition": {Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	"ClusterManager":           {Group: "operator.open-cluster-management.io", Version: "v1", Resource: "clustermanagers"},
	"Klusterlet":               {Group: "operator.open-cluster-management.io", Version: "v1", Resource: "klusterlets"},
}

func get(ctx context.Context, t *testing.T, dyn dynamic.Interface, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	r, ok := gvr[o.GetKind()]
	if !ok {
		t.Fatalf("test has no resource for kind %s", o.GetKind())
	}
	if o.GetNamespace() != "" {
		return dyn.Resource(r).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
	}
	return dyn.Resource(r).Get(ctx, o.GetName(), metav1.GetOptions{})
}

// resourceVersions reads every object and returns its resourceVersion by kind namespace/name.
func resourceVersions(ctx context.Context, t *testing.T, dyn dynamic.Interface, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		got, err := get(ctx, t, dyn, o)
		if err != nil {
			t.Fatalf("%s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		managed := false
		for _, mf := range got.GetManagedFields() {
			managed = managed || mf.Manager == install.FieldManager
		}
		if !managed {
			t.Errorf("%s %s is not managed by %s", o.GetKind(), o.GetName(), install.FieldManager)
		}
		out[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = got.GetResourceVersion()
	}
	return out
}

// watchInstanceDeletionFailures watches CRDs from now on; the function it returns stops the
// watch and returns each CRD the API server reported failing to delete the instances of
// (condition Terminating, reason InstanceDeletionFailed), with the message.
func watchInstanceDeletionFailures(ctx context.Context, t *testing.T, dyn dynamic.Interface) func() []string {
	t.Helper()
	w, err := dyn.Resource(gvr["CustomResourceDefinition"]).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var failures []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			crd, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Terminating" && m["reason"] == "InstanceDeletionFailed" {
					failures = append(failures, fmt.Sprintf("%s: %v", crd.GetName(), m["message"]))
				}
			}
		}
	}()
	return func() []string {
		w.Stop()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the watch of CustomResourceDefinitions did not end within 10s of its stop")
		}
		return failures
	}
}

func TestApplyAndDelete(t *testing.T) {
	cp := controlPlane(t, "install-apply")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	hub := render(t, install.HubChart, hubRelease, install.HubNamespace, singleHub(nil))
	klusterlet := render(t, install.KlusterletChart, klusterletRelease, install.AgentNamespace,
		map[string]any{"render": "components", "clusterName": "cluster1", "bootstrapHubKubeconfig": bootstrapKubeconfig})

	// The Klusterlet is of a kind the chart's own CRDs bring, so Apply must wait for it to
	// be served.
	start := time.Now()
	if err := install.Apply(ctx, cp.Config, hub); err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(ctx, cp.Config, klusterlet); err != nil {
		t.Fatal(err)
	}
	t.Logf("applied %d + %d objects in %s", len(hub), len(klusterlet), time.Since(start).Round(time.Millisecond))
	// kube-controller-manager fills in the work agent's aggregated ClusterRole (from the
	// klusterlet's execution role): that write is its, not Apply's, so it is waited for.
	aggregate := find(t, klusterlet, "ClusterRole", "open-cluster-management:klusterlet-work:aggregate")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := get(ctx, t, dyn, aggregate)
		if err != nil {
			return false, nil
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		return len(rules) > 0, nil
	})
	if err != nil {
		t.Fatalf("the aggregated ClusterRole %s got no rules: %v", aggregate.GetName(), err)
	}
	all := append(append([]*unstructured.Unstructured{}, hub...), klusterlet...)
	before := resourceVersions(ctx, t, dyn, all)

	// Server-side apply of the same objects changes nothing.
	if err := install.Apply(ctx, cp.Config, hub); err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(ctx, cp.Config, klusterlet); err != nil {
		t.Fatal(err)
	}
	after := resourceVersions(ctx, t, dyn, all)
	for k, rv := range before {
		if after[k] != rv {
			t.Errorf("second Apply changed %s (resourceVersion %s -> %s)", k, rv, after[k])
		}
	}

	// A changed value is applied over what is there.
	hub2 := render(t, install.HubChart, hubRelease, install.HubNamespace, singleHub(map[string]any{"replicas": 2}))
	if err := install.Apply(ctx, cp.Config, hub2); err != nil {
		t.Fatal(err)
	}
	deploy, err := get(ctx, t, dyn, find(t, hub2, "Deployment", "flotilla-hub"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); r != 2 || !slices.Contains(args(t, deploy), "--leader-elect") {
		t.Errorf("after applying replicas 2: replicas %d, args %v", r, args(t, deploy))
	}

	// Deleting the klusterlet keeps the CRDs (the hub's release has them too); deleting the
	// hub with its CRDs leaves nothing of either release.
	if err := install.Delete(ctx, cp.Config, klusterlet, false); err != nil {
		t.Fatal(err)
	}
	for _, o := range klusterlet {
		_, err := get(ctx, t, dyn, o)
		if o.GetKind() == "CustomResourceDefinition" {
			if err != nil {
				t.Errorf("Delete without CRDs removed %s: %v", o.GetName(), err)
			}
		} else if !apierrors.IsNotFound(err) {
			t.Errorf("%s %s/%s is still there after Delete: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	failures := watchInstanceDeletionFailures(ctx, t, dyn)
	if err := install.Delete(ctx, cp.Config, hub, true); err != nil {
		t.Fatal(err)
	}
	// A failure's retry can be lost until the API server's CRD informer resyncs, five
	// minutes on: Delete makes sure the first attempt lists the instances.
	for _, f := range failures() {
		t.Errorf("the API server failed to delete the instances of a deleted CRD: %s", f)
	}
	for _, o := range hub {
		if _, err := get(ctx, t, dyn, o); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s/%s is still there after Delete: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	// Listed: nothing labelled with either release, and none of the charts' CRDs.
	for _, kind := range []string{"Namespace", "ServiceAccount", "Service", "Secret", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"} {
		list, err := dyn.Resource(gvr[kind]).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance in (" + hubRelease + "," + klusterletRelease + ")"})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			t.Errorf("%s %s/%s of a deleted release is left", kind, o.GetNamespace(), o.GetName())
		}
	}
	crds, err := dyn.Resource(gvr["CustomResourceDefinition"]).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds.Items {
		t.Errorf("CRD %s is left", crd.GetName())
	}

	// Deleting what is gone is no error.
	if err := install.Delete(ctx, cp.Config, hub, true); err != nil {
		t.Errorf("deleting again: %v", err)
	}
}

// TestDeleteNamesWhatHoldsItUp deletes a CRD whose instance keeps a finalizer nothing
// removes (as a hub's ManagedCluster does once the hub is gone): the CRD never goes, and
// Delete's error, when its context ends, names the instance and its finalizer.
func TestDeleteNamesWhatHoldsItUp(t *testing.T) {
	cp := controlPlane(t, "install-held")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	crd := find(t, render(t, install.HubChart, hubRelease, install.HubNamespace, nil),
		"CustomResourceDefinition", "managedclustersets.cluster.open-cluster-management.io")
	if err := install.Apply(ctx, cp.Config, []*unstructured.Unstructured{crd}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	set := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
		"metadata": map[string]any{"name": "held", "finalizers": []any{"test.flotilla.dev/held"}},
	}}
	sets := schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersets"}
	if _, err := dyn.Resource(sets).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteCtx, cancelDelete := context.WithTimeout(ctx, 10*time.Second)
	defer cancelDelete()
	err = install.Delete(deleteCtx, cp.Config, []*unstructured.Unstructured{crd}, true)
	for _, want := range []string{
		"waiting for CustomResourceDefinition managedclustersets.cluster.open-cluster-management.io to be deleted",
		"finalizers [customresourcecleanup.apiextensions.k8s.io]",
		"ManagedClusterSet held left with finalizers [test.flotilla.dev/held]",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Delete: got %v, want an error containing %q", err, want)
		}
	}
}

func TestApplyNamesTheFailingObject(t *testing.T) {
	cp := controlPlane(t, "install-failing")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	bad := render(t, install.KlusterletChart, "bad", "open-cluster-management-agent-bad", map[string]any{"render": "components", "clusterName": "c1"})
	for _, o := range bad {
		if o.GetKind() == "Deployment" {
			// A value no schema of the chart checks, which the API server rejects.
			if err := unstructured.SetNestedField(o.Object, "Not_A_Valid_Name", "spec", "template", "spec", "serviceAccountName"); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := install.Apply(ctx, cp.Config, bad)
	want := "Deployment open-cluster-management-agent-bad/klusterlet-agent"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error naming %s", err, want)
	}
	if err := install.Delete(ctx, cp.Config, bad, true); err != nil {
		t.Fatal(err)
	}
}

// hubStopTimeout bounds the wait for the hub to return once its context ended: the
// manager's graceful shutdown (30s) and closing the Wasm engine.
const hubStopTimeout = 90 * time.Second

// TestHubRunsWithChartRBAC runs the hub in-process with the identity of the chart's
// ServiceAccount: it must install its CRDs, bootstrap identities and webhooks, and set up a
// cluster's namespace and roles, without a forbidden request.
func TestHubRunsWithChartRBAC(t *testing.T) {
	cp := controlPlane(t, "install-rbac")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	objs := render(t, install.HubChart, hubRelease, install.HubNamespace, singleHub(nil))
	if err := install.Apply(ctx, cp.Config, objs); err != nil {
		t.Fatal(err)
	}
	sa, err := cp.UserConfig("system:serviceaccount:"+install.HubNamespace+":flotilla-hub",
		"system:serviceaccounts", "system:serviceaccounts:"+install.HubNamespace)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		log strings.Builder
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(&log, prefix, args)
	}, funcr.Options{})
	// client-go's reflectors log a refused list or watch through klog, controller-runtime's
	// sources through its root logger: both into the log checked below, as `flotilla hub` does.
	ctrllog.SetLogger(logger)
	klog.SetLogger(logger)
	// forbidden returns the first line of the log about a refused request.
	forbidden := func() string {
		mu.Lock()
		defer mu.Unlock()
		for line := range strings.SplitSeq(log.String(), "\n") {
			if strings.Contains(strings.ToLower(line), "forbidden") {
				return line
			}
		}
		return ""
	}
	hub, err := manager.New(manager.Options{Config: rest.CopyConfig(sa), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hubCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- hub.Start(hubCtx) }()
	defer func() {
		stop()
		// Its own deadline: the test's context has ended by now, and a hub that does not
		// stop must fail the test, not hang the package until go test's timeout.
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("hub: %v", err)
			}
		case <-time.After(hubStopTimeout):
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Errorf("the hub did not return within %s of its context ending; goroutines:\n%s", hubStopTimeout, stacks.String())
		}
		mu.Lock()
		defer mu.Unlock()
		if t.Failed() && testing.Verbose() {
			t.Logf("hub log:\n%s", log.String())
		}
	}()
	select {
	case <-hub.Webhooks().Ready():
	case err := <-done:
		t.Fatalf("hub stopped: %v", err)
	case <-ctx.Done():
		t.Fatalf("the hub's webhooks did not get ready: %v", ctx.Err())
	}

	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
		"metadata": map[string]any{"name": "cluster1"},
		"spec":     map[string]any{"hubAcceptsClient": true},
	}}
	clusters := schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	if _, err := dyn.Resource(clusters).Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the hub makes, each needing its rights: the bootstrap ServiceAccount, the default
	// cluster set, the accepted cluster's namespace, role (escalate) and bindings (bind).
	for _, want := range []struct {
		r        schema.GroupVersionResource
		ns, name string
	}{
		{gvr["ServiceAccount"], rbac.BootstrapNamespace, rbac.BootstrapServiceAccount},
		{schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersets"}, "", "default"},
		{gvr["Namespace"], "", "cluster1"},
		{gvr["ClusterRole"], "", rbac.ClusterRoleName("cluster1")},
		{gvr["ClusterRoleBinding"], "", rbac.ClusterRoleName("cluster1")},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, "cluster1", rbac.WorkRoleBindingName("cluster1")},
	} {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			if refused := forbidden(); refused != "" {
				return false, fmt.Errorf("the hub was refused a request: %s", refused)
			}
			var err error
			if want.ns == "" {
				_, err = dyn.Resource(want.r).Get(ctx, want.name, metav1.GetOptions{})
			} else {
				_, err = dyn.Resource(want.r).Namespace(want.ns).Get(ctx, want.name, metav1.GetOptions{})
			}
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			t.Fatalf("the hub did not create %s %s/%s: %v", want.r.Resource, want.ns, want.name, err)
		}
	}
	if refused := forbidden(); refused != "" {
		t.Errorf("the hub was refused a request: %s", refused)
	}

	// What this run did not exercise: approving and signing the CSRs of the registration
	// signer and of an add-on's custom signer, handing out roles it does not hold.
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Group: "certificates.k8s.io", Resource: "signers", Verb: "approve", Name: "kubernetes.io/kube-apiserver-client"},
		{Group: "certificates.k8s.io", Resource: "signers", Verb: "approve", Name: "example.com/addon-signer"},
		{Group: "certificates.k8s.io", Resource: "signers", Verb: "sign", Name: "example.com/addon-signer"},
		{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval", Verb: "update"},
		{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "status", Verb: "update"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "escalate"},
		{Group: "rbac.authorization.k8s.io", Resource: "roles", Verb: "bind", Namespace: "cluster1"},
		{Resource: "serviceaccounts", Subresource: "token", Verb: "create", Namespace: rbac.BootstrapNamespace},
	} {
		sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "system:serviceaccount:" + install.HubNamespace + ":flotilla-hub",
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + install.HubNamespace, "system:authenticated"},
				ResourceAttributes: &attrs,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !sar.Status.Allowed {
			t.Errorf("the hub may not %s %s/%s %s: %s", attrs.Verb, attrs.Resource, attrs.Subresource, attrs.Name, sar.Status.Reason)
		}
	}
}

// TestApplyWithPrunes: ApplyWith labels what it applies with its own field manager, and
// deletes what it applied before and no longer holds (a component switched off), leaving
// the same kinds without its labels, with another applier's labels, or outside the prune
// namespace.
func TestApplyWithPrunes(t *testing.T) {
	cp := controlPlane(t, "install-prune")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	obj := func(kind, ns, name string, labels map[string]string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("v1")
		if kind == "ClusterRole" {
			o.SetAPIVersion("rbac.authorization.k8s.io/v1")
		}
		o.SetKind(kind)
		o.SetNamespace(ns)
		o.SetName(name)
		o.SetLabels(labels)
		return o
	}
	const ns, other = "prune-a", "prune-b"
	ours := map[string]string{"app.kubernetes.io/managed-by": "flotilla-operator", "operator.open-cluster-management.io/clustermanager": "cm-a"}
	theirs := map[string]string{"app.kubernetes.io/managed-by": "flotilla-operator", "operator.open-cluster-management.io/clustermanager": "cm-b"}
	opts := install.ApplyOptions{FieldManager: "flotilla-test-operator", Labels: ours, Prune: &install.Prune{
		Namespace: ns,
		Kinds: []schema.GroupVersionKind{{Version: "v1", Kind: "ServiceAccount"}, {Version: "v1", Kind: "Service"},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}},
	}}
	// Set up: namespaces, an unlabelled and a foreign object in ns, one of ours in other.
	if err := install.Apply(ctx, cp.Config, []*unstructured.Unstructured{
		obj("Namespace", "", ns, nil), obj("Namespace", "", other, nil),
		obj("ServiceAccount", ns, "unlabelled", nil),
		obj("ServiceAccount", ns, "foreign", theirs),
		obj("ServiceAccount", other, "elsewhere", ours),
	}); err != nil {
		t.Fatal(err)
	}
	full := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{
			obj("ServiceAccount", ns, "kept", nil), obj("ServiceAccount", ns, "switched-off", nil),
			obj("ClusterRole", "", "prune-test-switched-off", nil),
		}
	}
	if err := install.ApplyWith(ctx, cp.Config, full(), opts); err != nil {
		t.Fatal(err)
	}
	kept, err := get(ctx, t, dyn, obj("ServiceAccount", ns, "kept", nil))
	if err != nil {
		t.Fatal(err)
	}
	if kept.GetLabels()["operator.open-cluster-management.io/clustermanager"] != "cm-a" ||
		!slices.ContainsFunc(kept.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == "flotilla-test-operator" }) {
		t.Errorf("ServiceAccount kept: labels %v, managers %v; want ours, by flotilla-test-operator", kept.GetLabels(), kept.GetManagedFields())
	}
	for _, o := range full() {
		if _, err := get(ctx, t, dyn, o); err != nil {
			t.Errorf("after the first apply: %v", err)
		}
	}

	// The second render lacks two objects: they are deleted, nothing else is.
	if err := install.ApplyWith(ctx, cp.Config, full()[:1], opts); err != nil {
		t.Fatal(err)
	}
	for _, o := range full()[1:] {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := get(ctx, t, dyn, o)
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("%s %s was not pruned within 30s", o.GetKind(), o.GetName())
		}
	}
	for _, o := range []*unstructured.Unstructured{
		obj("ServiceAccount", ns, "kept", nil), obj("ServiceAccount", ns, "unlabelled", nil),
		obj("ServiceAccount", ns, "foreign", nil), obj("ServiceAccount", other, "elsewhere", nil),
	} {
		if _, err := get(ctx, t, dyn, o); err != nil {
			t.Errorf("%s %s/%s should be left: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}

	if err := install.ApplyWith(ctx, cp.Config, full(), install.ApplyOptions{Prune: opts.Prune}); err == nil {
		t.Error("a prune without labels was accepted")
	}
}
