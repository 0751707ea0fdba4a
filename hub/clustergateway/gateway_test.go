package clustergateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/clustergateway"
	"github.com/flotilla-dev/flotilla/policies"
)

const gatewaySA = "cluster-gateway"

// saUser is the user name the managed API server gives ServiceAccount sa.
func saUser(sa string) string { return "system:serviceaccount:" + saNamespace + ":" + sa }

var _ = Describe("ClusterGateways", func() {
	It("are served through the hub API server: discovery, Table, JSON with the token redacted, no watch", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		token := managedCluster(ctx, "table1", nil, gatewaySA)
		rc := kube.Discovery().RESTClient()

		By("discovery")
		Eventually(func(g Gomega, ctx context.Context) {
			res, err := kube.Discovery().ServerResourcesForGroupVersion(clustergatewayv1alpha1.GroupVersion.String())
			g.Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, r := range res.APIResources {
				names = append(names, r.Name+":"+strings.Join(r.Verbs, ","))
			}
			g.Expect(names).To(ConsistOf("clustergateways:get,list", "clustergateways/proxy:create,delete,get,patch,update", "clustergateways/health:get"))
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "discovery of %s through the hub API server", clustergatewayv1alpha1.GroupVersion)

		By("the Table kubectl get shows")
		data, err := rc.Get().AbsPath("/apis", clustergatewayv1alpha1.GroupVersion.Group, clustergatewayv1alpha1.GroupVersion.Version, "clustergateways").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		var table metav1.Table
		Expect(json.Unmarshal(data, &table)).To(Succeed())
		Expect(table.Kind).To(Equal("Table"))
		var cols []string
		for _, c := range table.ColumnDefinitions {
			cols = append(cols, c.Name)
		}
		Expect(cols).To(Equal([]string{"Name", "Provider", "Credential-Type", "Endpoint-Type", "Healthy"}))
		var row []any
		for _, r := range table.Rows {
			if r.Cells[0] == "table1" {
				row = r.Cells
			}
		}
		Expect(row).To(Equal([]any{"table1", "", "ServiceAccountToken", "ClusterProxy", "true"}), "the Table: %s", data)

		By("JSON, the credential's type kept and its token redacted")
		data, err = rc.Get().AbsPath("/apis", clustergatewayv1alpha1.GroupVersion.Group, clustergatewayv1alpha1.GroupVersion.Version, "clustergateways", "table1").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		var one clustergatewayv1alpha1.ClusterGateway
		Expect(json.Unmarshal(data, &one)).To(Succeed())
		Expect(one.Name).To(Equal("table1"))
		Expect(one.Spec.Access.Credential.Type).To(Equal(clustergatewayv1alpha1.CredentialTypeServiceAccountToken))
		Expect(one.Spec.Access.Credential.ServiceAccountToken).To(BeEmpty())
		Expect(one.Status.Healthy).To(BeTrue())
		Expect(string(data)).NotTo(ContainSubstring(token))
		data, err = rc.Get().AbsPath("/apis", clustergatewayv1alpha1.GroupVersion.Group, clustergatewayv1alpha1.GroupVersion.Version, "clustergateways").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		var list clustergatewayv1alpha1.ClusterGatewayList
		Expect(json.Unmarshal(data, &list)).To(Succeed())
		Expect(list.Items).To(ContainElement(HaveField("ObjectMeta.Name", "table1")))
		Expect(string(data)).NotTo(ContainSubstring(token))

		By("a tunnel down shows in status.healthy")
		dialer.setDown("table1", true)
		DeferCleanup(func() { dialer.setDown("table1", false) })
		data, err = rc.Get().AbsPath("/apis", clustergatewayv1alpha1.GroupVersion.Group, clustergatewayv1alpha1.GroupVersion.Version, "clustergateways", "table1", "health").DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &one)).To(Succeed())
		Expect(one.Status.Healthy).To(BeFalse())
		Expect(string(one.Status.HealthyReason)).To(ContainSubstring("tunnel not connected"))

		By("watch is not supported")
		_, err = rc.Get().AbsPath("/apis", clustergatewayv1alpha1.GroupVersion.Group, clustergatewayv1alpha1.GroupVersion.Version, "clustergateways").
			Param("watch", "true").DoRaw(ctx)
		Expect(apierrors.IsMethodNotSupported(err)).To(BeTrue(), "watch: %v", err)
		err = rc.Get().AbsPath("/apis", clustergatewayv1alpha1.GroupVersion.Group, clustergatewayv1alpha1.GroupVersion.Version, "clustergateways", "nope").Do(ctx).Error()
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "GET of an unknown gateway: %v", err)
		Expect(err.Error()).To(Equal(`clustergateways.cluster.core.oam.dev "nope" not found`))
	})
})

