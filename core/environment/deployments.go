package environment

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Pods do not run on these control planes (no kubelet; KWOK only pretends). Flotilla's own
// Deployments — the hub and the klusterlet as the Helm charts describe them — can still run
// for real: as processes of the flotilla binary, started the way a kubelet would start the
// container. DeploymentProcess is one such replica.

// DeploymentProcessOptions say how to run a Deployment's container as a process.
type DeploymentProcessOptions struct {
	// Binary is the flotilla binary the image would hold.
	Binary string
	// Replica numbers the process among the Deployment's replicas (its pod name suffix).
	Replica int
	// NoWebhook runs a hub without its webhook server. Replicas in a cluster share the
	// webhook Service; here each serves at its own loopback URL and the replicas would take
	// the webhook configuration from each other.
	NoWebhook bool
	// PluginCacheDir, when set, replaces the container's --plugin-cache-dir (compiled Wasm
	// plugins shared by runs).
	PluginCacheDir string
}

// DeploymentProcess is a replica of a Deployment run as a process.
type DeploymentProcess struct {
	// Name is <namespace>/<deployment>-<replica>.
	Name string
	// Args are the process's arguments (after the binary).
	Args []string
	// HealthAddr and MetricsAddr are the loopback addresses the container's
	// --health-probe-bind-address and --metrics-bind-address were moved to.
	HealthAddr, MetricsAddr string
	// LogPath holds its standard output and error.
	LogPath string
	// Probed says whether the container serves /readyz (--health-probe-bind-address, not 0);
	// one that does not is ready while it runs, as a kubelet treats a container without a
	// readiness probe.
	Probed bool

	proc *process
}

// Exited is closed when the process has exited.
func (p *DeploymentProcess) Exited() <-chan struct{} { return p.proc.exited }

// Kill ends the process as a node failure would: SIGKILL, no clean hand-over.
func (p *DeploymentProcess) Kill() {
	_ = syscall.Kill(-p.proc.pid(), syscall.SIGKILL)
	<-p.proc.exited
}

// Stop ends the process as a pod's termination does: SIGTERM, then SIGKILL after 30 s.
func (p *DeploymentProcess) Stop() error { return p.proc.stop(30 * time.Second) }

// LogTail returns the last n lines of the process's log.
func (p *DeploymentProcess) LogTail(n int) string { return logTail(p.LogPath, n) }

