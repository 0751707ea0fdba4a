package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
)

// One hub control plane (its API server only: no hub controllers run) for the suite; specs
// write the objects and statuses the hub's controllers and agents would, and run dashboard
// servers against it. Other files of the package (rollouts, explain) may add specs that use
// suiteCtx, hubConfig and hubClient.
var (
	suiteCtx  context.Context
	hubConfig *rest.Config
	hubClient client.Client
)

func TestDashboardAgainstAPIServer(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Dashboard suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	fleet := fleettest.Start(ctx, environment.Options{})
	hubConfig = fleet.Hub.Config
	hubClient, _ = fleettest.Admin(fleet)
}, NodeTimeout(5*time.Minute))

// runDashboard starts a local-mode server with cfg, waits for its first model and serves
// it on a loopback test server, both stopped when the spec ends.
func runDashboard(cfg *rest.Config, namespaces ...string) (*Server, string) {
	GinkgoHelper()
	s, err := New(Options{Config: cfg, Namespaces: namespaces, Logger: fleettest.Logger(), BatchInterval: 50 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(suiteCtx)
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).WithTimeout(30*time.Second).Should(Receive(), "the dashboard server to stop after its context ended")
	})
	syncCtx, syncCancel := context.WithTimeout(suiteCtx, time.Minute)
	defer syncCancel()
	Expect(s.WaitForSync(syncCtx)).To(Succeed(), "the dashboard's watches to sync within a minute")
	srv := httptest.NewServer(s.Handler())
	DeferCleanup(srv.Close)
	return s, srv.URL
}

// openStream connects to api/stream and returns its reader after the hello event.
func openStream(url string) *sseReader {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(suiteCtx)
	DeferCleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/stream", nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(resp.Body.Close)
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "api/stream's status")
	r := readSSE(GinkgoT(), bufio.NewReader(resp.Body))
	r.next("hello")
	return r
}

func decodeSnapshot(ev sseEvent) wireSnapshot {
	GinkgoHelper()
	var ws wireSnapshot
	Expect(json.Unmarshal([]byte(ev.data), &ws)).To(Succeed(), "snapshot %s", ev.data)
	return ws
}

func objectsByKey[T any](objs []json.RawMessage) map[string]T {
	GinkgoHelper()
	out := map[string]T{}
	for _, o := range objs {
		var k struct {
			Key string `json:"key"`
		}
		Expect(json.Unmarshal(o, &k)).To(Succeed())
		var v T
		Expect(json.Unmarshal(o, &v)).To(Succeed())
		out[k.Key] = v
	}
	return out
}

func createNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		_ = hubClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

