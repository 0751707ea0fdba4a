package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	konnectivityclient "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	coreclusterproxy "github.com/flotilla-dev/flotilla/core/clusterproxy"
)

var _ = Describe("ManagedProxyServiceResolver", func() {
	It("exposes a Service of cluster1 to konnectivity clients of the hub's ProxyService, and only while it exists", func(ctx SpecContext) {
		const ns, svcName, hidden, setName, label = "e2e-resolver", "echo", "hidden", "e2e-resolver", "e2e-resolver"
		addr := env.Hub.ClusterProxyFrontendAddr()
		Expect(addr).NotTo(BeNil(), "the hub serves the ProxyService frontend (ClusterProxyBindAddress)")

		By("a loopback HTTP server behind ExternalName Services echo and hidden on cluster1")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "echo "+r.URL.Path)
		}))
		DeferCleanup(srv.Close)
		_, portStr, err := net.SplitHostPort(srv.Listener.Addr().String())
		Expect(err).NotTo(HaveOccurred())
		port, err := strconv.Atoi(portStr)
		Expect(err).NotTo(HaveOccurred())
		managed := kubernetes.NewForConfigOrDie(env.Fleet.Managed[0].Config)
		_, err = managed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(managed.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))).To(Succeed())
		}, NodeTimeout(time.Minute))
		for _, name := range []string{svcName, hidden} {
			_, err = managed.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1",
					Ports: []corev1.ServicePort{{Name: "http", Port: int32(port)}}}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred(), "creating Service %s/%s on %s", ns, name, cluster1)
		}

		By("a LabelSelector set holding cluster1 only, and a resolver exposing echo on it")
		patchClusterLabel(ctx, cluster1, label, cluster1)
		DeferCleanup(func(ctx SpecContext) { patchClusterLabel(ctx, cluster1, label, "") }, NodeTimeout(time.Minute))
		set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: setName}, Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: cluster1}}}}}
		createAndCleanUp(ctx, set)
		mpsr := resolverFor("e2e-resolver-echo", setName, &proxyv1alpha1.ServiceRef{Namespace: ns, Name: svcName})
		createAndCleanUp(ctx, mpsr)
		Eventually(resolverCondition(ctx, mpsr.Name)).WithContext(ctx).WithTimeout(time.Minute).Should(SatisfyAll(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", proxyv1alpha1.ReasonManagedProxyServiceResolverAvaliable),
		), "ManagedProxyServiceResolver %s available", mpsr.Name)

		tlsConfig := proxyClientTLS(ctx)
		host := coreclusterproxy.ServiceHost(cluster1, ns, svcName)
		By("the konnectivity client dials " + host + " through the hub's ProxyService")
		Eventually(func() (string, error) {
			return konnectivityGet(ctx, addr.String(), tlsConfig, net.JoinHostPort(host, portStr), "/resolved")
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Equal("echo /resolved"), "GET through the konnectivity client at %s", host)

		By("a Service no resolver exposes is refused: by the hub for a konnectivity client, by cluster1's agent for the hub's own dials")
		hiddenHost := coreclusterproxy.ServiceHost(cluster1, ns, hidden)
		_, err = konnectivityGet(ctx, addr.String(), tlsConfig, net.JoinHostPort(hiddenHost, portStr), "/")
		Expect(err).To(MatchError(ContainSubstring("no ManagedProxyServiceResolver exposes a Service there")))
		_, err = env.Hub.ClusterProxy().DialCluster(ctx, cluster1, net.JoinHostPort(hiddenHost, portStr))
		Expect(err).To(MatchError(ContainSubstring("address " + net.JoinHostPort(hiddenHost, portStr) + " is not exposed by cluster " + cluster1)))
		// A port echo does not list.
		_, err = env.Hub.ClusterProxy().DialCluster(ctx, cluster1, net.JoinHostPort(host, "1"))
		Expect(err).To(MatchError(ContainSubstring("is not exposed by cluster " + cluster1)))

		By("deleting the resolver withdraws the Service from cluster1's agent")
		Expect(hubClient.Delete(ctx, mpsr)).To(Succeed())
		Eventually(func() error {
			c, err := env.Hub.ClusterProxy().DialCluster(ctx, cluster1, net.JoinHostPort(host, portStr))
			if err == nil {
				_ = c.Close()
			}
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).Should(MatchError(ContainSubstring("is not exposed by cluster "+cluster1)),
			"cluster1's agent refusing %s once its resolver is gone", host)
	}, SpecTimeout(6*time.Minute))
})

