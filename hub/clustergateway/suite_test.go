package clustergateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/sarcache"
	"github.com/flotilla-dev/flotilla/hub/admission"
	"github.com/flotilla-dev/flotilla/hub/clustergateway"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

func TestClusterGateway(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Hub cluster-gateway")
}

const (
	// saNamespace holds the ServiceAccounts standing in for the managed-serviceaccount agent's
	// (the hub's API server is also the managed clusters' in this suite).
	saNamespace = "open-cluster-management-managed-serviceaccount"
	// policyNamespace holds the suite's policy ConfigMaps.
	policyNamespace = "gateway-policies"
	configName      = "gateway-test"
)

var (
	hub     *environment.ControlPlane
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	cl      client.Client
	logger  logr.Logger
	dialer  *testDialer
	reviews *sarcache.Cache
	gw      *clustergateway.Gateway
	loader  *admission.Loader
	policyH *admission.Handler
	// direct reaches the gateway as the aggregator does (front-proxy certificate, X-Remote-*).
	direct *http.Client
	srvURL string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	logger = funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{Verbosity: 1})
	var err error
	hub, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "hub", AllCRDs: true, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(hub.Stop)
	kube = kubernetes.NewForConfigOrDie(hub.Config)
	dyn = dynamic.NewForConfigOrDie(hub.Config)
	cl, err = client.New(hub.Config, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{clustergatewayv1alpha1.DefaultSecretNamespace, saNamespace, policyNamespace, webhook.DefaultNamespace} {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "creating namespace %s: %v", ns, err)
	}
	u, err := url.Parse(hub.URL)
	Expect(err).NotTo(HaveOccurred())
	dialer = &testDialer{target: u.Host, routes: map[string]string{}, down: map[string]bool{}, dials: map[string]int{}}

	reviews, err = sarcache.New(sarcache.Options{Reviews: kube.AuthorizationV1().SubjectAccessReviews(), Name: "clustergateway-test"})
	Expect(err).NotTo(HaveOccurred())
	// The hub's policy admission, loading the ConfigMaps of policyNamespace: the gateway
	// policies come from it.
	policyH, loader, err = admission.New(admission.Options{Reviews: reviews, Namespace: policyNamespace, Logger: logger.WithName("admission")})
	Expect(err).NotTo(HaveOccurred())
	loader.Reader, loader.Client, loader.Recorder = cl, cl, events.NewFakeRecorder(1000)
	loadPolicies(ctx)

	gw, err = clustergateway.New(clustergateway.Options{Reader: cl, Dialer: dialer, Reviews: reviews, Policies: policyH, Logger: logger.WithName("gateway")})
	Expect(err).NotTo(HaveOccurred())
	srv, err := webhook.New(hub.Config, webhook.Options{ConfigurationName: configName, SecretName: configName + "-certs", Logger: logger.WithName("webhook")})
	Expect(err).NotTo(HaveOccurred())
	Expect(srv.RegisterAPIService(gw.APIService())).To(Succeed())
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(runCtx) }()
	DeferCleanup(func(ctx SpecContext) {
		cancel()
		Eventually(done).WithContext(ctx).Should(Receive(BeNil()), "waiting for the webhook server to stop")
	}, NodeTimeout(time.Minute))
	Eventually(srv.Ready()).WithContext(ctx).Should(BeClosed(), "waiting for the webhook server to be ready")
	srvURL = "https://" + srv.Addr().String()

	By("the APIService becomes Available")
	Eventually(func(g Gomega, ctx context.Context) {
		obj, err := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}).
			Get(ctx, clustergatewayv1alpha1.APIServiceName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(And(HaveKeyWithValue("type", "Available"), HaveKeyWithValue("status", "True"))))
	}).WithContext(ctx).WithTimeout(90*time.Second).Should(Succeed(), "waiting for APIService %s to become Available", clustergatewayv1alpha1.APIServiceName)

	bundle := apiServiceCABundle(ctx)
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(bundle)).To(BeTrue())
	frontProxy, err := tls.LoadX509KeyPair(filepath.Join(hub.Dir, "pki", "front-proxy-client.crt"), filepath.Join(hub.Dir, "pki", "front-proxy-client.key"))
	Expect(err).NotTo(HaveOccurred())
	direct = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{frontProxy},
		ServerName: configName + webhook.APIServiceSuffix + "." + webhook.DefaultNamespace + ".svc",
	}}}
}, NodeTimeout(4*time.Minute))

