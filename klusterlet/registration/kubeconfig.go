package registration

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// HubEndpoint is how to reach and trust the hub API server; it is taken from the
// bootstrap kubeconfig and carried into the hub kubeconfig.
type HubEndpoint struct {
	Server        string
	CAData        []byte
	TLSServerName string
	ProxyURL      string
	Insecure      bool
}

// EndpointFromKubeconfig reads the server of the current context of a kubeconfig.
// source names the kubeconfig in errors.
func EndpointFromKubeconfig(data []byte, source string) (HubEndpoint, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return HubEndpoint{}, fmt.Errorf("parsing kubeconfig %s: %w", source, err)
	}
	cluster, err := currentCluster(cfg, source)
	if err != nil {
		return HubEndpoint{}, err
	}
	if cluster.Server == "" {
		return HubEndpoint{}, fmt.Errorf("kubeconfig %s: cluster has no server", source)
	}
	ep := HubEndpoint{
		Server:        cluster.Server,
		CAData:        cluster.CertificateAuthorityData,
		TLSServerName: cluster.TLSServerName,
		ProxyURL:      cluster.ProxyURL,
		Insecure:      cluster.InsecureSkipTLSVerify,
	}
	if len(ep.CAData) == 0 && cluster.CertificateAuthority != "" {
		ca, err := os.ReadFile(cluster.CertificateAuthority)
		if err != nil {
			return HubEndpoint{}, fmt.Errorf("kubeconfig %s: reading certificate-authority: %w", source, err)
		}
		ep.CAData = ca
	}
	return ep, nil
}

func currentCluster(cfg *clientcmdapi.Config, source string) (*clientcmdapi.Cluster, error) {
	ctxName := cfg.CurrentContext
	if ctxName == "" && len(cfg.Contexts) == 1 {
		for name := range cfg.Contexts {
			ctxName = name
		}
	}
	kctx, ok := cfg.Contexts[ctxName]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: current-context %q not found", source, ctxName)
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("kubeconfig %s: cluster %q of context %q not found", source, kctx.Cluster, ctxName)
	}
	return cluster, nil
}

// RESTConfigFromKubeconfig builds a client config from kubeconfig bytes.
func RESTConfigFromKubeconfig(data []byte, source string) (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", source, err)
	}
	return cfg, nil
}

// BuildHubKubeconfig writes a self-contained kubeconfig for the hub with the
// agent's client certificate and key embedded, so that other agents can use the
// secret without mounting files.
func BuildHubKubeconfig(ep HubEndpoint, creds *Credentials) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{
		Server:                   ep.Server,
		CertificateAuthorityData: ep.CAData,
		TLSServerName:            ep.TLSServerName,
		ProxyURL:                 ep.ProxyURL,
		InsecureSkipTLSVerify:    ep.Insecure,
	}
	cfg.AuthInfos["registration-agent"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: creds.CertPEM,
		ClientKeyData:         creds.KeyPEM,
	}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "registration-agent"}
	cfg.CurrentContext = "hub"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding hub kubeconfig: %w", err)
	}
	return data, nil
}
