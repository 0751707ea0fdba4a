package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cmd/flotilla/commands"
	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/e2e/internal/metricstest"
	"github.com/flotilla-dev/flotilla/hub/clustergateway"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
)

// The specs of design-23 §5.13 about what streams through the gateway and its tunnels: a watch
// across a token rotation, the tunnel's metrics and reconnection, the example gateway policy,
// and cluster2's tunnel through an HTTP CONNECT proxy.

var _ = Describe("a watch through the cluster gateway", func() {
	It("keeps streaming across a token rotation, and new requests authenticate with the new token", func(ctx SpecContext) {
		const cluster, ns = cluster1, "e2e-streams-rotation"
		reachable(ctx, cluster)
		grantGatewaySA(ctx, cluster, ns, "get", "list", "watch")
		cfg := gatewayConfig(cluster)
		cfg.Timeout = 0 // a client timeout would end the watch; the spec's context bounds it
		kube := kubernetes.NewForConfigOrDie(cfg)
		var rv string
		Eventually(func() error {
			l, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				rv = l.ResourceVersion
			}
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "listing ConfigMaps of %s/%s through the gateway after the grant", cluster, ns)
		w, err := kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		Expect(err).NotTo(HaveOccurred(), "watching ConfigMaps of %s/%s through the gateway", cluster, ns)
		DeferCleanup(w.Stop)
		Expect(gauge(clusterproxy.OpenConnectionsMetric, map[string]string{"cluster": cluster})).To(BeNumerically(">=", 1),
			"%s{cluster=%q} with a watch open", clusterproxy.OpenConnectionsMetric, cluster)

		msaKey := client.ObjectKey{Namespace: cluster, Name: clustergatewayv1alpha1.ManagedServiceAccountName}
		credKey := client.ObjectKey{Namespace: clustergatewayv1alpha1.DefaultSecretNamespace, Name: cluster}
		msa := &authv1beta1.ManagedServiceAccount{}
		Expect(hubClient.Get(ctx, msaKey, msa)).To(Succeed())
		Expect(msa.Status.TokenSecretRef).NotTo(BeNil(), "ManagedServiceAccount %s status.tokenSecretRef", msaKey)
		lastRefresh := msa.Status.TokenSecretRef.LastRefreshTimestamp
		oldToken := secretToken(ctx, msaKey)
		Expect(oldToken).NotTo(BeEmpty(), "the token of hub Secret %s", msaKey)

		By("deleting the hub Secret " + msaKey.String() + ": the managed-serviceaccount agent issues a new token")
		// The API server keeps lastRefreshTimestamp to the second.
		deleted := metav1.NewTime(time.Now().Truncate(time.Second))
		Expect(hubClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: msaKey.Namespace, Name: msaKey.Name}})).To(Succeed())
		var newToken string
		Eventually(func(g Gomega) {
			newToken = secretToken(ctx, msaKey)
			g.Expect(newToken).NotTo(BeEmpty(), "hub Secret %s issued again", msaKey)
			g.Expect(newToken).NotTo(Equal(oldToken), "hub Secret %s holds a new token", msaKey)
			m := &authv1beta1.ManagedServiceAccount{}
			g.Expect(hubClient.Get(ctx, msaKey, m)).To(Succeed())
			g.Expect(m.Status.TokenSecretRef).NotTo(BeNil())
			g.Expect(m.Status.TokenSecretRef.LastRefreshTimestamp.Before(&deleted)).To(BeFalse(),
				"status.tokenSecretRef.lastRefreshTimestamp %v (was %v) not before the Secret's deletion %v",
				m.Status.TokenSecretRef.LastRefreshTimestamp, lastRefresh, deleted)
			g.Expect(secretToken(ctx, credKey)).To(Equal(newToken), "the gateway's credential Secret %s follows the rotation", credKey)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "token of %s rotated", msaKey)
		Expect(tokenID(newToken)).NotTo(Equal(tokenID(oldToken)))

		By("a ConfigMap created after the rotation reaches the watch opened before it")
		managedKube := kubernetes.NewForConfigOrDie(managedConfig(cluster))
		const name = "after-rotation"
		_, err = managedKube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(addedOn(w)).WithContext(ctx).WithTimeout(30*time.Second).
			Should(ContainElement(name), "ADDED %s/%s on the watch opened before the rotation", ns, name)

		By("a new request goes as the new token (its JWT ID, as the managed API server saw it)")
		Eventually(func(g Gomega) {
			r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + authv1beta1.AgentInstallNamespace + ":" + clustergatewayv1alpha1.ManagedServiceAccountName))
			g.Expect(r.Status.UserInfo.Extra[credentialIDKey]).To(ConsistOf("JTI="+tokenID(newToken)), "the credential of the request")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "a SelfSubjectReview through the gateway authenticated with the new token")
	}, SpecTimeout(6*time.Minute))
})

