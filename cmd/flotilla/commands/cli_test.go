package commands

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
)

// syncBuffer is an io.Writer safe for the concurrent writes of a running command's loggers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// flotilla runs `flotilla args...` from NewRoot to completion, as the binary would.
func flotilla(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	root := NewRoot()
	var out, errw syncBuffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errw)
	err = root.ExecuteContext(ctx)
	return out.String(), errw.String(), err
}

// daemon is a long-running flotilla command (hub, klusterlet) running in a goroutine.
type daemon struct {
	name   string
	output syncBuffer // standard output and error
	done   chan struct{}
	err    error
}

func startDaemon(ctx context.Context, name string, args ...string) *daemon {
	d := &daemon{name: name, done: make(chan struct{})}
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(&d.output)
	root.SetErr(&d.output)
	go func() {
		defer close(d.done)
		d.err = root.ExecuteContext(ctx)
	}()
	return d
}

// exited returns an error if the daemon returned, which it must not do before its context ends.
func (d *daemon) exited() error {
	select {
	case <-d.done:
		return fmt.Errorf("flotilla %s returned early: %v\noutput:\n%s", d.name, d.err, d.output.String())
	default:
		return nil
	}
}

// stop waits for the daemon (its context already cancelled) and checks it returned nil or
// the context's error.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		t.Errorf("flotilla %s did not return within a minute of its context's end", d.name)
		return
	}
	if d.err != nil && !errors.Is(d.err, context.Canceled) {
		t.Errorf("flotilla %s returned %v on cancel, want nil or context.Canceled\noutput:\n%s", d.name, d.err, d.output.String())
	}
}

// cliTimeout bounds each wait on the fleet's state.
const cliTimeout = time.Minute

// waitFor polls cond until it reports done, failing the test after cliTimeout or as soon as
// one of the daemons returned. cond describes what it last saw, for the failure message;
// it treats API errors as transient.
func waitFor(t *testing.T, ctx context.Context, what string, daemons []*daemon, cond func(ctx context.Context) (done bool, last string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, cliTimeout, true, func(context.Context) (bool, error) {
		for _, d := range daemons {
			if err := d.exited(); err != nil {
				return false, err
			}
		}
		var done bool
		// cond gets ctx, not the poll's context, so that its last attempt is not cut short
		// by the poll's deadline and last says what it saw.
		done, last = cond(ctx)
		return done, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v\nlast seen: %s", what, err, last)
	}
}

// registrationCSRs returns the registration CSRs of cluster on the hub.
func registrationCSRs(ctx context.Context, kube kubernetes.Interface, cluster string) ([]certificatesv1.CertificateSigningRequest, error) {
	list, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx,
		metav1.ListOptions{LabelSelector: csr.ClusterNameLabel + "=" + cluster})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(r certificatesv1.CertificateSigningRequest) bool {
		return !csr.IsRegistrationCSR(&r)
	}), nil
}

func approvedCondition(r *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequestCondition {
	for i, c := range r.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return &r.Status.Conditions[i]
		}
	}
	return nil
}

func describeCSRs(rs []certificatesv1.CertificateSigningRequest) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s conditions=%+v", r.Name, r.Status.Conditions))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// parseClusterTable splits the output of `flotilla get clusters` into its header and one
// row of fields per cluster name.
func parseClusterTable(out string) (header string, rows map[string][]string) {
	rows = map[string][]string{}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 {
		return "", rows
	}
	header = strings.Join(strings.Fields(lines[0]), " ")
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	return header, rows
}

