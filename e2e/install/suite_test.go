// Package install checks the install and join path a new user takes, on real control planes:
// flotilla init on a bare hub cluster (the hub operator deploying the Split hub), get token,
// join on a bare managed cluster, accept, unjoin, a second hub (topology Single), a forward
// proxy, hub replicas with leader election, and the ClusterManager's feature gates rolling the
// Deployments they change. Pods do not run on these control planes, so what the
// charts' Deployments describe is run as processes of the flotilla binary, as a kubelet would
// run the container: its args and env, authenticated as its ServiceAccount.
package install

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cmd/flotilla/commands"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

func TestInstall(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Install and join e2e")
}

var (
	suiteCtx         context.Context
	flotillaBin      string
	hub1, hub2, spok *environment.ControlPlane
	scheme           *runtime.Scheme
	wasmCache        string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	var err error
	scheme, err = manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	wasmCache = filepath.Join(os.TempDir(), "flotilla-e2e-install-wasm-cache")

	// The binary the Deployments run, and three bare clusters (no CRDs): two hubs and a
	// managed cluster, started side by side.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	wg.Add(4)
	go func() {
		defer wg.Done()
		flotillaBin, errs[0] = hubtest.BuildFlotilla(ctx, GinkgoT().TempDir())
	}()
	start := func(i int, name string, into **environment.ControlPlane) {
		defer wg.Done()
		cp, err := environment.StartControlPlane(suiteCtx, environment.ControlPlaneOptions{Name: name})
		errs[i], *into = err, cp
	}
	go start(1, "hub1", &hub1)
	go start(2, "hub2", &hub2)
	go start(3, "managed", &spok)
	wg.Wait()
	for _, cp := range []*environment.ControlPlane{hub1, hub2, spok} {
		if cp != nil {
			DeferCleanup(cp.Stop)
		}
	}
	for _, err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
}, NodeTimeout(10*time.Minute))

// flotilla runs the CLI in-process as a user would type it and returns its standard output
// and standard error.
func flotilla(ctx context.Context, args ...string) (string, string, error) {
	root := commands.NewRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(tee(&errOut))
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// tee copies a command's standard error into the spec's output, for progress while it waits.
func tee(b *bytes.Buffer) *teeWriter { return &teeWriter{b: b} }

type teeWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = GinkgoWriter.Write(p)
	return t.b.Write(p)
}

func clientFor(cp *environment.ControlPlane) client.Client {
	GinkgoHelper()
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// process is a Deployment's replica run as a process (environment.RunDeployment).
type process struct {
	*environment.DeploymentProcess
	health, metrics string
}

// procs are the processes the specs started: they outlive the spec that started them (the
// specs are ordered steps of one install) and stop with their control plane.
var procs []*process

// A failed spec shows the end of every process's log.
var _ = ReportAfterEach(func(r SpecReport) {
	if !r.Failed() {
		return
	}
	for _, p := range procs {
		fmt.Fprintf(GinkgoWriter, "---- last of %s (%s) ----\n%s\n", p.Name, p.LogPath, p.LogTail(60))
	}
	// And of what RunDeployments runs on the managed cluster (the klusterlet operator, the agents).
	if spok != nil {
		logs, _ := filepath.Glob(filepath.Join(spok.Dir, "deployments", "*", "*", "log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			fmt.Fprintf(GinkgoWriter, "---- last of %s ----\n%s\n", l, strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	}
})

// runDeployment runs replica i of Deployment ns/name of cp as a process, as a kubelet would
// run its container (see environment.RunDeployment).
func runDeployment(cp *environment.ControlPlane, ns, name string, i int, noWebhook bool) *process {
	GinkgoHelper()
	dp, err := cp.RunDeployment(suiteCtx, ns, name, environment.DeploymentProcessOptions{
		Binary: flotillaBin, Replica: i, NoWebhook: noWebhook, PluginCacheDir: wasmCache})
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(GinkgoWriter, "started %s: flotilla %s (log %s)\n", dp.Name, strings.Join(dp.Args, " "), dp.LogPath)
	p := &process{DeploymentProcess: dp, health: dp.HealthAddr, metrics: dp.MetricsAddr}
	procs = append(procs, p)
	return p
}

// deploymentsLog records what cp.RunDeployments started, restarted and stopped.
type deploymentsLog struct {
	mu    sync.Mutex
	lines []string
}

// count is the number of lines containing s.
func (l *deploymentsLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// runDeployments runs every Deployment of the hub chart on cp as processes, as a kubelet
// would, until the suite ends (environment.RunDeployments): the operator and the components
// it deploys.
func runDeployments(cp *environment.ControlPlane) *deploymentsLog {
	return runChartDeployments(cp, "flotilla-hub")
}

// runChartDeployments runs every Deployment of the charts named (app.kubernetes.io/name) on cp
// as processes until the suite ends, as runDeployments does for the hub chart: for
// flotilla-klusterlet, the klusterlet operator and the agents it deploys.
func runChartDeployments(cp *environment.ControlPlane, charts ...string) *deploymentsLog {
	l := &deploymentsLog{}
	go func() {
		defer GinkgoRecover()
		_ = cp.RunDeployments(suiteCtx, flotillaBin, charts, wasmCache, func(format string, args ...any) {
			line := fmt.Sprintf(format, args...)
			fmt.Fprintf(GinkgoWriter, "%s: %s\n", cp.Name, line)
			l.mu.Lock()
			defer l.mu.Unlock()
			l.lines = append(l.lines, line)
		})
	}()
	return l
}

// get fetches http://addr/path and returns the status code and body.
func get(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// waitForDeployment waits until a command running in the background has created Deployment
// ns/name.
func waitForDeployment(cp *environment.ControlPlane, ns, name string) {
	GinkgoHelper()
	c := clientFor(cp)
	Eventually(func() error {
		return c.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &appsv1.Deployment{})
	}).Should(Succeed(), "waiting for Deployment %s/%s on %s", ns, name, cp.Name)
}

// snapshot lists every object of cp a user could find (every listable resource), as
// "group/resource namespace/name". Events and Leases renewed by the control plane's own
// components come and go by themselves, so they are left out.
func snapshot(cp *environment.ControlPlane) []string {
	GinkgoHelper()
	disc := discovery.NewDiscoveryClientForConfigOrDie(cp.Config)
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	lists, err := disc.ServerPreferredResources()
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		Expect(err).NotTo(HaveOccurred())
		for _, r := range l.APIResources {
			if !contains(r.Verbs, "list") || strings.Contains(r.Name, "/") {
				continue
			}
			if r.Name == "events" || (r.Name == "leases" && gv.Group == "coordination.k8s.io") {
				continue
			}
			objs, err := dyn.Resource(gv.WithResource(r.Name)).List(suiteCtx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue
			}
			Expect(err).NotTo(HaveOccurred(), "listing %s", r.Name)
			for _, o := range objs.Items {
				out = append(out, fmt.Sprintf("%s/%s %s/%s", gv.Group, r.Name, o.GetNamespace(), o.GetName()))
			}
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
