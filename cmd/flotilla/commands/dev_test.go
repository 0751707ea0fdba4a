package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega/gbytes"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/admin"
)

// runAsFlotillaEnv makes this test binary run as the flotilla binary (TestMain): flotilla dev
// runs the hub's Deployments with its own executable, which in these tests is this one.
const runAsFlotillaEnv = "FLOTILLA_COMMANDS_TEST_RUN_AS_FLOTILLA"

func TestMain(m *testing.M) {
	if os.Getenv(runAsFlotillaEnv) == "1" {
		root := NewRoot()
		root.SetArgs(os.Args[1:])
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := root.ExecuteContext(ctx)
		stop()
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRunDev runs `flotilla dev` with one managed cluster and its simulated Node, the hub
// installed through the hub operator in topology Single and the klusterlet through the
// klusterlet operator (their Deployments run as processes), and a probe that waits until the Node's capacity reaches the
// cluster's ManagedCluster status (CPU and MEMORY of `flotilla get clusters`), then checks
// that the components logged to their files and not to the terminal.
func TestRunDev(t *testing.T) {
	t.Setenv(runAsFlotillaEnv, "1") // for the processes dev starts
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "dev")
	hubLog, agentLog := filepath.Join(dir, "hub", "flotilla-hub.log"), filepath.Join(dir, "cluster1", "klusterlet.log")
	hubProcLog := filepath.Join(dir, "hub", "deployments", "open-cluster-management-hub", "flotilla-hub-0", "log")
	agentProcLog := filepath.Join(dir, "cluster1", "deployments", "open-cluster-management-agent", "klusterlet-agent-0", "log")
	var hubProcLogged, agentProcLogged []byte
	// Components write the terminal concurrently: gbytes buffers are safe for that.
	out, errw := gbytes.NewBuffer(), gbytes.NewBuffer()
	var sawClusters []string
	var row admin.ClusterRow
	var hubLogged, agentLogged []byte
	probe := DevComponent{Name: "probe", Run: func(ctx context.Context, s *DevSession) error {
		fleet := s.Fleet
		for _, cp := range fleet.ControlPlanes() {
			sawClusters = append(sawClusters, cp.Name)
		}
		// The printed kubeconfig must reach the hub.
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "hub", "kubeconfig"))
		if err != nil {
			return err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		nodes, err := kubernetes.NewForConfigOrDie(fleet.Managed[0].Config).CoreV1().Nodes().List(ctx,
			metav1.ListOptions{LabelSelector: environment.SimulatedNodeLabel + "=true"})
		if err != nil {
			return err
		}
		if len(nodes.Items) != 1 {
			return fmt.Errorf("cluster1 has %d simulated Nodes, want 1", len(nodes.Items))
		}
		// KWOK runs it: Ready before the fleet is reported ready.
		if n := nodes.Items[0]; !environment.NodeReady(&n) {
			return fmt.Errorf("cluster1's simulated Node %s is not Ready: %+v", n.Name, n.Status.Conditions)
		}
		c, _, err := hubClientsForConfig(cfg)
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			rows, err := admin.ClusterRows(ctx, c)
			if err != nil || len(rows) == 0 {
				return false, nil
			}
			row = rows[0]
			return row.CPU != "" && row.Memory != "", nil
		})
		if err != nil {
			return fmt.Errorf("waiting for cluster1's capacity in its ManagedCluster status (last row %+v): %w", row, err)
		}
		// The registration component reports the cluster once Joined and Available.
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return strings.Contains(string(out.Contents()), "Managed clusters joined and accepted"), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for the cluster table: %w", err)
		}
		// The built-in add-ons are installed on every cluster by the hub's placement, as
		// make run shows them, without flotilla addon enable.
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
			return strings.Contains(string(out.Contents()), "installed on every cluster by placement open-cluster-management-addon/global"), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for the add-ons to be installed on every cluster: %w", err)
		}
		for _, a := range builtin.Names() {
			if err := c.Get(ctx, client.ObjectKey{Namespace: "cluster1", Name: a}, &addonv1alpha1.ManagedClusterAddOn{}); err != nil {
				return fmt.Errorf("ManagedClusterAddOn cluster1/%s: %w", a, err)
			}
		}
		// The work agent acts as klusterlet-work-sa, as the chart's Deployment does: a
		// StorageClass is beyond its rights, and its Applied condition says whose.
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "identity"},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
				Raw: []byte(`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},"provisioner":"example.com/fast"}`)}}}}}}
		if err := c.Create(ctx, w); err != nil {
			return err
		}
		var msg string
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return false, nil
			}
			for _, m := range w.Status.ResourceStatus.Manifests {
				if cond := meta.FindStatusCondition(m.Conditions, workv1.ManifestApplied); cond != nil {
					msg = cond.Message
				}
			}
			return strings.Contains(msg, `User "system:serviceaccount:open-cluster-management-agent:klusterlet-work-sa" cannot get resource "storageclasses"`), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for the work agent to be refused a StorageClass as klusterlet-work-sa (last Applied message %q): %w", msg, err)
		}
		// The directories go on exit: read the logs now.
		if hubLogged, err = os.ReadFile(hubLog); err != nil {
			return err
		}
		if agentLogged, err = os.ReadFile(agentLog); err != nil {
			return err
		}
		if hubProcLogged, err = os.ReadFile(hubProcLog); err != nil {
			return err
		}
		if agentProcLogged, err = os.ReadFile(agentProcLog); err != nil {
			return err
		}
		cancel() // as Ctrl-C would
		<-ctx.Done()
		return nil
	}}
	err := runDev(ctx, out, errw, environment.Options{ManagedClusters: 1, Dir: dir, SimulatedNodes: 1}, false, builtin.Names(),
		[]DevComponent{hubDevComponent(topologySingle, false), probe})
	stdout, stderr := string(out.Contents()), string(errw.Contents())
	if err != nil {
		t.Fatalf("runDev: %v\noutput:\n%s\nstandard error:\n%s", err, stdout, stderr)
	}
	if strings.Join(sawClusters, ",") != "hub,cluster1" {
		t.Errorf("component saw clusters %v, want hub and cluster1", sawClusters)
	}
	if row.Name != "cluster1" || row.CPU != "4" || row.Memory != "16Gi" {
		t.Errorf("flotilla get clusters row %+v, want cluster1 with the simulated Node's cpu 4 and memory 16Gi", row)
	}
	wantExport := "export KUBECONFIG=" + filepath.Join(dir, "hub", "kubeconfig") + ":" + filepath.Join(dir, "cluster1", "kubeconfig")
	for _, want := range []string{wantExport, hubLog, agentLog, "the ClusterManager cluster-manager is applied and rolled out", "cluster1 registered and accepted", "Managed clusters joined and accepted", "Stopped."} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// Each file has its component's log: the hub's controllers, the cluster's agent.
	for _, c := range []struct {
		file   string
		logged []byte
		want   []string
	}{
		{hubLog, hubLogged, []string{"started open-cluster-management-hub/flotilla-hub-0", "logger=deployments"}},
		{hubProcLog, hubProcLogged, []string{`msg="Starting workers"`, "controller=registration-taint"}},
		{agentLog, agentLogged, []string{"started open-cluster-management/klusterlet-0", "logger=deployments"}},
		{agentLog, agentLogged, []string{"started open-cluster-management-agent/klusterlet-agent-0", "logger=deployments"}},
		{agentProcLog, agentProcLogged, []string{`msg="Hub client certificate issued"`}},
	} {
		if !slices.ContainsFunc(strings.Split(string(c.logged), "\n"), func(line string) bool {
			return !slices.ContainsFunc(c.want, func(w string) bool { return !strings.Contains(line, w) })
		}) {
			t.Errorf("%s has no line with all of %q:\n%s", c.file, c.want, c.logged)
		}
	}
	// The terminal is not flooded with component logs, and no write conflict is logged as an error.
	for _, unwanted := range []string{"Starting workers", "Hub client certificate issued", "Reconciler error", "level=ERROR"} {
		if strings.Contains(stdout+stderr, unwanted) {
			t.Errorf("terminal shows %q:\noutput:\n%s\nstandard error:\n%s", unwanted, stdout, stderr)
		}
	}
	if bytes.Contains(hubProcLogged, []byte("the object has been modified")) {
		t.Errorf("hub log has conflict errors:\n%s", hubProcLogged)
	}
	for _, name := range []string{"hub", "cluster1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s directory left after exit without --keep (err %v)", name, err)
		}
	}
}