var _ = Describe("the cluster-proxy tunnel's metrics", func() {
	It("count the bytes of each gateway request through cluster1's tunnel, and one more agent stream after its agent restarts", func(ctx SpecContext) {
		const cluster = cluster1
		reachable(ctx, cluster)
		bytes := func(direction string) func() float64 {
			return func() float64 {
				return counter(clusterproxy.BytesMetric, map[string]string{"cluster": cluster, "direction": direction})
			}
		}
		for i := range 3 {
			to, from := bytes("to_cluster")(), bytes("from_cluster")()
			Expect(healthz(ctx, cluster)).To(Equal("ok"))
			Eventually(bytes("to_cluster")).WithContext(ctx).WithTimeout(5*time.Second).Should(BeNumerically(">", to),
				"request %d: %s{cluster=%q,direction=to_cluster} rose", i, clusterproxy.BytesMetric, cluster)
			Eventually(bytes("from_cluster")).WithContext(ctx).WithTimeout(5*time.Second).Should(BeNumerically(">", from),
				"request %d: %s{cluster=%q,direction=from_cluster} rose", i, clusterproxy.BytesMetric, cluster)
		}
		Expect(counter(clusterproxy.DialsMetric, map[string]string{"result": clusterproxy.DialOK})).To(BeNumerically(">=", 1))
		Expect(counter(clustergateway.RequestsMetric, map[string]string{"cluster": cluster, "code": "200"})).To(BeNumerically(">=", 3))

		streams := func() float64 {
			return gauge(clusterproxy.AgentStreamsMetric, map[string]string{"cluster": cluster})
		}
		connects := func() float64 {
			return counter(clusterproxy.AgentConnectsMetric, map[string]string{"cluster": cluster})
		}
		Expect(streams()).To(Equal(1.0), "%s{cluster=%q}", clusterproxy.AgentStreamsMetric, cluster)
		before := connects()

		By("stopping the klusterlet of " + cluster)
		restart := stopKlusterlet(cluster)
		Eventually(streams).WithContext(ctx).WithTimeout(20*time.Second).Should(BeZero(),
			"%s{cluster=%q} with its agent stopped", clusterproxy.AgentStreamsMetric, cluster)
		_, err := healthz(ctx, cluster)
		Expect(err).To(MatchError(ContainSubstring("cluster "+cluster+": cluster-proxy tunnel not connected")), "GET %s/healthz with its agent stopped", cluster)

		By("starting it again")
		restart()
		Eventually(func() (string, error) { return healthz(ctx, cluster) }).WithContext(ctx).WithTimeout(2*time.Minute).
			Should(Equal("ok"), "GET %s/healthz through the gateway after the agent restarted", cluster)
		Expect(connects()).To(Equal(before+1), "%s{cluster=%q} after one restart", clusterproxy.AgentConnectsMetric, cluster)
		Expect(streams()).To(Equal(1.0), "%s{cluster=%q} after the restart", clusterproxy.AgentStreamsMetric, cluster)
	}, SpecTimeout(5*time.Minute))
})

