package environment

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// DefaultSigningDuration is the lifetime of certificates kube-controller-manager signs when
// no SigningDuration is given. It is short on purpose: agents rotate their client
// certificates at a fraction of it, so rotation happens within a test run.
const DefaultSigningDuration = 10 * time.Minute

// DefaultStartTimeout bounds how long one control plane may take to become ready. It is
// generous because CI runs several control planes and test binaries on two cores.
const DefaultStartTimeout = 3 * time.Minute

// AdminUser is the common name of the admin client certificate, a member of system:masters.
const AdminUser = "flotilla-admin"

// serviceCIDR is the service IP range; its first address is the kubernetes service.
const serviceCIDR = "10.0.0.0/24"

// markerFile marks a directory as created by this package, so that reusing a fixed
// directory (flotilla dev) only ever wipes what we created.
const markerFile = ".flotilla-environment"

// kcmControllers are the kube-controller-manager controllers Flotilla's behaviour relies on,
// run on every control plane; managed clusters add workloadControllers.
var kcmControllers = []string{
	"certificatesigningrequest-signing-controller", // signs approved CSRs (registration, rotation)
	"certificatesigningrequest-cleaner-controller", // garbage-collects old CSRs
	"garbage-collector-controller",                 // ownerReference cascading deletion
	"namespace-controller",                         // finalizes deleted namespaces
	"serviceaccount-controller",                    // "default" service account per namespace
	"serviceaccount-token-controller",              // tokens for --use-service-account-credentials
	"root-ca-certificate-publisher-controller",     // kube-root-ca.crt config maps
	"clusterrole-aggregation-controller",           // aggregated RBAC roles (admin, edit, view)
}

// ControlPlaneOptions configures one control plane.
type ControlPlaneOptions struct {
	// Name is the cluster name used in logs, kubeconfig contexts and the directory
	// layout. Default "cluster".
	Name string
	// Dir holds this control plane's certificates, etcd data, kubeconfigs and logs. It is
	// created if missing; an existing directory must be empty or have been created by this
	// package (it is then wiped). Empty means a new temporary directory.
	Dir string
	// Keep leaves Dir on disk after Stop (logs and etcd data for debugging).
	Keep bool
	// BinDir holds etcd, kube-apiserver and kube-controller-manager. Default BinDir().
	BinDir string
	// SigningDuration is kube-controller-manager's --cluster-signing-duration.
	// Default DefaultSigningDuration.
	SigningDuration time.Duration
	// AllCRDs installs every CustomResourceDefinition in core/crds (a hub).
	AllCRDs bool
	// CRDs names further CustomResourceDefinitions from core/crds to install, e.g.
	// ClusterClaimCRD on a managed cluster.
	CRDs []string
	// StartTimeout bounds the start of each component. Default DefaultStartTimeout.
	StartTimeout time.Duration
	// Workloads makes workloads run as on a real cluster (a managed cluster):
	// kube-controller-manager also runs the workload controllers (Deployments, ReplicaSets,
	// StatefulSets, DaemonSets, Jobs, CronJobs and what they rely on), kube-scheduler binds
	// Pods to Nodes, and KWOK runs the Pods bound to simulated Nodes (Running and Ready; a
	// Job's Pods succeed). Both are logged to kube-scheduler.log and kwok.log in Dir.
	Workloads bool
	// SimulatedNodes is the number of simulated Nodes (SimulatedNode) created at start and
	// waited for until KWOK reports them Ready. It needs Workloads. Default 0.
	SimulatedNodes int
	// SimulatedNodeCapacity is each simulated Node's capacity and allocatable; nil means
	// DefaultSimulatedNodeCapacity.
	SimulatedNodeCapacity corev1.ResourceList
	// PodDebugging makes `kubectl exec`, `logs` (-f) and `port-forward` work against Pods on
	// simulated Nodes: KWOK runs its debugging server on a loopback port, which the Nodes
	// advertise as their kubelet's, and kube-apiserver reaches it there. What it answers for
	// a Pod comes from KWOK's Exec, Logs and PortForward objects (ServePodStreams), whose
	// CRDs are installed. An Exec runs commands as local processes of the user running the
	// control plane, so enable it only on test clusters. It needs Workloads.
	PodDebugging bool
	// Profiling serves kube-apiserver's Go profiles at /debug/pprof (to users allowed the
	// nonResourceURL, e.g. the admin), for benchmarks that look for where its time goes.
	Profiling bool
	// Log receives progress messages. Default: discarded.
	Log io.Writer
}

