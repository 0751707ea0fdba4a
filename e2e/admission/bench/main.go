// Command bench measures the hub's execute-as admission decision as the API server gets it: it
// starts a hub API server (with the CRDs), serves the hub's policy admission (hub/admission's
// Handler over the embedded policies, with a sarcache.Cache over the API server's
// SubjectAccessReviews, built as hub/manager builds it) from a real hub/webhook Server, and
// POSTs admission.k8s.io/v1 AdmissionReviews for a ManifestWork CREATE with an executor, one at
// a time over one keep-alive HTTPS connection that trusts the server's CA (from its Secret).
// The user has the execute-as permission through a Role and RoleBinding; every answer must
// allow, and a user without the grant must be denied.
//
// For comparison the same Server serves a second handler that does what OCM's ManifestWork
// webhook does: decode the ManifestWork and make one SubjectAccessReview per request. It is
// registered with rules nobody's requests match, since only this program calls it.
//
// The last line is
//
//	admission-execute-as p50_us=<policy webhook, median> p99_us=<…> sar_baseline_p50_us=<one SAR per request, median>
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/core/sarcache"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
	"github.com/flotilla-dev/flotilla/hub/admission"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

const (
	clusterName = "cluster1" // the ManifestWork's namespace, a ManagedCluster's
	workName    = "bench-work"
	executorNS  = "default" // on the managed cluster
	executorSA  = "bench-executor"
	grantedUser = "bench-granted"
	deniedUser  = "bench-denied"

	baselineName = "sar-baseline.bench.flotilla.dev"
	baselinePath = "/bench/sar-baseline"
)

var executorUsername = "system:serviceaccount:" + executorNS + ":" + executorSA

func main() {
	requests := flag.Int("requests", 2000, "measured requests per handler")
	warmup := flag.Int("warmup", 200, "requests per handler before measuring")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	verbose := flag.Bool("v", false, "log the webhook server and control plane progress to stderr")
	flag.Parse()
	if *requests < 1 || *warmup < 0 {
		fmt.Fprintln(os.Stderr, "bench-admission: -requests must be positive and -warmup not negative")
		os.Exit(2)
	}
	ctx, cancel := benchenv.Context(*timeout)
	defer cancel()
	line, err := run(ctx, *requests, *warmup, *verbose)
	if err != nil {
		benchenv.Exit("bench-admission", err)
	}
	fmt.Println(line)
}

