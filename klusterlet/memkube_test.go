package klusterlet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/memkube"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// A full klusterlet (registration, work and add-on agents) whose managed cluster is memkube:
// what issue 22's fleet simulator runs thousands of.
var _ = Describe("a klusterlet on a memkube managed cluster", Ordered, func() {
	const cluster = "memkube1"
	var (
		mk      *memkube.Cluster
		managed kubernetes.Interface
		// hubMapper is the HubMapper the klusterlet is given; managedRequests sees what its
		// agents ask of memkube.
		hubMapper       *countingMapper
		managedRequests *recordingTransport
	)

	BeforeAll(func(ctx SpecContext) {
		all, err := crds.Objects()
		Expect(err).NotTo(HaveOccurred())
		var install []*apiextensionsv1.CustomResourceDefinition
		for _, crd := range all {
			if slices.Contains(environment.ManagedClusterCRDs, crd.Name) {
				install = append(install, crd)
			}
		}
		mk, err = memkube.New(memkube.Options{Name: cluster, CRDs: install})
		Expect(err).NotTo(HaveOccurred())
		managed = kubernetes.NewForConfigOrDie(mk.Config())

		By("seeding a Node's capacity and a ClusterClaim, as the simulator does")
		node, err := managed.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}
		node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7"), corev1.ResourceMemory: resource.MustParse("30Gi")}
		_, err = managed.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		mkClient, err := client.New(mk.Config(), client.Options{Scheme: hubClient.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(mkClient.Create(ctx, &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: "region.memkube.test"},
			Spec: clusterv1alpha1.ClusterClaimSpec{Value: "sim-east"}})).To(Succeed())

		// A hub mapper shared as the fleet simulator shares one, counting what it is asked.
		hubCfg, err := registration.RESTConfigFromKubeconfig(bootstrapKubeconfig, "bootstrap kubeconfig")
		Expect(err).NotTo(HaveOccurred())
		httpClient, err := rest.HTTPClientFor(hubCfg)
		Expect(err).NotTo(HaveOccurred())
		m, err := apiutil.NewDynamicRESTMapper(hubCfg, httpClient)
		Expect(err).NotTo(HaveOccurred())
		hubMapper = &countingMapper{RESTMapper: m, kinds: map[string]int{}}
		managedCfg := mk.Config()
		managedRequests = &recordingTransport{next: managedCfg.Transport, watched: map[string]bool{}}
		managedCfg.Transport = managedRequests

		a, err := klusterlet.New(klusterlet.Options{Registration: registration.Config{
			ClusterName: cluster, BootstrapKubeconfig: bootstrapKubeconfig, ManagedConfig: managedCfg,
			LeaseDurationSeconds: 5, RetryInitial: 200 * time.Millisecond, RetryMax: 2 * time.Second,
			Logger: logger.WithName(cluster),
		}, MetricsBindAddress: "0", HealthProbeBindAddress: "0", Scheme: apischeme.New(), HubMapper: hubMapper})
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(suiteCtx)
		done := make(chan error, 1)
		go func() { done <- a.Run(runCtx) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done, "30s").Should(Receive(Not(HaveOccurred())), "the klusterlet on memkube stops cleanly")
		})
	}, NodeTimeout(2*time.Minute))

	It("joins: Joined and Available on the hub, with the Node's capacity, the claim and the version reported", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{cluster})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).Should(Succeed(), "accepting %s on the hub", cluster)
		Eventually(func(g Gomega) {
			mc := managedCluster(g, cluster)
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue(), "Joined")
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)).To(BeTrue(), "Available")
			g.Expect(mc.Status.Capacity).To(HaveKeyWithValue(clusterv1.ResourceName("cpu"), resource.MustParse("8")))
			g.Expect(mc.Status.Allocatable).To(HaveKeyWithValue(clusterv1.ResourceName("memory"), resource.MustParse("30Gi")))
			g.Expect(mc.Status.ClusterClaims).To(ContainElement(clusterv1.ManagedClusterClaim{Name: "region.memkube.test", Value: "sim-east"}))
			g.Expect(mc.Status.Version.Kubernetes).NotTo(BeEmpty())
		}).WithContext(ctx).Should(Succeed(), "ManagedCluster %s Joined and Available with capacity, claims and version", cluster)
	}, SpecTimeout(2*time.Minute))

	It("applies a ManifestWork's ConfigMap and Deployment into memkube, reports Applied and Available, and deletes them with the work", func(ctx SpecContext) {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "sim-config", Namespace: "default"}, Data: map[string]string{"k": "v"}}
		labels := map[string]string{"app": "sim"}
		dep := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "sim-app", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}}}
		work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "sim-work", Namespace: cluster},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{manifest(cm), manifest(dep)}}}}
		Expect(hubClient.Create(ctx, work)).To(Succeed())

		Eventually(func(g Gomega) {
			got := &workv1.ManifestWork{}
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(work), got)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, workv1.WorkApplied)).To(BeTrue(), "Applied")
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, workv1.WorkAvailable)).To(BeTrue(), "Available")
		}).WithContext(ctx).Should(Succeed(), "ManifestWork %s/sim-work Applied and Available", cluster)
		got, err := managed.CoreV1().ConfigMaps("default").Get(ctx, "sim-config", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Data).To(HaveKeyWithValue("k", "v"))
		_, err = managed.AppsV1().Deployments("default").Get(ctx, "sim-app", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())

		Expect(hubClient.Delete(ctx, work)).To(Succeed())
		Eventually(func(g Gomega) {
			_, err := managed.CoreV1().ConfigMaps("default").Get(ctx, "sim-config", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap default/sim-config gone from memkube: %v", err)
			_, err = managed.AppsV1().Deployments("default").Get(ctx, "sim-app", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment default/sim-app gone from memkube: %v", err)
			err = hubClient.Get(ctx, client.ObjectKeyFromObject(work), &workv1.ManifestWork{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ManifestWork %s/sim-work gone from the hub: %v", cluster, err)
		}).WithContext(ctx).Should(Succeed(), "the work's resources deleted from memkube and the work from the hub")
	}, SpecTimeout(2*time.Minute))

	It("shares one hub mapper between its agents and watches no RBAC objects while no work has an executor", func() {
		// Registration's, the work agent's and the add-on agent's hub kinds all went through
		// the mapper it was given (none built its own copy of the hub's discovery).
		Expect(hubMapper.seen()).To(HaveKey("ManagedCluster"), "registration's hub client uses Options.HubMapper")
		Expect(hubMapper.seen()).To(HaveKey("ManifestWork"), "the work agent's hub cache uses Options.HubMapper")
		Expect(hubMapper.seen()).To(HaveKey("ManagedClusterAddOn"), "the add-on agent's hub cache uses Options.HubMapper")
		// The RBAC watch starts with the first work that has an executor (the work above has none).
		Expect(managedRequests.watches()).NotTo(ContainElement(ContainSubstring("rbac.authorization.k8s.io")),
			"watches the agents opened on memkube")
		Expect(managedRequests.watches()).To(ContainElement(ContainSubstring("appliedmanifestworks")),
			"watches the agents opened on memkube")
	})
})

