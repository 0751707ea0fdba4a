package commands

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// gatewayHub is a stand-in for the hub API server's cluster-gateway API: cluster c1 has a
// ClusterGateway, any other is not found; it records the bearer tokens it saw.
func gatewayHub(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer hub-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		const prefix = "/apis/cluster.core.oam.dev/v1alpha1/clustergateways/"
		switch name, _ := strings.CutPrefix(r.URL.Path, prefix); name {
		case "c1":
			fmt.Fprint(w, `{"apiVersion":"cluster.core.oam.dev/v1alpha1","kind":"ClusterGateway","metadata":{"name":"c1"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"NotFound","code":404,`+
				`"message":"clustergateways.cluster.core.oam.dev \"%s\" not found"}`, name)
		}
	}))
	t.Cleanup(srv.Close)
	// The hub kubeconfig names its CA by file, as many do: the output must embed it.
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, pemOf(srv.Certificate().Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthority: ca, ProxyURL: ""}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "hub-token"}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin"}
	kc.Contexts["other"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "nobody"}
	kc.CurrentContext = "hub"
	path := filepath.Join(dir, "hub.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return srv, path
}

func TestKubeconfigCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	srv, hub := gatewayHub(t)
	out := filepath.Join(t.TempDir(), "c1.kubeconfig")
	if _, stderr, err := flotilla(ctx, "kubeconfig", "--kubeconfig", hub, "--cluster", "c1", "-o", out); err != nil {
		t.Fatalf("flotilla kubeconfig: %v\n%s", err, stderr)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig written with mode %v, want 0600", st.Mode().Perm())
	}
	kc, err := clientcmd.LoadFromFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if kc.CurrentContext != "c1" || kc.Contexts["c1"] == nil || kc.Contexts["c1"].Cluster != "c1" || kc.Contexts["c1"].AuthInfo != "c1" {
		t.Errorf("contexts %v (current %q), want one context c1 of cluster and user c1", kc.Contexts, kc.CurrentContext)
	}
	c := kc.Clusters["c1"]
	if c == nil {
		t.Fatalf("no cluster c1 in %v", kc.Clusters)
	}
	if want := srv.URL + "/apis/cluster.core.oam.dev/v1alpha1/clustergateways/c1/proxy"; c.Server != want {
		t.Errorf("server %q, want %q", c.Server, want)
	}
	if len(c.CertificateAuthorityData) == 0 || c.CertificateAuthority != "" {
		t.Errorf("the hub CA is not embedded (file %q, %d bytes)", c.CertificateAuthority, len(c.CertificateAuthorityData))
	}
	if u := kc.AuthInfos["c1"]; u == nil || u.Token != "hub-token" {
		t.Errorf("user c1 %+v, want the hub's credentials", u)
	}

	// Standard output without -o.
	stdout, _, err := flotilla(ctx, "kubeconfig", "--kubeconfig", hub, "--cluster", "c1")
	if err != nil || !strings.Contains(stdout, "clustergateways/c1/proxy") {
		t.Errorf("flotilla kubeconfig to standard output: %v\n%s", err, stdout)
	}

	// A cluster without a ClusterGateway: the error says how to enable it; --no-check skips.
	_, _, err = flotilla(ctx, "kubeconfig", "--kubeconfig", hub, "--cluster", "c2")
	if want := "cluster c2 has no ClusterGateway: enable the add-ons with flotilla addon enable cluster-proxy managed-serviceaccount cluster-gateway --clusters c2"; err == nil || err.Error() != want {
		t.Errorf("flotilla kubeconfig --cluster c2: %v, want %q", err, want)
	}
	if _, _, err := flotilla(ctx, "kubeconfig", "--kubeconfig", hub, "--cluster", "c2", "--no-check"); err != nil {
		t.Errorf("flotilla kubeconfig --cluster c2 --no-check: %v", err)
	}
	if _, _, err := flotilla(ctx, "kubeconfig", "--kubeconfig", hub); err == nil || !strings.Contains(err.Error(), "--cluster is required") {
		t.Errorf("flotilla kubeconfig without --cluster: %v", err)
	}
}

func TestProxyCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, hub := gatewayHub(t)
	// The command sees the gateway kubeconfig, its status becomes flotilla's.
	script := `grep -q 'clustergateways/c1/proxy' "$KUBECONFIG" && echo "$KUBECONFIG"; exit 3`
	stdout, _, err := flotilla(ctx, "proxy", "--kubeconfig", hub, "c1", "--", "sh", "-c", script)
	if ExitCode(err) != 3 {
		t.Fatalf("flotilla proxy c1 -- sh (exit 3): %v (exit code %d), want exit code 3", err, ExitCode(err))
	}
	path := strings.TrimSpace(stdout)
	if path == "" {
		t.Fatalf("the command did not see the gateway kubeconfig in KUBECONFIG")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the temporary kubeconfig %s is still there (%v)", path, err)
	}
	if _, _, err := flotilla(ctx, "proxy", "--kubeconfig", hub, "c1", "--", "true"); err != nil {
		t.Errorf("flotilla proxy c1 -- true: %v", err)
	}
	// -- is required; a cluster without a gateway runs nothing.
	if _, _, err := flotilla(ctx, "proxy", "--kubeconfig", hub, "c1", "true"); err == nil || !strings.Contains(err.Error(), "usage: flotilla proxy C -- CMD") {
		t.Errorf("flotilla proxy without --: %v", err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	_, _, err = flotilla(ctx, "proxy", "--kubeconfig", hub, "c2", "--", "touch", marker)
	if err == nil || !strings.Contains(err.Error(), "cluster c2 has no ClusterGateway") {
		t.Errorf("flotilla proxy c2: %v", err)
	}
	if _, statErr := os.Stat(marker); !os.IsNotExist(statErr) {
		t.Errorf("flotilla proxy c2 ran the command although c2 has no gateway")
	}
}

func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