func run(ctx context.Context, requests, warmup int, verbose bool) (line string, err error) {
	logw := benchenv.Log(verbose)
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(logw, prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(logger)

	fmt.Fprintln(os.Stderr, "starting the hub control plane")
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true, Log: logw})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()

	// The hub's client, without client-side throttling: the baseline makes one
	// SubjectAccessReview per request, which a token bucket would slow to its rate instead of
	// the API server's.
	hubCfg := *cp.Config
	hubCfg.QPS = -1
	kube, err := kubernetes.NewForConfig(&hubCfg)
	if err != nil {
		return "", err
	}
	// Every SubjectAccessReview either handler makes is counted, to show the cache at work.
	sars := &countingReviewer{next: kube.AuthorizationV1().SubjectAccessReviews()}
	if err := seed(ctx, kube, cp); err != nil {
		return "", err
	}

	runCtx, stopAll := context.WithCancel(ctx)
	defer stopAll()

	// IsClusterNamespace reads ManagedClusters from an informer cache, as the hub's manager
	// client does.
	scheme, err := manager.NewScheme()
	if err != nil {
		return "", err
	}
	clusters, err := cache.New(&hubCfg, cache.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- clusters.Start(runCtx) }()
	defer func() { stopAll(); err = errors.Join(err, <-cacheDone) }()
	if !clusters.WaitForCacheSync(ctx) {
		return "", fmt.Errorf("informer cache not started: %w", ctx.Err())
	}
	if err := clusters.Get(ctx, client.ObjectKey{Name: clusterName}, &clusterv1.ManagedCluster{}); err != nil {
		return "", fmt.Errorf("ManagedCluster %s from the cache: %w", clusterName, err)
	}

	handler, err := policyHandler(ctx, &hubCfg, kube, sars, clusters, logger.WithName("admission"))
	if err != nil {
		return "", err
	}
	srv, err := webhook.New(&hubCfg, webhook.Options{Logger: logger.WithName("webhook")})
	if err != nil {
		return "", err
	}
	if err := srv.Register(handler); err != nil {
		return "", err
	}
	if err := srv.Register(newBaseline(sars)); err != nil {
		return "", err
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Start(runCtx) }()
	defer func() { stopAll(); err = errors.Join(err, <-srvDone) }()
	fmt.Fprintln(os.Stderr, "waiting for the webhook server to be in effect")
	select {
	case <-srv.Ready():
	case err := <-srvDone:
		srvDone <- err
		return "", fmt.Errorf("webhook server stopped: %w", err)
	case <-ctx.Done():
		return "", fmt.Errorf("webhook server not ready: %w", ctx.Err())
	}

	c, err := newClient(ctx, kube, srv.Addr())
	if err != nil {
		return "", err
	}

	// The grant must be in the API server's authorizer before the first request: a denial would
	// be cached (for DeniedTTL) and the warm-up would see it.
	if err := awaitGrant(ctx, kube); err != nil {
		return "", err
	}

	// Neither handler may pass by allowing everything.
	for _, path := range []string{admission.Path, baselinePath} {
		allowed, msg, _, err := c.review(ctx, path, deniedUser)
		if err != nil {
			return "", err
		}
		if allowed {
			return "", fmt.Errorf("%s allowed %s, who has no execute-as grant", path, deniedUser)
		}
		fmt.Fprintf(os.Stderr, "%s denies %s: %s\n", path, deniedUser, msg)
	}

	fmt.Fprintf(os.Stderr, "%d warm-up and %d measured requests per handler, one at a time\n", warmup, requests)
	policyLat, policySARs, err := c.measure(ctx, admission.Path, warmup, requests, sars)
	if err != nil {
		return "", err
	}
	baseLat, baseSARs, err := c.measure(ctx, baselinePath, warmup, requests, sars)
	if err != nil {
		return "", err
	}
	inProcess, allocs, err := handleDirectly(ctx, c, handler, requests)
	if err != nil {
		return "", err
	}
	if c.conns != 1 {
		fmt.Fprintf(os.Stderr, "note: %d TLS connections dialled (with keep-alive, 1 expected)\n", c.conns)
	}
	p := summarize(policyLat)
	b := summarize(baseLat)
	fmt.Printf("policy webhook (cached SAR):  %s subject_access_reviews=%d\n", p, policySARs)
	fmt.Printf("baseline (one SAR a request): %s subject_access_reviews=%d\n", b, baseSARs)
	fmt.Printf("policy Handler.Handle called in-process (no HTTP, TLS or JSON of the review): %s %s\n", summarize(inProcess), allocs)
	return fmt.Sprintf("admission-execute-as p50_us=%d p99_us=%d sar_baseline_p50_us=%d", p.p50, p.p99, b.p50), nil
}

// seed creates the cluster namespace and ManagedCluster, and grants grantedUser execute-as on
// the executor with a Role and RoleBinding in it.
func seed(ctx context.Context, kube kubernetes.Interface, cp *environment.ControlPlane) error {
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterName}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace %s: %w", clusterName, err)
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		return err
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: clusterName}}); err != nil {
		return fmt.Errorf("ManagedCluster %s: %w", clusterName, err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterName, Name: "bench-execute-as"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{workv1.GroupVersion.Group}, Resources: []string{"manifestworks"},
			Verbs: []string{"execute-as"}, ResourceNames: []string{executorUsername},
		}},
	}
	if _, err := kube.RbacV1().Roles(clusterName).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("role: %w", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterName, Name: "bench-execute-as"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: grantedUser}},
	}
	if _, err := kube.RbacV1().RoleBindings(clusterName).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("role binding: %w", err)
	}
	return nil
}

func executeAs(namespace, name string) policy.Attributes {
	return policy.Attributes{Verb: "execute-as", Group: workv1.GroupVersion.Group, Resource: "manifestworks", Namespace: namespace, Name: name}
}