// countingMapper counts the kinds it maps.
type countingMapper struct {
	meta.RESTMapper
	mu    sync.Mutex
	kinds map[string]int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.mu.Lock()
	m.kinds[gk.Kind]++
	m.mu.Unlock()
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func (m *countingMapper) seen() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.kinds)
}

// recordingTransport records the paths of the watches sent through it.
type recordingTransport struct {
	next    http.RoundTripper
	mu      sync.Mutex
	watched map[string]bool
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") == "true" {
		t.mu.Lock()
		t.watched[req.URL.Path] = true
		t.mu.Unlock()
	}
	return t.next.RoundTrip(req)
}

func (t *recordingTransport) watches() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.watched))
}

func manifest(obj runtime.Object) workv1.Manifest {
	GinkgoHelper()
	raw, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
}

// FLOTILLA_MEMKUBE_FLEET=<n> measures the heap of n idle joined klusterlets on memkube (off by
// default: it is a measurement, not a check).
var _ = Describe("idle klusterlets on memkube, measured", Ordered, func() {
	It("joins n clusters and reports the heap per cluster", func(ctx SpecContext) {
		n, _ := strconv.Atoi(os.Getenv("FLOTILLA_MEMKUBE_FLEET"))
		if n <= 0 {
			Skip("set FLOTILLA_MEMKUBE_FLEET=<clusters> to measure")
		}
		all, err := crds.Objects()
		Expect(err).NotTo(HaveOccurred())
		var install []*apiextensionsv1.CustomResourceDefinition
		for _, crd := range all {
			if slices.Contains(environment.ManagedClusterCRDs, crd.Name) {
				install = append(install, crd)
			}
		}
		heap := func() uint64 {
			goruntime.GC()
			goruntime.GC()
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		// FLOTILLA_MEMKUBE_NOPLUGINS=1 runs the klusterlets without the Wasm plugin loader.
		noPlugins := os.Getenv("FLOTILLA_MEMKUBE_NOPLUGINS") != ""
		before, goroutinesBefore := heap(), goruntime.NumGoroutine()
		names := make([]string, n)
		for i := range n {
			names[i] = fmt.Sprintf("mkfleet%03d", i)
			mk, err := memkube.New(memkube.Options{Name: names[i], CRDs: install})
			Expect(err).NotTo(HaveOccurred())
			a, err := klusterlet.New(klusterlet.Options{Registration: registration.Config{
				ClusterName: names[i], BootstrapKubeconfig: bootstrapKubeconfig, ManagedConfig: mk.Config(),
				RetryInitial: 500 * time.Millisecond, RetryMax: 5 * time.Second, Logger: logr.Discard(),
			}, Plugins: klusterlet.PluginOptions{Disabled: noPlugins},
				MetricsBindAddress: "0", HealthProbeBindAddress: "0"})
			Expect(err).NotTo(HaveOccurred())
			runCtx, cancel := context.WithCancel(suiteCtx)
			done := make(chan error, 1)
			go func() { done <- a.Run(runCtx) }()
			DeferCleanup(func() {
				cancel()
				Eventually(done, "60s").Should(Receive(), "klusterlet %s stops", names[i])
			})
		}
		Eventually(func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, names)
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(5*time.Minute).Should(Succeed(), "accepting the %d clusters", n)
		Eventually(func(g Gomega) {
			for _, name := range names {
				mc := managedCluster(g, name)
				g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)).To(BeTrue(), "%s Available", name)
			}
		}).WithContext(ctx).WithTimeout(5*time.Minute).Should(Succeed(), "all %d clusters Available", n)
		// Idle: let the first lease renewals and status syncs settle.
		time.Sleep(20 * time.Second)
		after := heap()
		if path := os.Getenv("FLOTILLA_MEMKUBE_HEAPPROFILE"); path != "" {
			f, err := os.Create(path)
			Expect(err).NotTo(HaveOccurred())
			Expect(pprof.WriteHeapProfile(f)).To(Succeed())
			Expect(f.Close()).To(Succeed())
		}
		AddReportEntry("memkube fleet", fmt.Sprintf("%d idle joined klusterlets on memkube (plugin loader disabled: %t): heap %.1f MiB -> %.1f MiB, %.2f MiB per cluster, %d goroutines per cluster",
			n, noPlugins, float64(before)/(1<<20), float64(after)/(1<<20), float64(after-before)/float64(n)/(1<<20),
			(goruntime.NumGoroutine()-goroutinesBefore)/n))
	}, SpecTimeout(15*time.Minute))
})
