package webhook_test

import (
	"bufio"
	"bytes"
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
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// echoProtocol is the Upgrade protocol of testAPI's echo: every byte sent comes back.
const echoProtocol = "echo.test.flotilla.dev"

// testAPI is an aggregated API for the specs, group <name>.test.flotilla.dev version v1:
//
//	GET /apis/<group>/v1                                     its APIResourceList
//	GET /apis/<group>/v1/namespaces/<ns>/echoes/<name>       the calling user (authentication/v1 UserInfo)
//	    /apis/<group>/v1/namespaces/<ns>/echoes/<name>/proxy Upgrade: echo.test.flotilla.dev, then echoes bytes
//
// It records the users it served.
type testAPI struct {
	group string
	mu    sync.Mutex
	users []authenticationv1.UserInfo
}

func newTestAPI(name string) *testAPI { return &testAPI{group: name + ".test.flotilla.dev"} }

func (t *testAPI) apiService() webhook.APIService {
	return webhook.APIService{Group: t.group, Version: "v1", Handler: t}
}

// seen is what the handler has served, in order.
func (t *testAPI) seen() []authenticationv1.UserInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]authenticationv1.UserInfo(nil), t.users...)
}

func (t *testAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		http.Error(w, "no user in the request context", http.StatusInternalServerError)
		return
	}
	info := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	for k, v := range u.GetExtra() {
		if info.Extra == nil {
			info.Extra = map[string]authenticationv1.ExtraValue{}
		}
		info.Extra[k] = v
	}
	t.mu.Lock()
	t.users = append(t.users, info)
	t.mu.Unlock()

	rest, _ := strings.CutPrefix(r.URL.Path, "/apis/"+t.group+"/v1")
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case rest == "" || rest == "/":
		writeJSON(w, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: t.group + "/v1",
			APIResources: []metav1.APIResource{
				{Name: "echoes", SingularName: "echo", Namespaced: true, Kind: "Echo", Verbs: []string{"get"}},
				{Name: "echoes/proxy", Namespaced: true, Kind: "Echo", Verbs: []string{"create", "get"}},
			},
		})
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == "echoes":
		writeJSON(w, &info)
	case len(parts) == 5 && parts[0] == "namespaces" && parts[2] == "echoes" && parts[4] == "proxy":
		echo(w, r)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// echo upgrades the connection to echoProtocol and sends back what it reads until the
// connection or the request context ends.
func echo(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), echoProtocol) {
		http.Error(w, "want Upgrade: "+echoProtocol, http.StatusBadRequest)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	stop := context.AfterFunc(r.Context(), func() { _ = conn.Close() })
	defer stop()
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + echoProtocol + "\r\n\r\n")
	if rw.Flush() != nil {
		return
	}
	_, _ = io.Copy(conn, rw.Reader)
}

// startAPI runs a Server named name serving api until the spec ends, then deletes what it
// wrote (its configuration, APIService and ExternalName Service).
func startAPI(name string, api *testAPI, opts webhook.Options) *running {
	GinkgoHelper()
	opts.ConfigurationName, opts.SecretName = name, name+"-certs"
	r := startWith(opts, func(srv *webhook.Server) { Expect(srv.RegisterAPIService(api.apiService())).To(Succeed()) })
	cleanupAPI(r, api)
	// Ready says the admission webhooks are in effect; the APIService is applied in the same
	// sync, right after.
	Eventually(func() error {
		_, err := caBundleOf(context.Background(), api.apiService().Name())
		return err
	}).WithTimeout(30*time.Second).Should(Succeed(), "APIService %s applied with its CA bundle", api.apiService().Name())
	return r
}

// cleanupAPI stops r when the spec ends and deletes its configuration, api's APIService (an
// unavailable one would make discovery of the API server fail for other specs) and the
// ExternalName Service.
func cleanupAPI(r *running, api *testAPI) {
	cleanup(r)
	DeferCleanup(func(ctx SpecContext) {
		err := dyn.Resource(apiServices).Delete(ctx, api.apiService().Name(), metav1.DeleteOptions{})
		Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "deleting APIService %s: %v", api.apiService().Name(), err)
		err = kube.CoreV1().Services(webhook.DefaultNamespace).Delete(ctx, r.ConfigurationName()+webhook.APIServiceSuffix, metav1.DeleteOptions{})
		Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "deleting the ExternalName Service: %v", err)
	})
}

