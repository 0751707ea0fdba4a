package environment

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// startPlane starts a one-cluster control plane for a test and stops it at cleanup.
func startPlane(t *testing.T, opts ControlPlaneOptions) *ControlPlane {
	t.Helper()
	opts.Log = testWriter{t}
	cp, err := StartControlPlane(t.Context(), opts)
	if err != nil {
		t.Fatalf("StartControlPlane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return cp
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testTimeout bounds the API requests of one test (each start and poll has its own bound
// too): a request the API server never answers fails the test instead of hanging it.
const testTimeout = 5 * time.Minute

// poll calls f until it returns nil or a minute passes, then fails with f's last error.
func poll(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("building clientset: %v", err)
	}
	return cs
}

func TestControlPlane(t *testing.T) {
	cp := startPlane(t, ControlPlaneOptions{Name: "solo", SigningDuration: 15 * time.Minute, CRDs: []string{ClusterClaimCRD}})
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	admin := clientset(t, cp.Config)

	t.Run("kubeconfig authenticates as the admin user", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
		if err != nil {
			t.Fatalf("loading %s: %v", cp.KubeconfigPath, err)
		}
		review, err := clientset(t, cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectReview: %v", err)
		}
		if got := review.Status.UserInfo.Username; got != AdminUser {
			t.Errorf("kubeconfig user = %q, want %q", got, AdminUser)
		}
		if _, err := clientset(t, cfg).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("admin cannot list namespaces: %v", err)
		}
	})

	t.Run("requested CRD is established", func(t *testing.T) {
		ext, err := apiextensionsclient.NewForConfig(cp.Config)
		if err != nil {
			t.Fatal(err)
		}
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, ClusterClaimCRD, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting CRD %s: %v", ClusterClaimCRD, err)
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == "Established" && c.Status == "True")
		}
		if !established {
			t.Errorf("CRD %s not Established: %+v", ClusterClaimCRD, crd.Status.Conditions)
		}
	})

	t.Run("RBAC denies an unprivileged user until a binding grants access", func(t *testing.T) {
		cfg, err := cp.UserConfig("alice", "team-a")
		if err != nil {
			t.Fatal(err)
		}
		alice := clientset(t, cfg)
		review, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectReview as alice: %v", err)
		}
		if u := review.Status.UserInfo; u.Username != "alice" || !contains(u.Groups, "team-a") || !contains(u.Groups, "system:authenticated") {
			t.Errorf("alice authenticated as %+v", u)
		}
		_, err = alice.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("listing namespaces as alice: got %v, want Forbidden", err)
		}
		_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-a"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("binding team-a to view: %v", err)
		}
		// view does not cover namespaces (cluster-scoped); it does cover config maps.
		poll(t, "alice listing config maps after the binding", func() error {
			_, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			return err
		})
		_, err = alice.CoreV1().ConfigMaps("default").Create(ctx, configMap("denied"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("creating a config map as a viewer: got %v, want Forbidden", err)
		}
	})

	t.Run("approved kube-apiserver-client CSR is signed for the signing duration", func(t *testing.T) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject: pkix.Name{CommonName: "system:open-cluster-management:cluster1:agent", Organization: []string{"system:open-cluster-management:cluster1"}},
		}, key)
		if err != nil {
			t.Fatal(err)
		}
		csr, err := admin.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "agent-csr"},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
				SignerName: certificatesv1.KubeAPIServerClientSignerName,
				Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating CSR: %v", err)
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: "True", Reason: "TestApproval", Message: "approved by the environment test",
		})
		approvedAt := time.Now()
		if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("approving CSR: %v", err)
		}
		var certPEM []byte
		poll(t, "kube-controller-manager signing the approved CSR", func() error {
			got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(got.Status.Certificate) == 0 {
				return fmt.Errorf("no certificate yet; conditions %+v", got.Status.Conditions)
			}
			certPEM = got.Status.Certificate
			return nil
		})
		signedBy := time.Now()
		block, _ := pem.Decode(certPEM)
		if block == nil {
			t.Fatalf("CSR status.certificate is not PEM: %q", certPEM)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		// Short-lived certificates end exactly SigningDuration after signing; allow for
		// clock granularity (whole seconds) around the window the signing happened in.
		earliest := approvedAt.Add(cp.SigningDuration).Add(-2 * time.Second)
		latest := signedBy.Add(cp.SigningDuration).Add(2 * time.Second)
		if cert.NotAfter.Before(earliest) || cert.NotAfter.After(latest) {
			t.Errorf("certificate NotAfter %s, want between %s and %s (signing duration %s)", cert.NotAfter, earliest, latest, cp.SigningDuration)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(cp.CAData)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("signed certificate does not chain to the cluster CA: %v", err)
		}
		keyPEM, err := encodeKey(key)
		if err != nil {
			t.Fatal(err)
		}
		agentCfg := rest.CopyConfig(cp.Config)
		agentCfg.CertData, agentCfg.KeyData = certPEM, keyPEM
		review, err := clientset(t, agentCfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("authenticating with the signed certificate: %v", err)
		}
		if got := review.Status.UserInfo.Username; got != "system:open-cluster-management:cluster1:agent" {
			t.Errorf("signed certificate authenticates as %q", got)
		}
	})
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestStopLeavesNothingBehind(t *testing.T) {
	cp, err := StartControlPlane(t.Context(), ControlPlaneOptions{Name: "stopper", Log: testWriter{t}})
	if err != nil {
		t.Fatalf("StartControlPlane: %v", err)
	}
	pids, ports, dir := cp.PIDs(), cp.Ports(), cp.Dir
	if len(pids) != 3 || len(ports) != 4 {
		t.Fatalf("got pids %v and ports %v, want 3 processes and 4 ports", pids, ports)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("component pid %d not running before Stop", pid)
		}
	}
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d still running after Stop", pid)
		}
	}
	for _, port := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("port %d not free after Stop: %v", port, err)
			continue
		}
		l.Close()
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s still exists after Stop (err %v)", dir, err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// helperEnv makes the test binary act as a process that starts a control plane, prints
// its pids and directory, and waits to be killed (see TestKilledParentTakesChildrenDown).
const helperEnv = "FLOTILLA_ENVIRONMENT_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		runHelper()
	}
	os.Exit(m.Run())
}