// loadPolicies runs the policy Loader once, as its controller does on a ConfigMap event.
func loadPolicies(ctx context.Context) {
	GinkgoHelper()
	_, err := loader.Reconcile(ctx, reconcile.Request{})
	Expect(err).NotTo(HaveOccurred(), "loading the policy ConfigMaps")
}

func apiServiceCABundle(ctx context.Context) []byte {
	GinkgoHelper()
	obj, err := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}).
		Get(ctx, clustergatewayv1alpha1.APIServiceName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	s, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
	var b []byte
	Expect(json.Unmarshal([]byte(`"`+s+`"`), &b)).To(Succeed())
	return b
}

// testDialer stands in for the cluster-proxy tunnel: it dials the suite's API server (or a
// route set for the cluster) directly, counts dials and can be "down" for a cluster.
type testDialer struct {
	target string
	mu     sync.Mutex
	routes map[string]string
	down   map[string]bool
	dials  map[string]int
}

func (d *testDialer) DialCluster(ctx context.Context, cluster, address string) (net.Conn, error) {
	if address != cluster+":443" {
		return nil, fmt.Errorf("address %s is not exposed by cluster %s", address, cluster)
	}
	d.mu.Lock()
	if d.down[cluster] {
		d.mu.Unlock()
		return nil, fmt.Errorf("cluster %s: no tunnel", cluster)
	}
	target := d.target
	if r := d.routes[cluster]; r != "" {
		target = r
	}
	d.dials[cluster]++
	d.mu.Unlock()
	return (&net.Dialer{}).DialContext(ctx, "tcp", target)
}

func (d *testDialer) Connected(cluster string) (bool, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down[cluster] {
		return false, time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	}
	return true, time.Now()
}

func (d *testDialer) setDown(cluster string, down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down[cluster] = down
}

func (d *testDialer) route(cluster, address string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.routes[cluster] = address
}

func (d *testDialer) dialsTo(cluster string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials[cluster]
}

// managedCluster creates ManagedCluster name (with labels) and, unless sa is "", a
// ServiceAccount sa standing for the cluster's cluster-gateway identity and the credential
// Secret with its token; it returns the token. All go when the spec ends.
func managedCluster(ctx context.Context, name string, labels map[string]string, sa string) string {
	GinkgoHelper()
	Expect(cl.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(cl.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
	}, NodeTimeout(30*time.Second))
	if sa == "" {
		return ""
	}
	token := serviceAccountToken(ctx, sa)
	setCredential(ctx, name, token, hub.CAData)
	DeferCleanup(func(ctx SpecContext) {
		err := kube.CoreV1().Secrets(clustergatewayv1alpha1.DefaultSecretNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		Expect(client.IgnoreNotFound(err)).To(Succeed())
	}, NodeTimeout(30*time.Second))
	return token
}

// serviceAccountToken creates ServiceAccount sa in saNamespace (if missing) and returns a
// fresh token of it.
func serviceAccountToken(ctx context.Context, sa string) string {
	GinkgoHelper()
	_, err := kube.CoreV1().ServiceAccounts(saNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "creating ServiceAccount %s: %v", sa, err)
	tr, err := kube.CoreV1().ServiceAccounts(saNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// setCredential writes the credential Secret of cluster as SecretReconciler does.
func setCredential(ctx context.Context, cluster, token string, ca []byte) {
	GinkgoHelper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: clustergatewayv1alpha1.DefaultSecretNamespace, Name: cluster, Labels: map[string]string{
			clustergatewayv1alpha1.LabelKeyClusterCredentialType: string(clustergatewayv1alpha1.CredentialTypeServiceAccountToken),
			clustergatewayv1alpha1.LabelKeyClusterEndpointType:   string(clustergatewayv1alpha1.ClusterEndpointTypeClusterProxy),
		}},
		Data: map[string][]byte{clustergatewayv1alpha1.SecretKeyToken: []byte(token), clustergatewayv1alpha1.SecretKeyCACrt: ca},
	}
	_, err := kube.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = kube.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
	}
	Expect(err).NotTo(HaveOccurred())
}