// TestCLIRegistration runs the registration commands the way a user does, from NewRoot against
// a real hub and managed cluster: `flotilla hub` with auto-approval for auto-*, two
// `flotilla klusterlet` agents on the managed cluster (cluster1 and auto-1), `flotilla accept`
// and `flotilla get clusters`.
func TestCLIRegistration(t *testing.T) {
	begin := time.Now()
	fleet := fleettest.StartT(t, environment.Options{ManagedClusters: 1})
	t.Logf("fleet started in %s", fleet.StartDuration.Round(100*time.Millisecond))
	hubKC, managedKC := fleet.Hub.KubeconfigPath, fleet.Managed[0].KubeconfigPath
	for _, p := range []string{hubKC, managedKC} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("fleet kubeconfig: %v", err)
		}
	}
	c, kube, err := hubClientsForConfig(fleet.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	managedKube, err := kubernetes.NewForConfig(fleet.Managed[0].Config)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	var daemons []*daemon
	defer func() {
		// Stop the commands before the fleet (t.Cleanup) so they do not fail on a vanished API server.
		cancel()
		for _, d := range daemons {
			d.stop(t)
		}
		t.Logf("TestCLIRegistration took %s", time.Since(begin).Round(100*time.Millisecond))
	}()

	hub := startDaemon(ctx, "hub", "hub", "--kubeconfig", hubKC, "--autoapprove-cluster-patterns", "auto-*")
	daemons = append(daemons, hub)

	// The hub creates the bootstrap identity on start; hand its kubeconfig to the agents as
	// a hub admin would.
	var bootstrapKC []byte
	waitFor(t, ctx, "the hub's bootstrap ServiceAccount", daemons, func(ctx context.Context) (bool, string) {
		var err error
		bootstrapKC, err = bootstrap.Kubeconfig(ctx, fleet.Hub.Config, 0)
		return err == nil, fmt.Sprint(err)
	})
	bootstrapFile := filepath.Join(t.TempDir(), "bootstrap.kubeconfig")
	if err := os.WriteFile(bootstrapFile, bootstrapKC, 0o600); err != nil {
		t.Fatal(err)
	}

	// Two agents share the managed API server, each with its own namespace and secret.
	agentNS := map[string]string{"cluster1": "agent-cluster1", "auto-1": "agent-auto-1"}
	agentSecret := map[string]string{"cluster1": "hub-kubeconfig-cluster1", "auto-1": "hub-kubeconfig-auto-1"}
	for _, name := range []string{"cluster1", "auto-1"} {
		daemons = append(daemons, startDaemon(ctx, "klusterlet "+name, "klusterlet",
			"--kubeconfig", managedKC, "--cluster-name", name, "--bootstrap-kubeconfig", bootstrapFile,
			"--agent-namespace", agentNS[name], "--hub-kubeconfig-secret", agentSecret[name]))
	}

	// csr-autoapprove (installed because of --autoapprove-cluster-patterns) approves auto-1's
	// first CSR; cluster1 matches no pattern and waits for the admin.
	var autoCSR *certificatesv1.CertificateSigningRequest
	var cluster1CSRs []certificatesv1.CertificateSigningRequest
	waitFor(t, ctx, "auto-1's CSR approved and cluster1's CSR created", daemons, func(ctx context.Context) (bool, string) {
		autoCSRs, err := registrationCSRs(ctx, kube, "auto-1")
		if err != nil {
			return false, err.Error()
		}
		cluster1CSRs, err = registrationCSRs(ctx, kube, "cluster1")
		if err != nil {
			return false, err.Error()
		}
		last := fmt.Sprintf("auto-1 CSRs %s, cluster1 CSRs %s", describeCSRs(autoCSRs), describeCSRs(cluster1CSRs))
		autoCSR = nil
		for i := range autoCSRs {
			if approvedCondition(&autoCSRs[i]) != nil {
				autoCSR = &autoCSRs[i]
			}
		}
		return autoCSR != nil && len(cluster1CSRs) > 0, last
	})
	if len(autoCSR.Status.Conditions) != 1 {
		t.Errorf("auto-1's CSR %s has conditions %+v, want just Approved", autoCSR.Name, autoCSR.Status.Conditions)
	}
	if cond := approvedCondition(autoCSR); cond.Reason != csr.ReasonPluginApproved || !strings.Contains(cond.Message, plugininstall.AutoApprovePlugin) {
		t.Errorf("auto-1's CSR %s approved with reason %q message %q, want reason %s and a message naming plugin %s",
			autoCSR.Name, cond.Reason, cond.Message, csr.ReasonPluginApproved, plugininstall.AutoApprovePlugin)
	}
	// Without the ManagedClusterAutoApproval gate the plugin approves the CSR only.
	autoMC := &clusterv1.ManagedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: "auto-1"}, autoMC); err != nil {
		t.Fatalf("reading ManagedCluster auto-1: %v", err)
	}
	if autoMC.Spec.HubAcceptsClient {
		t.Errorf("ManagedCluster auto-1 has spec.hubAcceptsClient true; csr-autoapprove must approve its CSR only")
	}
	// csr-autoapprove is loaded (it approved auto-1) yet cluster1's CSR is undecided. The
	// CSR's reason after accept below shows that no plugin approved it in between either.
	var pending []string
	for i := range cluster1CSRs {
		r := &cluster1CSRs[i]
		if !csr.IsPending(r) {
			t.Errorf("cluster1's CSR %s was decided before flotilla accept: %+v", r.Name, r.Status.Conditions)
		}
		pending = append(pending, r.Name)
	}

	// The admin accepts cluster1: its pending CSR is approved and hubAcceptsClient set.
	out, errOut, err := flotilla(ctx, "accept", "--clusters", "cluster1", "--kubeconfig", hubKC)
	if err != nil {
		t.Fatalf("flotilla accept: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "cluster cluster1 accepted") {
		t.Errorf("flotilla accept printed %q, want it to say cluster1 was accepted", out)
	}
	for _, name := range pending {
		if !strings.Contains(out, name) {
			t.Errorf("flotilla accept printed %q, want it to name the approved CSR %s", out, name)
		}
	}
	// The CSR was approved by accept, not by a plugin before it.
	cluster1CSRs, err = registrationCSRs(ctx, kube, "cluster1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range cluster1CSRs {
		r := &cluster1CSRs[i]
		if !slices.Contains(pending, r.Name) {
			continue
		}
		if cond := approvedCondition(r); cond == nil || cond.Reason != admin.ReasonAdminApproved {
			t.Errorf("cluster1's CSR %s after flotilla accept has conditions %+v, want Approved with reason %s",
				r.Name, r.Status.Conditions, admin.ReasonAdminApproved)
		}
	}

	// `flotilla get clusters` shows cluster1 accepted, joined and available once its agent
	// switched to its certificate; auto-1 stays unaccepted.
	var table string
	waitFor(t, ctx, "flotilla get clusters to show cluster1 joined and available", daemons, func(ctx context.Context) (bool, string) {
		out, errOut, err := flotilla(ctx, "get", "clusters", "--kubeconfig", hubKC)
		if err != nil {
			return false, fmt.Sprintf("flotilla get clusters: %v\n%s", err, errOut)
		}
		table = out
		header, rows := parseClusterTable(out)
		c1, auto := rows["cluster1"], rows["auto-1"]
		return strings.HasPrefix(header, "NAME ACCEPTED JOINED AVAILABLE") &&
			len(c1) >= 4 && c1[1] == "true" && c1[2] == "True" && c1[3] == "True" &&
			len(auto) >= 2, "table:\n" + out
	})
	if _, rows := parseClusterTable(table); rows["auto-1"][1] != "false" {
		t.Errorf("flotilla get clusters shows auto-1 accepted:\n%s", table)
	}
	t.Logf("flotilla get clusters:\n%s", table)

	// The agent stored its credentials where --agent-namespace and --hub-kubeconfig-secret say.
	sec, err := managedKube.CoreV1().Secrets(agentNS["cluster1"]).Get(ctx, agentSecret["cluster1"], metav1.GetOptions{})
	if err != nil {
		t.Errorf("cluster1's hub kubeconfig secret: %v", err)
	} else if len(sec.Data["kubeconfig"]) == 0 || string(sec.Data["cluster-name"]) != "cluster1" {
		t.Errorf("secret %s/%s has keys %v and cluster-name %q, want a kubeconfig for cluster1",
			sec.Namespace, sec.Name, slices.Sorted(maps.Keys(sec.Data)), sec.Data["cluster-name"])
	}

	// Accepting again changes nothing and says so.
	out, errOut, err = flotilla(ctx, "accept", "--clusters", "cluster1", "--kubeconfig", hubKC)
	if err != nil {
		t.Fatalf("second flotilla accept: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "cluster cluster1 is already accepted") {
		t.Errorf("second flotilla accept printed %q, want it to say cluster1 is already accepted", out)
	}

	// Nothing accepted auto-1 meanwhile.
	if err := c.Get(ctx, client.ObjectKey{Name: "auto-1"}, autoMC); err != nil {
		t.Fatalf("reading ManagedCluster auto-1: %v", err)
	}
	if autoMC.Spec.HubAcceptsClient {
		t.Errorf("ManagedCluster auto-1 was accepted without the admin or the ManagedClusterAutoApproval gate")
	}
	for _, d := range daemons {
		if err := d.exited(); err != nil {
			t.Error(err)
		}
	}
}

// TestCLIErrors checks the errors a user hits with wrong flags: each names the flag or file.
func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.kubeconfig")
	// A syntactically valid kubeconfig; nothing is listening at its server.
	valid := filepath.Join(dir, "managed.kubeconfig")
	if err := environment.WriteKubeconfig(valid, "managed", &rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientcmd.LoadFromFile(valid); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"accept without --clusters", []string{"accept", "--kubeconfig", valid}, []string{"--clusters is required"}},
		{"hub with users but no patterns", []string{"hub", "--kubeconfig", valid, "--autoapprove-users", "x"},
			[]string{"--autoapprove-users", "--autoapprove-cluster-patterns"}},
		{"klusterlet with a missing kubeconfig", []string{"klusterlet", "--kubeconfig", missing, "--cluster-name", "c1",
			"--bootstrap-kubeconfig", valid}, []string{"loading kubeconfig", missing}},
		{"klusterlet with a missing bootstrap kubeconfig", []string{"klusterlet", "--kubeconfig", valid, "--cluster-name", "c1",
			"--bootstrap-kubeconfig", missing}, []string{"bootstrap kubeconfig", missing}},
		{"klusterlet with both managed kubeconfigs", []string{"klusterlet", "--kubeconfig", valid, "--managed-kubeconfig", valid,
			"--managed-kubeconfig-secret", "s"}, []string{"--managed-kubeconfig and --managed-kubeconfig-secret are mutually exclusive"}},
		{"klusterlet with a missing managed kubeconfig", []string{"klusterlet", "--kubeconfig", valid, "--managed-kubeconfig", missing},
			[]string{"--managed-kubeconfig", missing}},
		{"get clusters with a missing kubeconfig", []string{"get", "clusters", "--kubeconfig", missing}, []string{"loading kubeconfig", missing}},
		{"accept with a missing kubeconfig", []string{"accept", "--clusters", "c1", "--kubeconfig", missing}, []string{"loading kubeconfig", missing}},
		{"join without its flags", []string{"join", "--kubeconfig", valid},
			[]string{"--cluster-name is required", "--hub-token is required", "--hub-apiserver", "CA is required"}},
		{"join with a bad cluster name and hub URL", []string{"join", "--kubeconfig", valid, "--cluster-name", "Bad_Name", "--hub-token", "t",
			"--hub-apiserver", "http://hub:6443", "--ca-file", valid}, []string{`--cluster-name "Bad_Name"`, `--hub-apiserver "http://hub:6443" must be an https:// URL`}},
		{"join in Hosted mode without the managed cluster", []string{"join", "--kubeconfig", valid, "--mode", "Hosted"}, []string{"--mode Hosted needs --managed-cluster-kubeconfig"}},
		{"join in a hosted mode with an agent namespace", []string{"join", "--kubeconfig", valid, "--mode", "SingletonHosted", "--agent-namespace", "x"},
			[]string{"--agent-namespace and --mode SingletonHosted"}},
		{"join with a managed cluster in Default mode", []string{"join", "--kubeconfig", valid, "--managed-cluster-kubeconfig", valid},
			[]string{"--managed-cluster-kubeconfig needs --mode Hosted or SingletonHosted"}},
		{"join with a CA that is not one", []string{"join", "--kubeconfig", valid, "--hub-ca-data", "bm90IGEgY2VydA=="}, []string{"--hub-ca-data"}},
		{"join with a proxy CA but no proxy", []string{"join", "--kubeconfig", valid, "--cluster-name", "c1", "--hub-token", "t",
			"--hub-apiserver", "https://hub:6443", "--ca-file", valid, "--proxy-ca-file", valid}, []string{"--proxy-ca-file needs --proxy-url"}},
		{"init with a value of the wrong type", []string{"init", "--kubeconfig", valid, "--dry-run", "--set", "replicas=many"}, []string{"replicas"}},
		{"init with an unknown topology", []string{"init", "--kubeconfig", valid, "--dry-run", "--hub-topology", "split"}, []string{`--hub-topology "split"`, "Split or Single"}},
		{"init with an unknown flag value", []string{"init", "--kubeconfig", valid, "--dry-run", "--set", "flags.no-such-flag=1"}, []string{"no-such-flag"}},
		{"get token with a missing kubeconfig", []string{"get", "token", "--kubeconfig", missing}, []string{"loading kubeconfig", missing}},
		{"token revoke of a path", []string{"token", "revoke", "a/b", "--kubeconfig", valid}, []string{"not a token id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A command that wrongly gets past its checks would run until this ends.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			out, errOut, err := flotilla(ctx, tc.args...)
			if err == nil {
				t.Fatalf("flotilla %v succeeded, want an error containing %q\nstdout:\n%s\nstderr:\n%s", tc.args, tc.want, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("flotilla %v: error %q does not contain %q", tc.args, err, w)
				}
			}
		})
	}
}