var _ = Describe("the example gateway policy gateway_team_dev_readonly", func() {
	It("lets team-a list ConfigMaps on cluster1 (env=dev) but not delete them, and not reach cluster2", func(ctx SpecContext) {
		const ns, keep = "e2e-streams-policy", "keep-me"
		reachable(ctx, cluster1)
		reachable(ctx, cluster2)
		grantGatewaySA(ctx, cluster1, ns, "get", "list")
		managedKube := kubernetes.NewForConfigOrDie(managedConfig(cluster1))
		_, err := managedKube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: keep}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("cluster1 labelled env=dev")
		labelCluster(ctx, cluster1, `{"metadata":{"labels":{"env":"dev"}}}`)
		DeferCleanup(func(ctx SpecContext) { labelCluster(ctx, cluster1, `{"metadata":{"labels":{"env":null}}}`) }, NodeTimeout(time.Minute))

		By("team-a may use clustergateways/proxy on every cluster (hub RBAC)")
		const user, role = "e2e-streams-alice", "e2e-streams-team-a-proxy"
		cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{clustergatewayv1alpha1.GroupVersion.Group}, Resources: []string{"clustergateways/proxy"},
			Verbs: []string{"get", "create", "update", "patch", "delete"},
		}}}
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "team-a"}}}
		for _, o := range []client.Object{cr, crb} {
			Expect(hubClient.Create(ctx, o)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, o))).To(Succeed()) }, NodeTimeout(time.Minute))
		}

		By("flotilla policy push of the example and its tests")
		const cm = "e2e-streams-gateway-example"
		example := "../../policies/examples/gateway_team_dev_readonly"
		denials := func() float64 {
			return counter(clustergateway.PolicyDenialsMetric, map[string]string{"policy": "gateway_team_dev_readonly"})
		}
		deniedBefore := denials()
		Expect(flotilla(ctx, "policy", "push", example+".rego", example+"_test.rego", "--name", cm,
			"--kubeconfig", env.Fleet.Hub.KubeconfigPath)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: policy.DefaultNamespace, Name: cm}}))).To(Succeed())
		}, NodeTimeout(time.Minute))

		as := func(cluster string) kubernetes.Interface {
			cfg := gatewayConfig(cluster)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"team-a", "system:authenticated"}}
			return kubernetes.NewForConfigOrDie(cfg)
		}
		alice1, alice2 := as(cluster1), as(cluster2)
		Eventually(func(g Gomega) {
			err := alice1.CoreV1().ConfigMaps(ns).Delete(ctx, keep, metav1.DeleteOptions{})
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting a ConfigMap on %s as %s: %v", cluster1, user, err)
			g.Expect(err.Error()).To(Equal("policy gateway_team_dev_readonly: members of team-a may only read through the gateway (get, list, watch), not delete /api/v1/namespaces/" +
				ns + "/configmaps/" + keep + " on cluster " + cluster1))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "the policy denies %s's delete on %s", user, cluster1)
		_, err = managedKube.CoreV1().ConfigMaps(ns).Get(ctx, keep, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the denied delete reached %s", cluster1)

		l, err := alice1.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred(), "team-a lists ConfigMaps on %s", cluster1)
		Expect(l.Items).To(ContainElement(HaveField("Name", keep)))

		_, err = alice2.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "team-a listing ConfigMaps on %s: %v", cluster2, err)
		Expect(err.Error()).To(Equal("policy gateway_team_dev_readonly: members of team-a may only reach clusters labelled env=dev; cluster " + cluster2 + " is not"))
		Expect(denials()).To(BeNumerically(">=", deniedBefore+2), "%s{policy=gateway_team_dev_readonly}", clustergateway.PolicyDenialsMetric)
	}, SpecTimeout(5*time.Minute))
})