var _ = Describe("ManagedProxyConfiguration cluster-proxy", func() {
	It("reports ProxyServerDeployed=True and the generation it observed", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			c := &proxyv1alpha1.ManagedProxyConfiguration{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: proxyv1alpha1.DefaultName}, c)).To(Succeed())
			g.Expect(c.Status.LastObservedGeneration).To(Equal(c.Generation))
			cond := meta.FindStatusCondition(c.Status.Conditions, proxyv1alpha1.ConditionTypeProxyServerDeployed)
			g.Expect(cond).NotTo(BeNil(), "condition ProxyServerDeployed")
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Reason).To(Equal(proxyv1alpha1.ReasonSuccessfullyDeployed))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "ManagedProxyConfiguration %s status", proxyv1alpha1.DefaultName)
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("bad input", func() {
	It("ManagedProxyServiceResolver without serviceRef is NotLegal naming the field; one on an unknown set is ManagedClusterSetNotExisted", func(ctx SpecContext) {
		noRef := resolverFor("e2e-resolver-noref", clusterv1beta2.GlobalClusterSetName, nil)
		createAndCleanUp(ctx, noRef)
		unknown := resolverFor("e2e-resolver-unknown-set", "e2e-resolver-no-such-set", &proxyv1alpha1.ServiceRef{Namespace: "default", Name: "x"})
		createAndCleanUp(ctx, unknown)
		Eventually(resolverCondition(ctx, noRef.Name)).WithContext(ctx).WithTimeout(time.Minute).Should(SatisfyAll(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", proxyv1alpha1.ReasonManagedProxyServiceResolverNotLegal),
			HaveField("Message", "spec.serviceSelector.serviceRef is required"),
		), "ManagedProxyServiceResolver %s not legal", noRef.Name)
		Eventually(resolverCondition(ctx, unknown.Name)).WithContext(ctx).WithTimeout(time.Minute).Should(SatisfyAll(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", proxyv1alpha1.ReasonManagedClusterSetNotExisted),
			HaveField("Message", ContainSubstring("ManagedClusterSet e2e-resolver-no-such-set")),
		), "ManagedProxyServiceResolver %s on an unknown set", unknown.Name)
	}, SpecTimeout(3*time.Minute))

	It("ManagedServiceAccount with validity 5m reports TokenReported=False naming the field, and gets no ServiceAccount and no Secret", func(ctx SpecContext) {
		msa := &authv1beta1.ManagedServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: cluster1, Name: "e2e-msa-short"},
			Spec: authv1beta1.ManagedServiceAccountSpec{Rotation: authv1beta1.ManagedServiceAccountRotation{
				Validity: metav1.Duration{Duration: 5 * time.Minute}}}}
		createAndCleanUp(ctx, msa)
		Eventually(func(g Gomega) {
			got := &authv1beta1.ManagedServiceAccount{}
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(msa), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, authv1beta1.ConditionTypeTokenReported)
			g.Expect(c).NotTo(BeNil(), "condition TokenReported")
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(authv1beta1.ReasonTokenReportFailed))
			g.Expect(c.Message).To(ContainSubstring("spec.rotation.validity 5m0s"))
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "ManagedServiceAccount %s/%s TokenReported=False", cluster1, msa.Name)
		managed := kubernetes.NewForConfigOrDie(env.Fleet.Managed[0].Config)
		_, err := managed.CoreV1().ServiceAccounts(authv1beta1.AgentInstallNamespace).Get(ctx, msa.Name, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceAccount %s on %s: %v", msa.Name, cluster1, err)
		err = hubClient.Get(ctx, client.ObjectKeyFromObject(msa), &corev1.Secret{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "hub Secret %s/%s: %v", cluster1, msa.Name, err)
	}, SpecTimeout(3*time.Minute))

	It("the gateway answers 404 naming a cluster that does not exist", func(ctx SpecContext) {
		_, err := healthz(ctx, "nope")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "GET nope/healthz through the gateway: %v", err)
		Expect(err.Error()).To(ContainSubstring(`"nope"`))
	}, SpecTimeout(time.Minute))
})

var _ = Describe("ManagedServiceAccount deletion", func() {
	It("removes the ServiceAccount on the managed cluster and the token Secret on the hub", func(ctx SpecContext) {
		msa := &authv1beta1.ManagedServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: cluster1, Name: "e2e-msa-delete"},
			Spec: authv1beta1.ManagedServiceAccountSpec{Rotation: authv1beta1.ManagedServiceAccountRotation{
				Validity: metav1.Duration{Duration: time.Hour}}}}
		createAndCleanUp(ctx, msa)
		managed := kubernetes.NewForConfigOrDie(env.Fleet.Managed[0].Config)
		sas := managed.CoreV1().ServiceAccounts(authv1beta1.AgentInstallNamespace)
		Eventually(func() error {
			if _, err := sas.Get(ctx, msa.Name, metav1.GetOptions{}); err != nil {
				return err
			}
			return hubClient.Get(ctx, client.ObjectKeyFromObject(msa), &corev1.Secret{})
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "ServiceAccount on %s and hub Secret of %s/%s", cluster1, cluster1, msa.Name)

		Expect(hubClient.Delete(ctx, msa)).To(Succeed())
		Eventually(func() bool {
			_, err := sas.Get(ctx, msa.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "ServiceAccount %s gone on %s", msa.Name, cluster1)
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(msa), &corev1.Secret{}))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "hub Secret %s/%s gone (garbage collected with its owner)", cluster1, msa.Name)
	}, SpecTimeout(5*time.Minute))
})