// available is the Available condition of the APIService name: its status and message.
func available(ctx context.Context, name string) (string, string, error) {
	obj, err := dyn.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Available" {
			return fmt.Sprint(m["status"]), fmt.Sprintf("%v: %v", m["reason"], m["message"]), nil
		}
	}
	return "", "no Available condition", nil
}

// expectAvailable waits until the APIService of api is Available.
func expectAvailable(ctx context.Context, api *testAPI) {
	GinkgoHelper()
	Eventually(func(g Gomega, ctx context.Context) {
		status, msg, err := available(ctx, api.apiService().Name())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status).To(Equal("True"), "APIService %s not Available: %s", api.apiService().Name(), msg)
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "waiting for APIService %s to become Available", api.apiService().Name())
}

// getEcho GETs echo e1 of api in namespace default through the hub API server as cfg and
// returns the user the handler saw.
func getEcho(ctx context.Context, cfg *rest.Config, api *testAPI) (*authenticationv1.UserInfo, error) {
	data, err := kubernetes.NewForConfigOrDie(cfg).Discovery().RESTClient().Get().
		AbsPath("/apis", api.group, "v1", "namespaces", "default", "echoes", "e1").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	u := &authenticationv1.UserInfo{}
	return u, json.Unmarshal(data, u)
}

// caBundleOf is the APIService name's spec.caBundle.
func caBundleOf(ctx context.Context, name string) ([]byte, error) {
	obj, err := dyn.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
	if s == "" {
		return nil, fmt.Errorf("APIService %s has no caBundle", name)
	}
	var b []byte
	return b, json.Unmarshal([]byte(`"`+s+`"`), &b)
}

