package environment

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"
)

// workloadControllers are the kube-controller-manager controllers a managed cluster runs on
// top of kcmControllers (ControlPlaneOptions.Workloads), so that workloads behave as on a
// real cluster: controllers create Pods, kube-scheduler binds them to the simulated Nodes,
// KWOK runs them and the controllers report their status.
var workloadControllers = []string{
	"deployment-controller",            // Deployments: ReplicaSets, rollouts, Available/Progressing
	"replicaset-controller",            // ReplicaSets: Pods, ready and available replicas
	"statefulset-controller",           // StatefulSets: ordered Pods, ready replicas
	"daemonset-controller",             // DaemonSets: a Pod per matching Node, numberReady
	"job-controller",                   // Jobs: Pods to completion, Complete/Failed
	"cronjob-controller",               // CronJobs: Jobs on schedule
	"ttl-after-finished-controller",    // deletes finished Jobs with ttlSecondsAfterFinished
	"pod-garbage-collector-controller", // deletes Pods of deleted Nodes, and terminated Pods past the threshold
	"disruption-controller",            // PodDisruptionBudget status
	"endpointslice-controller",         // EndpointSlices of Services from ready Pods
	"endpoints-controller",             // (deprecated) Endpoints of Services, still read by some tools
	"resourcequota-controller",         // ResourceQuota usage; without it quota admission rejects Pods
	// Not node-lifecycle-controller: after a missed heartbeat it marks the Node's Pods
	// NotReady, and KWOK's stages only make Pending Pods Ready, so they would stay NotReady
	// for good. Without it a simulated Node stays Ready as long as KWOK made it so (and
	// kube-apiserver runs without TaintNodesByCondition, whose taint it would lift).
}

// kwokStages is the KWOK configuration (Stages) every managed cluster's kwok runs with; see
// the file for where each stage comes from.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// kwokNodeLeaseSeconds is the Lease duration KWOK renews for each of its Nodes in
// kube-node-lease, a kubelet's default. KWOK renews a Lease at a quarter of it.
const kwokNodeLeaseSeconds = 40

// kwokFallbackPodCIDR is where KWOK takes Pod IPs for Nodes without spec.podCIDR (Nodes
// created by hand); simulated Nodes get their own /24 after it (simulatedNodePodCIDR). It
// is away from serviceCIDR, which KWOK's default (10.0.0.0/24) would collide with.
const kwokFallbackPodCIDR = "10.244.0.0/24"

// KWOKUser is the common name of the client certificate KWOK uses, a member of
// system:masters: one KWOK updates the status of every simulated Node and of every Pod on
// them, which the Node authorizer would not let a single kubelet identity do.
const KWOKUser = "kwok-controller"

// schedulerConfig is kube-scheduler's KubeSchedulerConfiguration: the default profile,
// without leader election (a single scheduler per cluster).
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 200
  burst: 400
leaderElection:
  leaderElect: false
