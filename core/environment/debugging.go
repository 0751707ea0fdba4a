package environment

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/crds"
)

// KWOK's CustomResourceDefinitions for what its debugging server answers in a kubelet's place
// (exec, logs, port-forward; namespaced per Pod and cluster-wide by selector), copied
// unchanged from sigs.k8s.io/kwok v0.8.0 (tools/kwok/go.mod), kustomize/crd/bases. The kwok
// binary does not install them; TestKWOKCRDsArePinned compares them with the pinned module.
//
//go:embed kwok-crds/*.yaml
var kwokCRDFiles embed.FS

// kwokDebuggingKinds are the kinds kwok watches (--enable-crds) for its debugging server.
var kwokDebuggingKinds = []string{"Exec", "ClusterExec", "Logs", "ClusterLogs", "PortForward", "ClusterPortForward"}

// KWOKGroupVersion is the API group and version of KWOK's Exec, Logs and PortForward.
var KWOKGroupVersion = schema.GroupVersion{Group: "kwok.x-k8s.io", Version: "v1alpha1"}

// kwokCRDs decodes the embedded KWOK CRDs, sorted by file name.
func kwokCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(kwokCRDFiles, "kwok-crds")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
		b, err := kwokCRDFiles.ReadFile(path.Join("kwok-crds", n))
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("decoding KWOK CRD %s: %w", n, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// installKWOKCRDs installs KWOK's debugging CRDs and waits until they are established, so
// that kwok's informers list them at once instead of backing off.
func (cp *ControlPlane) installKWOKCRDs(ctx context.Context) error {
	objs, err := kwokCRDs()
	if err != nil {
		return fmt.Errorf("control plane %s: %w", cp.Name, err)
	}
	if err := crds.InstallObjects(ctx, cp.Config, objs...); err != nil {
		return fmt.Errorf("control plane %s: installing KWOK's debugging CRDs: %w", cp.Name, err)
	}
	return nil
}

// kwokDebuggingArgs are kwok's flags for its debugging server on 127.0.0.1:port, serving
// HTTPS with the certificate pki/kwok.crt (signed by the cluster CA for 127.0.0.1, which
// kube-apiserver verifies with --kubelet-certificate-authority). --node-port is the port the
// Nodes advertise in status.daemonEndpoints.kubeletEndpoint (KWOK's node stages write it).
func (cp *ControlPlane) kwokDebuggingArgs(port int) []string {
	return []string{
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
		"--node-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + cp.path("pki", "kwok.crt"),
		"--tls-private-key-file=" + cp.path("pki", "kwok.key"),
		"--enable-crds=" + strings.Join(kwokDebuggingKinds, ","),
	}
}

// kubeletClientArgs make kube-apiserver reach KWOK's debugging server as a Node's kubelet:
// at the Node's loopback ExternalIP (simulatedNodeNetwork), verifying the serving certificate
// with the cluster CA. KWOK asks for no client certificate, so none is configured.
func (cp *ControlPlane) kubeletClientArgs() []string {
	return []string{
		"--kubelet-preferred-address-types=" + string(kwokAddressType),
		"--kubelet-certificate-authority=" + cp.path("pki", "ca.crt"),
	}
}

// PodStreams says what KWOK's debugging server answers for one Pod in a kubelet's place
// (ControlPlaneOptions.PodDebugging).
type PodStreams struct {
	// Namespace and Pod name the Pod; the KWOK objects are named after it in its namespace.
	Namespace, Pod string
	// ExecWorkDir, when set, makes `kubectl exec` into any container of the Pod run the
	// command as a local process of this (the test's) user, in that directory.
	ExecWorkDir string
	// LogsFile, when set, is what `kubectl logs` of any container of the Pod reads (and
	// follows): a file of CRI log lines (CRILogLine).
	LogsFile string
	// Forwards maps Pod ports to local addresses (host:port) `kubectl port-forward` to that
	// port connects to.
	Forwards map[int32]string
}

// ServePodStreams creates KWOK's Exec, Logs and PortForward for s (those it sets) on cp,
// which must run with PodDebugging. KWOK picks them up from its watch within moments;
// callers retry their first request until it does. Deleting the namespace removes them.
func (cp *ControlPlane) ServePodStreams(ctx context.Context, s PodStreams) error {
	if !cp.opts.PodDebugging {
		return fmt.Errorf("control plane %s: Pod %s/%s: exec, logs and port-forward need PodDebugging", cp.Name, s.Namespace, s.Pod)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return fmt.Errorf("control plane %s: %w", cp.Name, err)
	}
	var objs []*unstructured.Unstructured
	obj := func(kind string, spec map[string]any) {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion(KWOKGroupVersion.String())
		u.SetKind(kind)
		u.SetNamespace(s.Namespace)
		u.SetName(s.Pod)
		objs = append(objs, u)
	}
	if s.ExecWorkDir != "" {
		obj("Exec", map[string]any{"execs": []any{map[string]any{"local": map[string]any{"workDir": s.ExecWorkDir}}}})
	}
	if s.LogsFile != "" {
		obj("Logs", map[string]any{"logs": []any{map[string]any{"logsFile": s.LogsFile, "follow": true}}})
	}
	if len(s.Forwards) > 0 {
		ports := make([]int32, 0, len(s.Forwards))
		for p := range s.Forwards {
			ports = append(ports, p)
		}
		sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
		var forwards []any
		for _, p := range ports {
			host, portStr, err := net.SplitHostPort(s.Forwards[p])
			port, perr := strconv.Atoi(portStr)
			if err != nil || perr != nil {
				return fmt.Errorf("control plane %s: Pod %s/%s: forward of port %d: %q is not host:port", cp.Name, s.Namespace, s.Pod, p, s.Forwards[p])
			}
			forwards = append(forwards, map[string]any{"ports": []any{int64(p)},
				"target": map[string]any{"address": host, "port": int64(port)}})
		}
		obj("PortForward", map[string]any{"forwards": forwards})
	}
	for _, u := range objs {
		gvr := KWOKGroupVersion.WithResource(strings.ToLower(u.GetKind()) + "s")
		if u.GetKind() == "Logs" {
			gvr.Resource = "logs"
		}
		if _, err := dyn.Resource(gvr).Namespace(s.Namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("control plane %s: creating KWOK %s %s/%s: %w", cp.Name, u.GetKind(), s.Namespace, s.Pod, err)
		}
	}
	return nil
}

// CRILogLine is one line of a container log file in the CRI format kubelets (and KWOK's
// Logs) read: `<RFC3339Nano time> stdout F <msg>\n`.
func CRILogLine(t time.Time, msg string) string {
	return t.UTC().Format(time.RFC3339Nano) + " stdout F " + msg + "\n"
}