var _ = Describe("Aggregated APIs", func() {
	It("become Available through an ExternalName Service and get requests as the calling user", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		api := newTestAPI("whoami")
		srv := startAPI("apis-whoami", api, webhook.Options{})

		By("the APIService points at the ExternalName Service for the bound address")
		obj, err := dyn.Resource(apiServices).Get(ctx, api.apiService().Name(), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		svcRef, _, _ := unstructured.NestedMap(obj.Object, "spec", "service")
		port := int64(srv.Addr().(*net.TCPAddr).Port)
		Expect(svcRef).To(Equal(map[string]any{"namespace": webhook.DefaultNamespace, "name": "apis-whoami" + webhook.APIServiceSuffix, "port": port}))
		svc, err := kube.CoreV1().Services(webhook.DefaultNamespace).Get(ctx, "apis-whoami"+webhook.APIServiceSuffix, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(svc.Spec.ExternalName).To(Equal("127.0.0.1"))
		expectAvailable(ctx, api)

		By("a user with RBAC on echoes reaches the handler as themselves, groups and extra included")
		_, err = kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "apis-whoami-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{api.group}, Resources: []string{"echoes"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(kube.RbacV1().ClusterRoles().Delete(ctx, "apis-whoami-reader", metav1.DeleteOptions{})).To(Succeed())
		})
		_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "apis-whoami-readers"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "apis-whoami-reader"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "apis-whoami-team"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(kube.RbacV1().ClusterRoleBindings().Delete(ctx, "apis-whoami-readers", metav1.DeleteOptions{})).To(Succeed())
		})
		alice, err := hub.UserConfig("alice", "apis-whoami-team", "apis-whoami-other")
		Expect(err).NotTo(HaveOccurred())
		var seen *authenticationv1.UserInfo
		Eventually(func(ctx context.Context) (err error) {
			seen, err = getEcho(ctx, alice, api)
			return err
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "GET of an echo through the hub API server as alice")
		Expect(seen.Username).To(Equal("alice"))
		Expect(seen.Groups).To(ConsistOf("apis-whoami-team", "apis-whoami-other", "system:authenticated"))

		impersonated := rest.CopyConfig(hub.Config)
		impersonated.Impersonate = rest.ImpersonationConfig{
			UserName: "carol", Groups: []string{"apis-whoami-team"}, Extra: map[string][]string{"scopes": {"read", "list"}},
		}
		seen, err = getEcho(ctx, impersonated, api)
		Expect(err).NotTo(HaveOccurred())
		Expect(seen.Username).To(Equal("carol"))
		Expect(seen.Groups).To(ConsistOf("apis-whoami-team", "system:authenticated"))
		Expect(seen.Extra).To(HaveKeyWithValue("scopes", authenticationv1.ExtraValue{"read", "list"}))

		By("a user without RBAC is refused by the hub API server and never reaches the handler")
		bob, err := hub.UserConfig("bob", "apis-whoami-other")
		Expect(err).NotTo(HaveOccurred())
		_, err = getEcho(ctx, bob, api)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "bob's GET: %v", err)
		for _, u := range api.seen() {
			Expect(u.Username).NotTo(Equal("bob"))
		}
	})

	It("refuse requests without the front proxy's client certificate with 401", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		api := newTestAPI("certs")
		srv := startAPI("apis-certs", api, webhook.Options{})
		bundle, err := caBundleOf(ctx, api.apiService().Name())
		Expect(err).NotTo(HaveOccurred())
		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM(bundle)).To(BeTrue())

		// get GETs path on the server directly, as the aggregator would, with cert (none if
		// nil), verifying the server as the aggregator does.
		get := func(path string, cert *tls.Certificate) (int, string) {
			GinkgoHelper()
			cfg := &tls.Config{RootCAs: roots, ServerName: "apis-certs" + webhook.APIServiceSuffix + "." + webhook.DefaultNamespace + ".svc"}
			if cert != nil {
				cfg.Certificates = []tls.Certificate{*cert}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
			defer client.CloseIdleConnections()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+srv.Addr().String()+path, nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("X-Remote-User", "mallory")
			req.Header.Add("X-Remote-Group", "system:masters")
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		echoPath := "/apis/" + api.group + "/v1/namespaces/default/echoes/e1"

		By("no client certificate")
		code, body := get(echoPath, nil)
		Expect(code).To(Equal(http.StatusUnauthorized), body)
		Expect(body).To(ContainSubstring(`"reason":"Unauthorized"`))

		By("a client certificate of the cluster CA (the admin's)")
		admin, err := tls.X509KeyPair(hub.Config.CertData, hub.Config.KeyData)
		Expect(err).NotTo(HaveOccurred())
		code, body = get(echoPath, &admin)
		Expect(code).To(Equal(http.StatusUnauthorized), body)

		By("a certificate named front-proxy-client from another CA")
		forged := forgedFrontProxyCert()
		code, body = get(echoPath, &forged)
		Expect(code).To(Equal(http.StatusUnauthorized), body)
		code, body = get("/apis/"+api.group, &forged)
		Expect(code).To(Equal(http.StatusUnauthorized), "group discovery: %s", body)
		// (The aggregator's own discovery and availability checks do reach it.)
		Expect(api.seen()).NotTo(ContainElement(HaveField("Username", "mallory")), "a refused request reached the handler")

		By("the front proxy's own certificate gets through, as the user its headers name")
		frontProxy, err := tls.LoadX509KeyPair(filepath.Join(hub.Dir, "pki", "front-proxy-client.crt"), filepath.Join(hub.Dir, "pki", "front-proxy-client.key"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int {
			code, body = get(echoPath, &frontProxy)
			return code
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(http.StatusOK), "GET with the front-proxy certificate: %s", body)
		Expect(body).To(ContainSubstring(`"username":"mallory"`))
		code, body = get("/apis/"+api.group, &frontProxy)
		Expect(code).To(Equal(http.StatusOK), body)
		Expect(body).To(MatchJSON(`{"kind":"APIGroup","apiVersion":"v1","name":"` + api.group + `",
			"versions":[{"groupVersion":"` + api.group + `/v1","version":"v1"}],
			"preferredVersion":{"groupVersion":"` + api.group + `/v1","version":"v1"}}`))

		By("webhook paths are as before: the probe answers an AdmissionReview, not 401")
		code, body = get("/probe", &admin)
		Expect(code).NotTo(Equal(http.StatusUnauthorized), body)
	})

	It("pass upgraded connections through the hub API server for over a minute", SpecTimeout(3*time.Minute), func(ctx SpecContext) {
		api := newTestAPI("echo")
		startAPI("apis-echo", api, webhook.Options{})
		expectAvailable(ctx, api)

		tlsConfig, err := rest.TLSConfigFor(hub.Config)
		Expect(err).NotTo(HaveOccurred())
		tlsConfig.NextProtos = []string{"http/1.1"}
		u, err := url.Parse(hub.URL)
		Expect(err).NotTo(HaveOccurred())
		path := "/apis/" + api.group + "/v1/namespaces/default/echoes/e1/proxy"
		var conn *tls.Conn
		var br *bufio.Reader
		// The aggregator answers 503 until it has picked up the Available APIService.
		Eventually(func(ctx context.Context) error {
			c, err := (&tls.Dialer{Config: tlsConfig}).DialContext(ctx, "tcp", u.Host)
			if err != nil {
				return err
			}
			_, _ = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nContent-Length: 0\r\n\r\n", path, u.Host, echoProtocol)
			r := bufio.NewReader(c)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				c.Close()
				return err
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				c.Close()
				return fmt.Errorf("upgrade: %s: %s", resp.Status, body)
			}
			conn, br = c.(*tls.Conn), r
			return nil
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "upgrading %s through the hub API server", path)
		DeferCleanup(func() { _ = conn.Close() })
		Expect(api.seen()).To(ContainElement(HaveField("Username", environment.AdminUser)), "the upgrade request did not carry the calling user")

		By("bytes round-trip, with idle gaps, for more than 60 seconds")
		start := time.Now()
		for i := 0; time.Since(start) < 65*time.Second; i++ {
			msg := fmt.Sprintf("ping %d at %s\n", i, time.Since(start).Round(time.Millisecond))
			Expect(conn.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
			_, err := io.WriteString(conn, msg)
			Expect(err).NotTo(HaveOccurred(), "writing round %d, %s after the upgrade", i, time.Since(start))
			line, err := br.ReadString('\n')
			Expect(err).NotTo(HaveOccurred(), "reading round %d, %s after the upgrade", i, time.Since(start))
			Expect(line).To(Equal(msg))
			// Idle on purpose: a timeout anywhere on the path would cut the connection.
			select {
			case <-ctx.Done():
				Fail("spec deadline while the connection was idle")
			case <-time.After(13 * time.Second):
			}
		}
	})

	It("follow CA rotation in the APIService's caBundle", SpecTimeout(3*time.Minute), func(ctx SpecContext) {
		api := newTestAPI("rotation")
		opts := webhook.Options{
			// As the certificate rotation spec: the CA lives 33s and is replaced about 20s in.
			CertLifetime: 10 * time.Second, CALifetime: 30 * time.Second, RenewalFraction: 0.3, ResyncPeriod: 500 * time.Millisecond,
		}
		startAPI("apis-rotation", api, opts)
		expectAvailable(ctx, api)
		first, err := caBundleOf(ctx, api.apiService().Name())
		Expect(err).NotTo(HaveOccurred())
		Expect(countCerts(first)).To(Equal(1))

		secretBundle := func(ctx context.Context) []byte {
			s, err := kube.CoreV1().Secrets(webhook.DefaultNamespace).Get(ctx, "apis-rotation-certs", metav1.GetOptions{})
			if err != nil {
				return nil
			}
			return s.Data[webhook.SecretCABundleKey]
		}
		By("the new CA joins the caBundle while the old one is still valid")
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := caBundleOf(ctx, api.apiService().Name())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(countCerts(b)).To(Equal(2))
			g.Expect(b).To(Equal(secretBundle(ctx)))
		}).WithContext(ctx).WithTimeout(60*time.Second).Should(Succeed(), "waiting for the rotated CA in APIService %s", api.apiService().Name())

		By("the old CA leaves it once expired, and requests through the aggregator still work")
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := caBundleOf(ctx, api.apiService().Name())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(countCerts(b)).To(Equal(1))
			g.Expect(bytes.Contains(b, first)).To(BeFalse(), "the old CA is still the bundle")
			g.Expect(b).To(Equal(secretBundle(ctx)))
		}).WithContext(ctx).WithTimeout(60*time.Second).Should(Succeed(), "waiting for the old CA to leave APIService %s", api.apiService().Name())
		Eventually(func(ctx context.Context) error {
			_, err := getEcho(ctx, hub.Config, api)
			return err
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "GET through the hub API server after the CA rotation")
		expectAvailable(ctx, api)
	})

	It("point at the Service in front of the server when one is set", SpecTimeout(time.Minute), func(ctx SpecContext) {
		api := newTestAPI("service")
		opts := webhook.Options{
			ConfigurationName: "apis-service", SecretName: "apis-service-certs", Logger: logger.WithName("webhook"),
			Service: &webhook.ServiceReference{Namespace: webhook.DefaultNamespace, Name: "apis-service-hub", Port: 443},
		}
		srv, err := webhook.New(hubConf, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(srv.RegisterAPIService(api.apiService())).To(Succeed())
		// Not Ready: no API server reaches a Service without endpoints.
		cleanupAPI(run(srv), api)
		Eventually(func(g Gomega, ctx context.Context) {
			obj, err := dyn.Resource(apiServices).Get(ctx, api.apiService().Name(), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			svcRef, _, _ := unstructured.NestedMap(obj.Object, "spec", "service")
			g.Expect(svcRef).To(Equal(map[string]any{"namespace": webhook.DefaultNamespace, "name": "apis-service-hub", "port": int64(443)}))
			prio, _, _ := unstructured.NestedInt64(obj.Object, "spec", "groupPriorityMinimum")
			g.Expect(prio).To(Equal(int64(webhook.APIServiceGroupPriorityMinimum)))
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "waiting for APIService %s", api.apiService().Name())
		_, err = kube.CoreV1().Services(webhook.DefaultNamespace).Get(ctx, "apis-service"+webhook.APIServiceSuffix, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an ExternalName Service was created with a Service set: %v", err)

		By("a deleted APIService is restored, and so is a tampered caBundle")
		name := api.apiService().Name()
		before, err := dyn.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		bundle, err := caBundleOf(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(dyn.Resource(apiServices).Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			obj, err := dyn.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(obj.GetUID()).NotTo(Equal(before.GetUID()))
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "waiting for APIService %s to be created again", name)
		_, err = dyn.Resource(apiServices).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"caBundle":null,"insecureSkipTLSVerify":true}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(ctx context.Context) ([]byte, error) {
			return caBundleOf(ctx, name)
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(bundle), "waiting for the caBundle of APIService %s to be restored", name)
	})

	It("are checked when registered", func() {
		srv, err := webhook.New(hubConf, webhook.Options{ConfigurationName: "apis-invalid"})
		Expect(err).NotTo(HaveOccurred())
		h := http.NotFoundHandler()
		Expect(srv.RegisterAPIService(webhook.APIService{Group: "nodots", Version: "v1", Handler: h})).To(MatchError(ContainSubstring(`group "nodots"`)))
		Expect(srv.RegisterAPIService(webhook.APIService{Group: "a.example.com", Version: "1", Handler: h})).To(MatchError(ContainSubstring(`version "1"`)))
		Expect(srv.RegisterAPIService(webhook.APIService{Group: "a.example.com", Version: "v1"})).To(MatchError(ContainSubstring("no handler")))
		Expect(srv.RegisterAPIService(webhook.APIService{Group: "a.example.com", Version: "v1", Handler: h})).To(Succeed())
		Expect(srv.RegisterAPIService(webhook.APIService{Group: "a.example.com", Version: "v1", Handler: h})).To(MatchError(ContainSubstring("already registered")))

		v6, err := webhook.New(hubConf, webhook.Options{ConfigurationName: "apis-invalid", BindAddress: "[::1]:0"})
		Expect(err).NotTo(HaveOccurred())
		Expect(v6.RegisterAPIService(webhook.APIService{Group: "a.example.com", Version: "v1", Handler: h})).To(MatchError(ContainSubstring(`"::1"`)))
	})
})

// forgedFrontProxyCert is a client certificate named front-proxy-client from a CA the API
// server does not know.
func forgedFrontProxyCert() tls.Certificate {
	GinkgoHelper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "forged-front-proxy-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	ca, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "front-proxy-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, key.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	Expect(err).NotTo(HaveOccurred())
	return cert
}
