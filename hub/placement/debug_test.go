package placement

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

func TestParseDebugPath(t *testing.T) {
	for path, want := range map[string]string{
		"/debug/placements/default/placement1": "default/placement1",
		"/debug/placements/ns/a.b-c":           "ns/a.b-c",
		"/debug/placements/":                   "",
		"/debug/placements/default":            "",
		"/debug/placements/default/":           "",
		"/debug/placements//p":                 "",
		"/debug/placements/a/b/c":              "",
		"/debug/placements/Upper/p":            "",
		"/debug/placements/ns/p_q":             "",
	} {
		ns, name, err := parseDebugPath(path)
		got := ""
		if err == nil {
			got = ns + "/" + name
		}
		if got != want {
			t.Errorf("parseDebugPath(%q) = %q (%v), want %q", path, got, err, want)
		}
	}
}

// debugHTTP is a client of the debug server, which serves a self-signed certificate
// (curl -k).
var debugHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a self-signed certificate, as curl -k
}}

// debugGet requests path from base with token (none: anonymous).
func debugGet(ctx context.Context, base, path, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := debugHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// awaitStatus polls until path answers code and check (when set) accepts the body.
func awaitStatus(t *testing.T, ctx context.Context, base, path, token string, code int, check func([]byte) error) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last string
	for {
		got, body, err := debugGet(ctx, base, path, token)
		switch {
		case err != nil:
			last = err.Error()
		case got != code:
			last = fmt.Sprintf("status %d: %s", got, body)
		case check != nil:
			if err := check(body); err != nil {
				last = fmt.Sprintf("status %d: %v: %s", got, err, body)
				break
			}
			return body
		default:
			return body
		}
		select {
		case <-ctx.Done():
			t.Fatalf("GET %s: want status %d, last answer: %s", path, code, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestDebugServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	// Informers may still log after the manager stopped: not into a finished test.
	var logMu sync.Mutex
	finished := false
	t.Cleanup(func() { logMu.Lock(); finished = true; logMu.Unlock() })
	logger := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		if !finished {
			t.Log(prefix, args)
		}
	}, funcr.Options{Verbosity: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "hub", AllCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	scheme := runtime.NewScheme()
	if err := apischeme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	skip := true
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme: scheme, Logger: logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	constant := func(v int64) scheduler.Prioritizer {
		return scheduler.PrioritizerFunc(func(_ context.Context, req *scheduler.ScoreRequest) ([]int64, error) {
			out := make([]int64, len(req.Clusters))
			for i := range out {
				out[i] = v
			}
			return out, nil
		})
	}
	r := &Reconciler{Client: mgr.GetClient(), Scheduler: &scheduler.Scheduler{Native: map[string]scheduler.Prioritizer{
		clusterv1beta1.PrioritizerBalance: constant(100),
		clusterv1beta1.PrioritizerSteady:  constant(0),
	}}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	srv, err := NewDebugServer(cp.Config, r, DebugOptions{BindAddress: "127.0.0.1:0", Logger: logger.WithName("debug"),
		AllowCacheTTL: -1, DenyCacheTTL: -1, TokenCacheTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(srv); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("manager stopped: %v", err)
	case <-ctx.Done():
		t.Fatal("the debug server did not start")
	}
	base := "https://" + srv.Addr().String()

	// The fleet: prod1 and prod2 in the bound set, dev1 in it too (filtered by the
	// predicate), other1 in an unbound set.
	const ns, set = "debug", "debug-set"
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "other-set"}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}},
	}
	for name, labels := range map[string]map[string]string{
		"prod1":  {clusterv1beta2.ClusterSetLabel: set, "env": "prod"},
		"prod2":  {clusterv1beta2.ClusterSetLabel: set, "env": "prod"},
		"dev1":   {clusterv1beta2.ClusterSetLabel: set, "env": "dev"},
		"other1": {clusterv1beta2.ClusterSetLabel: "other-set", "env": "prod"},
	} {
		objs = append(objs, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
	}
	objs = append(objs, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "placement1"},
		Spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{{
			RequiredClusterSelector: clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		}}}})
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}

	const path = "/debug/placements/" + ns + "/placement1"
	wantBody := func(body []byte) error {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			return err
		}
		for k := range raw {
			if k != "filteredPiplieResults" && k != "prioritizeResults" && k != "scores" {
				return fmt.Errorf("unexpected key %q", k)
			}
		}
		var got struct {
			Filters []struct {
				Name     string   `json:"name"`
				Clusters []string `json:"filteredClusters"`
			} `json:"filteredPiplieResults"`
			Prioritizers []struct {
				Name   string           `json:"name"`
				Weight int32            `json:"weight"`
				Scores map[string]int64 `json:"scores"`
			} `json:"prioritizeResults"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			return err
		}
		if _, ok := raw["filteredPiplieResults"]; !ok {
			return errors.New("no filteredPiplieResults")
		}
		if _, ok := raw["prioritizeResults"]; !ok {
			return errors.New("no prioritizeResults")
		}
		want := []string{"prod1", "prod2"}
		if len(got.Filters) != 2 || got.Filters[0].Name != "Predicate" || got.Filters[1].Name != "Predicate,TaintToleration" {
			return fmt.Errorf("filter stages %+v", got.Filters)
		}
		for _, f := range got.Filters {
			if !slices.Equal(f.Clusters, want) {
				return fmt.Errorf("stage %s kept %v, want %v", f.Name, f.Clusters, want)
			}
		}
		var names []string
		for _, p := range got.Prioritizers {
			names = append(names, p.Name)
			if p.Weight != 1 || len(p.Scores) != 2 {
				return fmt.Errorf("prioritizer %+v", p)
			}
		}
		if !slices.Equal(names, []string{"Balance", "Steady"}) {
			return fmt.Errorf("prioritizers %v", names)
		}
		if got.Prioritizers[0].Scores["prod1"] != 100 || got.Prioritizers[1].Scores["prod2"] != 0 {
			return fmt.Errorf("scores %+v", got.Prioritizers)
		}
		return nil
	}
	contains := func(s string) func([]byte) error {
		return func(body []byte) error {
			if !strings.Contains(string(body), s) {
				return fmt.Errorf("body lacks %q", s)
			}
			return nil
		}
	}

	// Anonymous, without RBAC: forbidden, and told who it is.
	awaitStatus(t, ctx, base, path, "", http.StatusForbidden, contains("system:anonymous"))
	// A token the API server rejects: unauthorized.
	awaitStatus(t, ctx, base, path, "not-a-token", http.StatusUnauthorized, nil)

	// A ServiceAccount token: authenticated, forbidden until granted.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "debug-reader"}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token
	saUser := "system:serviceaccount:" + ns + ":debug-reader"
	awaitStatus(t, ctx, base, path, token, http.StatusForbidden, contains(saUser))

	// The seeds' role: get on /debug/*.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "debugger"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/debug/*"}}}}
	if err := c.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	bind := func(name string, subject rbacv1.Subject) {
		t.Helper()
		b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{subject}}
		if err := c.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	bind("debugger-sa", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name})
	body := awaitStatus(t, ctx, base, path, token, http.StatusOK, wantBody)
	t.Logf("answer: %s", body)
	// The grant is the ServiceAccount's only.
	awaitStatus(t, ctx, base, path, "", http.StatusForbidden, contains("system:anonymous"))

	// kubectl create clusterrolebinding debugger --clusterrole=debugger --user=system:anonymous
	bind("debugger", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "system:anonymous"})
	awaitStatus(t, ctx, base, path, "", http.StatusOK, wantBody)

	// Unknown placements and malformed paths.
	awaitStatus(t, ctx, base, "/debug/placements/"+ns+"/missing", "", http.StatusNotFound, contains("placement debug/missing not found"))
	awaitStatus(t, ctx, base, "/debug/placements/nowhere/placement1", "", http.StatusNotFound, nil)
	awaitStatus(t, ctx, base, "/debug/placements/"+ns, "", http.StatusBadRequest, contains("<namespace>/<name>"))
	awaitStatus(t, ctx, base, "/debug/placements/a/b/c", "", http.StatusBadRequest, nil)
}
