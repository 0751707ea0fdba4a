// Package kubeconfig renders the bootstrap kubeconfig a managed cluster's agent registers
// with. The hub issues it (`flotilla get token`) and the klusterlet's installer builds it from
// a join command's flags (`flotilla join`): both sides render it here, so the klusterlet needs
// nothing from the hub.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Params describe a bootstrap kubeconfig.
type Params struct {
	Server string
	// CA verifies the hub's serving certificate; with an HTTPS proxy it also holds the proxy's
	// CA (seeds: "Register a cluster to hub through proxy server").
	CA            []byte
	Token         string
	ProxyURL      string
	TLSServerName string
	Insecure      bool
}

// Bootstrap renders a bootstrap kubeconfig: cluster "hub" (with proxy-url when set), user
// "bootstrap" with the token, and a context of both.
func Bootstrap(p Params) ([]byte, error) {
	if len(p.CA) == 0 && !p.Insecure {
		return nil, fmt.Errorf("bootstrap kubeconfig: hub %s has no CA data", p.Server)
	}
	const name = "hub"
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{name: {
			Server:                   p.Server,
			CertificateAuthorityData: p.CA,
			TLSServerName:            p.TLSServerName,
			InsecureSkipTLSVerify:    p.Insecure,
			ProxyURL:                 p.ProxyURL,
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"bootstrap": {Token: p.Token}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: "bootstrap"}},
		CurrentContext: name,
	}
	out, err := clientcmd.Write(cfg)
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	return out, nil
}