var _ = Describe("The proxy subresource", func() {
	It("answers /healthz with ok, 404 for an unknown cluster, 503 without credential or tunnel", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		managedCluster(ctx, "health1", nil, gatewaySA)
		managedCluster(ctx, "nocreds1", nil, "")
		rc := kube.Discovery().RESTClient()

		var body []byte
		Eventually(func(ctx context.Context) (err error) {
			body, err = rc.Get().AbsPath(clustergatewayv1alpha1.ProxyPath("health1"), "healthz").DoRaw(ctx)
			return err
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "GET %s/healthz", clustergatewayv1alpha1.ProxyPath("health1"))
		Expect(string(body)).To(Equal("ok"))
		Expect(metricValue(clustergateway.RequestsMetric, map[string]string{"cluster": "health1", "verb": "get", "code": "200"})).To(BeNumerically(">=", 1))

		// Error() puts the Status message in the error (DoRaw keeps a generic one).
		err := rc.Get().AbsPath(clustergatewayv1alpha1.ProxyPath("nope"), "healthz").Do(ctx).Error()
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "unknown cluster: %v", err)
		Expect(err.Error()).To(ContainSubstring(`clustergateways.cluster.core.oam.dev "nope" not found`))

		err = rc.Get().AbsPath(clustergatewayv1alpha1.ProxyPath("nocreds1"), "healthz").Do(ctx).Error()
		Expect(apierrors.IsServiceUnavailable(err)).To(BeTrue(), "no credential: %v", err)
		Expect(err.Error()).To(ContainSubstring("cluster nocreds1: no credentials yet: Secret open-cluster-management-credentials/nocreds1 (from ManagedServiceAccount nocreds1/cluster-gateway) not found"))

		dialer.setDown("health1", true)
		DeferCleanup(func() { dialer.setDown("health1", false) })
		err = rc.Get().AbsPath(clustergatewayv1alpha1.ProxyPath("health1"), "healthz").Do(ctx).Error()
		Expect(apierrors.IsServiceUnavailable(err)).To(BeTrue(), "tunnel down: %v", err)
		Expect(err.Error()).To(ContainSubstring("cluster health1: cluster-proxy tunnel not connected (last seen 2026-11-27T08:00:00Z)"))
		Expect(metricValue(clustergateway.RequestsMetric, map[string]string{"cluster": "health1", "verb": "get", "code": "503"})).To(BeNumerically(">=", 1))
	})

	It("sends the cluster's token and none of the hub user's identity or impersonation headers", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		front := startAuditFront()
		token := managedCluster(ctx, "audited1", nil, gatewaySA)
		setCredential(ctx, "audited1", token, front.ca)
		dialer.route("audited1", front.addr)
		grant(ctx, "gateway-audit-alice", []rbacv1.PolicyRule{proxyRule([]string{"create"}, "audited1")}, hubUser("alice"))

		By("a SelfSubjectReview through the gateway, carrying Impersonate-* and extra X-Remote-* headers")
		hdr := http.Header{}
		hdr.Set("Impersonate-User", "root")
		hdr.Add("Impersonate-Group", "system:masters")
		hdr.Set("X-Remote-Extra-Scopes", "all")
		var resp response
		Eventually(func() int {
			resp = directRequest(ctx, http.MethodPost, clustergatewayv1alpha1.ProxyPath("audited1")+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
				"alice", []string{"gateway-auditors", "system:authenticated"}, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, hdr)
			return resp.code
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(http.StatusCreated), "the SelfSubjectReview through the gateway: %+v", resp)
		var review authenticationv1.SelfSubjectReview
		Expect(json.Unmarshal([]byte(resp.body), &review)).To(Succeed())
		Expect(review.Status.UserInfo.Username).To(Equal(saUser(gatewaySA)), "the managed API server saw another user")
		Expect(review.Status.UserInfo.Groups).NotTo(ContainElements("gateway-auditors", "system:masters"))

		By("what the managed side received")
		seen := front.headers()
		Expect(seen).NotTo(BeEmpty())
		for _, h := range seen {
			Expect(h.Get("Authorization")).To(Equal("Bearer " + token))
			for k := range h {
				Expect(strings.HasPrefix(k, "Impersonate-") || strings.HasPrefix(k, "X-Remote-")).To(BeFalse(), "header %s reached the managed cluster: %v", k, h)
			}
		}
	})

	It("keeps a watch across a token change, on the same connection, and uses the new token for new requests", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		const ns = "rotation-ns"
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
		}, NodeTimeout(30*time.Second))
		managedCluster(ctx, "rotating1", nil, "rotation-a")
		second := serviceAccountToken(ctx, "rotation-b")
		grant(ctx, "gateway-rotation-readers", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
			serviceAccount("rotation-a"), serviceAccount("rotation-b"))
		through := kubernetes.NewForConfigOrDie(gatewayConfig("rotating1"))
		whoami := func(ctx context.Context) (string, error) {
			r, err := through.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				return "", err
			}
			return r.Status.UserInfo.Username, nil
		}
		Eventually(whoami).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(saUser("rotation-a")), "the managed side sees the first token's ServiceAccount")

		var w watch.Interface
		Eventually(func(ctx context.Context) (err error) {
			w, err = through.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
			return err
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "watching ConfigMaps through the gateway")
		DeferCleanup(w.Stop)
		dials := dialer.dialsTo("rotating1")

		By("the token changes: new requests carry the new one")
		setCredential(ctx, "rotating1", second, hub.CAData)
		Eventually(whoami).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(saUser("rotation-b")), "the managed side sees the second token's ServiceAccount")

		By("the watch opened with the old token still delivers")
		_, err = kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-rotation"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					Fail("the watch through the gateway ended after the token change")
				}
				if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && ev.Type == watch.Added {
					return cm.Name
				}
			default:
			}
			return ""
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal("after-rotation"), "waiting for the watch to deliver ADDED after-rotation")
		Expect(dialer.dialsTo("rotating1")).To(Equal(dials), "the token change opened new connections to the cluster")
	})

	It("asks hub RBAC again: a front-proxy request for a user without the grant is refused", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		managedCluster(ctx, "sar1", nil, gatewaySA)
		path := clustergatewayv1alpha1.ProxyPath("sar1") + "/healthz"
		resp := directRequest(ctx, http.MethodGet, path, "mallory", []string{"system:authenticated"}, "", nil)
		Expect(resp.code).To(Equal(http.StatusForbidden), resp.body)
		Expect(status(resp.body).Message).To(Equal(`clustergateways.cluster.core.oam.dev "sar1" is forbidden: User "mallory" cannot get resource "clustergateways/proxy" in API group "cluster.core.oam.dev" at the cluster scope`))

		grant(ctx, "gateway-sar-mallory", []rbacv1.PolicyRule{proxyRule([]string{"get"}, "sar1")}, hubUser("mallory"))
		resp = directRequest(ctx, http.MethodGet, path, "mallory", []string{"system:authenticated"}, "", nil)
		Expect(resp).To(Equal(response{code: http.StatusOK, body: "ok"}))
		resp = directRequest(ctx, http.MethodDelete, clustergatewayv1alpha1.ProxyPath("sar1")+"/api/v1/namespaces/default/configmaps/x", "mallory", []string{"system:authenticated"}, "", nil)
		Expect(resp.code).To(Equal(http.StatusForbidden), "delete needs the delete verb: %s", resp.body)
		Expect(status(resp.body).Message).To(ContainSubstring(`cannot delete resource "clustergateways/proxy"`))
	})

	It("applies the gateway policies of the policy ConfigMaps: deny, allow, and evaluation errors fail closed", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		managedCluster(ctx, "dev1", map[string]string{"env": "dev"}, gatewaySA)
		managedCluster(ctx, "prod1", map[string]string{"env": "prod"}, gatewaySA)
		grant(ctx, "gateway-policy-readers", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}, serviceAccount(gatewaySA))
		grant(ctx, "gateway-policy-team", []rbacv1.PolicyRule{proxyRule([]string{"get", "delete"})}, hubUser("alice"), hubUser("carol"), hubUser("dave"))

		By("the example policy and a broken one, pushed as ConfigMaps")
		example := map[string]string{}
		for _, f := range []string{"gateway_team_dev_readonly.rego", "gateway_team_dev_readonly_test.rego"} {
			b, err := fs.ReadFile(policies.Examples(), f)
			Expect(err).NotTo(HaveOccurred())
			example[f] = string(b)
		}
		broken := map[string]string{"broken.rego": `package flotilla.gateway.broken_names

deny contains "never" if {
	input.request.namespace == "numbers"
	to_number(input.request.name) > 0
}
`}
		sets := map[string]string{"sets.rego": `package flotilla.gateway.sets_echo

deny contains sprintf("sets of %s: %v", [input.cluster.name, input.cluster.clusterSets]) if input.user.username == "dave"
`}
		for name, data := range map[string]map[string]string{"gateway-example": example, "gateway-broken": broken, "gateway-sets": sets} {
			Expect(cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policyNamespace, Name: name,
				Labels: map[string]string{"flotilla.dev/policy": "true"}}, Data: data})).To(Succeed())
			DeferCleanup(func(ctx SpecContext) {
				Expect(client.IgnoreNotFound(cl.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policyNamespace, Name: name}}))).To(Succeed())
				loadPolicies(ctx)
			}, NodeTimeout(30*time.Second))
		}
		loadPolicies(ctx)
		var names []string
		for _, p := range policyH.Policies().GatewayPolicies() {
			names = append(names, p.Name)
		}
		Expect(names).To(ConsistOf("broken_names", "gateway_team_dev_readonly", "sets_echo"))

		team := []string{"team-a", "system:authenticated"}
		list := clustergatewayv1alpha1.ProxyPath("dev1") + "/api/v1/namespaces/default/configmaps"
		resp := directRequest(ctx, http.MethodGet, list, "alice", team, "", nil)
		Expect(resp.code).To(Equal(http.StatusOK), "team-a lists ConfigMaps on a dev cluster: %s", resp.body)

		resp = directRequest(ctx, http.MethodDelete, list+"/kube-root-ca.crt", "alice", team, "", nil)
		Expect(resp.code).To(Equal(http.StatusForbidden), resp.body)
		Expect(status(resp.body).Message).To(Equal("policy gateway_team_dev_readonly: members of team-a may only read through the gateway (get, list, watch), not delete /api/v1/namespaces/default/configmaps/kube-root-ca.crt on cluster dev1"))
		_, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the denied delete reached the cluster")

		resp = directRequest(ctx, http.MethodGet, clustergatewayv1alpha1.ProxyPath("prod1")+"/api/v1/namespaces/default/configmaps", "alice", team, "", nil)
		Expect(resp.code).To(Equal(http.StatusForbidden), resp.body)
		Expect(status(resp.body).Message).To(ContainSubstring("cluster prod1 is not"))

		By("users outside team-a are not judged by it")
		resp = directRequest(ctx, http.MethodGet, clustergatewayv1alpha1.ProxyPath("prod1")+"/api/v1/namespaces/default/configmaps", "carol", []string{"system:authenticated"}, "", nil)
		Expect(resp.code).To(Equal(http.StatusOK), resp.body)

		By("a policy that fails to evaluate denies, naming itself")
		resp = directRequest(ctx, http.MethodGet, clustergatewayv1alpha1.ProxyPath("prod1")+"/api/v1/namespaces/numbers/configmaps/not-a-number", "carol", []string{"system:authenticated"}, "", nil)
		Expect(resp.code).To(Equal(http.StatusForbidden), resp.body)
		Expect(status(resp.body).Message).To(And(HavePrefix("policy broken_names: evaluation failed"), HaveSuffix("(denied: policies fail closed)")))
		By("input.cluster.clusterSets are the sets selecting the cluster")
		for _, set := range []*clusterv1beta2.ManagedClusterSet{
			{ObjectMeta: metav1.ObjectMeta{Name: "gateway-dev-set"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "gateway-exclusive-set"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.ExclusiveClusterSetLabel}}},
		} {
			Expect(cl.Create(ctx, set)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, set))).To(Succeed()) }, NodeTimeout(30*time.Second))
		}
		resp = directRequest(ctx, http.MethodGet, clustergatewayv1alpha1.ProxyPath("dev1")+"/healthz", "dave", []string{"system:authenticated"}, "", nil)
		Expect(resp.code).To(Equal(http.StatusForbidden), resp.body)
		Expect(status(resp.body).Message).To(Equal(`policy sets_echo: sets of dev1: ["gateway-dev-set"]`))

		Expect(metricValue(clustergateway.PolicyDenialsMetric, map[string]string{"policy": "gateway_team_dev_readonly"})).To(BeNumerically(">=", 2))
		Expect(metricValue(clustergateway.PolicyDenialsMetric, map[string]string{"policy": "broken_names"})).To(BeNumerically(">=", 1))
	})

	It("bounds the requests in flight per cluster with 429 naming the cluster", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		managedCluster(ctx, "capped1", nil, gatewaySA)
		grant(ctx, "gateway-capped-readers", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"watch"}}}, serviceAccount(gatewaySA))
		capped, err := clustergateway.New(clustergateway.Options{Reader: cl, Dialer: dialer, Reviews: reviews, MaxInFlight: 1, Logger: logger.WithName("capped")})
		Expect(err).NotTo(HaveOccurred())
		// Served as the webhook server does, with the user in the context.
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			capped.ServeHTTP(w, r.WithContext(apirequest.WithUser(r.Context(), &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}})))
		}))
		DeferCleanup(s.Close)
		base := s.URL + clustergatewayv1alpha1.ProxyPath("capped1")

		watchCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		req, err := http.NewRequestWithContext(watchCtx, http.MethodGet, base+"/api/v1/namespaces/default/configmaps?watch=true", nil)
		Expect(err).NotTo(HaveOccurred())
		held, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(held.Body.Close)
		Expect(held.StatusCode).To(Equal(http.StatusOK), "the watch holding the one slot")

		resp, err := http.Get(base + "/healthz")
		Expect(err).NotTo(HaveOccurred())
		var st metav1.Status
		Expect(json.NewDecoder(resp.Body).Decode(&st)).To(Succeed())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests))
		Expect(st.Message).To(Equal("cluster capped1: too many requests in flight through the gateway (limit 1); retry later"))

		stop()
		Eventually(func() int {
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(http.StatusOK), "the slot is free once the watch ends")
	})

	It("passes SPDY upgrades on with their query and the cluster's token, and bounds them per cluster", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		front := startFront(http.HandlerFunc(echoUpgrade))
		token := managedCluster(ctx, "exec1", nil, gatewaySA)
		setCredential(ctx, "exec1", token, front.ca)
		dialer.route("exec1", front.addr)
		capped, err := clustergateway.New(clustergateway.Options{Reader: cl, Dialer: dialer, Reviews: reviews, MaxUpgrades: 1, Logger: logger.WithName("capped")})
		Expect(err).NotTo(HaveOccurred())
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			capped.ServeHTTP(w, r.WithContext(apirequest.WithUser(r.Context(), &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}})))
		}))
		DeferCleanup(s.Close)
		path := clustergatewayv1alpha1.ProxyPath("exec1") + "/api/v1/namespaces/default/pods/p/exec?command=echo&stdout=true"

		conn, br, resp := upgrade(ctx, s.Listener.Addr().String(), path)
		Expect(resp.StatusCode).To(Equal(http.StatusSwitchingProtocols))
		DeferCleanup(conn.Close)
		_, err = io.WriteString(conn, "ping\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.SetReadDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
		line, err := br.ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		Expect(line).To(Equal("ping\n"))
		seen := front.headers()
		Expect(seen).To(HaveLen(1))
		Expect(seen[0].Get("X-Test-Request-Uri")).To(Equal("/api/v1/namespaces/default/pods/p/exec?command=echo&stdout=true"))
		Expect(seen[0].Get("Authorization")).To(Equal("Bearer " + token))

		By("a second upgraded connection to the cluster is over the bound")
		_, _, second := upgrade(ctx, s.Listener.Addr().String(), path)
		Expect(second.StatusCode).To(Equal(http.StatusTooManyRequests))
		body, _ := io.ReadAll(second.Body)
		Expect(string(body)).To(ContainSubstring("cluster exec1: too many upgraded connections (exec, attach, port-forward) through the gateway (limit 1)"))

		By("another upgrade protocol is refused")
		conn2, _, other := upgradeWith(ctx, s.Listener.Addr().String(), path, "h2c")
		conn2.Close()
		Expect(other.StatusCode).To(Equal(http.StatusBadRequest))
	})
})

// echoUpgrade answers an Upgrade: SPDY/3.1 with 101 and then echoes what it reads.
func echoUpgrade(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "SPDY/3.1") {
		http.Error(w, "want an SPDY/3.1 upgrade", http.StatusBadRequest)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
	if rw.Flush() != nil {
		return
	}
	_, _ = io.Copy(conn, rw.Reader)
}

// upgrade asks for an SPDY/3.1 upgrade of path at addr (plain HTTP/1.1).
func upgrade(ctx context.Context, addr, path string) (net.Conn, *bufio.Reader, *http.Response) {
	GinkgoHelper()
	return upgradeWith(ctx, addr, path, "SPDY/3.1")
}

func upgradeWith(ctx context.Context, addr, path, protocol string) (net.Conn, *bufio.Reader, *http.Response) {
	GinkgoHelper()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	Expect(err).NotTo(HaveOccurred())
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nContent-Length: 0\r\n\r\n", path, addr, protocol)
	Expect(err).NotTo(HaveOccurred())
	Expect(conn.SetReadDeadline(time.Now().Add(30 * time.Second))).To(Succeed())
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	Expect(err).NotTo(HaveOccurred(), "reading the answer to the upgrade of %s", path)
	return conn, br, resp
}