// RunDeployment runs a replica of Deployment ns/name as a process: with its container's
// args and env, authenticated as its ServiceAccount (a token from the TokenRequest API, so
// what the chart's RBAC grants is what it may do). Only what the cluster's network would
// provide is replaced: the in-cluster config by --kubeconfig, the listen addresses by free
// loopback ports, and a hub's webhook Service (which routes nowhere here) by a loopback URL
// the API server reaches. The process stops with the control plane.
func (cp *ControlPlane) RunDeployment(ctx context.Context, ns, name string, o DeploymentProcessOptions) (*DeploymentProcess, error) {
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("running Deployment %s/%s: %w", ns, name, err)
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		return nil, fmt.Errorf("running Deployment %s/%s: %d containers, want the flotilla container only", ns, name, n)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	if len(ctr.Command) > 0 || len(ctr.Args) == 0 {
		return nil, fmt.Errorf("running Deployment %s/%s: want the image's entrypoint (flotilla) with a subcommand in args", ns, name)
	}
	secs := int64(24 * 3600)
	sa := d.Spec.Template.Spec.ServiceAccountName
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("running Deployment %s/%s: token of ServiceAccount %s: %w", ns, name, sa, err)
	}
	pod := fmt.Sprintf("%s-%d", name, o.Replica)
	dir := cp.path("deployments", ns, pod)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"in-cluster": {Server: cp.URL, CertificateAuthorityData: cp.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{sa: {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"in-cluster": {Cluster: "in-cluster", AuthInfo: sa, Namespace: ns}},
		CurrentContext: "in-cluster",
	}
	if err := clientcmd.WriteToFile(kc, kcPath); err != nil {
		return nil, err
	}
	addrs, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	p := &DeploymentProcess{Name: ns + "/" + pod, LogPath: filepath.Join(dir, "log"),
		HealthAddr: fmt.Sprintf("127.0.0.1:%d", addrs[0]), MetricsAddr: fmt.Sprintf("127.0.0.1:%d", addrs[1])}
	p.Args = []string{ctr.Args[0], "--kubeconfig=" + kcPath}
	for _, a := range ctr.Args[1:] {
		key, _, _ := strings.Cut(a, "=")
		switch key {
		case "--webhook-service":
			continue
		case "--webhook-bind-address":
			a = key + "=127.0.0.1:0"
			if o.NoWebhook {
				a = key + "=0"
			}
		case "--health-probe-bind-address":
			if _, v, _ := strings.Cut(a, "="); v == "0" {
				break
			}
			a = key + "=" + p.HealthAddr
			p.Probed = true
		case "--metrics-bind-address":
			a = key + "=" + p.MetricsAddr
		case "--plugin-cache-dir":
			if o.PluginCacheDir != "" {
				a = key + "=" + o.PluginCacheDir
			}
		}
		p.Args = append(p.Args, a)
	}
	var env []string
	for _, e := range ctr.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil {
			switch {
			case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace":
				v = ns
			case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.name":
				v = pod
			default:
				return nil, fmt.Errorf("running Deployment %s/%s: env %s: only metadata.namespace and metadata.name are provided here", ns, name, e.Name)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	p.proc, err = startProcess(cp.spawner, p.Name, o.Binary, p.Args, env, dir, p.LogPath)
	if err != nil {
		return nil, err
	}
	cp.mu.Lock()
	cp.procs = append(cp.procs, p.proc)
	cp.mu.Unlock()
	return p, nil
}

// RunDeployments is a kubelet for Flotilla's own Deployments, for `flotilla dev --bare`: until
// ctx ends it runs every Deployment of cp whose app.kubernetes.io/name label is one of names
// as processes (RunDeployment, one per replica), restarts them when the pod template
// changes, stops them when the Deployment goes, and reports replicas, readyReplicas (its
// /readyz answers) and availableReplicas in the Deployment's status as the kubelet and the
// deployment controller would (on a control plane without workload controllers). Only
// replica 0 of a hub serves the webhooks (see DeploymentProcessOptions.NoWebhook). logf receives what it starts and stops.
func (cp *ControlPlane) RunDeployments(ctx context.Context, binary string, names []string, pluginCacheDir string, logf func(string, ...any)) error {
	return cp.RunDeploymentsIn(ctx, "", binary, names, pluginCacheDir, logf)
}

// RunDeploymentsIn is RunDeployments for the Deployments of one namespace ("" for all): a
// suite whose other Deployments have no hub to reach runs only the ones it means to.
func (cp *ControlPlane) RunDeploymentsIn(ctx context.Context, namespace, binary string, names []string, pluginCacheDir string, logf func(string, ...any)) error {
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	type running struct {
		generation int64
		procs      []*DeploymentProcess
	}
	live := map[string]*running{}
	stopAll := func(key string) {
		for _, p := range live[key].procs {
			_ = p.Stop()
		}
		delete(live, key)
	}
	defer func() {
		for key := range live {
			stopAll(key)
		}
	}()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name in (" + strings.Join(names, ",") + ")"}
	health := &http.Client{Timeout: time.Second}
	// A Deployment created, changed or deleted is acted on at once (a watch kicks the loop);
	// readiness, which no API object announces, is probed every second, and every 200 ms
	// while a started process is not ready yet.
	kick := make(chan struct{}, 1)
	go watchDeployments(ctx, kube, namespace, sel, kick)
	const period, starting = time.Second, 200 * time.Millisecond
	timer := time.NewTimer(period)
	defer timer.Stop()
	for {
		next := period
		l, err := kube.AppsV1().Deployments(namespace).List(ctx, sel)
		if err == nil {
			seen := map[string]bool{}
			for i := range l.Items {
				d := &l.Items[i]
				key := d.Namespace + "/" + d.Name
				seen[key] = true
				want := 1
				if d.Spec.Replicas != nil {
					want = int(*d.Spec.Replicas)
				}
				r := live[key]
				if r != nil && (r.generation != d.Generation || len(r.procs) != want) {
					logf("restarting %s: its spec changed", key)
					stopAll(key)
					r = nil
				}
				if r == nil {
					r = &running{generation: d.Generation}
					for n := range want {
						p, err := cp.RunDeployment(ctx, d.Namespace, d.Name, DeploymentProcessOptions{Binary: binary, Replica: n, PluginCacheDir: pluginCacheDir, NoWebhook: n > 0})
						if err != nil {
							logf("cannot run %s: %v", key, err)
							break
						}
						logf("started %s (log %s)", p.Name, p.LogPath)
						r.procs = append(r.procs, p)
					}
					live[key] = r
				}
				ready := 0
				for i, p := range r.procs {
					select {
					case <-p.Exited():
						logf("%s exited; restarting it. Last lines of %s:\n%s", p.Name, p.LogPath, p.LogTail(20))
						if np, err := cp.RunDeployment(ctx, d.Namespace, d.Name, DeploymentProcessOptions{Binary: binary, Replica: i, PluginCacheDir: pluginCacheDir, NoWebhook: i > 0}); err == nil {
							r.procs[i] = np
						}
						continue
					default:
					}
					if !p.Probed {
						ready++
						continue
					}
					if resp, err := health.Get("http://" + p.HealthAddr + "/readyz"); err == nil {
						if resp.StatusCode == http.StatusOK {
							ready++
						}
						resp.Body.Close()
					}
				}
				if ready < len(r.procs) {
					next = starting
				}
				// Where the deployment controller runs (a managed cluster's workloads), it
				// reports the status, from the Pods KWOK pretends to run.
				st := d.Status
				if !cp.opts.Workloads && st.Replicas != int32(len(r.procs)) || st.ReadyReplicas != int32(ready) || st.ObservedGeneration != d.Generation {
					d.Status.Replicas, d.Status.UpdatedReplicas = int32(len(r.procs)), int32(len(r.procs))
					d.Status.ReadyReplicas, d.Status.AvailableReplicas = int32(ready), int32(ready)
					d.Status.ObservedGeneration = d.Generation
					_, _ = kube.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
				}
			}
			for key := range live {
				if !seen[key] {
					logf("stopping %s: the Deployment is gone", key)
					stopAll(key)
				}
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-kick:
		}
	}
}

// watchDeployments sends on kick (without blocking: one pending kick is enough) whenever a
// Deployment matching sel changes, until ctx ends; a watch that ends is started again.
func watchDeployments(ctx context.Context, kube kubernetes.Interface, namespace string, sel metav1.ListOptions, kick chan<- struct{}) {
	for ctx.Err() == nil {
		w, err := kube.AppsV1().Deployments(namespace).Watch(ctx, sel)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for range w.ResultChan() {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
		w.Stop()
	}
}