// awaitGrant waits until a SubjectAccessReview allows grantedUser.
func awaitGrant(ctx context.Context, kube kubernetes.Interface) error {
	user := policy.UserInfo{Username: grantedUser, Groups: []string{"system:authenticated"}}
	for {
		ok, err := policy.Review(ctx, kube.AuthorizationV1().SubjectAccessReviews(), user, executeAs(clusterName, executorUsername))
		if err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("execute-as grant to %s not in effect (last error %v): %w", grantedUser, err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// policyHandler is the hub's policy admission as hub/manager builds it (admission.New over a
// sarcache.Cache), its Loader run once rather than as a controller: no policy ConfigMap exists,
// so the embedded defaults are the set in force. RBAC is seeded before it is built and not
// changed after, so it needs no RBACWatch.
func policyHandler(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, sars policy.SubjectAccessReviewer, clusters client.Reader, log logr.Logger) (*admission.Handler, error) {
	gates, err := manager.NewFeatureGate()
	if err != nil {
		return nil, err
	}
	cached, err := sarcache.New(sarcache.Options{Reviews: sars, Name: "admission"})
	if err != nil {
		return nil, err
	}
	h, l, err := admission.New(admission.Options{
		Reviews: cached, WhoAmI: admission.WhoAmI(kube), Clusters: clusters, FeatureGates: gates, Logger: log,
	})
	if err != nil {
		return nil, err
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	l.Reader, l.Client, l.Recorder = c, c, events.NewFakeRecorder(10)
	if _, err := l.Reconcile(ctx, reconcile.Request{}); err != nil {
		return nil, fmt.Errorf("loading the policies: %w", err)
	}
	return h, nil
}

// baseline answers execute-as as OCM's ManifestWork webhook does: decode the work, one
// SubjectAccessReview for its executor, no cache.
type baseline struct {
	decoder ctrladmission.Decoder
	reviews policy.SubjectAccessReviewer
}

var _ webhook.Validating = (*baseline)(nil)

func newBaseline(sars policy.SubjectAccessReviewer) *baseline {
	scheme := runtime.NewScheme()
	_ = workv1.AddToScheme(scheme) // a static type list
	return &baseline{decoder: ctrladmission.NewDecoder(scheme), reviews: sars}
}

// countingReviewer counts the SubjectAccessReviews it passes on.
type countingReviewer struct {
	next policy.SubjectAccessReviewer
	n    atomic.Int64
}

func (c *countingReviewer) Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	c.n.Add(1)
	return c.next.Create(ctx, sar, opts)
}

// Registration matches a resource of a group nobody serves: the API server never calls it.
func (b *baseline) Registration() webhook.Registration {
	scope := admissionregistrationv1.AllScopes
	return webhook.Registration{
		Name: baselineName, Path: baselinePath,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{"bench.flotilla.dev"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}, Scope: &scope,
			},
		}},
		FailurePolicy:  admissionregistrationv1.Ignore,
		TimeoutSeconds: admission.TimeoutSeconds,
	}
}

func (b *baseline) Handle(ctx context.Context, req ctrladmission.Request) ctrladmission.Response {
	work := &workv1.ManifestWork{}
	if err := b.decoder.DecodeRaw(req.Object, work); err != nil {
		return ctrladmission.Errored(http.StatusBadRequest, err)
	}
	e := work.Spec.Executor
	if e == nil || e.Subject.ServiceAccount == nil {
		return ctrladmission.Allowed("")
	}
	sa := e.Subject.ServiceAccount
	name := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	extra := map[string][]string{}
	for k, v := range req.UserInfo.Extra {
		extra[k] = v
	}
	user := policy.UserInfo{Username: req.UserInfo.Username, UID: req.UserInfo.UID, Groups: req.UserInfo.Groups, Extra: extra}
	ok, err := policy.Review(ctx, b.reviews, user, executeAs(req.Namespace, name))
	if err != nil {
		return ctrladmission.Errored(http.StatusInternalServerError, err)
	}
	if !ok {
		return ctrladmission.Denied(fmt.Sprintf("user %s cannot manipulate the ManifestWork with executor %s/%s in namespace %s",
			req.UserInfo.Username, sa.Namespace, sa.Name, req.Namespace))
	}
	return ctrladmission.Allowed("")
}

// benchClient POSTs AdmissionReviews to the webhook server as the API server does.
type benchClient struct {
	http  *http.Client
	base  string
	work  []byte // the ManifestWork, JSON
	conns int    // TLS connections dialled
}

// newClient trusts the CA bundle the Server wrote to its Secret (as the API server trusts the
// caBundle of the configuration) and keeps one connection alive.
func newClient(ctx context.Context, kube kubernetes.Interface, addr net.Addr) (*benchClient, error) {
	secret, err := kube.CoreV1().Secrets(webhook.DefaultNamespace).Get(ctx, webhook.DefaultSecretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("webhook certificate Secret: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data[webhook.SecretCABundleKey]) {
		return nil, fmt.Errorf("webhook certificate Secret: no CA in %s", webhook.SecretCABundleKey)
	}
	c := &benchClient{base: "https://" + addr.String()}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	c.http = &http.Client{
		Timeout: admission.TimeoutSeconds * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
				c.conns++
				return dialer.DialContext(ctx, network, address)
			},
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     time.Minute,
		},
	}
	work := &workv1.ManifestWork{
		TypeMeta:   metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterName, Name: workName},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
				Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"bench"},"data":{"key":"value"}}`),
			}}}},
			Executor: &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
				Type:           workv1.ExecutorSubjectTypeServiceAccount,
				ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: executorNS, Name: executorSA},
			}},
		},
	}
	if c.work, err = json.Marshal(work); err != nil {
		return nil, err
	}
	return c, nil
}

// body is an AdmissionReview of a CREATE of the work by user, as the API server sends it.
func (c *benchClient) body(user string) ([]byte, types.UID, error) {
	uid := uuid.NewUUID()
	gvk := metav1.GroupVersionKind{Group: workv1.GroupVersion.Group, Version: workv1.GroupVersion.Version, Kind: "ManifestWork"}
	gvr := metav1.GroupVersionResource{Group: workv1.GroupVersion.Group, Version: workv1.GroupVersion.Version, Resource: "manifestworks"}
	dryRun := false
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: uid, Kind: gvk, Resource: gvr, RequestKind: &gvk, RequestResource: &gvr,
			Name: workName, Namespace: clusterName, Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}},
			Object:   runtime.RawExtension{Raw: c.work},
			Options:  runtime.RawExtension{Raw: []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}`)},
			DryRun:   &dryRun,
		},
	}
	b, err := json.Marshal(review)
	return b, uid, err
}