// ---- helpers of these specs ----

// createAndCleanUp creates o on the hub and deletes it when the spec ends.
func createAndCleanUp(ctx context.Context, o client.Object) {
	GinkgoHelper()
	Expect(hubClient.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, o))).To(Succeed())
	}, NodeTimeout(time.Minute))
}

func resolverFor(name, set string, ref *proxyv1alpha1.ServiceRef) *proxyv1alpha1.ManagedProxyServiceResolver {
	return &proxyv1alpha1.ManagedProxyServiceResolver{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: proxyv1alpha1.ManagedProxyServiceResolverSpec{
			ManagedClusterSelector: proxyv1alpha1.ManagedClusterSelector{Type: proxyv1alpha1.ManagedClusterSelectorTypeClusterSet,
				ManagedClusterSet: &proxyv1alpha1.ManagedClusterSet{Name: set}},
			ServiceSelector: proxyv1alpha1.ServiceSelector{Type: proxyv1alpha1.ServiceSelectorTypeServiceRef, ServiceRef: ref},
		}}
}

// resolverCondition is a function for Eventually: the resolver's ServiceResolverAvaliable.
func resolverCondition(ctx context.Context, name string) func(g Gomega) metav1.Condition {
	return func(g Gomega) metav1.Condition {
		r := &proxyv1alpha1.ManagedProxyServiceResolver{}
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, r)).To(Succeed())
		c := meta.FindStatusCondition(r.Status.Conditions, proxyv1alpha1.ConditionTypeServiceResolverAvaliable)
		g.Expect(c).NotTo(BeNil(), "condition ServiceResolverAvaliable of %s", name)
		return *c
	}
}

// patchClusterLabel sets (or, with value "", removes) a label of a ManagedCluster.
func patchClusterLabel(ctx context.Context, cluster, key, value string) {
	GinkgoHelper()
	v := `"` + value + `"`
	if value == "" {
		v = "null"
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+key+`":`+v+`}}}`))
	Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, patch)).To(Succeed())
}

// proxyClientTLS is a konnectivity client's TLS config as upstream's clients build it from the
// hub's Secrets proxy-server-ca and proxy-client.
func proxyClientTLS(ctx context.Context) *tls.Config {
	GinkgoHelper()
	ca, cert := &corev1.Secret{}, &corev1.Secret{}
	Eventually(func() error {
		if err := hubClient.Get(ctx, client.ObjectKey{Namespace: proxyv1alpha1.AgentInstallNamespace, Name: proxyv1alpha1.ProxyServerCASecretName}, ca); err != nil {
			return err
		}
		return hubClient.Get(ctx, client.ObjectKey{Namespace: proxyv1alpha1.AgentInstallNamespace, Name: proxyv1alpha1.DefaultProxyClientSecretName}, cert)
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "Secrets proxy-server-ca and proxy-client on the hub")
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(ca.Data["ca.crt"])).To(BeTrue(), "proxy-server-ca ca.crt")
	pair, err := tls.X509KeyPair(cert.Data[corev1.TLSCertKey], cert.Data[corev1.TLSPrivateKeyKey])
	Expect(err).NotTo(HaveOccurred(), "proxy-client tls.crt/tls.key")
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
		ServerName: proxyv1alpha1.DefaultInClusterServiceName + "." + proxyv1alpha1.AgentInstallNamespace}
}

// konnectivityGet dials address through a single-use konnectivity tunnel to the hub's
// ProxyService at frontend, GETs path over it and returns the body.
func konnectivityGet(ctx context.Context, frontend string, tlsConfig *tls.Config, address, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	tun, err := konnectivityclient.CreateSingleUseGrpcTunnelWithContext(ctx, ctx, frontend, grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig)))
	if err != nil {
		return "", fmt.Errorf("konnectivity tunnel to %s: %w", frontend, err)
	}
	conn, err := tun.DialContext(ctx, "tcp", address)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, address); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s at %s: %s: %s", path, address, resp.Status, body)
	}
	return string(body), nil
}