// ControlPlane is a running etcd + kube-apiserver + kube-controller-manager, plus
// kube-scheduler and KWOK with ControlPlaneOptions.Workloads.
type ControlPlane struct {
	// Name is the cluster name.
	Name string
	// URL is the kube-apiserver's https URL.
	URL string
	// Config authenticates as AdminUser (system:masters).
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for Config, with embedded credentials.
	KubeconfigPath string
	// CAData is the PEM certificate of the cluster CA, which signs the API server's
	// serving certificate, every client certificate it trusts and approved CSRs.
	CAData []byte
	// CACertPath and CAKeyPath are the PEM files of the cluster CA.
	CACertPath, CAKeyPath string
	// Dir holds everything this control plane wrote, including the component logs
	// etcd.log, kube-apiserver.log and kube-controller-manager.log (and with Workloads
	// kube-scheduler.log and kwok.log).
	Dir string
	// SigningDuration is the lifetime of certificates kube-controller-manager signs.
	SigningDuration time.Duration

	opts      ControlPlaneOptions
	log       io.Writer
	ca        *authority
	bins      map[string]string
	spawner   *spawner
	removeDir bool
	pickPorts func(int) ([]int, error)

	mu    sync.Mutex
	procs []*process // in start order
	ports []int
	kwok  *process // with Workloads
	nodes int      // simulated Nodes created so far
	// apiserver and apiserverArgs let StopAPIServer and StartAPIServer take the API down
	// and bring it back on the same address.
	apiserver     *process
	apiserverArgs []string

	stopOnce sync.Once
	stopErr  error
}

// errPortTaken marks a start that failed because another process bound one of our ports
// between choosing it and the component binding it.
var errPortTaken = errors.New("port taken by another process")

// StartControlPlane starts one control plane and waits until it serves requests, its
// controller manager is healthy and the requested CRDs are established. ctx bounds the
// start only: the processes run until Stop. On error nothing is left running and the
// error names the directory holding the component logs.
func StartControlPlane(ctx context.Context, opts ControlPlaneOptions) (*ControlPlane, error) {
	return startControlPlane(ctx, opts, freePorts)
}