func TestRunComponentsStopsAllWhenOneFails(t *testing.T) {
	stoppedCleanly := false
	waiter := DevComponent{Name: "waiter", Run: func(ctx context.Context, _ *DevSession) error {
		<-ctx.Done()
		stoppedCleanly = true
		return nil
	}}
	failing := DevComponent{Name: "broken", Run: func(context.Context, *DevSession) error {
		return errors.New("cannot reach the hub")
	}}
	err := runComponents(t.Context(), &DevSession{Out: io.Discard}, []DevComponent{waiter, failing})
	if err == nil || !strings.Contains(err.Error(), "component broken: cannot reach the hub") {
		t.Fatalf("runComponents: got %v, want the broken component's error", err)
	}
	if !stoppedCleanly {
		t.Error("the healthy component was not cancelled")
	}
}

func TestRunComponentsRejectsEarlyReturn(t *testing.T) {
	quitter := DevComponent{Name: "quitter", Run: func(context.Context, *DevSession) error { return nil }}
	err := runComponents(t.Context(), &DevSession{Out: io.Discard}, []DevComponent{quitter})
	if err == nil || !strings.Contains(err.Error(), "component quitter: returned before shutdown") {
		t.Fatalf("runComponents: got %v", err)
	}
}

func TestDevFlagValidation(t *testing.T) {
	for _, args := range [][]string{
		{"--managed-clusters", "-1"},
		{"--signing-duration", "0s"},
		{"--simulated-nodes", "-1"},
	} {
		cmd := newDevCommand()
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.ExecuteContext(t.Context())
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("dev %v: got %v, want an error naming %s", args, err, args[0])
		}
	}
}