func runHelper() {
	// A managed cluster's shape: kube-scheduler and kwok must die with the helper too.
	cp, err := StartControlPlane(context.Background(), ControlPlaneOptions{Name: "orphan", Workloads: true, SimulatedNodes: 1})
	if err != nil {
		fmt.Printf("error %v\n", strings.ReplaceAll(err.Error(), "\n", " | "))
		os.Exit(1)
	}
	pids := make([]string, 0, 5)
	for _, pid := range cp.PIDs() {
		pids = append(pids, strconv.Itoa(pid))
	}
	fmt.Printf("ready %s %s\n", strings.Join(pids, ","), cp.Dir)
	select {} // killed by the parent test
}

// helperTimeout bounds the helper's start of a control plane with workloads and a Node.
const helperTimeout = 4 * time.Minute

func TestKilledParentTakesChildrenDown(t *testing.T) {
	// A private TMPDIR for the helper and for this test's sweep: every Start in other test
	// processes sweeps stale directories under the shared temp dir and could remove the
	// helper's before this test looks at it.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), helperEnv+"=1", "TMPDIR="+tmp)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { helper.Process.Kill(); helper.Wait() })
	// The helper's report, read with a deadline of its own: its control plane's start is
	// bounded per component, not as a whole.
	lines := make(chan string)
	scanned := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-t.Context().Done():
				return
			}
		}
		scanned <- sc.Err()
	}()
	deadline := time.After(helperTimeout)
	var pids []int
	var dir string
	for dir == "" {
		select {
		case line := <-lines:
			fields := strings.Fields(line)
			if len(fields) > 0 && fields[0] == "error" {
				t.Fatalf("helper failed to start its control plane: %s", line)
			}
			if len(fields) == 3 && fields[0] == "ready" {
				for _, s := range strings.Split(fields[1], ",") {
					pid, err := strconv.Atoi(s)
					if err != nil {
						t.Fatalf("helper printed %q", line)
					}
					pids = append(pids, pid)
				}
				dir = fields[2]
			}
		case err := <-scanned:
			t.Fatalf("helper exited before reporting its components (scan error %v)", err)
		case <-deadline:
			t.Fatalf("helper did not report its started control plane within %s", helperTimeout)
		}
	}
	if len(pids) != 5 {
		t.Fatalf("helper reported pids %v, want its 5 components", pids)
	}
	var names []string
	for _, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		names = append(names, strings.TrimSpace(string(b)))
	}
	if !slices.Contains(names, "kwok") || !slices.Contains(names, "kube-scheduler") {
		t.Fatalf("helper's components are %v, want kwok and kube-scheduler among them", names)
	}
	// SIGKILL: no deferred function, no cleanup, no signal handler runs in the helper.
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	poll(t, "components of the killed helper exiting", func() error {
		for _, pid := range pids {
			if alive(pid) {
				return fmt.Errorf("pid %d still running", pid)
			}
		}
		return nil
	})
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("helper's directory %s should remain until swept: %v", dir, err)
	}
	sweepStaleTempDirs()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale directory %s not swept (err %v)", dir, err)
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may contain spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// BenchmarkStartFleet measures starting a hub and two managed clusters (the `make run`
// shape) and stopping them again.
func BenchmarkStartFleet(b *testing.B) {
	for b.Loop() {
		f, err := Start(b.Context(), Options{ManagedClusters: 2})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(f.StartDuration.Seconds(), "start-s/op")
		if err := f.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestStartRetriesWhenAPortIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	calls := 0
	// The first attempt gets a port another process holds, as when a parallel test binary
	// wins the race between choosing a port and etcd binding it.
	picker := func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if err != nil || calls > 1 {
			return ports, err
		}
		ports[0] = takenPort
		return ports, nil
	}
	cp, err := startControlPlane(t.Context(), ControlPlaneOptions{Name: "racer", Log: testWriter{t}}, picker)
	if err != nil {
		t.Fatalf("start with a taken port: %v", err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	if calls != 2 {
		t.Errorf("ports picked %d times, want 2 (one retry)", calls)
	}
	if slices.Contains(cp.Ports(), takenPort) {
		t.Errorf("control plane uses the taken port %d: %v", takenPort, cp.Ports())
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	if _, err := clientset(t, cp.Config).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("control plane started after the retry does not serve: %v", err)
	}
}

// TestStartRetriesWhenAnotherEtcdHasThePort gives a control plane, as its etcd client port,
// the port another control plane's etcd serves: the health check answers from there, but
// the start must not take that etcd for its own (its API server would share the other's
// objects); it retries with new ports.
func TestStartRetriesWhenAnotherEtcdHasThePort(t *testing.T) {
	other := startPlane(t, ControlPlaneOptions{Name: "other"})
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	if _, err := clientset(t, other.Config).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	otherEtcd := other.Ports()[0]
	calls := 0
	picker := func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if err != nil || calls > 1 {
			return ports, err
		}
		ports[0] = otherEtcd
		return ports, nil
	}
	cp, err := startControlPlane(ctx, ControlPlaneOptions{Name: "second", Log: testWriter{t}}, picker)
	if err != nil {
		t.Fatalf("start with another etcd on the port: %v", err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	if calls != 2 || slices.Contains(cp.Ports(), otherEtcd) {
		t.Errorf("ports picked %d times, ports %v: want a retry away from the other etcd's port %d", calls, cp.Ports(), otherEtcd)
	}
	_, err = clientset(t, cp.Config).CoreV1().Namespaces().Get(ctx, "only-in-other", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the second control plane sees the other's namespace (err %v): it shares the other's etcd", err)
	}
}
