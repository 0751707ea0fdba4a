package manager_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/hub/dashboard"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

// TestDashboardHubMode runs the hub-mode dashboard specs: one control plane and one hub with
// Options.Dashboard for all of them.
func TestDashboardHubMode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server and a hub")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "Hub-mode dashboard")
}

var (
	dashCP *environment.ControlPlane
	dashC  client.Client
)

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

var _ = BeforeSuite(func(ctx SpecContext) {
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(logger)
	var err error
	dashCP, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(SpecContext) { Expect(dashCP.Stop()).To(Succeed()) }, NodeTimeout(time.Minute))
	scheme, err := manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	dashC, err = client.New(dashCP.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	h, err := manager.New(manager.Options{Config: dashCP.Config, Dashboard: true, SkipPluginInstall: true, Logger: logger})
	Expect(err).NotTo(HaveOccurred())
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Start(runCtx) }()
	DeferCleanup(func(ctx SpecContext) {
		stop()
		select {
		case err := <-done:
			Expect(err).NotTo(HaveOccurred(), "the hub stopped with an error")
		case <-ctx.Done():
			Fail("the hub did not stop within the cleanup's deadline")
		}
	}, NodeTimeout(time.Minute))

	// The API server marks the APIService Available once it reaches the hub's webhook server
	// and the version's discovery answers.
	apiServices := dynamic.NewForConfigOrDie(dashCP.Config).Resource(apiServicesGVR)
	name := manager.DashboardVersion + "." + manager.DashboardGroup
	Eventually(func(g Gomega) {
		obj, err := apiServices.Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "reading APIService %s", name)
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(And(HaveKeyWithValue("type", "Available"), HaveKeyWithValue("status", "True"))),
			"APIService %s Available", name)
	}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// The viewer role exactly as the chart renders it.
	objs, err := install.Render(install.HubChart, "flotilla-hub", install.HubNamespace,
		map[string]any{"render": "components", "topology": "Single", "dashboard": map[string]any{"enabled": true}})
	Expect(err).NotTo(HaveOccurred())
	var viewer *rbacv1.ClusterRole
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && o.GetName() == manager.DashboardViewerClusterRole {
			viewer = &rbacv1.ClusterRole{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, viewer)).To(Succeed())
		}
	}
	Expect(viewer).NotTo(BeNil(), "the chart renders no ClusterRole %s", manager.DashboardViewerClusterRole)
	Expect(dashC.Create(ctx, viewer)).To(Succeed())

	// Alice may open the page and list placements in team-a only; carol may open it and list
	// them everywhere; bob may list them everywhere but not open the page.
	for _, ns := range []string{"team-a", "team-b"} {
		Expect(dashC.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(dashC.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})).To(Succeed())
	}
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "placement-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{clusterv1beta1.GroupVersion.Group}, Resources: []string{"placements"}, Verbs: []string{"get", "list", "watch"}}}}
	Expect(dashC.Create(ctx, reader)).To(Succeed())
	Expect(dashC.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "alice-placements"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}})).To(Succeed())
	Expect(dashC.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dashboard-viewers"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: manager.DashboardViewerClusterRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"},
			{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "carol"}}})).To(Succeed())
	Expect(dashC.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "placement-readers"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "bob"},
			{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "carol"}}})).To(Succeed())
}, NodeTimeout(4*time.Minute))

// as is an HTTP client of the hub API server impersonating user, not following redirects.
func as(user string) (*http.Client, string) {
	GinkgoHelper()
	cfg := rest.CopyConfig(dashCP.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c, strings.TrimSuffix(cfg.Host, "/")
}

// get GETs path of the hub API server as user: status, headers, body.
func get(ctx context.Context, user, path string) (int, http.Header, string) {
	GinkgoHelper()
	c, host := as(user)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+path, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred(), "GET %s as %s", path, user)
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header, string(body)
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ name, data string }

// streamUntil reads the dashboard's event stream through the hub API server as user until an
// event named until, and returns the events read; the stream is closed after.
func streamUntil(ctx context.Context, user, until string) []sseEvent {
	GinkgoHelper()
	c, host := as(user)
	return readStream(Default, ctx, c, host+manager.DashboardPath+"api/stream", until)
}