func create(ctx context.Context, o client.Object) {
	GinkgoHelper()
	Expect(hubClient.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	DeferCleanup(func(ctx context.Context) { _ = client.IgnoreNotFound(hubClient.Delete(ctx, o)) })
}

var _ = Describe("the dashboard against a hub API server", func() {
	It("sends a snapshot of the fleet, then a cluster's status change as a delta", func(ctx SpecContext) {
		createNamespace(ctx, "dash-c1")
		createNamespace(ctx, "dash-apps")
		create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "dash-prod"}})
		mc := &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "dash-c1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "dash-prod", "env": "prod"}},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		}
		create(ctx, mc)
		mc.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "ManagedClusterAvailable", Message: "ok", LastTransitionTime: metav1.Now()}}
		Expect(hubClient.Status().Update(ctx, mc)).To(Succeed())
		renew := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "dash-c1", Name: leaseName}, Spec: coordinationv1.LeaseSpec{RenewTime: &renew}})
		create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "dash-apps", Name: "web"}})

		_, url := runDashboard(hubConfig)
		stream := openStream(url)
		ws := decodeSnapshot(stream.next("snapshot"))
		clusters := objectsByKey[Cluster](ws.Objects[KindClusters])
		Expect(clusters).To(HaveKey("dash-c1"), "the snapshot's clusters")
		c := clusters["dash-c1"]
		Expect(c.Available).To(Equal("True"))
		Expect(c.Sets).To(ContainElement("dash-prod"))
		Expect(c.Lease).To(Equal("2026-01-02T03:04:05Z"))
		Expect(objectsByKey[ClusterSet](ws.Objects[KindClusterSets])).To(HaveKeyWithValue("dash-prod", ClusterSet{Key: "dash-prod", Name: "dash-prod", SelectorType: "ExclusiveClusterSetLabel", Clusters: 1}))
		Expect(objectsByKey[Placement](ws.Objects[KindPlacements])).To(HaveKey("dash-apps/web"), "the snapshot's placements")
		Expect(ws.Access[KindClusters].AllNamespaces).To(BeTrue(), "the admin's access to clusters")

		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionFalse, Reason: "ManagedClusterLeaseUpdateStopped", Message: "lease not renewed"})
		Expect(hubClient.Status().Update(ctx, mc)).To(Succeed())
		deadline := time.Now().Add(30 * time.Second)
		for {
			Expect(time.Now().Before(deadline)).To(BeTrue(), "a delta with dash-c1 Available False within 30s")
			var d wireDelta
			Expect(json.Unmarshal([]byte(stream.nextWithin("delta", time.Until(deadline)).data), &d)).To(Succeed())
			if c, ok := objectsByKey[Cluster](d.Upsert[KindClusters])["dash-c1"]; ok && c.Available == "False" {
				Expect(c.Reason).To(Equal("ManagedClusterLeaseUpdateStopped"))
				Expect(d.Rev).To(BeNumerically(">", ws.Rev))
				break
			}
		}

		By("an Event about the placement reaching its view")
		create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "dash-apps", Name: "web.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Placement", Namespace: "dash-apps", Name: "web", APIVersion: clusterv1beta1.GroupVersion.String()},
			Reason:         "DecisionCreate", Message: "decision web-decision-1 created", Type: corev1.EventTypeNormal,
			LastTimestamp: metav1.Now(), Count: 1,
		})
		deadline = time.Now().Add(30 * time.Second)
		for {
			Expect(time.Now().Before(deadline)).To(BeTrue(), "a delta with placement dash-apps/web's DecisionCreate Event within 30s")
			var d wireDelta
			Expect(json.Unmarshal([]byte(stream.nextWithin("delta", time.Until(deadline)).data), &d)).To(Succeed())
			if p, ok := objectsByKey[Placement](d.Upsert[KindPlacements])["dash-apps/web"]; ok && len(p.Events) > 0 {
				Expect(p.Events[0].Reason).To(Equal("DecisionCreate"))
				break
			}
		}

		By("a ManifestWorkReplicaSet appearing as a rollout")
		create(ctx, &workv1alpha1.ManifestWorkReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dash-apps", Name: "app"},
			Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
				PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "web", RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}},
				ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
					{RawExtension: rawJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"app"}}`)},
				}}},
			},
		})
		deadline = time.Now().Add(30 * time.Second)
		for {
			Expect(time.Now().Before(deadline)).To(BeTrue(), "a delta with rollout dash-apps/app within 30s")
			var d wireDelta
			Expect(json.Unmarshal([]byte(stream.nextWithin("delta", time.Until(deadline)).data), &d)).To(Succeed())
			if r, ok := objectsByKey[Rollout](d.Upsert[KindRollouts])["dash-apps/app"]; ok {
				Expect(r.Kind).To(Equal("ManifestWorkReplicaSet"))
				Expect(r.Placements).To(ContainElement(HaveField("Name", "web")), "the rollout's placements")
				break
			}
		}

		By("a ManifestWork's detail")
		mw := &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Namespace: "dash-c1", Name: "app"},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				{RawExtension: rawJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"app"}}`)},
			}}},
		}
		create(ctx, mw)
		mw.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionFalse, Reason: "AppliedManifestWorkFailed", Message: "namespace default not found", LastTransitionTime: metav1.Now()}}
		Expect(hubClient.Status().Update(ctx, mw)).To(Succeed())
		get := func(path string) (int, []byte) {
			GinkgoHelper()
			resp, err := http.Get(url + path)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, b
		}
		code, body := get("/api/works/dash-c1/app")
		Expect(code).To(Equal(http.StatusOK), "api/works/dash-c1/app: %s", body)
		var wd WorkDetail
		Expect(json.Unmarshal(body, &wd)).To(Succeed())
		Expect(wd.Conditions).To(ContainElement(HaveField("Type", workv1.WorkApplied)))
		Expect(wd.Conditions[0].Status).To(Equal("False"))
		Expect(wd.Manifests).To(HaveLen(1))
		Expect(wd.Manifests[0].Kind).To(Equal("ConfigMap"))
		code, body = get("/api/works/dash-c1/missing")
		Expect(code).To(Equal(http.StatusNotFound), "a missing work: %s", body)
		Expect(string(body)).To(ContainSubstring(`"error"`))

		By("a placement's explanation")
		code, body = get("/api/placements/dash-apps/web/explain")
		Expect(code).To(Equal(http.StatusOK), "api/placements/dash-apps/web/explain: %s", body)
		// What it says is Explain's (tested beside it); here, that the endpoint serves it.
		var e map[string]json.RawMessage
		Expect(json.Unmarshal(body, &e)).To(Succeed())
		Expect(e).To(HaveKey("filters"))
		Expect(e).To(HaveKey("notChosen"))
		code, body = get("/api/placements/dash-apps/missing/explain")
		Expect(code).To(Equal(http.StatusNotFound), "a missing placement: %s", body)
	}, SpecTimeout(3*time.Minute))

	It("shows a restricted user only what they may list, and says what is denied", func(ctx SpecContext) {
		createNamespace(ctx, "team-a")
		createNamespace(ctx, "team-b")
		create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pa"}})
		create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "pb"}})
		create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "placement-viewer"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{clusterv1beta1.GroupVersion.Group}, Resources: []string{"placements"}, Verbs: []string{"get", "list", "watch"}}},
		})
		create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "alice-placements"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "placement-viewer"},
		})
		alice := rest.CopyConfig(hubConfig)
		alice.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:authenticated"}}

		s, url := runDashboard(alice, "team-a", "team-b")
		ws := decodeSnapshot(openStream(url).next("snapshot"))
		placements := objectsByKey[Placement](ws.Objects[KindPlacements])
		Expect(placements).To(HaveKey("team-a/pa"), "alice's placements")
		Expect(placements).NotTo(HaveKey("team-b/pb"), "alice's placements")
		a := ws.Access[KindPlacements]
		Expect(a.AllNamespaces).To(BeFalse())
		Expect(a.Namespaces).To(Equal([]string{"team-a"}))
		Expect(a.Denied).To(Equal([]string{"team-b"}), "the namespaces tried and denied")
		Expect(ws.Access[KindClusters].Error).To(ContainSubstring("forbidden"), "alice may not list clusters")
		Expect(ws.Objects[KindClusters]).To(BeEmpty())
		Expect(slices.Contains(a.Notes, "no access to "+auxNote[resDecisions])).To(BeTrue(), "notes %v name the unreadable decisions", a.Notes)
		Expect(s.watches(resPlacements, "team-b")).To(BeFalse(), "placements of team-b must not be watched")
	}, SpecTimeout(3*time.Minute))
	It("fails a hub-mode start whose watches do not sync in time, naming the kinds", func(ctx SpecContext) {
		// An identity without any right: every informer's list is refused and retried forever.
		nobody := rest.CopyConfig(hubConfig)
		nobody.Impersonate = rest.ImpersonationConfig{UserName: "dash-nobody", Groups: []string{"system:authenticated"}}
		s, err := New(Options{Config: nobody, Authorizer: &fakeAuthorizer{allow: map[string]bool{}}, Logger: fleettest.Logger(), SyncTimeout: 3 * time.Second})
		Expect(err).NotTo(HaveOccurred())
		done := make(chan error, 1)
		go func() { done <- s.Start(ctx) }()
		var startErr error
		Eventually(done).WithTimeout(30*time.Second).Should(Receive(&startErr), "Start to fail once SyncTimeout (3s) passed")
		Expect(startErr).To(MatchError(And(ContainSubstring("did not sync within 3s"),
			ContainSubstring(resources[resClusters].gr.String()), ContainSubstring(resources[resPlacements].gr.String()))))
		Expect(s.WaitForSync(ctx)).To(MatchError(startErr), "WaitForSync reports Start's failure")
	}, SpecTimeout(time.Minute))
})