// review sends one request and reports the answer and the time from sending it to having read
// the response.
func (c *benchClient) review(ctx context.Context, path, user string) (allowed bool, msg string, took time.Duration, err error) {
	body, uid, err := c.body(user)
	if err != nil {
		return false, "", 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return false, "", 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return false, "", 0, fmt.Errorf("POST %s: %w", path, err)
	}
	out, err := io.ReadAll(resp.Body)
	took = time.Since(start)
	_ = resp.Body.Close()
	if err != nil {
		return false, "", 0, fmt.Errorf("POST %s: reading the answer: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, "", 0, fmt.Errorf("POST %s: %s: %s", path, resp.Status, out)
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &answer); err != nil {
		return false, "", 0, fmt.Errorf("POST %s: answer: %w", path, err)
	}
	r := answer.Response
	if r == nil || r.UID != uid {
		return false, "", 0, fmt.Errorf("POST %s: answer without a response for request %s: %s", path, uid, out)
	}
	if r.Result != nil {
		msg = r.Result.Message
	}
	return r.Allowed, msg, took, nil
}

// measure sends warmup then n requests by grantedUser, each of which must be allowed, and
// returns the latencies of the n and the SubjectAccessReviews made meanwhile.
func (c *benchClient) measure(ctx context.Context, path string, warmup, n int, sars *countingReviewer) ([]time.Duration, int64, error) {
	lat := make([]time.Duration, 0, n)
	var before int64
	for i := range warmup + n {
		if i == warmup {
			before = sars.n.Load()
		}
		allowed, msg, took, err := c.review(ctx, path, grantedUser)
		if err != nil {
			return nil, 0, err
		}
		if !allowed {
			return nil, 0, fmt.Errorf("%s denied request %d of %s, who has the execute-as grant: %s", path, i+1, grantedUser, msg)
		}
		if i >= warmup {
			lat = append(lat, took)
		}
	}
	return lat, sars.n.Load() - before, nil
}

// handleDirectly calls h.Handle n times with the request the client sends, for the share of
// the policy evaluation in the webhook's latency; it also reports the process's allocations per
// call (the handler's, plus what the idle informers and server allocate meanwhile).
func handleDirectly(ctx context.Context, c *benchClient, h *admission.Handler, n int) ([]time.Duration, string, error) {
	body, _, err := c.body(grantedUser)
	if err != nil {
		return nil, "", err
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, "", err
	}
	req := ctrladmission.Request{AdmissionRequest: *review.Request}
	lat := make([]time.Duration, 0, n)
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for range n {
		start := time.Now()
		resp := h.Handle(ctx, req)
		lat = append(lat, time.Since(start))
		if !resp.Allowed {
			return nil, "", fmt.Errorf("in-process Handle denied %s: %v", grantedUser, resp.Result)
		}
	}
	goruntime.ReadMemStats(&after)
	allocs := fmt.Sprintf("allocs_per_call=%d bytes_per_call=%d gc_cycles=%d",
		(after.Mallocs-before.Mallocs)/uint64(n), (after.TotalAlloc-before.TotalAlloc)/uint64(n), after.NumGC-before.NumGC)
	return lat, allocs, nil
}

type summary struct {
	n                          int
	p50, p90, p99, max, meanUS int64
}

func (s summary) String() string {
	return "n=" + strconv.Itoa(s.n) + fmt.Sprintf(" p50_us=%d p90_us=%d p99_us=%d max_us=%d mean_us=%d", s.p50, s.p90, s.p99, s.max, s.meanUS)
}

// summarize takes nearest-rank percentiles, in microseconds.
func summarize(lat []time.Duration) summary {
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) int64 {
		i := int(float64(len(s))*p+0.999999) - 1
		i = max(0, min(i, len(s)-1))
		return s[i].Microseconds()
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return summary{
		n: len(s), p50: rank(0.50), p90: rank(0.90), p99: rank(0.99), max: s[len(s)-1].Microseconds(),
		meanUS: (sum / time.Duration(len(s))).Microseconds(),
	}
}