// startControlPlane is StartControlPlane with the port picker as a parameter, so that
// tests can hand out a taken port.
func startControlPlane(ctx context.Context, opts ControlPlaneOptions, pickPorts func(int) ([]int, error)) (*ControlPlane, error) {
	if opts.Name == "" {
		opts.Name = "cluster"
	}
	if opts.SigningDuration == 0 {
		opts.SigningDuration = DefaultSigningDuration
	}
	if opts.SigningDuration < 0 {
		return nil, fmt.Errorf("control plane %s: SigningDuration %s must be positive", opts.Name, opts.SigningDuration)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.SimulatedNodes < 0 {
		return nil, fmt.Errorf("control plane %s: SimulatedNodes %d must not be negative", opts.Name, opts.SimulatedNodes)
	}
	if opts.SimulatedNodes > 0 && !opts.Workloads {
		return nil, fmt.Errorf("control plane %s: SimulatedNodes needs Workloads (KWOK runs simulated Nodes)", opts.Name)
	}
	if opts.PodDebugging && !opts.Workloads {
		return nil, fmt.Errorf("control plane %s: PodDebugging needs Workloads (KWOK serves exec, logs and port-forward)", opts.Name)
	}
	if opts.SimulatedNodeCapacity == nil {
		opts.SimulatedNodeCapacity = DefaultSimulatedNodeCapacity()
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	cp := &ControlPlane{Name: opts.Name, SigningDuration: opts.SigningDuration, opts: opts, log: log, pickPorts: pickPorts}
	if err := cp.prepare(); err != nil {
		cp.cleanupDir()
		return nil, err
	}
	cp.spawner = newSpawner()
	begin := time.Now()
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := cp.start(ctx)
		if err == nil {
			break
		}
		stopErr := cp.stopProcesses()
		if errors.Is(err, errPortTaken) && attempt < attempts && ctx.Err() == nil {
			cp.logf("a port was taken by another process; retrying with new ports (attempt %d of %d)", attempt+1, attempts)
			continue
		}
		cp.spawner.close()
		// The directory (logs, configuration) is kept for debugging; a temporary one is
		// swept by a later run once this process has exited.
		return nil, errors.Join(fmt.Errorf("starting control plane %s (files kept in %s): %w", cp.Name, cp.Dir, err), stopErr)
	}
	cp.logf("ready in %s at %s (kubeconfig %s)", time.Since(begin).Round(100*time.Millisecond), cp.URL, cp.KubeconfigPath)
	return cp, nil
}

func (cp *ControlPlane) logf(format string, args ...any) {
	fmt.Fprintf(cp.log, "%s: %s\n", cp.Name, fmt.Sprintf(format, args...))
}

// prepare creates the directory, the binaries' paths and all key material.
func (cp *ControlPlane) prepare() error {
	var err error
	if cp.opts.Dir == "" {
		if cp.Dir, err = newTempDir(cp.Name); err != nil {
			return err
		}
		cp.removeDir = !cp.opts.Keep
	} else {
		if cp.Dir, err = filepath.Abs(cp.opts.Dir); err != nil {
			return fmt.Errorf("control plane %s: Dir %q: %w", cp.Name, cp.opts.Dir, err)
		}
		if err := resetOwnedDir(cp.Dir); err != nil {
			return fmt.Errorf("control plane %s: Dir: %w", cp.Name, err)
		}
		cp.removeDir = !cp.opts.Keep
	}

	binDir := cp.opts.BinDir
	if binDir == "" {
		if binDir, err = BinDir(); err != nil {
			return err
		}
	}
	cp.bins = map[string]string{}
	binaries := []string{EtcdBinary, KubeAPIServerBinary, KubeControllerManagerBinary}
	if cp.opts.Workloads {
		binaries = append(binaries, KubeSchedulerBinary, KWOKBinary)
	}
	for _, name := range binaries {
		if cp.bins[name], err = binaryPath(binDir, name); err != nil {
			return err
		}
	}

	if cp.ca, err = newAuthority(cp.Name + "-ca"); err != nil {
		return err
	}
	cp.CAData = cp.ca.certPEM
	cp.CACertPath = cp.path("pki", "ca.crt")
	cp.CAKeyPath = cp.path("pki", "ca.key")
	servingHosts := certSpec{
		dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		ips:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
		server:   true,
	}
	apiSpec := servingHosts
	apiSpec.commonName = "kube-apiserver"
	apiCert, apiKey, err := cp.ca.issue(apiSpec)
	if err != nil {
		return err
	}
	kcmSpec := servingHosts
	kcmSpec.commonName = "kube-controller-manager"
	kcmCert, kcmKey, err := cp.ca.issue(kcmSpec)
	if err != nil {
		return err
	}
	saKey, saPub, err := serviceAccountKeys()
	if err != nil {
		return err
	}
	// The front-proxy CA authenticates the API server to aggregated API servers. Without
	// it kube-controller-manager logs an error for the missing requestheader bundle
	// several times a second.
	frontProxy, err := newAuthority(cp.Name + "-front-proxy-ca")
	if err != nil {
		return err
	}
	proxyCert, proxyKey, err := frontProxy.issue(certSpec{commonName: "front-proxy-client", client: true})
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt": cp.ca.certPEM, "ca.key": cp.ca.keyPEM,
		"front-proxy-ca.crt":     frontProxy.certPEM,
		"front-proxy-client.crt": proxyCert, "front-proxy-client.key": proxyKey,
		"apiserver.crt": apiCert, "apiserver.key": apiKey,
		"kcm.crt": kcmCert, "kcm.key": kcmKey,
		"sa.key": saKey, "sa.pub": saPub,
	}
	if cp.opts.Workloads {
		schedulerSpec := servingHosts
		schedulerSpec.commonName = "kube-scheduler"
		if files["scheduler.crt"], files["scheduler.key"], err = cp.ca.issue(schedulerSpec); err != nil {
			return err
		}
	}
	if cp.opts.PodDebugging {
		// KWOK's debugging server, reached by kube-apiserver at 127.0.0.1 (kubeletClientArgs).
		kwokSpec := servingHosts
		kwokSpec.commonName = "kwok-debugging-server"
		if files["kwok.crt"], files["kwok.key"], err = cp.ca.issue(kwokSpec); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cp.path("pki"), 0o700); err != nil {
		return fmt.Errorf("control plane %s: %w", cp.Name, err)
	}
	for name, data := range files {
		if err := os.WriteFile(cp.path("pki", name), data, 0o600); err != nil {
			return fmt.Errorf("control plane %s: writing %s: %w", cp.Name, name, err)
		}
	}
	return nil
}