func TestDevLogs(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		dir := t.TempDir()
		fleet := &environment.Fleet{
			Hub:     &environment.ControlPlane{Name: environment.HubName, Dir: filepath.Join(dir, "hub")},
			Managed: []*environment.ControlPlane{{Name: "cluster1", Dir: filepath.Join(dir, "cluster1")}},
		}
		for _, cp := range fleet.ControlPlanes() {
			if err := os.Mkdir(cp.Dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var term bytes.Buffer
		logs, err := openDevLogs(fleet, &term, verbose)
		if err != nil {
			t.Fatal(err)
		}
		logs.Logger("cluster1").WithName("klusterlet").Info("joined", "cluster", "cluster1")
		logs.Logger(environment.HubName).Error(errors.New("no plugin"), "Reconciler error")
		logs.Logger("cluster9").Info("nobody hears this")
		if err := logs.Close(); err != nil {
			t.Fatal(err)
		}
		agent, _ := os.ReadFile(filepath.Join(dir, "cluster1", "klusterlet.log"))
		hub, _ := os.ReadFile(filepath.Join(dir, "hub", "flotilla-hub.log"))
		if !strings.Contains(string(agent), `level=INFO msg=joined logger=klusterlet cluster=cluster1`) || strings.Contains(string(agent), "Reconciler") {
			t.Errorf("verbose=%v: klusterlet.log has\n%s\nwant its own info line only", verbose, agent)
		}
		if !strings.Contains(string(hub), `level=ERROR msg="Reconciler error" err="no plugin"`) {
			t.Errorf("verbose=%v: flotilla-hub.log has\n%s\nwant the error", verbose, hub)
		}
		// The terminal always gets errors, info lines only when verbose.
		if !strings.Contains(term.String(), "Reconciler error") || strings.Contains(term.String(), "joined") != verbose {
			t.Errorf("verbose=%v: terminal has\n%s", verbose, term.String())
		}
	}
}

func TestDevHelpNamesLogFiles(t *testing.T) {
	cmd := newDevCommand()
	var out bytes.Buffer
	cmd.SetArgs([]string{"--help"})
	cmd.SetOut(&out)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<dir>/hub/flotilla-hub.log", "<dir>/<cluster>/klusterlet.log", "-v, --verbose"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
}