var _ = Describe("cluster2's tunnel through an HTTP CONNECT proxy", func() {
	It("goes through the proxy: 503 naming cluster2 while the proxy is down (cluster1 unaffected), back once it is", func(ctx SpecContext) {
		reachable(ctx, cluster2)
		opened := proxy.Tunnels()
		Expect(opened).To(BeNumerically(">=", 1), "CONNECT tunnels the proxy opened for cluster2's agents")
		connects := func() float64 {
			return counter(clusterproxy.AgentConnectsMetric, map[string]string{"cluster": cluster2})
		}
		before := connects()

		By("closing the proxy and its tunnels")
		proxy.Close()
		reopened := false
		DeferCleanup(func(ctx SpecContext) {
			if !reopened {
				Expect(proxy.Reopen()).To(Succeed())
			}
		}, NodeTimeout(30*time.Second))
		Eventually(func(g Gomega) {
			_, err := healthz(ctx, cluster2)
			g.Expect(err).To(HaveOccurred())
			status, ok := err.(apierrors.APIStatus)
			g.Expect(ok).To(BeTrue(), "an API status, got %v", err)
			g.Expect(status.Status().Code).To(BeEquivalentTo(http.StatusServiceUnavailable), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("cluster " + cluster2 + ": cluster-proxy tunnel not connected"))
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "GET %s/healthz through the gateway with its proxy down", cluster2)
		Expect(healthz(ctx, cluster1)).To(Equal("ok"), "cluster1 does not go through the proxy")

		By("the proxy back on the same port")
		Expect(proxy.Reopen()).To(Succeed())
		reopened = true
		Eventually(func() (string, error) { return healthz(ctx, cluster2) }).WithContext(ctx).WithTimeout(2*time.Minute).
			Should(Equal("ok"), "GET %s/healthz through the gateway once its proxy is back", cluster2)
		Expect(proxy.Tunnels()).To(BeNumerically(">", opened), "cluster2's agents reconnected through the proxy")
		Expect(connects()).To(BeNumerically(">", before), "%s{cluster=%q}", clusterproxy.AgentConnectsMetric, cluster2)
	}, SpecTimeout(4*time.Minute))
})

// ---- helpers of these specs ----

// credentialIDKey is the user extra in which the API server reports the JWT ID of a
// ServiceAccount token ("JTI=<jti>").
const credentialIDKey = "authentication.kubernetes.io/credential-id"

// reachable waits until cluster's /healthz answers through the gateway.
func reachable(ctx context.Context, cluster string) {
	GinkgoHelper()
	Eventually(func() (string, error) { return healthz(ctx, cluster) }).WithContext(ctx).WithTimeout(3*time.Minute).
		Should(Equal("ok"), "cluster %s reachable through the gateway", cluster)
}

// managedConfig is an admin config of cluster's API server.
func managedConfig(cluster string) *rest.Config {
	GinkgoHelper()
	for i, cp := range env.Fleet.Managed {
		if environment.ManagedClusterName(i) == cluster {
			return cp.Config
		}
	}
	Fail("no managed cluster " + cluster)
	return nil
}

// grantGatewaySA creates namespace ns on cluster (deleted after the spec) and lets the
// gateway's ServiceAccount use verbs on its ConfigMaps.
func grantGatewaySA(ctx context.Context, cluster, ns string, verbs ...string) {
	GinkgoHelper()
	kube := kubernetes.NewForConfigOrDie(managedConfig(cluster))
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "creating namespace %s on %s", ns, cluster)
	DeferCleanup(func(ctx SpecContext) {
		err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		Expect(client.IgnoreNotFound(err)).To(Succeed())
	}, NodeTimeout(time.Minute))
	const name = "e2e-streams-gateway"
	_, err = kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: authv1beta1.AgentInstallNamespace,
			Name: clustergatewayv1alpha1.ManagedServiceAccountName}}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// secretToken is the token of the hub Secret key; "" when there is none.
func secretToken(ctx context.Context, key client.ObjectKey) string {
	s := &corev1.Secret{}
	if err := hubClient.Get(ctx, key, s); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading Secret %s: %v", key, err)
		return ""
	}
	return string(s.Data[authv1beta1.SecretKeyToken])
}

// tokenID is the jti claim of a ServiceAccount token (a JWT).
func tokenID(token string) string {
	GinkgoHelper()
	parts := strings.Split(token, ".")
	Expect(parts).To(HaveLen(3), "a JWT")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	Expect(err).NotTo(HaveOccurred())
	var claims struct {
		ID string `json:"jti"`
	}
	Expect(json.Unmarshal(payload, &claims)).To(Succeed())
	Expect(claims.ID).NotTo(BeEmpty(), "the token's jti")
	return claims.ID
}

// addedOn is a function for Eventually: the names of the ConfigMaps ADDED on w so far (it
// stops trying when w ends).
func addedOn(w watch.Interface) func() ([]string, error) {
	var names []string
	return func() ([]string, error) {
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return names, StopTrying("the watch ended")
				}
				if ev.Type == watch.Error {
					return names, StopTrying(fmt.Sprintf("the watch failed: %v", apierrors.FromObject(ev.Object)))
				}
				if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && ev.Type == watch.Added {
					names = append(names, cm.Name)
				}
			default:
				return names, nil
			}
		}
	}
}

// labelCluster merge-patches ManagedCluster cluster with patch.
func labelCluster(ctx context.Context, cluster, patch string) {
	GinkgoHelper()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}
	Expect(hubClient.Patch(ctx, mc, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed(), "patching ManagedCluster %s", cluster)
}

// flotilla runs the CLI with args, its output to GinkgoWriter.
func flotilla(ctx context.Context, args ...string) error {
	root := commands.NewRoot()
	root.SetArgs(args)
	root.SetOut(GinkgoWriter)
	root.SetErr(GinkgoWriter)
	return root.ExecuteContext(ctx)
}

// counter and gauge read the in-process hub's metrics.
func counter(name string, labels map[string]string) float64 {
	GinkgoHelper()
	v, err := metricstest.Counter(name, labels)
	Expect(err).NotTo(HaveOccurred())
	return v
}

func gauge(name string, labels map[string]string) float64 {
	GinkgoHelper()
	v, err := metricstest.Gauge(name, labels)
	Expect(err).NotTo(HaveOccurred())
	return v
}
