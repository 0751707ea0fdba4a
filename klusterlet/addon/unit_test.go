package addon

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func TestNames(t *testing.T) {
	if got := SecretName("hello", "kubernetes.io/kube-apiserver-client"); got != "hello-hub-kubeconfig" {
		t.Errorf("kube client secret %q", got)
	}
	if got := SecretName("hello", "example.com/signer"); got != "hello-example.com-signer-client-cert" {
		t.Errorf("custom signer secret %q", got)
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if got := InstallNamespace(mca); got != DefaultInstallNamespace {
		t.Errorf("default namespace %q", got)
	}
	mca.Spec.InstallNamespace = "spec-ns"
	if got := InstallNamespace(mca); got != "spec-ns" {
		t.Errorf("spec namespace %q", got)
	}
	mca.Status.Namespace = "status-ns"
	if got := InstallNamespace(mca); got != "status-ns" {
		t.Errorf("status namespace %q", got)
	}
}

func TestRegConfig(t *testing.T) {
	cfg := Config{ClusterName: "c1", AgentName: "a1", HubEndpoint: registration.HubEndpoint{Server: "https://hub:6443", CAData: []byte("ca"), ProxyURL: "http://proxy:3128"}}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
	kc := newRegConfig(cfg, mca, addonv1alpha1.RegistrationConfig{SignerName: "kubernetes.io/kube-apiserver-client"})
	if kc.subject.CommonName != "system:open-cluster-management:cluster:c1:addon:hello:agent:a1" ||
		len(kc.subject.Organization) != 1 || kc.subject.Organization[0] != "system:open-cluster-management:cluster:c1:addon:hello" {
		t.Errorf("default kube client subject %+v", kc.subject)
	}
	k, err := clientcmd.Load(kc.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster := k.Clusters[k.Contexts[k.CurrentContext].Cluster]
	if cluster.Server != "https://hub:6443" || cluster.ProxyURL != "http://proxy:3128" || string(cluster.CertificateAuthorityData) != "ca" {
		t.Errorf("kubeconfig cluster %+v", cluster)
	}
	if a := k.AuthInfos[k.Contexts[k.CurrentContext].AuthInfo]; a.ClientCertificate != "tls.crt" || a.ClientKey != "tls.key" {
		t.Errorf("kubeconfig credentials %+v", a)
	}
	custom := newRegConfig(cfg, mca, addonv1alpha1.RegistrationConfig{SignerName: "example.com/s", Subject: addonv1alpha1.Subject{User: "u"}})
	if custom.kubeconfig != nil || len(custom.subject.Organization) != 0 || custom.subject.CommonName != "u" {
		t.Errorf("custom signer config %+v", custom)
	}
	if _, ok := custom.data()[KubeconfigKey]; ok {
		t.Errorf("custom signer secret with a kubeconfig")
	}
	mca.Status.Namespace = "other"
	if moved := newRegConfig(cfg, mca, addonv1alpha1.RegistrationConfig{SignerName: "kubernetes.io/kube-apiserver-client"}); moved.key == kc.key {
		t.Errorf("a new install namespace must be a new registration")
	}
}