func (cp *ControlPlane) path(elem ...string) string {
	return filepath.Join(append([]string{cp.Dir}, elem...)...)
}

// start runs one attempt: choose ports, then etcd, kube-apiserver, and concurrently the
// CRDs, kube-controller-manager and (Workloads) kube-scheduler, KWOK and the simulated
// Nodes, each waited for.
func (cp *ControlPlane) start(ctx context.Context) error {
	nPorts := 4
	if cp.opts.Workloads {
		nPorts++
	}
	if cp.opts.PodDebugging {
		nPorts++
	}
	ports, err := cp.pickPorts(nPorts)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]
	cp.mu.Lock()
	cp.ports = ports
	cp.kwok, cp.nodes = nil, 0 // a previous attempt's are gone with its etcd data
	cp.mu.Unlock()
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	// A previous attempt's etcd data names other peer URLs; start from scratch.
	etcdData := cp.path("etcd")
	if err := os.RemoveAll(etcdData); err != nil {
		return fmt.Errorf("clearing etcd data %s: %w", etcdData, err)
	}
	if err := os.MkdirAll(etcdData, 0o700); err != nil {
		return err
	}

	t := time.Now()
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	// The member's name is this attempt's own. When another control plane's etcd took the
	// client port between our choice and our etcd binding it, its /health answers as well:
	// only the member list tells it is not ours (our etcd then exits, address in use).
	member := cp.Name + "-" + rand.Text()[:8]
	etcd, err := cp.launch(EtcdBinary, []string{
		"--name=" + member,
		"--data-dir=" + etcdData,
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + member + "=" + peerURL,
		"--initial-cluster-state=new",
		// Throwaway data: skipping fsync makes writes (and so every test) much faster.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, nil)
	if err != nil {
		return err
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	if err := cp.await(ctx, etcd, "etcd health", func(ctx context.Context) error {
		if err := getOK(ctx, plain, etcdURL+"/health"); err != nil {
			return err
		}
		return etcdHasMember(ctx, plain, etcdURL, member)
	}); err != nil {
		return err
	}
	cp.logf("etcd ready in %s", time.Since(t).Round(10*time.Millisecond))

	t = time.Now()
	pki := func(name string) string { return cp.path("pki", name) }
	apiserverArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + cp.path("apiserver"),
		"--tls-cert-file=" + pki("apiserver.crt"),
		"--tls-private-key-file=" + pki("apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--service-account-key-file=" + pki("sa.pub"),
		"--service-account-signing-key-file=" + pki("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		// Kubernetes bootstrap tokens (kube-system bootstrap-token-<id> Secrets), one of the
		// credentials a managed cluster may join a hub with, as with clusteradm.
		"--enable-bootstrap-token-auth=true",
		"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + pki("front-proxy-client.crt"),
		"--proxy-client-key-file=" + pki("front-proxy-client.key"),
		"--allow-privileged=true",
		// The kubernetes service would point at a loopback address, which Endpoints
		// validation rejects; nothing in Flotilla reaches the API server through it.
		"--endpoint-reconciler-type=none",
		"--profiling=" + strconv.FormatBool(cp.opts.Profiling),
	}
	if cp.opts.Workloads {
		// TaintNodesByCondition taints every new Node node.kubernetes.io/not-ready until
		// node-lifecycle-controller lifts the taint once the Node is Ready. That controller
		// is not run (see workloadControllers), so simulated Nodes are created untainted
		// and KWOK makes them Ready.
		apiserverArgs = append(apiserverArgs, "--disable-admission-plugins=TaintNodesByCondition")
	}
	if cp.opts.PodDebugging {
		apiserverArgs = append(apiserverArgs, cp.kubeletClientArgs()...)
	}
	apiserver, err := cp.launch(KubeAPIServerBinary, apiserverArgs, nil)
	if err != nil {
		return err
	}
	cp.mu.Lock()
	cp.apiserver, cp.apiserverArgs = apiserver, apiserverArgs
	cp.mu.Unlock()
	admin, err := cp.userConfig(AdminUser, []string{"system:masters"}, caValidity)
	if err != nil {
		return err
	}
	cp.Config = admin
	adminHTTP, err := rest.HTTPClientFor(admin)
	if err != nil {
		return fmt.Errorf("building admin HTTP client: %w", err)
	}
	adminHTTP.Timeout = 5 * time.Second
	if err := cp.await(ctx, apiserver, "kube-apiserver /readyz", func(ctx context.Context) error {
		return getOK(ctx, adminHTTP, cp.URL+"/readyz")
	}); err != nil {
		return err
	}
	cp.logf("kube-apiserver ready in %s", time.Since(t).Round(10*time.Millisecond))

	cp.KubeconfigPath = cp.path("kubeconfig")
	if err := WriteKubeconfig(cp.KubeconfigPath, cp.Name, admin); err != nil {
		return err
	}
	kcmConfig, err := cp.userConfig("system:kube-controller-manager", nil, caValidity)
	if err != nil {
		return err
	}
	kcmKubeconfig := cp.path("kube-controller-manager.kubeconfig")
	if err := WriteKubeconfig(kcmKubeconfig, cp.Name, kcmConfig); err != nil {
		return err
	}

	// The controller manager, the CRDs, the scheduler and KWOK are independent; start them
	// all at once.
	t = time.Now()
	controllers := kcmControllers
	if cp.opts.Workloads {
		controllers = append(slices.Clone(kcmControllers), workloadControllers...)
	}
	kcm, err := cp.launch(KubeControllerManagerBinary, []string{
		"--kubeconfig=" + kcmKubeconfig,
		"--authentication-kubeconfig=" + kcmKubeconfig,
		"--authorization-kubeconfig=" + kcmKubeconfig,
		"--client-ca-file=" + pki("ca.crt"),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--cert-dir=" + cp.path("kcm"),
		"--tls-cert-file=" + pki("kcm.crt"),
		"--tls-private-key-file=" + pki("kcm.key"),
		"--cluster-name=" + cp.Name,
		"--cluster-signing-cert-file=" + pki("ca.crt"),
		"--cluster-signing-key-file=" + pki("ca.key"),
		"--cluster-signing-duration=" + cp.SigningDuration.String(),
		"--controllers=" + strings.Join(controllers, ","),
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki("sa.key"),
		"--root-ca-file=" + pki("ca.crt"),
		"--leader-elect=false",
		"--profiling=false",
	}, nil)
	if err != nil {
		return err
	}
	crdErr := make(chan error, 1)
	go func() { crdErr <- cp.installCRDs(ctx) }()
	awaitWorkloads := func() error { return nil }
	if cp.opts.Workloads {
		debuggingPort := 0
		if cp.opts.PodDebugging {
			debuggingPort = ports[5]
		}
		if awaitWorkloads, err = cp.startWorkloads(ctx, ports[4], debuggingPort); err != nil {
			return errors.Join(err, <-crdErr)
		}
	}

	pool := x509.NewCertPool()
	pool.AddCert(cp.ca.cert)
	kcmHTTP := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	kcmErr := cp.await(ctx, kcm, "kube-controller-manager /healthz", func(ctx context.Context) error {
		return getOK(ctx, kcmHTTP, "https://127.0.0.1:"+strconv.Itoa(kcmPort)+"/healthz")
	})
	kcmHTTP.CloseIdleConnections()
	if err := errors.Join(kcmErr, <-crdErr); err != nil {
		return err
	}
	cp.logf("kube-controller-manager and CRDs ready in %s", time.Since(t).Round(10*time.Millisecond))
	return awaitWorkloads()
}

// StopAPIServer stops the control plane's kube-apiserver (etcd and the other components keep
// running), as an outage of the cluster's API would; StartAPIServer brings it back.
func (cp *ControlPlane) StopAPIServer() error {
	cp.mu.Lock()
	p := cp.apiserver
	cp.apiserver = nil
	for i, q := range cp.procs {
		if q == p {
			cp.procs = append(cp.procs[:i:i], cp.procs[i+1:]...)
			break
		}
	}
	cp.mu.Unlock()
	if p == nil {
		return fmt.Errorf("control plane %s: kube-apiserver is not running", cp.Name)
	}
	return p.stop(10 * time.Second)
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, on the same address and
// with the same certificates, and waits until it is ready.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	cp.mu.Lock()
	running, args := cp.apiserver != nil, cp.apiserverArgs
	cp.mu.Unlock()
	if running || args == nil {
		return fmt.Errorf("control plane %s: kube-apiserver is running or was never started", cp.Name)
	}
	p, err := cp.launch(KubeAPIServerBinary, args, nil)
	if err != nil {
		return err
	}
	cp.mu.Lock()
	cp.apiserver = p
	cp.mu.Unlock()
	httpClient, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		return fmt.Errorf("building admin HTTP client: %w", err)
	}
	httpClient.Timeout = 5 * time.Second
	return cp.await(ctx, p, "kube-apiserver /readyz", func(ctx context.Context) error {
		return getOK(ctx, httpClient, cp.URL+"/readyz")
	})
}

// launch starts one component, logging to <Dir>/<binary>.log, with env added to ours.
func (cp *ControlPlane) launch(binary string, args, env []string) (*process, error) {
	p, err := startProcess(cp.spawner, binary, cp.bins[binary], args, env, cp.Dir, cp.path(binary+".log"))
	if err != nil {
		return nil, err
	}
	cp.mu.Lock()
	cp.procs = append(cp.procs, p)
	cp.mu.Unlock()
	return p, nil
}

// await waits for check, turning an early exit caused by a port race into errPortTaken.
func (cp *ControlPlane) await(ctx context.Context, p *process, what string, check func(context.Context) error) error {
	err := waitFor(ctx, p, cp.opts.StartTimeout, what, check)
	if err != nil && !p.running() && addressInUse(p.logPath) {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

// etcdHasMember fails unless the etcd at url (its gRPC gateway) lists a member named member.
func etcdHasMember(ctx context.Context, c *http.Client, url, member string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v3/cluster/member/list", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var list struct {
		Members []struct {
			Name string `json:"name"`
		} `json:"members"`
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s/v3/cluster/member/list: %s", url, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil {
		return fmt.Errorf("etcd member list at %s: %w", url, err)
	}
	var names []string
	for _, m := range list.Members {
		if m.Name == member {
			return nil
		}
		names = append(names, m.Name)
	}
	return fmt.Errorf("the etcd at %s is another one (members %v, want %s)", url, names, member)
}

// getOK fails unless GET url answers 200.
func getOK(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// UserConfig returns a client config for user in groups, authenticated by a client
// certificate signed by the cluster CA and valid for 24 hours. Unlike Config it carries
// no privileges beyond what RBAC grants that user and those groups, which is what tests
// acting as an agent, a bootstrap identity or an unprivileged user need.
func (cp *ControlPlane) UserConfig(user string, groups ...string) (*rest.Config, error) {
	return cp.userConfig(user, groups, 24*time.Hour)
}

func (cp *ControlPlane) userConfig(user string, groups []string, validity time.Duration) (*rest.Config, error) {
	if user == "" {
		return nil, fmt.Errorf("control plane %s: client certificate user must not be empty", cp.Name)
	}
	certPEM, keyPEM, err := cp.ca.issue(certSpec{commonName: user, organization: groups, client: true, validity: validity})
	if err != nil {
		return nil, fmt.Errorf("control plane %s: %w", cp.Name, err)
	}
	return cp.clientConfig(certPEM, keyPEM), nil
}

func (cp *ControlPlane) clientConfig(certPEM, keyPEM []byte) *rest.Config {
	return &rest.Config{
		Host: cp.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   cp.CAData,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		// Tests and dev sessions talk to a private API server: client-side throttling
		// would only slow them down.
		QPS:   200,
		Burst: 400,
	}
}

// PIDs returns the process ids of the running components (also their process group ids).
func (cp *ControlPlane) PIDs() []int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	pids := make([]int, 0, len(cp.procs))
	for _, p := range cp.procs {
		pids = append(pids, p.pid())
	}
	return pids
}

// Ports returns the loopback TCP ports the components listen on: etcd client and peer,
// kube-apiserver, kube-controller-manager, (Workloads) kube-scheduler and (PodDebugging)
// KWOK's debugging server.
func (cp *ControlPlane) Ports() []int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return append([]int(nil), cp.ports...)
}

// Stop stops KWOK, kube-scheduler, kube-controller-manager, kube-apiserver and etcd (those
// it runs) in that order (SIGTERM, then SIGKILL to each process group after a grace
// period) and removes Dir unless Keep was set. It is safe to call more than once and from several goroutines.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		err := cp.stopProcesses()
		cp.spawner.close()
		cp.stopErr = errors.Join(err, cp.cleanupDir())
		cp.logf("stopped")
	})
	return cp.stopErr
}