// grant binds a ClusterRole with rules to subjects until the spec ends, and drops the SAR
// cache's answers as the hub's RBAC watch does.
func grant(ctx context.Context, name string, rules []rbacv1.PolicyRule, subjects ...rbacv1.Subject) {
	GinkgoHelper()
	_, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	reviews.Invalidate()
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}))).To(Succeed())
		Expect(client.IgnoreNotFound(kube.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}))).To(Succeed())
		reviews.Invalidate()
	}, NodeTimeout(30*time.Second))
}

func hubUser(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: name}
}

func serviceAccount(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "ServiceAccount", Namespace: saNamespace, Name: name}
}

// proxyRule allows the proxy subresource of clusters (all when none) with verbs.
func proxyRule(verbs []string, clusters ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{clustergatewayv1alpha1.GroupVersion.Group},
		Resources: []string{"clustergateways/proxy"}, ResourceNames: clusters, Verbs: verbs}
}

// gatewayConfig is the admin's config with the server rewritten to cluster's proxy
// subresource, as flotilla kubeconfig --cluster writes it.
func gatewayConfig(cluster string) *rest.Config {
	cfg := rest.CopyConfig(hub.Config)
	cfg.Host = hub.URL + clustergatewayv1alpha1.ProxyPath(cluster)
	return cfg
}

// response is a status code and body.
type response struct {
	code int
	body string
}

// directRequest sends method path (under the gateway's server) as the aggregator does for
// user in groups, with extra headers.
func directRequest(ctx context.Context, method, path, user string, groups []string, body string, header http.Header) response {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, method, srvURL+path, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("X-Remote-User", user)
	for _, g := range groups {
		req.Header.Add("X-Remote-Group", g)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := direct.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return response{code: resp.StatusCode, body: string(b)}
}

// status decodes a metav1.Status body.
func status(body string) metav1.Status {
	GinkgoHelper()
	var s metav1.Status
	Expect(json.Unmarshal([]byte(body), &s)).To(Succeed(), "not a Status: %s", body)
	return s
}

// auditFront is a TLS server presenting kubernetes.default.svc (signed by its own CA) that
// records the headers of every request and passes it on to the suite's API server: what a
// managed cluster's API server receives from the gateway.
type auditFront struct {
	addr string
	ca   []byte
	mu   sync.Mutex
	seen []http.Header
}

func startAuditFront() *auditFront {
	GinkgoHelper()
	target, err := url.Parse(hub.URL)
	Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(hub.CAData)).To(BeTrue())
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	rp.FlushInterval = -1
	return startFront(rp)
}

// startFront is an auditFront serving next instead of passing requests on.
func startFront(next http.Handler) *auditFront {
	GinkgoHelper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "audit-front-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	caCert, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: clustergateway.ServerName},
		DNSNames: []string{clustergateway.ServerName}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, caCert, key.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	Expect(err).NotTo(HaveOccurred())

	a := &auditFront{ca: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	s := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a.mu.Lock()
			h := r.Header.Clone()
			h.Set("X-Test-Request-Uri", r.URL.RequestURI())
			a.seen = append(a.seen, h)
			a.mu.Unlock()
			next.ServeHTTP(w, r)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	a.addr = ln.Addr().String()
	go func() { _ = s.ServeTLS(ln, "", "") }()
	DeferCleanup(func() { _ = s.Close() })
	return a
}

func (a *auditFront) headers() []http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]http.Header(nil), a.seen...)
}

// metricValue is the value of the counter name with labels in the registry the hub serves,
// 0 when absent.
func metricValue(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
