package sarcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/core/environment"
)

func TestRBACWatch(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "sarcache RBACWatch")
}

var (
	cfg    *rest.Config
	admin  client.Client
	kube   kubernetes.Interface
	scheme = runtime.NewScheme()
)

var _ = BeforeSuite(func(ctx SpecContext) {
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "sarcache", Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	cfg = cp.Config
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	admin, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	kube = kubernetes.NewForConfigOrDie(cfg)
}, NodeTimeout(5*time.Minute))

// recordingCache records the objects informers are asked for.
type recordingCache struct {
	cache.Cache
	mu    sync.Mutex
	types []string
}

func (r *recordingCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	r.mu.Lock()
	r.types = append(r.types, fmt.Sprintf("%T %s", obj, obj.GetObjectKind().GroupVersionKind().Kind))
	r.mu.Unlock()
	return r.Cache.GetInformer(ctx, obj, opts...)
}

func (r *recordingCache) informers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.types...)
}

// startWatch runs w on a manager of its own until the spec ends and returns the manager's cache.
func startWatch(w *RBACWatch) *recordingCache {
	GinkgoHelper()
	var rc *recordingCache
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Logger:  funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{Verbosity: 1}),
		Metrics: metricsserver.Options{BindAddress: "0"},
		NewCache: func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
			c, err := cache.New(cfg, opts)
			rc = &recordingCache{Cache: c}
			return rc, err
		},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(w.SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	DeferCleanup(func() error { cancel(); return <-done })
	return rc
}

func newTestCache(name string) *Cache {
	GinkgoHelper()
	c, err := New(Options{Reviews: kube.AuthorizationV1().SubjectAccessReviews(), Name: name, AllowedTTL: time.Hour, DeniedTTL: time.Hour})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// mayGet asks c whether user may get ConfigMaps in ns.
func mayGet(ctx context.Context, c *Cache, user, ns string) bool {
	GinkgoHelper()
	res, err := c.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Version: "v1", Namespace: ns}}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return res.Status.Allowed
}

var _ = Describe("RBACWatch", func() {
	It("acts once on a burst of RBAC changes: one invalidation, one OnChange, and the next answer sees the new RBAC", func(ctx SpecContext) {
		const ns, user = "burst", "burst-user"
		// Long enough that the whole burst below falls in it beside busy neighbours.
		const coalesce = 3 * time.Second
		c := newTestCache("rbac-burst")
		var changes atomic.Int32
		startWatch(&RBACWatch{Name: "rbac-burst", Cache: c, Coalesce: coalesce,
			OnChange: func(context.Context) error { changes.Add(1); return nil }})

		By("the RBAC the API server starts with is one change")
		Eventually(changes.Load).WithTimeout(30*time.Second).Should(BeNumerically(">=", 1), "the watch's first OnChange")
		Consistently(changes.Load).WithTimeout(2*coalesce).Should(Equal(changes.Load()), "OnChange after the initial RBAC settled")
		before, invalidated := changes.Load(), testutil.ToFloat64(c.invalidations)

		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(mayGet(ctx, c, user, ns)).To(BeFalse())
		Expect(mayGet(ctx, c, user, ns)).To(BeFalse())
		Expect(testutil.ToFloat64(c.hits)).To(Equal(1.0), "the second question was answered from the cache")

		By("ten RBAC objects created in a burst, the grant among them")
		start := time.Now()
		for i := range 4 {
			Expect(admin.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%d", i)}})).To(Succeed())
			Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("burst-%d", i)}})).To(Succeed())
		}
		Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})).To(Succeed())
		Expect(time.Since(start)).To(BeNumerically("<", coalesce), "the burst took longer than the coalescing window")

		Eventually(changes.Load).WithTimeout(30*time.Second).Should(Equal(before+1), "one OnChange for the burst")
		Consistently(changes.Load).WithTimeout(2*coalesce).Should(Equal(before+1), "no further OnChange for the same burst")
		Expect(testutil.ToFloat64(c.invalidations)).To(Equal(invalidated+1), "one invalidation for the burst")
		Expect(mayGet(ctx, c, user, ns)).To(BeTrue(), "the answer after the invalidation")
	})

	It("watches RBAC objects' metadata only", func() {
		rc := startWatch(&RBACWatch{Name: "rbac-metadata"})
		want := []string{"*v1.PartialObjectMetadata Role", "*v1.PartialObjectMetadata RoleBinding",
			"*v1.PartialObjectMetadata ClusterRole", "*v1.PartialObjectMetadata ClusterRoleBinding"}
		Eventually(rc.informers).WithTimeout(30 * time.Second).Should(ConsistOf(want))
	})

	It("retries an OnChange that failed", func() {
		var calls atomic.Int32
		startWatch(&RBACWatch{Name: "rbac-retry", OnChange: func(context.Context) error {
			if calls.Add(1) == 1 {
				return errors.New("hub cache not ready")
			}
			return nil
		}})
		Eventually(calls.Load).WithTimeout(30*time.Second).Should(BeNumerically(">=", 2), "OnChange retried after its error, with no RBAC change since")
	})
})
