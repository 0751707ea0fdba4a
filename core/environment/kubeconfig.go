package environment

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes cfg as a kubeconfig file with one cluster, user and context, all
// named name, and credentials embedded so the file can be copied anywhere. cfg must
// authenticate with a client certificate or a bearer token given as data, not as files.
func WriteKubeconfig(path, name string, cfg *rest.Config) error {
	if cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" || cfg.BearerTokenFile != "" {
		return fmt.Errorf("writing kubeconfig %s: config for %s references files; only embedded credentials are supported", path, name)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
