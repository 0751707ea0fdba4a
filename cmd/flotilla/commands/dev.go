package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/klusterlet/join"
)

// DevComponent is a long-running part of Flotilla that `flotilla dev` runs in-process once
// every control plane is ready: the hub controllers, a klusterlet agent per managed
// cluster, and so on. Run must block until ctx is cancelled and then return nil; an error
// (or an early return) ends the whole dev session.
type DevComponent struct {
	Name string
	Run  func(ctx context.Context, s *DevSession) error
}

// DevSession is what `flotilla dev` gives each component.
type DevSession struct {
	Fleet *environment.Fleet
	// Out is the terminal: short progress lines and results for the user, never logs.
	Out io.Writer
	// Addons are the built-in add-ons the hub serves and installs on every cluster (--addons).
	Addons []string
	logs   *devLogs
}

// Logger is the logger of what runs for a control plane (environment.HubName or a managed
// cluster): it writes to that control plane's Flotilla log file, and errors (everything with
// --verbose) to standard error.
func (s *DevSession) Logger(controlPlane string) logr.Logger { return s.logs.Logger(controlPlane) }

// devDefaultDir is where `flotilla dev` keeps its control planes unless --dir is given:
// stable, so the printed KUBECONFIG line stays valid across restarts.
const devDefaultDir = ".flotilla/dev"