// stopProcesses stops every started component, newest first.
func (cp *ControlPlane) stopProcesses() error {
	cp.mu.Lock()
	procs := cp.procs
	cp.procs = nil
	cp.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].stop(10 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("control plane %s: %w", cp.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (cp *ControlPlane) cleanupDir() error {
	if !cp.removeDir || cp.Dir == "" {
		return nil
	}
	if err := os.RemoveAll(cp.Dir); err != nil {
		return fmt.Errorf("control plane %s: removing %s: %w", cp.Name, cp.Dir, err)
	}
	return nil
}

// RSSMiB reads a process's resident set size from /proc, for benchmarks that report memory.
func RSSMiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS of process %d: %w", pid, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// CPUSeconds reads the user and system CPU time a process has used, and its command name,
// from /proc, so benchmarks can say where time went.
func CPUSeconds(pid int) (name string, seconds float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// pid (comm) state ppid ... utime(14) stime(15), comm may hold spaces.
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	name = s[open+1 : end]
	fields := strings.Fields(s[end+1:])
	if len(fields) < 13 {
		return "", 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ut, err1 := strconv.ParseFloat(fields[11], 64)
	st, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return "", 0, fmt.Errorf("/proc/%d/stat: utime/stime: %v %v", pid, err1, err2)
	}
	const ticks = 100 // USER_HZ on Linux
	return name, (ut + st) / ticks, nil
}