// readStream reads the event stream at url until an event named until.
func readStream(g Gomega, ctx context.Context, c *http.Client, url, until string) []sseEvent {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := c.Do(req)
	g.Expect(err).NotTo(HaveOccurred(), "GET %s", url)
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "the status of %s", url)
	g.Expect(resp.Header.Get("Content-Type")).To(HavePrefix("text/event-stream"))
	var events []sseEvent
	var cur sseEvent
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	for {
		line, err := r.ReadString('\n')
		g.Expect(ctx.Err()).NotTo(HaveOccurred(), "no %q event on %s before the deadline; got %v", until, url, events)
		g.Expect(err).NotTo(HaveOccurred(), "reading %s after %v", url, events)
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if cur.name != "" {
				events = append(events, cur)
				if cur.name == until {
					return events
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// placementsIn is what a snapshot event shows of placements: their keys and the access.
func placementsIn(data string) ([]string, map[string]any) {
	GinkgoHelper()
	var snap struct {
		Objects map[string][]struct {
			Key string `json:"key"`
		} `json:"objects"`
		Access map[string]map[string]any `json:"access"`
	}
	Expect(json.Unmarshal([]byte(data), &snap)).To(Succeed(), "snapshot %s", data)
	var keys []string
	for _, p := range snap.Objects["placements"] {
		keys = append(keys, p.Key)
	}
	return keys, snap.Access["placements"]
}

var _ = Describe("The hub's dashboard (Options.Dashboard)", func() {
	It("answers its discovery with the page's subresource", func(ctx SpecContext) {
		code, _, body := get(ctx, "alice", "/apis/"+manager.DashboardGroup+"/"+manager.DashboardVersion)
		Expect(code).To(Equal(http.StatusOK), body)
		var list metav1.APIResourceList
		Expect(json.Unmarshal([]byte(body), &list)).To(Succeed())
		Expect(list.GroupVersion).To(Equal(manager.DashboardGroup + "/" + manager.DashboardVersion))
		Expect(list.APIResources).To(ContainElement(And(
			HaveField("Name", manager.DashboardResource+"/"+manager.DashboardSubresource),
			HaveField("Verbs", ConsistOf("get")))))
	}, SpecTimeout(time.Minute))

	It("serves the page to a viewer through the hub API server", func(ctx SpecContext) {
		code, header, body := get(ctx, "alice", manager.DashboardPath)
		Expect(code).To(Equal(http.StatusOK), body)
		Expect(header.Get("Content-Type")).To(HavePrefix("text/html"))
		Expect(body).To(ContainSubstring("<html"))

		// Without the slash: a page sending the browser on to the page, relative to wherever
		// the API is proxied (the API server refuses an aggregated API's redirects).
		code, header, body = get(ctx, "alice", strings.TrimSuffix(manager.DashboardPath, "/"))
		Expect(code).To(Equal(http.StatusOK), body)
		Expect(header.Get("Content-Type")).To(HavePrefix("text/html"))
		Expect(body).To(ContainSubstring(`<meta http-equiv="refresh" content="0; url=` + manager.DashboardSubresource + `/">`))
	}, SpecTimeout(time.Minute))

	It("streams to each viewer only what their RBAC lets them list", func(ctx SpecContext) {
		// The model follows the hub's watches: the placements created at setup show once seen,
		// to carol, who may list placements everywhere.
		Eventually(func(g Gomega) {
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			events := streamUntil(sctx, "carol", "snapshot")
			keys, access := placementsIn(events[len(events)-1].data)
			g.Expect(keys).To(ContainElements("team-a/web", "team-b/web"), "what carol, who lists placements everywhere, sees")
			g.Expect(access).To(HaveKeyWithValue("allNamespaces", true))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

		events := streamUntil(ctx, "alice", "snapshot")
		Expect(events[0].name).To(Equal("hello"))
		var hello map[string]any
		Expect(json.Unmarshal([]byte(events[0].data), &hello)).To(Succeed())
		Expect(hello).To(And(HaveKeyWithValue("mode", "hub"), HaveKeyWithValue("user", "alice")))
		keys, access := placementsIn(events[len(events)-1].data)
		Expect(keys).To(ContainElement("team-a/web"), "alice lists placements in team-a")
		Expect(keys).NotTo(ContainElement("team-b/web"), "alice may not list placements in team-b")
		// alice may not list namespaces: she is told her view is partial, not which namespaces
		// hold what she may not see (that would enumerate the hub's namespaces).
		Expect(access).To(And(HaveKeyWithValue("allNamespaces", false),
			HaveKeyWithValue("namespaces", ConsistOf("team-a")), HaveKeyWithValue("denied", BeEmpty()),
			HaveKeyWithValue("partial", true)))

		// A grant reaches a new stream at once: the SubjectAccessReview answers are dropped when
		// RBAC changes.
		Expect(dashC.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "alice-placements"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "placement-reader"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}})).To(Succeed())
		Eventually(func(g Gomega) {
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			events := streamUntil(sctx, "alice", "snapshot")
			keys, _ := placementsIn(events[len(events)-1].data)
			g.Expect(keys).To(ContainElements("team-a/web", "team-b/web"), "alice's placements once she may list team-b's")
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(2*time.Minute))

	It("is refused by the API server to whoever may not get dashboards/proxy", func(ctx SpecContext) {
		for _, path := range []string{manager.DashboardPath, manager.DashboardPath + "api/stream", manager.DashboardPath + "assets/app.js"} {
			code, _, body := get(ctx, "bob", path)
			Expect(code).To(Equal(http.StatusForbidden), "GET %s as bob: %s", path, body)
			var status metav1.Status
			Expect(json.Unmarshal([]byte(body), &status)).To(Succeed(), body)
			Expect(status.Message).To(ContainSubstring(`cannot get resource "dashboards/proxy" in API group "dashboard.flotilla.dev"`))
		}
	}, SpecTimeout(time.Minute))

	// The chart's RBAC is what the hub runs with in a cluster: the dashboard's watches sync and
	// its reviews are made with no more than the chart gives the process serving it (a missing
	// right would leave a watch unsynced).
	It("runs with no more than the chart gives the process serving it", func(ctx SpecContext) {
		// A cluster with its heartbeat Lease, read by name.
		Expect(dashC.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}})).To(Succeed())
		Expect(dashC.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}})).To(Succeed())
		renew := metav1.NewMicroTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
		Expect(dashC.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "managed-cluster-lease"},
			Spec: coordinationv1.LeaseSpec{RenewTime: &renew}})).To(Succeed())

		for topology, identity := range map[string]string{"Single": "flotilla-hub", "Split": "open-cluster-management:flotilla-hub:addon-manager"} {
			By("topology " + topology + ": as the ServiceAccount bound to ClusterRole " + identity)
			objs, err := install.Render(install.HubChart, "flotilla-hub", install.HubNamespace,
				map[string]any{"render": "components", "topology": topology, "dashboard": map[string]any{"enabled": true}})
			Expect(err).NotTo(HaveOccurred())
			var sa string
			for _, o := range objs {
				if (o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding") && o.GetName() == identity {
					if o.GetKind() == "ClusterRoleBinding" {
						subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
						Expect(subjects).To(HaveLen(1))
						sub := subjects[0].(map[string]any)
						sa = fmt.Sprintf("system:serviceaccount:%s:%s", sub["namespace"], sub["name"])
					}
					Expect(dashC.Create(ctx, o.DeepCopy())).To(Succeed(), "creating %s %s", o.GetKind(), o.GetName())
				}
			}
			Expect(sa).NotTo(BeEmpty(), "topology %s: no ClusterRoleBinding %s rendered", topology, identity)
			ns := strings.Split(sa, ":")[2]
			cfg := rest.CopyConfig(dashCP.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}

			authz, _, err := dashboard.NewSARAuthorizer(kubernetes.NewForConfigOrDie(cfg).AuthorizationV1().SubjectAccessReviews())
			Expect(err).NotTo(HaveOccurred())
			d, err := dashboard.New(dashboard.Options{Config: cfg, Authorizer: authz, Logger: GinkgoLogr.WithName("dashboard-" + topology)})
			Expect(err).NotTo(HaveOccurred())
			runCtx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Start(runCtx) }()
			DeferCleanup(func(ctx SpecContext) {
				stop()
				Eventually(done).WithContext(ctx).Should(Receive(BeNil()), "topology %s: the dashboard stops", topology)
			}, NodeTimeout(30*time.Second))
			syncCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
			Expect(d.WaitForSync(syncCtx)).To(Succeed(), "topology %s: the dashboard's watches as %s", topology, sa)
			cancel()

			// An admin (system:masters: every review allows) through the dashboard's handler.
			admin := &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				d.Handler().ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), admin)))
			}))
			DeferCleanup(srv.Close)
			Eventually(func(g Gomega) {
				sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				events := readStream(g, sctx, http.DefaultClient, srv.URL+"/api/stream", "snapshot")
				keys, _ := placementsIn(events[len(events)-1].data)
				g.Expect(keys).To(ContainElements("team-a/web", "team-b/web"), "placements the admin sees")
				var snap struct {
					Objects struct {
						Clusters []struct{ Name, Lease string } `json:"clusters"`
					} `json:"objects"`
				}
				g.Expect(json.Unmarshal([]byte(events[len(events)-1].data), &snap)).To(Succeed())
				g.Expect(snap.Objects.Clusters).To(ContainElement(And(HaveField("Name", "c1"), HaveField("Lease", "2026-11-27T12:00:00Z"))),
					"cluster c1 with its Lease's renewTime")
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		}
	}, SpecTimeout(3*time.Minute))
})