func newDevCommand(components ...DevComponent) *cobra.Command {
	var (
		managed         int
		dir             string
		signingDuration time.Duration
		startTimeout    time.Duration
		keep            bool
		simulatedNodes  int
		verbose         bool
		bare            bool
		addons          []string
		noAddons        bool
		topology        string
		hubDashboard    bool
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local hub and managed clusters until interrupted",
		Long: `Start a local Flotilla fleet: a hub and --managed-clusters managed clusters, each a real
etcd, kube-apiserver and kube-controller-manager on loopback ports, plus the Flotilla
components.

The hub is installed as flotilla init installs it: the hub operator (Deployment
open-cluster-management/cluster-manager) and the ClusterManager cluster-manager, from which
the operator deploys the hub in topology --hub-topology (Split: OCM's six components, each a
Deployment of its own, which clusteradm get hub-info lists; Single: one Deployment
flotilla-hub, for small machines). No kubelet runs them: dev runs these Deployments as
processes of this binary (see --bare below), so editing the ClusterManager rolls the
Deployments it changes, as on a real cluster.

Each managed cluster joins as flotilla join installs a klusterlet: the klusterlet operator
(Deployment open-cluster-management/klusterlet) and the Singleton Klusterlet klusterlet with
the bootstrap Secret, from which the operator deploys the agent klusterlet-agent in
open-cluster-management-agent (clusteradm get klusterlet-info lists both); these run as
processes too. The agent runs as the ServiceAccount klusterlet-agent, the work agent as
klusterlet-work-sa (admin, CRDs, Namespaces, RBAC and the ClusterRoles labelled
open-cluster-management.io/aggregate-to-work: "true"), so a ManifestWork meets the same
permissions as on a real cluster. dev then accepts every cluster as the hub admin would.

The hub serves every Flotilla/OCM CustomResourceDefinition; each managed cluster serves
the agent-side ones (ClusterClaim, AppliedManifestWork). Each cluster has its own CA, and
kube-controller-manager signs approved CertificateSigningRequests with it for
--signing-duration, so agent certificate rotation can be watched with a short duration.

No kubelet runs anywhere. Each managed cluster instead gets --simulated-nodes Nodes
labelled flotilla.dev/simulated=true, each with cpu 4, memory 16Gi and pods 110, run by
KWOK (kwok.log): they are Ready, and their capacity is what the cluster reports (CPU and
MEMORY in flotilla get clusters). Managed clusters also run kube-scheduler and the workload
controllers, so Pods of a Deployment, StatefulSet, DaemonSet or Job are scheduled onto the
simulated Nodes and KWOK reports them Running and Ready (a Job's Pods succeed): a Deployment
gets ready replicas and becomes Available, as on a real cluster. No container ever runs.

The hub serves the built-in add-ons of --addons (default all three: cluster-proxy,
managed-serviceaccount, cluster-gateway; see flotilla hub --help) and installs them on every
cluster, as flotilla hub --addons-install-all (the hub chart's addons.installAll) does, so
'kubectl get managedclusteraddons -A' shows them once the clusters join and the clusters are
reachable through the hub (flotilla proxy). --no-addons serves none.

Admin kubeconfigs are written to <dir>/<cluster>/kubeconfig and printed with a
ready-to-paste KUBECONFIG line (contexts are named after the clusters). Ctrl-C stops
everything and removes <dir>/<cluster> unless --keep is given; the next run reuses the
same paths.

The terminal shows progress, the summary, the registered clusters and errors. The
Flotilla components log to files beside their control plane's etcd.log, kube-apiserver.log
and kube-controller-manager.log: the hub's processes to
<dir>/hub/deployments/<namespace>/<pod>/log (what dev starts and restarts to
<dir>/hub/flotilla-hub.log), each managed cluster's (the klusterlet operator, the agent) to
<dir>/<cluster>/deployments/<namespace>/<pod>/log (what dev starts there to
<dir>/<cluster>/klusterlet.log). --verbose also streams those logs, and the
control planes' start-up progress, to standard error.

With --bare the control planes start with nothing of Flotilla on them: no CRDs, no hub, no
klusterlets. Install it as on real clusters (README "Install on real clusters"): flotilla
init on the hub, flotilla join on each managed cluster. No kubelet runs the Deployments the
charts create, so dev runs them itself, as processes of this binary started the way a
kubelet starts the container (its args and env, authenticated as its ServiceAccount; logs
in <dir>/<cluster>/deployments/<namespace>/<pod>/log), restarted when their spec changes.

The control-plane binaries come from $FLOTILLA_BIN_DIR or the checkout's bin/ directory
(make controlplane).`,
		Example: `  flotilla dev --managed-clusters 2
  flotilla dev --managed-clusters 1 --signing-duration 10m --dir /tmp/fleet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if managed < 0 {
				return fmt.Errorf("--managed-clusters %d must not be negative", managed)
			}
			if signingDuration <= 0 {
				return fmt.Errorf("--signing-duration %s must be positive", signingDuration)
			}
			if simulatedNodes < 0 {
				return fmt.Errorf("--simulated-nodes %d must not be negative", simulatedNodes)
			}
			absDir, err := filepath.Abs(dir)
			if err != nil {
				return fmt.Errorf("--dir %q: %w", dir, err)
			}
			if topology != topologySplit && topology != topologySingle {
				return fmt.Errorf("--hub-topology %q: want %s or %s", topology, topologySplit, topologySingle)
			}
			if bare {
				components = []DevComponent{bareDevComponent()}
			} else {
				components = append([]DevComponent{hubDevComponent(topology, hubDashboard)}, components...)
			}
			if noAddons || bare {
				addons = nil
			}
			return runDev(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), environment.Options{
				Bare:            bare,
				ManagedClusters: managed,
				SigningDuration: signingDuration,
				StartTimeout:    startTimeout,
				Dir:             absDir,
				Keep:            keep,
				SimulatedNodes:  simulatedNodes,
			}, verbose, addons, components)
		},
	}
	f := cmd.Flags()
	f.IntVar(&managed, "managed-clusters", 2, "number of managed clusters (named cluster1, cluster2, ...)")
	f.StringVar(&dir, "dir", devDefaultDir, "directory for certificates, etcd data, kubeconfigs and logs, one subdirectory per cluster")
	f.DurationVar(&signingDuration, "signing-duration", 24*time.Hour, "lifetime of certificates signed from approved CSRs (kube-controller-manager --cluster-signing-duration)")
	f.DurationVar(&startTimeout, "start-timeout", environment.DefaultStartTimeout, "how long each control-plane component may take to become ready")
	f.BoolVar(&keep, "keep", false, "keep the cluster directories (logs, etcd data) after exit")
	f.IntVar(&simulatedNodes, "simulated-nodes", 1,
		"Nodes created on each managed cluster, run by KWOK (no kubelet): Pods are scheduled onto them and report Running, and their capacity is reported (0: none, Pods stay Pending)")
	f.BoolVar(&bare, "bare", false,
		"start the control planes with nothing of Flotilla on them, to install it as on real clusters (flotilla init, get token, join): the hub and klusterlet Deployments the charts create run here as processes of this binary")
	f.StringSliceVar(&addons, "addons", builtin.Names(),
		"built-in add-ons the hub serves and installs on every cluster (cluster-proxy, managed-serviceaccount, cluster-gateway)")
	f.StringVar(&topology, "hub-topology", topologySplit,
		"the hub as flotilla init installs it: Split runs OCM's six hub components as processes of their own (clusteradm get hub-info lists them), Single one process (for small machines)")
	f.BoolVar(&hubDashboard, "hub-dashboard", false,
		"the hub also serves the fleet dashboard itself (chart value dashboard.enabled): kubectl proxy, then /apis/dashboard.flotilla.dev/v1alpha1/dashboards/fleet/proxy/; flotilla dashboard serves it locally either way")
	f.BoolVar(&noAddons, "no-addons", false, "serve and enable no built-in add-on (overrides --addons)")
	f.BoolVarP(&verbose, "verbose", "v", false,
		"also stream the component logs and the control planes' start-up progress to standard error")
	return cmd
}

// runDev starts the fleet, prints how to reach it, runs the components and tears it all
// down when ctx ends or a component fails. out gets the concise session (progress, summary,
// results); errw errors, and with verbose the component logs and control-plane progress.
func runDev(ctx context.Context, out, errw io.Writer, opts environment.Options, verbose bool, addons []string, components []DevComponent) (err error) {
	fmt.Fprintf(out, "Starting a hub and %d managed clusters in %s ...\n", opts.ManagedClusters, opts.Dir)
	// Per-component start-up progress only matters when the start fails.
	var progress bytes.Buffer
	opts.Log = &progress
	if verbose {
		opts.Log = errw
	}
	fleet, err := environment.Start(ctx, opts)
	if err != nil {
		_, _ = errw.Write(progress.Bytes())
		return err
	}
	defer func() {
		fmt.Fprintln(out, "Stopping the control planes ...")
		if err = errors.Join(err, fleet.Stop()); err == nil {
			fmt.Fprintln(out, "Stopped.")
		}
	}()

	logs, err := openDevLogs(fleet, errw, verbose)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, logs.Close()) }()
	// What libraries log process-wide (controller-runtime's caches, client-go) belongs to the
	// hub's log; klog is handed back when the session ends, the file being closed then.
	setLibraryLoggers(logs.Logger(environment.HubName))
	defer klog.ClearLogger()

	printDevSummary(out, fleet, logs, opts.Keep, opts.Bare)
	return runComponents(ctx, &DevSession{Fleet: fleet, Out: out, Addons: addons, logs: logs}, components)
}

// printDevSummary says where everything is: API servers, kubeconfigs and log files.
func printDevSummary(w io.Writer, fleet *environment.Fleet, logs *devLogs, keep, bare bool) {
	planes := fleet.ControlPlanes()
	fmt.Fprintf(w, "\nFleet ready in %s:\n", fleet.StartDuration.Round(100*time.Millisecond))
	paths := make([]string, 0, len(planes))
	for _, cp := range planes {
		fmt.Fprintf(w, "  %-10s %s  kubeconfig %s\n", cp.Name, cp.URL, cp.KubeconfigPath)
		paths = append(paths, cp.KubeconfigPath)
	}
	removed := " (removed on exit; --keep keeps them)"
	if keep {
		removed = ""
	}
	fmt.Fprintf(w, "\nLogs, beside each control plane's etcd.log, kube-apiserver.log and kube-controller-manager.log%s:\n", removed)
	for _, cp := range planes {
		if !bare {
			fmt.Fprintf(w, "  %-10s %s, the processes %s\n", cp.Name, logs.paths[cp.Name], filepath.Join(cp.Dir, "deployments", "<namespace>", "<pod>", "log"))
			continue
		}
		fmt.Fprintf(w, "  %-10s %s\n", cp.Name, filepath.Join(cp.Dir, "deployments", "<namespace>", "<pod>", "log"))
	}
	fmt.Fprintf(w, "\nexport KUBECONFIG=%s\n", strings.Join(paths, ":"))
	fmt.Fprintf(w, "# then e.g.: kubectl --context %s get managedclusters\n", environment.HubName)
	if !bare {
		// The current context is the hub's (its kubeconfig comes first).
		fmt.Fprintf(w, "# and the fleet dashboard in a browser: flotilla dashboard\n")
	}
	fmt.Fprintf(w, "\nPress Ctrl-C to stop.\n")
}

// runComponents runs every component until ctx ends or one of them fails, then cancels
// the rest and waits for them.
func runComponents(ctx context.Context, s *DevSession, components []DevComponent) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	log := s.Logger(environment.HubName)
	var wg sync.WaitGroup
	errs := make([]error, len(components))
	for i, c := range components {
		log.Info("Starting dev component", "component", c.Name)
		wg.Go(func() {
			err := c.Run(ctx, s)
			if err == nil && ctx.Err() == nil {
				err = errors.New("returned before shutdown")
			}
			if err != nil {
				errs[i] = fmt.Errorf("component %s: %w", c.Name, err)
				cancel(errs[i])
			}
		})
	}
	<-ctx.Done()
	fmt.Fprintln(s.Out, "\nStopping the Flotilla components ...")
	cancel(nil)
	wg.Wait()
	return errors.Join(errs...)
}

// bareDevComponent is the kubelet of `flotilla dev --bare`: it runs the hub and klusterlet
// Deployments that flotilla init and join create, on every control plane, as processes of
// this binary.
func bareDevComponent() DevComponent {
	return DevComponent{Name: "Flotilla Deployments", Run: func(ctx context.Context, s *DevSession) error {
		bin, err := os.Executable()
		if err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "\nNothing of Flotilla runs yet: install it with flotilla init (hub) and flotilla join (managed clusters).\n")
		var wg sync.WaitGroup
		for _, cp := range s.Fleet.ControlPlanes() {
			logf := func(format string, args ...any) {
				fmt.Fprintf(s.Out, "  %s: %s\n", cp.Name, fmt.Sprintf(format, args...))
			}
			wg.Go(func() {
				_ = cp.RunDeployments(ctx, bin, []string{install.HubChart, install.KlusterletChart}, defaultWasmCacheDir(), logf)
			})
		}
		wg.Wait()
		return nil
	}}
}

// hubDevComponent installs the hub as flotilla init does (the hub operator, topology
// topology) and a klusterlet on every managed cluster as flotilla join does (the klusterlet
// operator, a Singleton Klusterlet), runs their Deployments as processes of this binary
// (environment.RunDeployments, as --bare does), accepts every cluster as the hub admin would,
// and prints the cluster table once all are Joined and Available.
func hubDevComponent(topology string, dashboard bool) DevComponent {
	return DevComponent{Name: "hub (operator, " + topology + ") + klusterlets", Run: func(ctx context.Context, s *DevSession) error {
		return runHubAndKlusterlets(ctx, s, topology, dashboard)
	}}
}

// devHubValues are the hub chart's values for flotilla dev: the built-in add-ons served and
// installed on every cluster, the Wasm cache shared by runs, the hub-served dashboard.
func devHubValues(addons []string, topology string, dashboard bool) (map[string]any, error) {
	keys := map[string]string{"cluster-proxy": "clusterProxy", "managed-serviceaccount": "managedServiceAccount", "cluster-gateway": "clusterGateway"}
	a := map[string]any{"installAll": len(addons) > 0}
	for _, name := range addons {
		k, ok := keys[name]
		if !ok {
			return nil, fmt.Errorf("--addons: no built-in add-on %q (%s)", name, strings.Join(builtin.Names(), ", "))
		}
		a[k] = map[string]any{"enabled": true}
	}
	user := map[string]any{"addons": a}
	if dashboard {
		user["dashboard"] = map[string]any{"enabled": true}
	}
	if dir := defaultWasmCacheDir(); dir != "" {
		user["flags"] = map[string]any{"plugin-cache-dir": dir}
	}
	return hubInstallValues(user, topology)
}

// devBinary is the flotilla binary dev runs the Deployments with: this one.
var devBinary = os.Executable

func runHubAndKlusterlets(ctx context.Context, s *DevSession, topology string, dashboard bool) error {
	fleet := s.Fleet
	values, err := devHubValues(s.Addons, topology, dashboard)
	if err != nil {
		return err
	}
	objs, err := renderHubInstall(values)
	if err != nil {
		return err
	}
	bin, err := devBinary()
	if err != nil {
		return err
	}
	// The processes stop (cancel) before the wait for them.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hubLog := s.Logger(environment.HubName).WithName("deployments")
	wg.Go(func() {
		_ = fleet.Hub.RunDeployments(ctx, bin, []string{install.HubChart}, defaultWasmCacheDir(), func(format string, args ...any) {
			hubLog.Info(fmt.Sprintf(format, args...))
		})
	})
	fmt.Fprintf(s.Out, "\nInstalling the hub operator (topology %s); it deploys the hub, run here as processes ...\n", topology)
	if err := installHub(ctx, fleet.Hub.Config, objs, 5*time.Minute, func(p string) { hubLog.Info(p) }); err != nil {
		return fmt.Errorf("installing the hub (its processes log in %s): %w",
			filepath.Join(fleet.Hub.Dir, "deployments", "<namespace>", "<pod>", "log"), err)
	}
	fmt.Fprintf(s.Out, "  the ClusterManager cluster-manager is applied and rolled out\n")
	bootstrapKC, err := bootstrap.Kubeconfig(ctx, fleet.Hub.Config, 0)
	if err != nil {
		return err
	}
	run := func(name string, f func(context.Context) error) {
		wg.Go(func() {
			if err := f(ctx); err != nil {
				cancel(fmt.Errorf("%s: %w", name, err))
			}
		})
	}
	// Each managed cluster joins as flotilla join does: the klusterlet operator and a Singleton
	// Klusterlet with the bootstrap Secret; the operator deploys the agent, and both run here
	// as processes, as the hub's do.
	names := make([]string, 0, len(fleet.Managed))
	for _, m := range fleet.Managed {
		name := m.Name
		names = append(names, name)
		log := s.Logger(name).WithName("deployments")
		wg.Go(func() {
			_ = m.RunDeployments(ctx, bin, []string{install.KlusterletChart}, defaultWasmCacheDir(), func(format string, args ...any) {
				log.Info(fmt.Sprintf(format, args...))
			})
		})
		run("klusterlet "+name, func(ctx context.Context) error {
			objs, err := join.RenderOperator(join.Options{ClusterName: name}, operatorv1.InstallModeSingleton, bootstrapKC, nil)
			if err != nil {
				return err
			}
			if err := install.Apply(ctx, m.Config, objs); err != nil {
				return fmt.Errorf("installing the klusterlet operator and Klusterlet %s: %w", join.DefaultKlusterletName, err)
			}
			return nil
		})
	}
	if err := acceptAndWait(ctx, fleet, s.Out, names); err != nil && context.Cause(ctx) == nil {
		cancel(err)
	} else if err == nil {
		if err := waitDevAddons(ctx, fleet, s.Out, s.Addons, names); err != nil && context.Cause(ctx) == nil {
			cancel(err)
		}
	}
	<-ctx.Done()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// acceptAndWait accepts each cluster once its agent registered, as the hub admin would, then
// waits until all are Joined and Available and prints them. Progress goes to w.
func acceptAndWait(ctx context.Context, fleet *environment.Fleet, w io.Writer, names []string) error {
	if len(names) == 0 {
		return nil
	}
	c, kube, err := hubClientsForConfig(fleet.Hub.Config)
	if err != nil {
		return err
	}
	const timeout = 5 * time.Minute
	fmt.Fprintf(w, "\nWaiting for the klusterlets of %s to register ...\n", strings.Join(names, ", "))
	pending := slices.Clone(names)
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		// Clusters that have not registered yet fail; they are tried again.
		results, err := admin.Accept(ctx, c, kube, pending)
		lastErr = err
		for _, r := range results {
			pending = slices.DeleteFunc(pending, func(n string) bool { return n == r.Cluster })
			if len(r.ApprovedCSRs) > 0 {
				fmt.Fprintf(w, "  %s registered and accepted (approved CSR %s)\n", r.Cluster, strings.Join(r.ApprovedCSRs, ", "))
			} else {
				fmt.Fprintf(w, "  %s registered and accepted\n", r.Cluster)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("accepting clusters %v: %w (last attempt: %v)", pending, err, lastErr)
	}
	var rows []admin.ClusterRow
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		rows, err = admin.ClusterRows(ctx, c)
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, r := range rows {
			if slices.Contains(names, r.Name) && r.Joined == "True" && r.Available == "True" {
				ready++
			}
		}
		return ready == len(names), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for clusters %v to be Joined and Available: %w", names, err)
	}
	fmt.Fprintf(w, "\nManaged clusters joined and accepted:\n")
	return admin.WriteClusters(w, rows)
}

// waitDevAddons waits until the hub has installed the built-in add-ons on every cluster (its
// install strategy over the Placement global creates their ManagedClusterAddOns).
func waitDevAddons(ctx context.Context, fleet *environment.Fleet, w io.Writer, addons, clusters []string) error {
	if len(addons) == 0 || len(clusters) == 0 {
		return nil
	}
	c, _, err := hubClientsForConfig(fleet.Hub.Config)
	if err != nil {
		return err
	}
	var missing []string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		missing = missing[:0]
		for _, cl := range clusters {
			for _, a := range addons {
				if err := c.Get(ctx, client.ObjectKey{Namespace: cl, Name: a}, &addonv1alpha1.ManagedClusterAddOn{}); err != nil {
					missing = append(missing, cl+"/"+a)
				}
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the hub to install the add-ons on every cluster (placement %s/%s; not yet: %v): %w",
			builtin.InstallAllNamespace, builtin.InstallAllPlacement, missing, err)
	}
	fmt.Fprintf(w, "\nAdd-ons %s installed on every cluster by placement %s/%s (kubectl --context %s get managedclusteraddons -A)\n",
		strings.Join(addons, ", "), builtin.InstallAllNamespace, builtin.InstallAllPlacement, environment.HubName)
	return nil
}