enableProfiling: false
`

// startWorkloads launches kube-scheduler and kwok and creates the simulated Nodes; the
// returned function waits until kube-scheduler is healthy and KWOK has made every Node
// Ready. Both are started right after kube-apiserver, concurrently with
// kube-controller-manager and the CRDs, so they add little to the start time.
//
// KWOK does not schedule: it only watches Pods already bound to its Nodes. The real
// kube-scheduler (from the same pinned k8s.io/kubernetes as the rest of the control plane)
// binds them, so requests, node selectors, affinity, taints and DaemonSet placement behave
// as on a real cluster, and a Pod that fits nowhere stays Pending with its
// FailedScheduling event. It costs about 0.1 s of CPU to start and some 15 MiB of heap.
//
// With PodDebugging, KWOK's debugging CRDs are installed first and its debugging server
// listens on debuggingPort; the returned function also waits for its /healthz.
func (cp *ControlPlane) startWorkloads(ctx context.Context, schedulerPort, debuggingPort int) (wait func() error, err error) {
	t := time.Now()
	pki := func(name string) string { return cp.path("pki", name) }

	schedConfig, err := cp.userConfig("system:kube-scheduler", nil, caValidity)
	if err != nil {
		return nil, err
	}
	schedKubeconfig := cp.path("kube-scheduler.kubeconfig")
	if err := WriteKubeconfig(schedKubeconfig, cp.Name, schedConfig); err != nil {
		return nil, err
	}
	schedConfigPath := cp.path("kube-scheduler.yaml")
	if err := os.WriteFile(schedConfigPath, fmt.Appendf(nil, schedulerConfig, schedKubeconfig), 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", schedConfigPath, err)
	}
	scheduler, err := cp.launch(KubeSchedulerBinary, []string{
		"--config=" + schedConfigPath,
		"--authentication-kubeconfig=" + schedKubeconfig,
		"--authorization-kubeconfig=" + schedKubeconfig,
		"--client-ca-file=" + pki("ca.crt"),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedulerPort),
		"--tls-cert-file=" + pki("scheduler.crt"),
		"--tls-private-key-file=" + pki("scheduler.key"),
	}, nil)
	if err != nil {
		return nil, err
	}

	kwokConfig, err := cp.userConfig(KWOKUser, []string{"system:masters"}, caValidity)
	if err != nil {
		return nil, err
	}
	kwokKubeconfig := cp.path("kwok.kubeconfig")
	if err := WriteKubeconfig(kwokKubeconfig, cp.Name, kwokConfig); err != nil {
		return nil, err
	}
	stagesPath := cp.path("kwok.yaml")
	if err := os.WriteFile(stagesPath, kwokStages, 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", stagesPath, err)
	}
	kwokArgs := []string{
		"--kubeconfig=" + kwokKubeconfig,
		"--config=" + stagesPath,
		"--manage-nodes-with-label-selector=" + SimulatedNodeLabel + "=true",
		"--cidr=" + kwokFallbackPodCIDR,
		"--node-lease-duration-seconds=" + strconv.Itoa(kwokNodeLeaseSeconds),
	}
	if cp.opts.PodDebugging {
		if err := cp.installKWOKCRDs(ctx); err != nil {
			return nil, err
		}
		kwokArgs = append(kwokArgs, cp.kwokDebuggingArgs(debuggingPort)...)
	}
	kwok, err := cp.launch(KWOKBinary, kwokArgs, []string{
		// Without it kwok also loads ~/.kwok/kwok.yaml (kwokctl's), stages and all.
		"KWOK_WORKDIR=" + cp.path("kwok"),
	})
	if err != nil {
		return nil, err
	}
	cp.mu.Lock()
	cp.kwok = kwok
	cp.mu.Unlock()

	// The Nodes are created while the scheduler and KWOK start: KWOK initializes them
	// as soon as its informers list them.
	var nodes []string
	if cp.opts.SimulatedNodes > 0 {
		if nodes, err = cp.createNodes(ctx, cp.opts.SimulatedNodes, cp.opts.SimulatedNodeCapacity); err != nil {
			return nil, err
		}
	}

	return func() error {
		pool := x509.NewCertPool()
		pool.AddCert(cp.ca.cert)
		schedHTTP := &http.Client{
			Timeout:   2 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
		}
		defer schedHTTP.CloseIdleConnections()
		schedErr := cp.await(ctx, scheduler, "kube-scheduler /healthz", func(ctx context.Context) error {
			return getOK(ctx, schedHTTP, "https://127.0.0.1:"+strconv.Itoa(schedulerPort)+"/healthz")
		})
		nodesErr := cp.awaitNodesReady(ctx, kwok, nodes)
		var debuggingErr error
		if cp.opts.PodDebugging {
			kwokHTTP := &http.Client{
				Timeout:   2 * time.Second,
				Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
			}
			defer kwokHTTP.CloseIdleConnections()
			url := "https://127.0.0.1:" + strconv.Itoa(debuggingPort) + "/healthz"
			debuggingErr = cp.await(ctx, kwok, "KWOK's debugging server "+url, func(ctx context.Context) error {
				return getOK(ctx, kwokHTTP, url)
			})
		}
		if err := errors.Join(schedErr, nodesErr, debuggingErr); err != nil {
			return err
		}
		cp.logf("kube-scheduler and KWOK (%d Nodes Ready) ready in %s", len(nodes), time.Since(t).Round(10*time.Millisecond))
		return nil
	}, nil
}
