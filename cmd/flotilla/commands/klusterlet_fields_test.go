package commands

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKlusterletFieldFlags checks that each Klusterlet-field flag reaches the agent's options,
// the external servers with their CA files, the host alias as the hub dialer, and
// --kube-api-qps/--kube-api-burst as the managed config's rate limit (a counting RoundTripper
// sees exactly the burst when the QPS grants no further token during the test).
func TestKlusterletFieldFlags(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, []byte("ca-a"), 0o600); err != nil {
		t.Fatal(err)
	}
	var (
		opts   klusterlet.Options
		fields klusterletFieldFlags
	)
	var dialed []string
	opts.Registration.HubDial = func(_ context.Context, _, address string) (net.Conn, error) {
		dialed = append(dialed, address)
		return nil, nil
	}
	f := pflag.NewFlagSet("klusterlet", pflag.ContinueOnError)
	fields.add(f, &opts)
	if err := f.Parse([]string{
		"--cluster-annotations", "agent.open-cluster-management.io/owner=a,example.com/x=y",
		"--cluster-labels", "env=test",
		"--external-server-urls", "https://a.example.com:6443=" + caFile + ",https://b.example.com",
		"--reserved-cluster-claim-suffixes", ".infra.example.com,.team.example.com",
		"--hosting-cluster-claim", "management-1",
		"--hub-host-alias", "hub.example.com=10.0.0.7",
		"--kube-api-qps", "0.001", "--kube-api-burst", "4",
		"--work-kube-api-qps", "30", "--work-kube-api-burst", "60",
		"--hub-kube-api-qps", "20", "--hub-kube-api-burst", "40",
		"--work-only",
	}); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int32
	managed := &rest.Config{Host: "https://managed.invalid", Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: http.StatusOK, Request: r, Header: http.Header{"Content-Type": []string{"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`))}, nil
	})}
	if err := fields.apply(&opts); err != nil {
		t.Fatal(err)
	}
	r := opts.Registration
	if want := map[string]string{"agent.open-cluster-management.io/owner": "a", "example.com/x": "y"}; !reflect.DeepEqual(r.ClusterAnnotations, want) {
		t.Errorf("ClusterAnnotations %v, want %v (the agent drops the second)", r.ClusterAnnotations, want)
	}
	if want := map[string]string{"env": "test"}; !reflect.DeepEqual(r.ClusterLabels, want) {
		t.Errorf("ClusterLabels %v", r.ClusterLabels)
	}
	if want := []registration.ExternalServer{{URL: "https://a.example.com:6443", CABundle: []byte("ca-a")}, {URL: "https://b.example.com"}}; !reflect.DeepEqual(r.ExternalServers, want) {
		t.Errorf("ExternalServers %+v, want %+v", r.ExternalServers, want)
	}
	if want := []string{".infra.example.com", ".team.example.com"}; !reflect.DeepEqual(r.ReservedClusterClaimSuffixes, want) {
		t.Errorf("ReservedClusterClaimSuffixes %v", r.ReservedClusterClaimSuffixes)
	}
	if r.HostingClusterClaim != "management-1" {
		t.Errorf("HostingClusterClaim %q", r.HostingClusterClaim)
	}
	w := opts.Work
	if !w.Only || w.KubeAPIQPS != 30 || w.KubeAPIBurst != 60 || w.HubKubeAPIQPS != 20 || w.HubKubeAPIBurst != 40 {
		t.Errorf("work options %+v", w)
	}
	for _, addr := range []string{"hub.example.com:6443", "other.example.com:443"} {
		_, _ = r.HubDial(context.Background(), "tcp", addr)
	}
	if want := []string{"10.0.0.7:6443", "other.example.com:443"}; !reflect.DeepEqual(dialed, want) {
		t.Errorf("hub dials went to %v, want %v", dialed, want)
	}

	kube, err := kubernetes.NewForConfig(opts.Registration.ManagedRate(managed))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { _, _ = kube.CoreV1().Namespaces().Get(ctx, "x", metav1.GetOptions{}) })
	}
	wg.Wait()
	if got := sent.Load(); got != 4 {
		t.Errorf("%d of 10 requests reached the managed cluster, want the --kube-api-burst of 4", got)
	}
}

func TestKlusterletFieldFlagsRefuseBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"--external-server-urls", "http://a.example.com"},
		{"--external-server-urls", "https://a.example.com=/does/not/exist.pem"},
		{"--hub-host-alias", "hub.example.com"},
		{"--kube-api-qps", "0"},
	} {
		var (
			opts   klusterlet.Options
			fields klusterletFieldFlags
		)
		f := pflag.NewFlagSet("klusterlet", pflag.ContinueOnError)
		fields.add(f, &opts)
		if err := f.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := fields.apply(&opts); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: error %v, want one naming %s", args, err, args[0])
		}
	}
}

// TestKlusterletWorkOnlyExcludesDisableWorkAgent runs the command with both flags: it fails
// naming both before contacting any server.
func TestKlusterletWorkOnlyExcludesDisableWorkAgent(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := newKlusterletCommand()
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "--work-only", "--disable-work-agent"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "--work-only") || !strings.Contains(err.Error(), "--disable-work-agent") {
		t.Fatalf("got %v, want an error naming --work-only and --disable-work-agent", err)
	}
}

// TestKlusterletHelpNamesEachFlagsField checks that --help names the Klusterlet field of each
// Klusterlet-field flag.
func TestKlusterletHelpNamesEachFlagsField(t *testing.T) {
	cmd := newKlusterletCommand()
	var out strings.Builder
	cmd.SetArgs([]string{"--help"})
	cmd.SetOut(&out)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--work-only", "registrationConfiguration.clusterAnnotations", "registrationConfiguration.clusterLabels",
		"externalServerURLs", "reservedClusterClaimSuffixes", "deployOption.reportHostingCluster", "hubApiServerHostAlias",
		"registrationConfiguration.kubeAPIQPS", "registrationConfiguration.kubeAPIBurst", "workConfiguration.kubeAPIQPS",
		"workConfiguration.kubeAPIBurst", "workConfiguration.hubKubeAPIQPS", "workConfiguration.hubKubeAPIBurst"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