// TestInstallDryRun checks what init and join would apply: the charts rendered with the
// command's values, the bootstrap kubeconfig (with the proxy and its CA) in join's Secret.
func TestInstallDryRun(t *testing.T) {
	// init renders the operator: its Deployment as OCM's, the ClusterManager, the CRDs and the
	// Flotilla-only values (with the topology) in the values ConfigMap the operator reads.
	out, errOut, err := flotilla(t.Context(), "init", "--dry-run", "--set", "replicas=2", "--set", "flags.kube-api-qps=99")
	if err != nil {
		t.Fatalf("init --dry-run: %v\n%s", err, errOut)
	}
	for _, want := range []string{"kind: ClusterManager", "name: cluster-manager", "namespace: open-cluster-management\n", "name: registration-operator",
		"name: flotilla-hub-values", "topology: Split", "replicas: 2", "kube-api-qps: 99", "kind: CustomResourceDefinition"} {
		if !strings.Contains(out, want) {
			t.Errorf("init --dry-run lacks %q", want)
		}
	}
	out, errOut, err = flotilla(t.Context(), "init", "--dry-run", "--hub-topology", "Single")
	if err != nil {
		t.Fatalf("init --dry-run --hub-topology Single: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "topology: Single") || strings.Contains(out, "topology: Split") {
		t.Errorf("init --dry-run --hub-topology Single does not render topology Single")
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proxyCA := filepath.Join(dir, "proxy-ca.pem")
	if err := os.WriteFile(proxyCA, []byte("-----BEGIN CERTIFICATE-----\nPROXY\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err = flotilla(t.Context(), "join", "--dry-run", "--cluster-name", "c1", "--hub-token", "tok", "--hub-apiserver", "https://hub:6443",
		"--ca-file", ca, "--proxy-url", "https://proxy:3129", "--proxy-ca-file", proxyCA, "--klusterlet-name", "klusterlet-hub2", "--agent-namespace", "open-cluster-management-agent-hub2")
	if err != nil {
		t.Fatalf("join --dry-run: %v\n%s", err, errOut)
	}
	for _, want := range []string{"kind: Klusterlet", "name: klusterlet-hub2", "clusterName: c1", "namespace: open-cluster-management-agent-hub2",
		"name: bootstrap-hub-kubeconfig"} {
		if !strings.Contains(out, want) {
			t.Errorf("join --dry-run lacks %q", want)
		}
	}
	// The Secret's kubeconfig: the proxy, the token, and the hub's CA followed by the proxy's.
	_, rest, ok := strings.Cut(out, "\n  kubeconfig: ")
	if !ok {
		t.Fatalf("join --dry-run has no bootstrap kubeconfig:\n%s", out)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.Fields(rest)[0])
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	cl := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	if cl.ProxyURL != "https://proxy:3129" || cl.Server != "https://hub:6443" || kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token != "tok" {
		t.Errorf("bootstrap kubeconfig %+v", cl)
	}
	if want := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nPROXY\n-----END CERTIFICATE-----\n"; string(cl.CertificateAuthorityData) != want {
		t.Errorf("CA data %q, want the hub's CA followed by the proxy's", cl.CertificateAuthorityData)
	}
}
