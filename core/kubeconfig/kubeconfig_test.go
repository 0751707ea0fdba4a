package kubeconfig

import (
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestBootstrapProxy(t *testing.T) {
	b, err := Bootstrap(Params{Server: "https://hub:6443", CA: []byte("CA"), Token: "tok", ProxyURL: "https://proxy:3129"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	if c.ProxyURL != "https://proxy:3129" || c.Server != "https://hub:6443" || string(c.CertificateAuthorityData) != "CA" {
		t.Errorf("cluster %+v", c)
	}
	if u := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]; u == nil || u.Token != "tok" {
		t.Errorf("user %+v, want token tok", u)
	}
	if _, err := Bootstrap(Params{Server: "https://hub", Token: "t"}); err == nil {
		t.Error("no CA: want an error")
	}
	if _, err := Bootstrap(Params{Server: "https://hub", Token: "t", Insecure: true}); err != nil {
		t.Errorf("no CA but insecure: %v", err)
	}
}
